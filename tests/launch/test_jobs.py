"""SPEC §6 GpuJob: join/await/done/result, timeouts, concurrency, stream order, lifetimes."""

from __future__ import annotations

import asyncio
import gc
import threading

import numpy as np
import pytest
from devicehelp import QueueGate

from cthreads import Job
from cthreads.gpu import GlobalIdx, Gpu, GpuJob, GpuTimeout, gpu


@Gpu
def add_k(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + k


@Gpu
def spin(n: int, rounds: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        acc: float = x[i]
        for r in range(rounds):
            acc = acc * 0.999999 + 0.000001
        x[i] = acc


def test_job_type_and_members():
    x = [1.0, 2.0]
    job = gpu(add_k, 2, 1.0, x)
    assert isinstance(job, GpuJob) and isinstance(job, Job)
    assert job.start() is job  # harmless
    assert job.result() is None
    job.join()
    assert job.done() and x == [2.0, 3.0]
    job.join()  # repeatable, no second writeback
    assert x == [2.0, 3.0]
    assert job.result() is None


def test_download_false_discards_non_resident_results():
    x = [1.0, 2.0]
    job = gpu(add_k, 2, 1.0, x)
    job.join(download=False)
    assert x == [1.0, 2.0]
    job.join()  # results were discarded by download=False (documented)
    assert x == [1.0, 2.0]


def test_join_timeout_leaves_job_pending():
    n = 1 << 14
    x = np.zeros(n, np.float32)
    with QueueGate() as gate:  # the job is queued behind it: it cannot finish before open()
        job = gpu(spin, n, 2, x)
        with pytest.raises(GpuTimeout, match="did not finish within 0.0 s"):
            job.join(timeout=0.0)
        with pytest.raises(GpuTimeout, match="did not finish within 0.05 s"):
            job.join(timeout=0.05)
        assert not job.done() and float(x[0]) == 0.0
        gate.open()
        job.join()
    assert isinstance(GpuTimeout("x"), TimeoutError)
    assert job.done() and float(x[0]) > 0.0


def test_await_then_join_and_reverse():
    async def main():
        x = [0.0] * 8
        job = gpu(add_k, 8, 2.0, x)
        await job
        assert x == [2.0] * 8
        job.join()
        y = [0.0] * 8
        job2 = gpu(add_k, 8, 3.0, y)
        job2.join()
        await job2
        assert y == [3.0] * 8

    asyncio.run(main())


def test_thousand_concurrent_awaited_jobs():
    async def main():
        lists = [[float(i)] * 4 for i in range(1000)]
        jobs = [gpu(add_k, 4, 1.0, xs) for xs in lists]
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        await asyncio.gather(*jobs)
        t.cancel()
        assert all(xs == [float(i) + 1.0] * 4 for i, xs in enumerate(lists))
        assert ticks > 0  # the loop kept running while jobs were pending

    asyncio.run(main())


def test_threads_launching_on_their_own_lists():
    errors: list[BaseException] = []

    def worker(seed: int):
        try:
            xs = [float(seed)] * 16
            for _ in range(200):
                gpu(add_k, 16, 1.0, xs).join()
            assert xs == [float(seed) + 200.0] * 16
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_dropped_job_completes_safely():
    x = np.zeros(1 << 12, np.float32)
    gpu(spin, x.size, 2000, x)  # dropped at once
    gc.collect()
    y = [1.0]
    gpu(add_k, 1, 1.0, y).join()  # the device keeps working
    assert y == [2.0]


def test_chain_of_dependent_launches_on_resident_data():
    from cthreads.gpu import GpuArena

    x = [0.0] * 100
    with GpuArena().bind(x=x) as arena:
        jobs = [gpu(add_k, 100, 1.0, x) for _ in range(50)]
        jobs[-1].join(download=False)
        arena.sync("x")
    assert x == [50.0] * 100


def test_elapsed_ms_from_device_timestamps():
    x = [0.0] * 64
    job = gpu(add_k, 64, 1.0, x)
    assert job.elapsed_ms is None or job.done()
    job.join()
    assert job.elapsed_ms is None  # not timed: no timestamps were written
    n = 1 << 14
    y = np.zeros(n, np.float32)
    timed = gpu(spin, n, 2000, y, timed=True)
    timed.join()
    assert timed.elapsed_ms is not None and timed.elapsed_ms > 0.0


def test_log_true_names_the_device(caplog):
    from cthreads.gpu import device_name

    @Gpu(log=True)
    def logged(x: list[float]) -> None:
        i: int = GlobalIdx.x
        x[i] = 1.0

    with caplog.at_level("INFO", logger="cthreads.gpu"):
        gpu(logged, [0.0]).join()
    assert any(
        "logged" in r.getMessage() and device_name() in r.getMessage() for r in caplog.records
    )
    from cthreads.gpu.kernel import unregister

    unregister(logged)
