"""Python lists of the explicit element types in a GpuArena (issue 8): `bind_as(t, ...)` packs
them as `t` at bind time, launches (fast path included) use them resident and `sync()` brings
the values back as Python ints / floats; a list bound with plain `bind()` (int32 / float32 /
bool) given to a `list[u8]`-style parameter is an error naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest
from devicehelp import device_target

from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuArgumentTypeError,
    GpuInvalidArgument,
    f16,
    f64,
    gpu,
    i8,
    i16,
    i64,
    u8,
    u16,
    u64,
)
from cthreads.launch import dispatch

_T = device_target()
pytestmark = pytest.mark.skipif(
    _T is None or not (_T.float64 and _T.int64 and _T.float16 and _T.int16 and _T.storage_16bit),
    reason="no Vulkan device with 64-bit and 16-bit types",
)


@Gpu
def bump(
    n: int, a: list[u8], b: list[i8], c: list[i16], d: list[u16], h: list[f16], q: list[i64],
) -> None:  # fmt: skip
    i = GlobalIdx.x
    if i < n:
        a[i] = a[i] + 10
        b[i] = b[i] - 1
        c[i] = c[i] * 2
        d[i] = d[i] + 1
        h[i] = h[i] * 0.5
        q[i] = q[i] * 3


@Gpu
def wide(n: int, u: list[u64], x: list[f64]) -> None:
    i = GlobalIdx.x
    if i < n:
        u[i] = u[i] + u64(1)
        x[i] = x[i] + 1e-12


@Gpu
def only_u8(a: list[u8]) -> None:
    i = GlobalIdx.x
    if i < len(a):
        a[i] = a[i] + 1


def _data():
    return (
        [250, 0, 7, 255],
        [-128, 0, 5, 127],
        [20000, -3, 0, 1],
        [65535, 0, 9, 100],
        [0.1, 1.0, -3.5, 65504.0],
        [2**40, -(2**40), 0, 3],
    )


def _expected():
    a, b, c, d, h, q = (np.array(v, t) for v, t in zip(_data(), (np.uint8, np.int8, np.int16,
                        np.uint16, np.float16, np.int64)))  # fmt: skip
    with np.errstate(over="ignore"):
        return [a + np.uint8(10), b - np.int8(1), c * np.int16(2), d + np.uint16(1),
                h * np.float16(0.5), q * 3]  # fmt: skip


def test_lists_bound_as_their_element_type_work_on_the_fast_path(monkeypatch):
    lists = _data()
    types = (u8, i8, i16, u16, f16, i64)
    with GpuArena() as arena:
        for name, t, v in zip("abcdhq", types, lists):
            arena.bind_as(t, **{name: v})

        def no_general_path(*a, **k):
            raise AssertionError("the general path ran")

        monkeypatch.setattr(dispatch, "_launch", no_general_path)
        gpu(bump, 4, *lists).join(download=False)
        monkeypatch.undo()
        arena.sync()
    for got, want in zip(lists, _expected()):
        assert got == want.tolist()
    assert isinstance(lists[0][0], int) and isinstance(lists[4][0], float)
    assert lists[4][0] == f16(f16(0.1) * 0.5)  # packed as float16 (rounded), then halved


def test_wide_lists_bound_as_u64_and_f64():
    u, x = [2**64 - 1, 2**63, 5], [1.0, 2.0, 3.0]
    with GpuArena().bind_as(u64, u=u).bind_as(f64, x=x) as arena:
        gpu(wide, 3, u, x).join(download=False)
        arena.sync()
    assert u == [0, 2**63 + 1, 6]  # wraps modulo 2**64
    assert x == [1.0 + 1e-12, 2.0 + 1e-12, 3.0 + 1e-12]  # float64 precision


def test_plain_bind_keeps_the_bind_as_type_and_uploads_host_edits():
    a = [1, 2, 3]
    with GpuArena() as arena:
        arena.bind_as(u8, a=a)
        a[0] = 254
        arena.bind(a=a)  # re-bind after a host edit: still uint8
        gpu(only_u8, a).join(download=False)
        arena.sync()
    assert a == [255, 3, 4]


def test_a_list_bound_plainly_for_a_narrow_parameter_is_an_error_naming_it():
    a = [1, 2, 3]
    with GpuArena().bind(a=a), pytest.raises(GpuArgumentTypeError) as info:
        gpu(only_u8, a)
    assert isinstance(info.value, GpuInvalidArgument)
    assert "`a` expects list[u8]" in str(info.value) and "numpy" in str(info.value)


def test_bind_as_errors():
    arena = GpuArena()
    with pytest.raises(GpuInvalidArgument, match="`a`.*uint8"):
        arena.bind_as(u8, a=[1, 300])
    with pytest.raises(GpuArgumentTypeError, match="`b`: bind_as\\(\\) was given uint8"):
        arena.bind_as(u8, b=np.zeros(3, np.int32))
    with pytest.raises(GpuArgumentTypeError, match="takes an element type"):
        arena.bind_as("u8", c=[1])
    assert arena.names() == []
    arena.bind_as(u8, d=np.zeros(3, np.uint8))  # an array of the right dtype is fine
    assert arena.names() == ["d"]
    arena.release()
