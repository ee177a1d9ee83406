"""Kernels for the cthreads.dask tests, in a module of their own: dask workers import them by
name (a spawned worker inherits the test process's sys.path, where pytest put this folder);
also `held_chunk`, an input task that waits for the test's go-ahead (the kill test)."""

from __future__ import annotations

from cthreads.gpu import GlobalIdx, Gpu


@Gpu
def add_scaled(n: int, a: float, x: list[float], y: list[float]) -> None:
    """y = a * x + y."""
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def whole_and_frac(n: int, x: list[float], whole: list[int], frac: list[float]) -> None:
    """Two outputs of two element types: whole[i] = floor(x[i]), frac[i] = x[i] - floor(x[i])."""
    i: int = GlobalIdx.x
    if i < n:
        w: int = int(x[i] // 1.0)
        whole[i] = w
        frac[i] = x[i] - float(w)


@Gpu
def count_up(n: int, steps: int, x: list[int], y: list[int]) -> None:
    """y[i] = x[i] + steps, one step at a time: a chunk that takes a while (the kill test)."""
    i: int = GlobalIdx.x
    if i < n:
        acc: int = x[i]
        k: int = 0
        while k < steps:
            acc += 1
            k += 1
        y[i] = acc


@Gpu
def no_n(x: list[float], y: list[float]) -> None:
    """No `n` parameter: the problem size is the longest list (the chunk)."""
    i: int = GlobalIdx.x
    if i < len(y):
        y[i] = x[i] * 2.0


@Gpu
def only_reads(n: int, x: list[float]) -> None:
    """Writes nothing: map_blocks has no output to give (a refused kernel)."""
    i: int = GlobalIdx.x
    if i < n:
        v: float = x[i]
        v += 1.0


@Gpu
def does_not_compile(n: int, x: list[float]) -> None:
    """Outside the kernel language (a string): a GpuCompileError where it is built."""
    i: int = GlobalIdx.x
    if i < n:
        x[i] = len("text")


def held_chunk(first: int, size: int, event_name: str):
    """int32 values first .. first + size - 1, once the test sets the `distributed.Event`
    `event_name`: while it is not set, no task of a computation reading this chunk can end."""
    import distributed
    import numpy as np

    distributed.Event(event_name).wait()
    return np.arange(first, first + size, dtype=np.int32)
