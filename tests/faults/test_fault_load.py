"""Load (issue 6, item 5): 10,000 launches with flat host memory and no leaked Vulkan object;
threads and an asyncio loop hammering one device at once, every result exact."""

from __future__ import annotations

import asyncio
import gc
import os
import threading

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu
from cthreads.runtime import get_device


@Gpu
def bump(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + k


@Gpu
def ibump(n: int, k: int, x: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + k


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# Counters of live objects (the rest of stats() counts events, which grow by design).
LIVE = (
    "vk_buffers",
    "vk_memory",
    "allocated_bytes",
    "buffers_in_use",
    "pipelines",
    "command_buffers",
    "batches_pending",
    "batches_in_flight",
    "ring_in_flight",
    "kept_objects",
)


def live_objects() -> dict[str, int]:
    stats = get_device().stats()
    return {k: stats[k] for k in LIVE}


N = 8  # tiny lists: the test is about per-launch bookkeeping, not bandwidth


def run_mix(rounds: int, xs: list, arr: list, res: list, ires: np.ndarray) -> int:
    """`rounds` x 5 launches: list path, numpy path, resident list, resident int array (fast
    path), and a fresh list each time; joins every 8 rounds. Returns the launch count.

    A non-resident list is uploaded at launch, so round r uses xs[r % 8] / arr[r % 8]: each
    sees one launch per join group (resident ones see every launch, in stream order)."""
    pending = []
    for r in range(rounds):
        pending.append(gpu(bump, N, 1.0, xs[r % 8]))
        pending.append(gpu(bump, N, 1.0, arr[r % 8]))
        pending.append(gpu(bump, N, 1.0, res))
        pending.append(gpu(ibump, N, 1, ires))
        fresh = [float(r)] * N
        pending.append(gpu(bump, N, 0.5, fresh))
        if r % 8 == 7:
            for job in pending:
                job.join(download=True)
            pending.clear()
    for job in pending:
        job.join()
    return 5 * rounds


def test_ten_thousand_launches_flat_host_memory_and_no_leaked_vulkan_objects():
    xs = [[0.0] * N for _ in range(8)]
    arr = [np.zeros(N, np.float32) for _ in range(8)]
    res = [0.0] * N
    ires = np.zeros(N, np.int32)
    with GpuArena().bind(res=res, ires=ires) as arena:
        warm = run_mix(200, xs, arr, res, ires)
        gc.collect()
        get_device().wait_idle()
        objects_before, rss_before = live_objects(), rss_bytes()

        launches = run_mix(2000, xs, arr, res, ires)
        assert launches == 10_000

        gc.collect()
        get_device().wait_idle()
        objects_after, rss_after = live_objects(), rss_bytes()
        arena.sync()
        total = warm + launches
        groups = total // 5 // 8
        assert all(x == [float(groups)] * N for x in xs)
        assert all(a.tolist() == [float(groups)] * N for a in arr)
        assert res == [total / 5] * N
        assert ires.tolist() == [total // 5] * N

    assert objects_after == objects_before
    growth = rss_after - rss_before
    assert growth < 20 * 2**20, f"host memory grew by {growth / 2**20:.1f} MiB over 10,000 launches"


def test_threads_and_an_asyncio_loop_hammer_one_device():
    errors: list[BaseException] = []
    start = threading.Barrier(5)

    def worker(seed: int) -> None:
        try:
            xs = [float(seed)] * 16
            ks = list(range(seed, seed + 16))
            start.wait()
            for _ in range(300):
                gpu(bump, 16, 1.0, xs).join()
                gpu(ibump, 16, -1, ks).join()
            assert xs == [float(seed) + 300.0] * 16
            assert ks == [v - 300 for v in range(seed, seed + 16)]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def event_loop() -> None:
        async def main() -> None:
            lists = [[float(i)] * 4 for i in range(500)]
            start.wait()
            for lo in range(0, 500, 50):  # 50 in flight at a time
                await asyncio.gather(*(gpu(bump, 4, 2.0, lists[i]) for i in range(lo, lo + 50)))
            assert all(xs == [float(i) + 2.0] * 4 for i, xs in enumerate(lists))

        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s * 100,)) for s in range(4)]
    threads.append(threading.Thread(target=event_loop))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]
