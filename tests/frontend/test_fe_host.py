"""Host-side behaviour of the kernel-language names: index builtins, Barrier, __sync_threads."""

from __future__ import annotations

import threading

import pytest

from cthreads.gpu.indices import BlockDim, BlockIdx, GlobalIdx, GridDim, ThreadIdx, invocation
from cthreads.sync import Barrier, __sync_threads


def test_index_builtins_default_to_one_invocation():
    assert (GlobalIdx.x, GlobalIdx.y, GlobalIdx.z) == (0, 0, 0)
    assert (ThreadIdx.x, BlockIdx.x) == (0, 0)
    assert (BlockDim.x, BlockDim.y, BlockDim.z) == (1, 1, 1)
    assert (GridDim.x, GridDim.y, GridDim.z) == (1, 1, 1)


def test_invocation_sets_consistent_indices():
    with invocation(
        group_id=(2, 1), local_id=(3, 0, 1), group_size=(64, 2, 2), num_groups=(4, 2, 1)
    ):
        assert (GlobalIdx.x, GlobalIdx.y, GlobalIdx.z) == (2 * 64 + 3, 1 * 2 + 0, 0 * 2 + 1)
        assert GlobalIdx.x == BlockIdx.x * BlockDim.x + ThreadIdx.x
        assert (GridDim.x, GridDim.y) == (4, 2)
    assert GlobalIdx.x == 0  # restored


def test_invocation_is_per_thread():
    seen = []

    def worker():
        seen.append(GlobalIdx.x)

    with invocation(group_id=5):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert GlobalIdx.x == 5
    assert seen == [0]


@pytest.mark.parametrize("bad", [{"group_size": 0}, {"local_id": -1}, {"group_id": (1, 2, 3, 4)}])
def test_invocation_validates(bad):
    with pytest.raises(ValueError, match="invocation"), invocation(**bad):
        pass


def test_index_builtins_are_read_only():
    with pytest.raises(AttributeError):
        GlobalIdx.x = 3
    assert "GlobalIdx" in repr(GlobalIdx)


def test_sync_threads_raises_on_host():
    with pytest.raises(
        RuntimeError,
        match=r"__sync_threads\(\) is a workgroup barrier and only works inside a @Gpu kernel",
    ):
        __sync_threads()


def test_barrier_class_form_raises_on_host():
    with pytest.raises(RuntimeError, match="only works inside a @Gpu kernel"):
        Barrier.arrive_and_wait()


def test_host_barrier_is_a_thread_barrier():
    barrier = Barrier(3)
    assert isinstance(barrier, threading.Barrier) and barrier.parties == 3
    order = []

    def worker(k):
        order.append(("before", k))
        barrier.arrive_and_wait()
        order.append(("after", k))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert [o[0] for o in order[:3]] == ["before"] * 3 and len(order) == 6


def test_host_barrier_validates_parties():
    with pytest.raises(ValueError, match="positive int"):
        Barrier(0)
    b = Barrier(2)
    with pytest.raises(threading.BrokenBarrierError):
        b.arrive_and_wait(timeout=0.01)
