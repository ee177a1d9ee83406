"""SPEC §5.1–5.3: every argument is checked before anything runs; errors name the parameter."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuInvalidArgument, gpu


@Gpu
def scale(n: int, k: float, flag: bool, x: list[float], out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n and flag:
        out[i] = int(x[i] * k)


def plain(x):
    return x


GOOD = (3, 2.0, True, [1.0, 2.0, 3.0], [0, 0, 0])


def call(**over):
    names = ["n", "k", "flag", "x", "out"]
    args = [over.get(name, value) for name, value in zip(names, GOOD)]
    return gpu(scale, *args)


def test_good_call_runs():
    out = [0, 0, 0]
    gpu(scale, 3, 2.0, True, [1.0, 2.0, 3.0], out).join()
    assert out == [2, 4, 6]


def test_not_a_kernel():
    with pytest.raises(TypeError, match=r"gpu\(\) needs a @Gpu kernel .* `plain`"):
        gpu(plain, 1)


def test_keywords_rejected():
    with pytest.raises(TypeError, match=r"by position only; got keyword argument\(s\) `n`"):
        gpu(scale, n=3)


def test_arity():
    with pytest.raises(
        TypeError, match=r"kernel `scale` takes 5 argument\(s\) \(n, k, flag, x, out\); got 2"
    ):
        gpu(scale, 1, 2.0)


@pytest.mark.parametrize(
    "over, cls, message",
    [
        ({"n": 2.5}, TypeError, "`n` expects int (int32); got float"),
        ({"n": True}, TypeError, "`n` expects int (int32); got bool"),
        (
            {"n": 2**31},
            GpuInvalidArgument,
            "`n` expects int (int32); got 2147483648, outside [-2**31, 2**31 - 1]",
        ),
        ({"k": "2"}, TypeError, "`k` expects float (float32); got str"),
        (
            {"k": 1e39},
            GpuInvalidArgument,
            "`k` expects float (float32); got 1e+39, which overflows float32",
        ),
        ({"flag": 1}, TypeError, "`flag` expects bool; got int"),
        ({"x": 3.0}, TypeError, "`x` expects list[float] (float32); got float"),
        (
            {"x": []},
            GpuInvalidArgument,
            "`x` expects a non-empty list[float] (float32); got an empty list",
        ),
        (
            {"x": np.zeros(3)},
            TypeError,
            "`x` expects list[float] (float32); got numpy array of float64",
        ),
        (
            {"x": np.zeros(6, np.float32)[::2]},
            GpuInvalidArgument,
            "`x` expects a C-contiguous buffer",
        ),
        (
            {"out": np.zeros(3, np.int64)},
            TypeError,
            "`out` expects list[int] (int32); got numpy array of int64",
        ),
        ({"x": [1.0, "a", 3.0]}, TypeError, "`x` expects list[float] (float32); element 1"),
        ({"out": [0, 1.5, 0]}, TypeError, "`out` expects list[int] (int32); element 1"),
        ({"out": [0, 2**40, 0]}, GpuInvalidArgument, "`out` expects list[int] (int32); element 1"),
    ],
)
def test_contract_errors(over, cls, message):
    with pytest.raises(cls, match=re.escape(message)) as info:
        call(**over)
    assert isinstance(info.value, GpuInvalidArgument)
    name = next(iter(over))
    assert info.value.param == name


def test_read_only_array_for_written_list():
    out = np.zeros(3, np.int32)
    out.setflags(write=False)
    with pytest.raises(
        GpuInvalidArgument, match=r"`out` is written by the kernel but .* read-only"
    ):
        gpu(scale, 3, 2.0, True, [1.0, 2.0, 3.0], out)


def test_read_only_array_for_read_list_is_fine():
    x = np.array([1, 2, 3], np.float32)
    x.setflags(write=False)
    out = [0, 0, 0]
    gpu(scale, 3, 2.0, True, x, out).join()
    assert out == [2, 4, 6]


def test_failed_call_leaves_library_working():
    with pytest.raises(TypeError):
        call(x=[1.0, None, 2.0])
    test_good_call_runs()


@Gpu
def copy_into(src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    dst[i] = src[i]


def test_same_list_for_a_written_parameter_is_refused():
    xs = [1.0, 2.0]
    with pytest.raises(GpuInvalidArgument, match=r"same object is passed as `src` and `dst`"):
        gpu(copy_into, xs, xs)
