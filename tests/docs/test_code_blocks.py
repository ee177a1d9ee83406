"""Every ```python block in docs/*.md and README.md runs, so the docs never lie.

A page's blocks run in order in one namespace (a later block may use what an earlier one
defined), each written to its own file first (so `@Gpu` can read the kernels' source). A block
preceded by the line `<!-- no-run -->` is skipped — used only for fragments that cannot run on
their own (e.g. an `await` outside a coroutine). Blocks that print are fine; blocks that show a
result assert it. Kernels a page registers are unregistered afterwards.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# Extras a page may need (`pip install cthreads[dask]`, the frameworks of docs/interop.md): a block
# that imports one where it is missing skips the rest of its page, naming it
OPTIONAL = {"dask", "distributed", "torch", "cupy", "jax", "ml_dtypes"}
NO_RUN = "<!-- no-run -->"
# Pages whose blocks do not run yet, each with why. Owned by other work streams; an entry here is
# a reported docs bug to fix (define the data the block uses, or mark a fragment no-run), and
# the test XPASSes once it is fixed — then remove the entry.
PENDING: dict[str, str] = {}  # page -> why its blocks cannot run yet (none today)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of each runnable ```python block."""
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if before == NO_RUN:
            continue
        blocks.append((text.count("\n", 0, m.start()) + 2, m.group(2)))
    return blocks


def test_the_extractor():
    text = "x\n```python\na = 1\n```\n<!-- no-run -->\n```python\nawait b\n```\n```sh\nls\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n")]


def test_every_page_is_checked():
    names = {p.name for p in PAGES}
    assert {"README.md", "index.md", "quickstart.md", "language.md", "errors.md"} <= names
    total = sum(len(python_blocks(p.read_text())) for p in PAGES)
    assert total >= 30, total


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, id=p.name, marks=pytest.mark.xfail(reason=PENDING[p.name], strict=False))
        if p.name in PENDING
        else pytest.param(p, id=p.name)
        for p in PAGES
    ],
)
def test_code_blocks_run(page: Path, tmp_path: Path):
    from cthreads.gpu.kernel import registered_kernels, unregister

    blocks = python_blocks(page.read_text())
    if not blocks:
        pytest.skip(f"{page.name} has no python blocks")
    stem = re.sub(r"\W", "_", page.stem)
    namespace: dict = {"__name__": f"docs_{stem}"}
    before = {id(k) for k in registered_kernels()}
    try:
        for k, (line, source) in enumerate(blocks):
            path = tmp_path / f"{stem}_block{k}_line{line}.py"
            path.write_text(source)
            namespace["__file__"] = str(path)
            code = compile(source, str(path), "exec")
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(code, namespace)  # noqa: S102 - running the docs is the point
                except ModuleNotFoundError as exc:
                    if (exc.name or "").split(".")[0] not in OPTIONAL:
                        raise AssertionError(
                            f"{page.relative_to(ROOT)}, the block at line {line} failed: {exc}"
                        ) from exc
                    pytest.skip(f"{page.name}, line {line}: needs {exc.name} (optional)")
                except BaseException as exc:
                    raise AssertionError(
                        f"{page.relative_to(ROOT)}, the block at line {line} failed: "
                        f"{type(exc).__name__}: {exc}\n{source}"
                    ) from exc
    finally:
        for kernel in registered_kernels():
            if id(kernel) not in before:
                unregister(kernel)
