"""Out-of-memory: a clear VulkanOutOfMemory, and the device keeps working."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.errors import VulkanOutOfMemory


def test_oversized_allocation_raises_and_device_survives(device, kernels):
    heap = max(h["size"] for h in device.info.memory_heaps)
    with pytest.raises(VulkanOutOfMemory) as info:
        device.buffer(heap * 4)
    message = str(info.value)
    assert str(heap * 4) in message and str(heap) in message
    assert isinstance(info.value, MemoryError)
    # still usable
    n = 100
    buf = device.buffer(4 * n)
    buf.write(np.zeros(n, np.int32))
    device.wait(device.submit([kernels.dispatch("add_i32", n, buf.address, n, 5)]))
    out = np.empty(n, np.int32)
    buf.read_into(out)
    assert (out == 5).all()


def test_beyond_max_allocation_size(device):
    limit = device.info.limits["max_memory_allocation_size"]
    heap = max(h["size"] for h in device.info.memory_heaps)
    if limit >= heap:
        pytest.skip("maxMemoryAllocationSize covers the whole heap")
    with pytest.raises(VulkanOutOfMemory, match="at most"):
        device.buffer(limit + 1)


def test_large_allocation_beyond_storage_buffer_range(device, kernels):
    # buffers are reached by device address, so maxStorageBufferRange is not a size limit
    size = device.info.limits["max_storage_buffer_range"] + 4096
    if size > device.info.limits["max_memory_allocation_size"]:
        pytest.skip("device cannot allocate that much in one piece")
    buf = device.buffer(size)
    buf.write(b"\x07" * 16, offset=size - 16)
    out = bytearray(16)
    buf.read_into(out, offset=size - 16)
    assert out == b"\x07" * 16
    # a kernel writes the last 4 words, past maxStorageBufferRange, through the address
    tail = buf.address + size - 16
    device.wait(device.submit([kernels.dispatch("fill_u32", 4, tail, 4, 0x01020304)], keep=(buf,)))
    buf.read_into(out, offset=size - 16)
    assert out == bytes([4, 3, 2, 1]) * 4
    buf.release()
    device.trim()


def test_a_buffers_repr_shows_its_address():
    # (the native repr used %llx, which PyUnicode_FromFormat does not know: it printed the
    # format text itself, "at 0x%llx%s")
    import re

    from cthreads.runtime import get_device

    buf = get_device().buffer(64)
    text = repr(buf)
    assert re.fullmatch(r"<Buffer \w+ 64 bytes at 0x[0-9a-f]+(, host-visible)?>", text), text
    buf.release()
    assert repr(buf).endswith("released>")
