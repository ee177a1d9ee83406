"""Out-of-memory mid-run (issue 6, item 5): with launches in flight and arena bindings alive, a
list larger than one device allocation may be raises VulkanOutOfMemory; nothing earlier is
disturbed, no buffer leaks, and the next launch works."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, VulkanOutOfMemory, gpu
from cthreads.runtime import get_device


@Gpu
def axpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


N = 1024


def test_allocation_beyond_the_device_limit_mid_run_leaves_everything_intact():
    device = get_device()
    limit = device.info.limits["max_memory_allocation_size"]
    # np.zeros maps lazily: 2 GiB+ of address space, no host RAM touched
    huge = np.zeros(limit // 4 + 16, np.float32)

    x = np.arange(N, dtype=np.float32)
    y = [1.0] * N
    arena = GpuArena().bind(x=x, y=y)
    for _ in range(5):  # resident launches, never joined with download
        gpu(axpy, N, 2.0, x, y)
    side_x, side_y = [3.0] * 16, [0.0] * 16
    in_flight = gpu(axpy, 16, 1.0, side_x, side_y)  # non-resident, not joined yet
    in_use = device.stats()["buffers_in_use"]

    with pytest.raises(VulkanOutOfMemory) as info:  # the launch path
        gpu(axpy, 1, 1.0, huge, [0.0])
    assert isinstance(info.value, MemoryError)
    assert f"`x` ({huge.size} elements, {huge.nbytes} bytes) does not fit" in str(info.value)

    with pytest.raises(VulkanOutOfMemory, match="`y`"):  # second list fails after the first
        gpu(axpy, 1, 1.0, [1.0], huge)

    with pytest.raises(VulkanOutOfMemory, match="cannot allocate"):  # the residency path
        arena.bind(big=huge)
    assert arena.names() == ["x", "y"] and arena.nbytes == 2 * 4 * N

    # nothing leaked from the failed attempts (the second one had allocated `x` already)
    assert device.stats()["buffers_in_use"] == in_use

    in_flight.join()
    assert side_y == [3.0] * 16 and side_x == [3.0] * 16
    arena.sync()
    expected = (1.0 + 5 * 2.0 * np.arange(N)).tolist()  # exact in float32
    assert y == expected
    assert x.tolist() == list(range(N))

    # the next launches work: resident and not
    gpu(axpy, N, -2.0, x, y).join(download=False)
    arena.sync("y")
    assert y == (1.0 + 4 * 2.0 * np.arange(N)).tolist()
    fresh = [0.5] * 8
    gpu(axpy, 8, 2.0, [1.0] * 8, fresh).join()
    assert fresh == [2.5] * 8
    arena.release()
    assert device.alive and get_device() is device  # the same device throughout


def test_arena_out_of_memory_names_the_binding():
    limit = get_device().info.limits["max_memory_allocation_size"]
    huge = np.zeros(limit // 4 + 16, np.float32)
    with GpuArena() as arena, pytest.raises(VulkanOutOfMemory) as info:
        arena.bind(big=huge)
    assert "`big`" in str(info.value)
