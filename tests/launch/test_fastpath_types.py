"""The fast launch path covers the explicit scalar types (issue 8): f64 / i64 / u32 / u64 / f16 /
i8 / u8 / i16 / u16 scalars and resident lists of those element types give exactly what the
general path gives; unusual arguments still step aside to the general path's errors."""

from __future__ import annotations

import numpy as np
import pytest
from devicehelp import device_target

from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuInvalidArgument,
    f16,
    f64,
    gpu,
    i8,
    i16,
    i64,
    u8,
    u16,
    u32,
    u64,
)
from cthreads.launch import dispatch

_T = device_target()
pytestmark = pytest.mark.skipif(
    _T is None or not (_T.float64 and _T.int64 and _T.float16 and _T.int16 and _T.storage_16bit),
    reason="no Vulkan device with 64-bit and 16-bit types",
)


@Gpu
def typed_scalars(
    n: int, a: f64, b: i64, c: u32, d: u64, h: f16, k: u8, s: i16, t: i8, w: u16,
    xs: list[f64], ys: list[i64], qs: list[u64],
) -> None:  # fmt: skip
    i = GlobalIdx.x
    if i < n:
        xs[i] = xs[i] * a + f64(h)
        ys[i] = ys[i] + b + i64(s) + i64(t)
        qs[i] = qs[i] + d + u64(c) + u64(k) + u64(w)


@Gpu
def typed_lists(
    n: int, us: list[u32], hs: list[f16], bs: list[u8], ws: list[i16], zs: list[i8],
    vs: list[u16],
) -> None:  # fmt: skip
    i = GlobalIdx.x
    if i < n:
        us[i] = us[i] * u32(3)
        hs[i] = hs[i] * 1.5
        bs[i] = bs[i] + 200
        ws[i] = ws[i] - 30000
        zs[i] = zs[i] * -3
        vs[i] = vs[i] + 65000


def _scalar_lists(n):
    rng = np.random.default_rng(3)
    return [
        rng.random(n),
        rng.integers(-(2**62), 2**62, n, dtype=np.int64),
        rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False),
    ]


def _typed_lists(n):
    rng = np.random.default_rng(4)
    return [
        rng.integers(0, 2**32, n, dtype=np.uint32),
        (rng.random(n) * 8).astype(np.float16),
        rng.integers(0, 256, n, dtype=np.uint8),
        rng.integers(-32768, 32768, n, dtype=np.int16),
        rng.integers(-128, 128, n, dtype=np.int8),
        rng.integers(0, 65536, n, dtype=np.uint16),
    ]


SCALARS = (1.0 + 2.0**-40, -(2**40), 4_000_000_001, 2**63 + 5, 1.5, 200, -30000, -3, 65000)


def _no_general_path(*a, **k):
    raise AssertionError("the general path ran")


@pytest.mark.parametrize(
    "kernel, scalars, make",
    [(typed_scalars, SCALARS, _scalar_lists), (typed_lists, (), _typed_lists)],
)
def test_typed_scalars_and_resident_lists_take_the_fast_path(monkeypatch, kernel, scalars, make):
    n = 300
    lists, ref = make(n), make(n)
    gpu(kernel, n, *scalars, *ref).join()  # general path (nothing resident)
    gpu(kernel, n, *scalars, *ref).join()
    with GpuArena().bind(**{f"l{j}": v for j, v in enumerate(lists)}) as arena:
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        gpu(kernel, n, *scalars, *lists).join(download=False)
        gpu(kernel, n, *scalars, *lists).join(download=False)  # the same function again
        monkeypatch.undo()
        arena.sync()
    for got, want in zip(lists, ref):
        np.testing.assert_array_equal(got, want)
    if kernel is typed_scalars:
        assert (lists[0] != lists[0].astype(np.float32)).all()  # f64 all the way


@pytest.mark.parametrize(
    "index, value, match",
    [
        (5, 256, "outside \\[0, 255\\]"),  # k: u8
        (3, -1, "outside \\[0, 18446744073709551615\\]"),  # d: u64
        (4, 1e6, "overflows float16"),  # h: f16
        (2, 1.0, "expects u32"),  # c: u32, a float
    ],
)
def test_unusual_typed_scalars_fall_back_and_still_raise(index, value, match):
    n = 4
    lists = _scalar_lists(n)
    args = list(SCALARS)
    args[index] = value
    arena = GpuArena().bind(**{f"l{j}": v for j, v in enumerate(lists)})
    with arena, pytest.raises(GpuInvalidArgument, match=match):
        gpu(typed_scalars, n, *args, *lists)


def test_numpy_scalars_and_rounded_f16_take_the_general_path_with_equal_results():
    n = 8
    a, b = _scalar_lists(n), _scalar_lists(n)
    with GpuArena().bind(**{f"l{j}": v for j, v in enumerate(a)}) as arena:
        args = list(SCALARS)
        args[4] = 1.0001  # rounds to f16(1.0001) == 1.0 on the fast path too
        gpu(typed_scalars, n, *args, *a).join(download=False)
        arena.sync()
    args[4] = np.float16(1.0001)  # a numpy scalar: the general path converts it
    with GpuArena().bind(**{f"l{j}": v for j, v in enumerate(b)}) as arena:
        gpu(typed_scalars, n, *args, *b).join(download=False)
        arena.sync()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
