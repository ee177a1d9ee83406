"""Helpers for the frontend tests: lower a plain function, catch its compile error, goldens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from goldenhelp import check_golden  # noqa: F401 - the suite's one golden switch

from cthreads.compiler.printer import format_kernel
from cthreads.errors import GpuCompileError
from cthreads.gpu.kernel import GpuKernel

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"


def kernel(fn, **options) -> GpuKernel:
    """A kernel object for `fn` (not registered, so tests do not fill the registry)."""
    return GpuKernel(fn, **options)


def ir_text(fn, **options) -> str:
    return format_kernel(kernel(fn, **options).lower())


def compile_error(fn, **options) -> GpuCompileError:
    with pytest.raises(GpuCompileError) as info:
        kernel(fn, **options).lower()
    return info.value


def rejects(fn, reason: str, at: str, allowed: str | None = None) -> GpuCompileError:
    """Assert `fn` fails to lower with `reason` in the message, the caret on text `at`, and
    an `allowed` hint; return the error."""
    err = compile_error(fn)
    assert reason in err.reason, f"{reason!r} not in {err.reason!r}"
    assert err.filename == fn.__code__.co_filename
    assert err.line is not None and err.col is not None
    assert err.line[err.col - 1 :].startswith(
        at
    ), f"caret at {err.line[err.col - 1 :]!r}, wanted {at!r}"
    assert err.allowed, "every compile error says what is allowed instead"
    if allowed is not None:
        assert allowed in err.allowed, f"{allowed!r} not in {err.allowed!r}"
    assert err.kernel == fn.__name__
    return err


def relative(text: str) -> str:
    """Golden texts name files relative to tests/frontend (stable across checkouts)."""
    return text.replace(str(HERE) + os.sep, "")
