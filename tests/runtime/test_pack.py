"""Buffer.pack_list / unpack_into_list: Python lists straight into mapped memory and back."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.errors import GpuArgumentTypeError, GpuInvalidArgument


class MyFloat(float):
    pass


class MyInt(int):
    pass


def test_float_list_round_trip(device):
    values = [0.5, -1.25, 3, 1e30, float("inf"), MyFloat(2.5), MyInt(7)]
    buf = device.buffer(4 * len(values))
    buf.pack_list(values, "f")
    raw = np.empty(len(values), np.float32)
    buf.read_into(raw)
    np.testing.assert_array_equal(raw, np.array(values, dtype=np.float32))
    out = [None] * len(values)
    ident = id(out)
    buf.unpack_into_list(out, "f")
    assert id(out) == ident
    assert out == [float(np.float32(v)) for v in values]
    assert all(type(v) is float for v in out)


def test_int_list_round_trip(device):
    values = [0, 1, -1, 2**31 - 1, -(2**31), MyInt(42)]
    buf = device.buffer(4 * len(values))
    buf.pack_list(values, "i")
    raw = np.empty(len(values), np.int32)
    buf.read_into(raw)
    assert raw.tolist() == values
    out = [0.0] * len(values)
    buf.unpack_into_list(out, "i")
    assert out == values and all(type(v) is int for v in out)


def test_bool_list_round_trip_and_odd_sizes(device):
    for n in (1, 3, 5, 7, 1001):
        values = [(i * 7) % 3 == 0 for i in range(n)]
        buf = device.buffer(n)
        buf.pack_list(values, "B")
        out = [None] * n
        buf.unpack_into_list(out, "B")
        assert out == values and all(type(v) is bool for v in out)


def test_tuple_and_offset(device):
    buf = device.buffer(16)
    buf.pack_list((1, 2), "i", offset=8)
    out = [0, 0, 0, 0]
    buf.pack_list([9, 9], "i")
    buf.unpack_into_list(out, "i")
    assert out == [9, 9, 1, 2]
    tail = [0]
    buf.unpack_into_list(tail, "i", offset=12)
    assert tail == [2]


def test_large_list(device):
    n = 300_000
    values = list(range(n))
    buf = device.buffer(4 * n)
    buf.pack_list(values, "i")
    out = [0] * n
    buf.unpack_into_list(out, "i")
    assert out == values


@pytest.mark.parametrize(
    "values, fmt, message",
    [
        ([1.0, 2.0, 3.0, "x"], "f", "element 3 is str, expected float"),
        ([1.0, True], "f", "element 1 is bool, expected float"),
        ([1, 2.0], "i", "element 1 is float, expected int"),
        ([False], "i", "element 0 is bool, expected int"),
        ([True, 1], "B", "element 1 is int, expected bool"),
        ([None], "B", "element 0 is NoneType, expected bool"),
    ],
)
def test_wrong_element_types_name_index_and_type(device, values, fmt, message):
    buf = device.buffer(64)
    with pytest.raises(GpuArgumentTypeError) as info:
        buf.pack_list(values, fmt)
    assert message in str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, GpuInvalidArgument)


def test_int32_range(device):
    buf = device.buffer(16)
    with pytest.raises(
        GpuInvalidArgument, match=r"element 2 is 2147483648, outside the int32 range"
    ):
        buf.pack_list([0, 1, 2**31], "i")
    with pytest.raises(GpuInvalidArgument, match="element 0 is -2147483649"):
        buf.pack_list([-(2**31) - 1], "i")
    with pytest.raises(GpuInvalidArgument, match="element 0"):
        buf.pack_list([10**400], "i")
    with pytest.raises(GpuInvalidArgument, match="too large for float32"):
        buf.pack_list([10**400], "f")


def test_size_format_and_container_errors(device):
    buf = device.buffer(8)
    with pytest.raises(GpuInvalidArgument, match="do not fit"):
        buf.pack_list([1, 2, 3], "i")
    with pytest.raises(GpuInvalidArgument, match="do not fit"):
        buf.unpack_into_list([0, 0], "i", offset=4)
    with pytest.raises(GpuInvalidArgument, match="unknown list format"):
        buf.pack_list([1], "x")
    with pytest.raises(GpuArgumentTypeError, match="needs a list"):
        buf.pack_list({1, 2}, "i")
    with pytest.raises(GpuArgumentTypeError, match="needs a list"):
        buf.unpack_into_list((0, 0), "i")


def test_unpack_survives_finalizers_that_shrink_the_list(device):
    buf = device.buffer(16)
    buf.pack_list([1, 2, 3, 4], "i")
    target: list = []

    class Shrinker:
        def __del__(self):
            del target[1:]

    target.extend([Shrinker(), 0, 0, 0])
    buf.unpack_into_list(target, "i")
    assert target == [1]


def test_unpack_never_changes_a_float_seen_elsewhere(device):
    n = 5000  # long enough for the prefetching loops
    buf = device.buffer(4 * n)
    buf.write(np.arange(n, dtype=np.float32))
    shared = 123.5
    sub = MyFloat(7.0)
    out = [shared] * 10 + [sub] + [float(i) + 0.25 for i in range(11, n)]
    private = out[20]
    buf.unpack_into_list(out, "f")
    assert out == [float(i) for i in range(n)]
    assert all(type(v) is float for v in out)
    assert shared == 123.5 and sub == 7.0  # referenced elsewhere: replaced, not overwritten
    assert private == 20.25
    buf.unpack_into_list(out, "f")  # now each item is owned by the list alone: reused
    assert out == [float(i) for i in range(n)]


def test_wide_and_unsigned_formats_round_trip(device):
    """'d' float64, 'q' int64, 'I' uint32 (list[f64], list[i64], list[u32] parameters)."""
    buf = device.buffer(64)
    values = [0.1, -2.5, 1e300, 3]
    buf.pack_list(values, "d")
    out = [0.0] * 4
    buf.unpack_into_list(out, "d")
    assert out == [0.1, -2.5, 1e300, 3.0]
    buf.pack_list([2**63 - 1, -(2**63), 5], "q")
    out = [0, 0, 0]
    buf.unpack_into_list(out, "q")
    assert out == [2**63 - 1, -(2**63), 5]
    buf.pack_list([0, 2**32 - 1, 7], "I")
    out = [0, 0, 0]
    buf.unpack_into_list(out, "I")
    assert out == [0, 2**32 - 1, 7]


def test_wide_and_unsigned_format_errors(device):
    buf = device.buffer(64)
    with pytest.raises(
        GpuInvalidArgument, match=r"element 1 is 9223372036854775808, outside the int64"
    ):
        buf.pack_list([0, 2**63], "q")
    with pytest.raises(GpuInvalidArgument, match=r"element 2 is -1, outside the uint32 range"):
        buf.pack_list([0, 1, -1], "I")
    with pytest.raises(GpuInvalidArgument, match=r"element 0 is 4294967296, outside the uint32"):
        buf.pack_list([2**32], "I")
    with pytest.raises(GpuArgumentTypeError, match="element 1 is bool, expected int"):
        buf.pack_list([1, True], "q")
    with pytest.raises(GpuArgumentTypeError, match="element 0 is str, expected float"):
        buf.pack_list(["x"], "d")
    with pytest.raises(GpuInvalidArgument, match="element 0 is an int too large for float64"):
        buf.pack_list([10**400], "d")
