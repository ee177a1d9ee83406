"""An arena dropped without release() (SPEC §7): its device buffers go back (the runtime's
memory counters return to where they were), its objects can be bound again, and a job still
pending on its lists downloads them at join()."""

from __future__ import annotations

import gc

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu
from cthreads.residency.arena import lookup
from cthreads.runtime import get_device


@Gpu
def bump(n: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + 1.0


MIB4 = (4 << 20) // 4  # float32 elements in 4 MiB


def test_dropped_arenas_give_their_memory_back():
    device = get_device()
    device.wait_idle()
    gc.collect()
    before = device.stats()
    for k in range(40):
        arr = np.full(MIB4, float(k), np.float32)
        arena = GpuArena().bind(x=arr)
        gpu(bump, 16, arr).join(download=False)
        del arena  # no release(): the finalizer frees it
    device.wait_idle()
    gc.collect()
    after = device.stats()
    assert after["buffers_in_use"] <= before["buffers_in_use"]
    # the pool recycles one buffer rather than keeping 40 (160 MiB)
    assert after["allocated_bytes"] - before["allocated_bytes"] <= 2 * (4 << 20)


def test_a_dropped_arenas_objects_can_be_bound_again():
    xs = [1.0, 2.0, 3.0]
    arr = np.zeros(3, np.float32)
    GpuArena().bind(x=xs, a=arr)  # dropped at once
    with GpuArena().bind(y=xs, b=arr) as arena:
        gpu(bump, 3, xs).join(download=False)
        arena.sync("y")
    assert xs == [2.0, 3.0, 4.0]


def test_a_pending_job_still_downloads_after_its_arena_is_dropped():
    xs = [1.0, 2.0, 3.0]
    arena = GpuArena().bind(x=xs)
    job = gpu(bump, 3, xs)
    del arena
    gc.collect()
    job.join()  # the job holds the record, and the record its buffer
    assert xs == [2.0, 3.0, 4.0]
    with GpuArena().bind(x=xs) as again:  # unregistered meanwhile
        assert "x" in again


def test_released_arena_finalizer_does_nothing_more():
    xs = [1.0]
    arena = GpuArena().bind(x=xs)
    arena.release()
    other = GpuArena().bind(x=xs)
    del arena
    gc.collect()
    assert lookup(xs).arena is other  # the later binding is untouched
    other.release()
