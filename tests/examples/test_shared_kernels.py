"""One copy of each shared kernel: the demo and the example scripts take theirs from
`cthreads.examples_kernels` (the demo runs from an installed package, where examples/ is
absent), so a fix to the kernel or its reference reaches every place that shows it."""

from __future__ import annotations

import ast
from pathlib import Path

import cthreads

ROOT = Path(__file__).resolve().parents[2]
SHARED = ("saxpy", "mandelbrot")
USERS = [ROOT / "cthreads" / "demo.py", *sorted((ROOT / "examples").glob("*.py"))]


def _gpu_kernels(path: Path) -> set[str]:
    """Names of the `@Gpu` functions a source file defines itself."""
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d).split("(")[0].endswith("Gpu") for d in node.decorator_list)
    }


def test_shared_kernels_are_defined_once():
    copies = {p.relative_to(ROOT).as_posix(): _gpu_kernels(p) & set(SHARED) for p in USERS}
    assert not {
        k: v for k, v in copies.items() if v
    }, "define these in cthreads/examples_kernels.py and import them"
    assert set(SHARED) <= _gpu_kernels(Path(cthreads.__file__).with_name("examples_kernels.py"))


def test_the_demo_uses_the_shared_kernels():
    from cthreads import demo, examples_kernels

    for name in SHARED:
        assert getattr(demo, name) is getattr(examples_kernels, name)


def test_reference_matches_a_hand_count():
    """The shared numpy reference: c = 0 never escapes, c = 2 escapes after the second step
    (|z| = 2 after one step is still inside the <= 4 test on |z|^2, |z| = 6 after two is not)."""
    import numpy as np

    from cthreads.examples_kernels import mandelbrot_reference

    idx = np.arange(2, dtype=np.int32)  # pixel 0: c = 0; pixel 1: c = 2 (x0 = 0, step = 2)
    assert mandelbrot_reference(idx, 2, 0.0, 0.0, 2.0, 50).tolist() == [50, 2]
