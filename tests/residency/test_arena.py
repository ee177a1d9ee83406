"""SPEC §7 GpuArena: residency by identity + length, bind/sync/release, errors, ordering."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuInvalidArgument,
    GpuUseAfterDestroy,
    gpu,
    prepare,
)


@Gpu
def step(n: int, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = y[i] * 0.5 + x[i]


@Gpu
def produce(n: int, src: list[float], mid: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        mid[i] = src[i] * 2.0


@Gpu
def consume(n: int, mid: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = mid[i] + 1.0


@pytest.mark.parametrize("kind", ["list", "numpy"])
def test_arena_loop_equals_launch_by_launch(kind):
    n = 1000
    x0 = [float(i % 7) for i in range(n)]
    y0 = [1.0] * n
    mk = (lambda v: list(v)) if kind == "list" else (lambda v: np.array(v, np.float32))
    x, y = mk(x0), mk(y0)
    with GpuArena() as arena:
        arena.bind(x=x, y=y)
        for _ in range(200):
            gpu(step, n, x, y).join(download=False)
        arena.sync()
    xr, yr = mk(x0), mk(y0)
    for _ in range(200):
        gpu(step, n, xr, yr).join()
    assert np.array_equal(np.asarray(y, np.float32), np.asarray(yr, np.float32))


def test_two_phase_without_joins():
    n = 300
    src = [float(i) for i in range(n)]
    mid = [0.0] * n
    out = [0.0] * n
    with GpuArena().bind(src=src, mid=mid, out=out) as arena:
        gpu(produce, n, src, mid)
        job = gpu(consume, n, mid, out)
        job.join(download=False)
        arena.sync("out")
    assert out == [i * 2.0 + 1.0 for i in range(n)]
    assert mid == [0.0] * n  # never synced: stale on the host, as documented


def test_host_edits_visible_only_after_rebind():
    n = 4
    x = [1.0] * n
    y = [0.0] * n
    arena = GpuArena().bind(x=x, y=y)
    x[:] = [10.0] * n  # host edit, not re-bound
    gpu(step, n, x, y).join(download=False)
    arena.sync("y")
    assert y == [1.0] * n
    arena.bind(x=x)
    y2 = [0.0] * n
    arena.bind(y=y2)
    gpu(step, n, x, y2).join(download=False)
    arena.sync("y")
    assert y2 == [10.0] * n
    arena.release()


def test_names_contains_nbytes_and_release():
    x = np.zeros(10, np.float32)
    flags = [True, False]
    arena = GpuArena().bind(x=x, flags=flags)
    assert sorted(arena.names()) == ["flags", "x"] and "x" in arena and "z" not in arena
    assert arena.nbytes == 40 + 2
    arena.release()
    assert arena.names() == []
    with pytest.raises(GpuInvalidArgument, match="released"):
        arena.bind(x=x)
    with pytest.raises(GpuInvalidArgument, match="released"):
        arena.sync()


def test_errors():
    arena = GpuArena()
    with pytest.raises(GpuInvalidArgument, match="empty"):
        arena.bind(x=[])
    xs = [1.0, 2.0]
    arena.bind(x=xs)
    with pytest.raises(GpuInvalidArgument, match="already bound as `x` in this arena"):
        arena.bind(other=xs)
    with pytest.raises(GpuInvalidArgument, match="already bound as `x` in another arena"):
        GpuArena().bind(x=xs)
    with pytest.raises(GpuInvalidArgument, match="no binding named `nope`"):
        arena.sync("nope")
    xs.append(3.0)
    with pytest.raises(
        GpuInvalidArgument, match="bound in a GpuArena as `x` with 2 elements but now has 3"
    ):
        gpu(step, 2, xs, [0.0, 0.0, 0.0])
    arena.release()


def test_failed_bind_leaves_existing_bindings():
    arena = GpuArena().bind(x=[1.0, 2.0])
    with pytest.raises(TypeError):
        arena.bind(y=[1.0, 2.0], z=["a"])
    assert arena.names() == ["x"]
    arena.release()


def test_force_prepare_makes_arena_use_raise():
    xs = [1.0]
    arena = GpuArena().bind(x=xs)
    prepare(force=True)
    with pytest.raises(GpuUseAfterDestroy):
        arena.sync()
    with pytest.raises(GpuUseAfterDestroy):
        gpu(step, 1, xs, [0.0])
    arena.release()  # releasing is always allowed
    y = [0.0]
    gpu(step, 1, [2.0], y).join()
    assert y == [2.0]


def test_binding_past_device_memory_fails_cleanly():
    from cthreads.gpu import VulkanOutOfMemory

    xs = [1.0, 2.0, 3.0]
    arena = GpuArena().bind(x=xs)
    from cthreads.runtime import get_device

    limit = get_device().info.limits["max_memory_allocation_size"]
    huge = np.zeros(limit // 4 + 16, np.float32)  # one buffer larger than the device allows
    with pytest.raises(VulkanOutOfMemory, match="cannot allocate") as info:
        arena.bind(big=huge)
    assert isinstance(info.value, MemoryError)
    assert arena.names() == ["x"] and arena.nbytes == 12
    y = [0.0, 0.0, 0.0]
    gpu(step, 3, xs, y).join()
    assert y == [1.0, 2.0, 3.0]
    arena.sync("x")
    assert xs == [1.0, 2.0, 3.0]
    arena.release()


@Gpu
def slow_copy(n: int, rounds: int, src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        acc: float = 0.0
        for r in range(rounds):
            acc = acc + src[i] * 0.0
        dst[i] = src[i] + acc


def test_rebind_waits_for_launches_still_reading_the_old_contents():
    n = 4096
    src = [1.0] * n
    dst = [0.0] * n
    with GpuArena().bind(src=src, dst=dst) as arena:
        job = gpu(slow_copy, n, 3000, src, dst)  # still running when the host edits src
        src[:] = [2.0] * n
        arena.bind(src=src)  # re-upload: must not tear the running launch's input
        job.join(download=False)
        arena.sync("dst")
        assert dst == [1.0] * n  # every element saw the old contents
        gpu(slow_copy, n, 1, src, dst).join(download=False)
        arena.sync("dst")
        assert dst == [2.0] * n


def test_after_shutdown_the_same_objects_bind_in_a_new_arena():
    from cthreads.gpu import shutdown

    xs = [1.0, 2.0]
    old = GpuArena().bind(x=xs)
    shutdown()
    with pytest.raises(GpuUseAfterDestroy, match="bind it again in a new GpuArena"):
        old.sync()
    y = [0.0, 0.0]
    with GpuArena().bind(x=xs, y=y) as new:  # no need to release the dead arena first
        gpu(step, 2, xs, y).join(download=False)
        new.sync("y")
    assert y == [1.0, 2.0]
    old.release()  # still allowed, and it does not disturb the new binding's bookkeeping
