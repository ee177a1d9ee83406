"""Buffers: host round trips, device copies, pooling and use after release."""

from __future__ import annotations

import array

import numpy as np
import pytest

from cthreads.errors import GpuArgumentTypeError, GpuInvalidArgument, GpuUseAfterDestroy

SIZES = [1, 3, 4, 5, 63, 255, 256, 257, 1023, 4097, 100_001]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("count", SIZES)
def test_host_round_trip(device, dtype, count):
    rng = np.random.default_rng(count)
    data = (rng.standard_normal(count) * 100).astype(dtype)
    for usage in ("device", "upload", "download"):
        buf = device.buffer(data.nbytes, usage=usage)
        assert buf.nbytes == data.nbytes and buf.kind == usage
        buf.write(data)
        out = np.zeros_like(data)
        buf.read_into(out)
        np.testing.assert_array_equal(out, data)
        buf.release()


@pytest.mark.parametrize("count", [1, 3, 5, 63, 64, 65, 1001, 70_001])
def test_byte_round_trip_through_the_device(device, kernels, count):
    data = np.random.default_rng(count).integers(0, 256, count, dtype=np.uint8)
    up = device.buffer(count, usage="upload")
    src, dst = device.buffer(count), device.buffer(count)
    down = device.buffer(count, usage="download")
    up.write(data)
    cmds = [
        ("copy", up, src, count, 0, 0),
        kernels.dispatch("copy_u8", count, src.address, dst.address, count, 0x5A),
        ("copy", dst, down, count, 0, 0),
    ]
    device.wait(device.submit(cmds, keep=(up, src, dst, down)))
    out = np.empty(count, np.uint8)
    down.read_into(out)
    np.testing.assert_array_equal(out, data ^ 0x5A)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_word_round_trip_through_the_device(device, kernels, dtype):
    n = 12_345
    data = np.random.default_rng(1).standard_normal(n).astype(dtype)
    src, dst = device.buffer(data.nbytes), device.buffer(data.nbytes)
    src.write(data)
    device.wait(device.submit([kernels.dispatch("copy_u32", n, src.address, dst.address, n)]))
    out = np.empty_like(data)
    dst.read_into(out)
    np.testing.assert_array_equal(out, data)


def test_write_read_offsets_and_other_buffer_types(device):
    buf = device.buffer(10)
    buf.write(b"abcdefghij")
    buf.write(bytearray(b"XY"), offset=3)
    buf.write(array.array("B", [33]), 9)
    out = bytearray(10)
    buf.read_into(out)
    assert out == b"abcXYfghi!"
    part = bytearray(4)
    buf.read_into(part, offset=6)
    assert part == b"ghi!"
    view = memoryview(bytearray(3))
    buf.read_into(view, 1)
    assert bytes(view) == b"bcX"


def test_out_of_range_and_bad_objects(device):
    buf = device.buffer(8)
    with pytest.raises(GpuInvalidArgument, match="out of range"):
        buf.write(b"123456789")
    with pytest.raises(GpuInvalidArgument, match="out of range"):
        buf.write(b"12", offset=7)
    with pytest.raises(GpuInvalidArgument, match="out of range"):
        buf.read_into(bytearray(4), offset=-1)
    with pytest.raises(GpuArgumentTypeError, match="writable"):
        buf.read_into(b"immutable")
    with pytest.raises(GpuArgumentTypeError):
        buf.write("a str")
    with pytest.raises(GpuArgumentTypeError, match="contiguous"):
        buf.write(np.arange(8, dtype=np.uint8)[::2])
    with pytest.raises(GpuInvalidArgument, match="usage"):
        device.buffer(8, usage="shared")
    with pytest.raises(GpuInvalidArgument):
        device.buffer(-1)


def test_large_copy_releases_the_gil(device):
    n = 8 << 20
    data = np.frombuffer(np.random.default_rng(0).bytes(n), np.uint8)
    buf = device.buffer(n)
    buf.write(data)
    out = np.empty(n, np.uint8)
    buf.read_into(out)
    assert np.array_equal(out, data)


def test_addresses_are_distinct_and_aligned(device):
    bufs = [device.buffer(n) for n in (1, 100, 4096, 70_000)]
    addrs = [b.address for b in bufs]
    assert len(set(addrs)) == len(addrs)
    assert all(a % device.info.limits["min_storage_buffer_offset_alignment"] == 0 for a in addrs)
    assert all(b.capacity >= b.nbytes for b in bufs)


def test_pool_reuses_memory(device):
    device.wait_idle()
    for _ in range(3):  # warm the pool
        device.buffer(5000).release()
    before = device.stats()["allocations"]
    for _ in range(100):
        b = device.buffer(5000)
        b.write(b"x" * 5000)
        b.release()
    assert device.stats()["allocations"] == before


def test_in_flight_buffer_is_not_handed_out_again(device, kernels):
    device.wait_idle()
    n = 1 << 15
    buf = device.buffer(4 * n)
    addr = buf.address
    value = device.submit([kernels.dispatch("spin", n, buf.address, n, 50000)], keep=(buf,))
    buf.release()
    fresh = [device.buffer(4 * n) for _ in range(3)]
    fresh_addrs = [f.address for f in fresh]
    if device.completed() < value:
        assert addr not in fresh_addrs
    device.wait(value)
    for f in fresh:
        f.release()
    again = device.buffer(4 * n)
    assert again.address in [addr] + fresh_addrs


def test_release_is_idempotent_and_use_after_release_raises(device):
    buf = device.buffer(16)
    buf.release()
    buf.release()
    assert buf.released
    with pytest.raises(GpuUseAfterDestroy):
        buf.write(b"1234")
    with pytest.raises(GpuUseAfterDestroy):
        _ = buf.address
    with pytest.raises(GpuUseAfterDestroy):
        device.submit([("fill", buf, 0, 16, 0)])
    assert "released" in repr(buf)


def test_zero_sized_buffer(device):
    buf = device.buffer(0)
    assert buf.nbytes == 0
    buf.write(b"")
    buf.read_into(bytearray())
    device.wait(device.submit([("copy", buf, buf, 0, 0, 0)]))
