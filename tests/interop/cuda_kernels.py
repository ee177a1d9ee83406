"""Kernels shared by the CUDA exchange tests (tests/interop/test_cuda_*.py)."""

from __future__ import annotations

from cthreads.gpu import GlobalIdx, Gpu

N = 1 << 20
# a kernel of ours that runs for tens of milliseconds: work queued after it that did not wait
# for it would read zeros (its result is 2.0 everywhere)
SLOW_REPS = 1 << 23
# torch.cuda._sleep cycles: ~0.25 s on a ~2 GHz GPU, work queued behind it that ours overtook
# would be seen unfinished
SLEEP_CYCLES = 500_000_000


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def fill(n: int, value: float, y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = value


@Gpu
def slow_two(n: int, reps: int, y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        acc: float = 0.0
        for k in range(reps):
            acc = acc * 0.5 + 1.0
        y[i] = acc
