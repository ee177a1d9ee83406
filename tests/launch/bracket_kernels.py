"""The kernel both bracket-launch test files run (test_bracket_launch.py,
test_bracket_errors.py): a guarded saxpy."""

from __future__ import annotations

from cthreads.gpu import GlobalIdx, Gpu


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]
