"""The kernels and data the stream tests share (test_streams.py, test_lanes.py)."""

from __future__ import annotations

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu

N = 4096


@Gpu
def add_k(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + k


@Gpu
def scaled(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i]


def arange() -> np.ndarray:
    return np.arange(N, dtype=np.float32)
