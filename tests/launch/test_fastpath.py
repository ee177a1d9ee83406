"""The generated fast path (all lists resident, exact scalar types) gives exactly what the
general path gives, and steps aside for everything else."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import BlockIdx, GlobalIdx, Gpu, GpuArena, GpuInvalidArgument, ThreadIdx, gpu
from cthreads.launch import dispatch


@Gpu
def mixed(n: int, a: float, flag: bool, xs: list[float], ks: list[int], bs: list[bool]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        xs[i] = xs[i] * a + float(ks[i])
        ks[i] = ks[i] + (1 if flag else -1)
        bs[i] = not bs[i]


@Gpu
def blocks(out: list[int]) -> None:
    i: int = GlobalIdx.x
    out[i] = BlockIdx.x * 1000 + ThreadIdx.x


def _data(n):
    return [float(i) for i in range(n)], list(range(n)), [i % 3 == 0 for i in range(n)]


def test_fast_path_equals_general_path(monkeypatch):
    n = 300
    xs, ks, bs = _data(n)
    rx, rk, rb = _data(n)
    gpu(mixed, n, 1.5, True, rx, rk, rb).join()  # general path (nothing resident)
    with GpuArena().bind(xs=xs, ks=ks, bs=bs) as arena:

        def no_general_path(*a, **k):
            raise AssertionError("the general path ran")

        monkeypatch.setattr(dispatch, "_launch", no_general_path)
        gpu(mixed, n, 1.5, True, xs, ks, bs).join(download=False)
        monkeypatch.undo()
        arena.sync()
    assert xs == rx and ks == rk and bs == rb


def test_fast_path_with_numpy_and_observed_workgroup():
    out = np.zeros(200, np.int32)
    with GpuArena().bind(out=out) as arena:
        gpu(blocks, out).join(download=False)
        arena.sync()
    assert out.tolist() == [(i // 64) * 1000 + i % 64 for i in range(200)]


def test_unusual_arguments_fall_back_and_still_raise():
    n = 4
    xs, ks, bs = _data(n)
    with GpuArena().bind(xs=xs, ks=ks, bs=bs):
        with pytest.raises(TypeError, match="`flag` expects bool; got int"):
            gpu(mixed, n, 1.5, 1, xs, ks, bs)
        with pytest.raises(TypeError, match="`a` expects float"):
            gpu(mixed, n, "1.5", True, xs, ks, bs)
        gpu(mixed, n, 2, True, xs, ks, bs).join()  # an int for a float: general path, accepted
        assert xs == [0.0 * 2 + 0, 1.0 * 2 + 1, 2.0 * 2 + 2, 3.0 * 2 + 3]
        xs.append(9.0)
        with pytest.raises(GpuInvalidArgument, match="with 4 elements but now has 5"):
            gpu(mixed, n, 1.5, True, xs, ks, bs)
        xs.pop()
    ys = [0.0] * 4
    with (
        GpuArena().bind(ys=ys),
        pytest.raises(GpuInvalidArgument, match="same object is passed as `src` and `dst`"),
    ):
        gpu(copy_into, ys, ys)


@Gpu
def copy_into(src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    dst[i] = src[i]
