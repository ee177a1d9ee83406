"""Kernels under `from __future__ import annotations` (string annotations, never evaluated)."""

# ruff: noqa: UP006, UP035 - typing.List is one of the accepted spellings

from __future__ import annotations

from typing import List

from cthreads.gpu.indices import GlobalIdx
from cthreads.gpu.kernel import GpuKernel


def scale(n: int, k: float, x: list[float], flags: List[bool]) -> None:
    i: int = GlobalIdx.x
    if i < n and flags[i]:
        x[i] = x[i] * k


def bad_str(s: str) -> None:
    pass


def returns_int(x: list[int]) -> int:
    return 0


def make(fn):
    return GpuKernel(fn)
