"""Golden texts: the IR of the reference kernels and the full message of every rejected kernel.

Rewrite them with CTHREADS_UPDATE_GOLDEN=1 after a deliberate change, and review the diff.
"""

from __future__ import annotations

import inspect
import traceback

import fe_bad_kernels
import fe_kernels
import pytest
from fehelp import GOLDEN, check_golden, kernel, relative

from cthreads.errors import GpuCompileError

BAD = [
    fn
    for fn in vars(fe_bad_kernels).values()
    if inspect.isfunction(fn) and fn.__module__ == fe_bad_kernels.__name__
]


@pytest.mark.parametrize("k", fe_kernels.ALL, ids=lambda k: k.name)
def test_ir_golden(k):
    check_golden(GOLDEN / "ir" / f"{k.name}.ir", k.ir_text())


@pytest.mark.parametrize("fn", BAD, ids=lambda fn: fn.__name__)
def test_error_golden(fn):
    with pytest.raises(GpuCompileError) as info:
        kernel(fn).lower()
    check_golden(GOLDEN / "errors" / f"{fn.__name__}.txt", relative(str(info.value)) + "\n")


@pytest.mark.parametrize("fn", BAD[:6], ids=lambda fn: fn.__name__)
def test_errors_hide_compiler_frames(fn):
    try:
        kernel(fn).lower()
    except GpuCompileError as exc:
        err = exc
    else:  # pragma: no cover
        pytest.fail("expected a compile error")
    assert err.__cause__ is None and err.__suppress_context__
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    assert "cthreads/compiler" not in text
    assert "During handling" not in text and "direct cause" not in text
    assert isinstance(err, TypeError)


def test_every_bad_kernel_has_a_golden():
    names = {fn.__name__ for fn in BAD}
    files = {p.stem for p in (GOLDEN / "errors").glob("*.txt")}
    assert files <= names, f"stale goldens: {sorted(files - names)}"


def test_decoration_errors_hide_frames():
    from cthreads.gpu.kernel import Gpu

    try:
        Gpu(fe_bad_kernels.str_param)
    except GpuCompileError as exc:
        err = exc
    else:  # pragma: no cover
        pytest.fail("expected a signature error")
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    assert "cthreads/compiler" not in text and "kernel.py" in text  # only the decorator's frame
    assert text.count('File "') == 2  # this test, then Gpu()
