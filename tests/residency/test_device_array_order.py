"""`DeviceArray` against the queue (SPEC §5.5): copies are stream-ordered, a download waits only
for the launches that write the array, and memory outlives the queued launches that use it
(release() and collection alike). `QueueGate` holds the queue: no timing anywhere."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, gpu
from cthreads.runtime import get_device
from tests.devicehelp import QueueGate


@Gpu
def scale(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i]


@Gpu
def poke(n: int, base: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[base + i] = 7.0 + i


N = 1024


@pytest.fixture(autouse=True, params=["unified", "discrete"])
def memory_paths(request, monkeypatch):
    """Each test twice: with lavapipe's unified memory (the host reads and writes the buffer
    where it lies), and taking the paths of a discrete GPU (fills, staging copies through the
    queue; the buffer is read in place only while unrelated work is queued)."""
    if request.param == "discrete":
        monkeypatch.setattr(DeviceArray, "_direct", lambda self: False)
    return request.param


def test_a_download_waits_only_for_launches_that_write_the_array():
    x = DeviceArray.from_numpy(np.arange(N, dtype=np.float32))
    y = DeviceArray(N, "f32")
    gpu(scale, N, 2.0, x, x.__class__(N, "f32")).join()  # warm: the kernel is built
    with QueueGate() as gate:
        job = gpu(scale, N, 2.0, x, y)  # reads x, queued behind the gate
        # x's last writer (its upload) is done: reading it must not wait for the gate
        assert np.array_equal(x.numpy(), np.arange(N, dtype=np.float32))
        assert x.to_bytes() == np.arange(N, dtype=np.float32).tobytes()
        assert not job.done()
        gate.open()
        job.join()
    assert np.array_equal(y.numpy(), 2 * np.arange(N, dtype=np.float32))


def test_a_download_waits_for_the_launch_that_writes_it():
    x = DeviceArray.from_numpy(np.ones(N, np.float32))
    y = DeviceArray(N, "f32")
    for _ in range(3):
        gpu(scale, N, 3.0, x, y)
    assert (y.numpy() == 3.0).all()  # no join: numpy() waited for the writer


def test_an_upload_does_not_race_a_queued_launch_that_reads_the_array():
    old = np.arange(N, dtype=np.float32)
    new = np.full(N, -1.0, np.float32)
    x = DeviceArray.from_numpy(old)
    y = DeviceArray(N, "f32")
    gpu(scale, N, 1.0, x, y).join()  # warm
    with QueueGate() as gate:
        gpu(scale, N, 2.0, x, y)  # queued: must see the old x
        opener = threading.Thread(target=gate.open)
        # copy_from may block until that launch is done (direct write) or queue a copy
        # behind it; either way the launch reads the old contents. The gate is opened
        # from another thread so that a blocking copy_from can finish.
        opener.start()
        x.copy_from(new)
        opener.join()
    assert np.array_equal(y.numpy(), 2 * old)
    assert np.array_equal(x.numpy(), new)


def test_release_while_a_launch_is_queued_keeps_the_memory_until_it_ran():
    x = DeviceArray.from_numpy(np.ones(N, np.float32))
    y = DeviceArray(N, "f32")
    gpu(scale, N, 1.0, x, y).join()  # warm
    with QueueGate() as gate:
        job = gpu(scale, N, 5.0, x, y)
        taken = (x.device_address, y.device_address)
        y.release()
        x.release()
        # fresh arrays of the same size now: the pool must not hand out y's or x's memory,
        # which the queued launch still reads and writes
        a = DeviceArray.from_numpy(np.full(N, 9.0, np.float32))
        b = DeviceArray.from_numpy(np.full(N, 4.0, np.float32))
        assert a.device_address not in taken and b.device_address not in taken
        gate.open()
        job.join()
    assert (a.numpy() == 9.0).all() and (b.numpy() == 4.0).all()


def test_collection_waits_for_the_queued_launches_that_use_it():
    device = get_device()
    x = DeviceArray.from_numpy(np.ones(N, np.float32))
    y = DeviceArray(N, "f32")
    gpu(scale, N, 1.0, x, y).join()  # warm
    device.wait_idle()
    gc.collect()
    with QueueGate() as gate:
        job = gpu(scale, N, 5.0, x, y)
        ref = weakref.ref(y)
        address = y.buffer.address
        del y
        gc.collect()
        assert ref() is not None  # the queued launch holds it
        fresh = DeviceArray(N, "f32")
        assert fresh.buffer.address != address
        gate.open()
        job.join()
    device.wait_idle()
    device.completed()  # lets the finished submission drop what it kept
    del job
    gc.collect()
    assert ref() is None  # collected once the launch finished


def test_dropped_arrays_give_their_memory_back():
    device = get_device()
    device.wait_idle()
    gc.collect()
    before = device.stats()
    for k in range(20):
        d = DeviceArray.from_numpy(np.full(1 << 20, float(k), np.float32))  # 4 MiB
        gpu(scale, 16, 1.0, d, DeviceArray(16, "f32")).join()
        del d
    device.wait_idle()
    device.completed()
    gc.collect()
    after = device.stats()
    assert after["buffers_in_use"] <= before["buffers_in_use"]
    assert after["allocated_bytes"] - before["allocated_bytes"] <= 2 * (4 << 20)


def test_arrays_larger_than_max_storage_buffer_range():
    limits = get_device().info.limits
    count = limits["max_storage_buffer_range"] // 4 + 4096
    if 4 * count > limits["max_memory_allocation_size"]:
        pytest.skip("device cannot allocate that much in one piece")
    d = DeviceArray(count, "f32")
    base = count - 16  # past maxStorageBufferRange, reached through the address
    gpu(poke, 16, base, d).join()
    out = d.numpy()
    assert np.array_equal(out[base:], 7.0 + np.arange(16, dtype=np.float32))
    assert not out[:base].any()
    # the whole round trip where the array is modest (lavapipe: 128 MiB); a GPU's range (4 GiB on
    # NVIDIA) would mean several 4 GiB host copies per test process
    if 4 * count <= 1 << 30:
        host = np.arange(count, dtype=np.float32)
        d.copy_from(host)
        assert np.array_equal(d.numpy(), host)
    d.release()
