"""gpu/keying.py: the source key's inputs read without the frontend (issue 19).

The def block's extent from the code object must give inspect's lines (or step aside where it
cannot be sure); the module values must cover every constant the frontend's syntax-tree walk
finds, with the same values; lowering must use the values the key was made from."""

from __future__ import annotations

import inspect
import math
import types

import pytest

from cthreads.compiler.frontend.constants import collect_constants
from cthreads.compiler.frontend.source import KernelSource
from cthreads.gpu import Gpu
from cthreads.gpu import keying
from cthreads.gpu.kernel import unregister

LIMIT = 7
RATE = 0.25
cfg = types.ModuleType("cfg")
cfg.N = 3
cfg.sub = types.ModuleType("cfg.sub")
cfg.sub.M = 1.5
cfg.sub.back = cfg  # a cycle: not followed forever


def ident(fn):
    return fn


# -- the block's extent ---------------------------------------------------------------------


@ident
def plain(x: list[int]) -> None:
    x[0] = LIMIT


@ident
def trailing_comment(x: list[int]) -> None:
    x[0] = 1
    # a comment inside the block


@ident
def bracket_at_column_0(x: list[int]) -> None:
    x[0] = (1 +
2
)  # fmt: skip


@ident
def trailing_string(x: list[int]) -> None:
    x[0] = 1
    """a string statement (no instruction) that spans
lines at column 0"""


@ident
def continued(x: list[int]) -> None:
    x[0] = cfg.N + \
        cfg.sub.M  # fmt: skip


def make_nested():
    @ident
    def nested(x: list[int]) -> None:
        for i in range(3):
            x[i] = i

    return nested


EXTENTS = [plain, trailing_comment, bracket_at_column_0, trailing_string, continued, make_nested()]


@pytest.mark.parametrize("fn", EXTENTS, ids=lambda f: f.__name__)
def test_read_source_gives_inspects_lines(fn):
    lines, first = inspect.getsourcelines(fn)
    assert keying.read_source(fn) == (tuple(lines), first)
    fast = keying._block_from_code(fn)
    assert fast is None or fast == (tuple(lines), first)


@pytest.mark.parametrize("fn", [plain, trailing_comment, continued], ids=lambda f: f.__name__)
def test_the_code_object_answers_the_common_layouts(fn):
    assert keying._block_from_code(fn) is not None


@pytest.mark.parametrize("fn", [bracket_at_column_0, trailing_string], ids=lambda f: f.__name__)
def test_unsure_layouts_are_left_to_inspect(fn):
    assert keying._block_from_code(fn) is None


def test_no_source_is_none():
    ns: dict = {}
    exec("def f(x):\n    x[0] = 1\n", ns)
    assert keying.read_source(ns["f"]) is None


# -- module values ----------------------------------------------------------------------------


def values_kernel(x: list[float], n: int) -> None:
    local = 2
    x[0] = LIMIT + RATE + cfg.N + cfg.sub.M + local + n + math.pi
    x[1] = float(len(x))


def make_closure(k):
    def closure(x: list[float]) -> None:
        x[0] = k * LIMIT

    return closure


@pytest.mark.parametrize("fn", [values_kernel, make_closure(3.5), plain], ids=lambda f: f.__name__)
def test_module_values_cover_the_syntax_walk(fn):
    walked = collect_constants(fn, KernelSource.of(fn), {"x", "n"})
    values = keying.module_values(fn)
    assert walked, "the fixture reads constants"
    for path, value in walked.items():
        assert path in values and values[path] == value, path


def test_module_values_follow_modules_only():
    values = keying.module_values(values_kernel)
    assert values["cfg.sub.M"] == 1.5 and values["math.pi"] == math.pi
    assert "local" not in values and "n" not in values
    assert not any(".back.back" in p for p in values)  # the cycle is cut


def test_is_number():
    import numpy as np

    for v in (1, 2.5, True, np.float32(1.5), np.int64(3)):
        assert keying.is_number(v), v
    for v in (None, "1", int, math, math.sqrt, [1], object()):
        assert not keying.is_number(v), v


# -- the key and the values lowering uses -----------------------------------------------------


def test_lowering_uses_the_values_the_key_was_made_from():
    box = {"v": 1}

    def make():
        scale = box["v"]

        def k(x: list[int]) -> None:
            x[0] = scale

        return k

    fn = make()
    kernel = Gpu(fn)
    unregister(kernel)
    key = kernel.source_key  # made from scale == 1; nothing lowered yet
    fn.__closure__[0].cell_contents = 5
    assert kernel.constants() == {"scale": 1}
    assert "x[0] = 1" in kernel.ir_text() and kernel.source_key == key


def test_the_key_follows_module_attributes():
    def make():
        def k(x: list[float]) -> None:
            x[0] = cfg.sub.M

        return k

    kernels = [Gpu(make()) for _ in range(3)]
    for k in kernels:
        unregister(k)
    a = kernels[0].source_key  # values are read on first use
    cfg.sub.M = 2.5
    try:
        b = kernels[1].source_key
    finally:
        cfg.sub.M = 1.5
    assert a != b and a == kernels[2].source_key


def test_an_edited_file_is_reread(tmp_path):
    # linecache may hold the file as it was (a traceback read it): a kernel defined from the
    # edited file must get the edited lines, as inspect would give them
    import importlib.util
    import linecache

    path = tmp_path / "edited_kernels.py"

    def load(text: str):
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("edited_kernels", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.k

    head = "def ident(f):\n    return f\n\n@ident\ndef k(x):\n"
    first = load(head + "    x[0] = 1\n\n@ident\ndef other(x):\n    x[0] = 3\n")
    assert keying.read_source(first)[0][-1] == "    x[0] = 1\n"
    linecache.getlines(str(path))  # cached now
    second = load(head + "    x[0] = 22\n")  # (shorter: a new size, whatever the clock)
    lines, first_line = keying.read_source(second)
    assert lines[-1] == "    x[0] = 22\n" and first_line == 4
