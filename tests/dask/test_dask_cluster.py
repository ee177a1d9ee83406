"""cthreads.dask on a real cluster: a distributed.LocalCluster of 2 worker processes (one
thread each, one cluster for the whole module) running map_blocks over 64 chunks, errors that
come back as their class with the worker named, kernels by name, one prepare per worker, and
a worker killed mid-computation whose tasks Dask retries with nothing lost."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

da = pytest.importorskip(
    "dask.array", reason="cthreads.dask needs dask: pip install cthreads[dask]"
)
distributed = pytest.importorskip("distributed", reason="cthreads.dask needs distributed")

import dask_kernels as k  # tests/dask is on sys.path; spawned workers inherit sys.path

import cthreads.dask as cdask
from cthreads.errors import GpuArgumentTypeError, GpuCompileError
from cthreads.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")

REGISTERED = (k.add_scaled, k.count_up, k.whole_and_frac)
CHUNKS = 64


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,  # logging.CRITICAL: the error tests make workers log failed tasks
    )
    with cluster, distributed.Client(cluster) as c:
        cdask.register(c, *REGISTERED)  # returns once every worker has set up
        yield c


def _workers(client) -> set[str]:
    return set(client.scheduler_info()["workers"])


def test_64_chunks_on_two_worker_processes_equal_numpy(client):
    n = CHUNKS * 1000
    x_np = np.linspace(-1, 1, n, dtype=np.float32)
    y_np = np.arange(n, dtype=np.float32)
    x = da.from_array(x_np, chunks=1000)
    y = da.from_array(y_np, chunks=1000)
    out = cdask.map_blocks(k.add_scaled, np.float32(3.0), x, y)
    assert out.numblocks == (CHUNKS,)
    got = client.compute(out).result()
    np.testing.assert_allclose(got, np.float32(3.0) * x_np + y_np, rtol=1e-6)
    pids = client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()


def test_two_outputs_on_the_cluster(client):
    x_np = np.linspace(-8, 8, CHUNKS * 100, dtype=np.float32)
    x = da.from_array(x_np, chunks=100)
    whole, frac = cdask.map_blocks(
        k.whole_and_frac, x, da.zeros_like(x, dtype=np.int32), da.zeros_like(x)
    )
    w, f = client.compute([whole, frac], sync=True)
    np.testing.assert_array_equal(w, np.floor(x_np).astype(np.int32))
    np.testing.assert_allclose(f, x_np - np.floor(x_np), atol=1e-6)


def test_kernels_by_name_including_one_no_plugin_prepared(client):
    x = da.arange(CHUNKS * 10, chunks=10, dtype=np.float32)
    y = da.ones(CHUNKS * 10, chunks=10, dtype=np.float32)
    by_name = cdask.map_blocks("dask_kernels.add_scaled", 2.0, x, y)
    np.testing.assert_allclose(client.compute(by_name).result(), 2 * np.arange(CHUNKS * 10) + 1)
    # saxpy's module is imported by the first task on each worker (no plugin named it)
    saxpy = cdask.map_blocks("cthreads.examples_kernels.saxpy", 0.5, x, y)
    np.testing.assert_allclose(client.compute(saxpy).result(), 0.5 * np.arange(CHUNKS * 10) + 1)


def test_a_launch_error_on_a_worker_arrives_as_its_class_naming_the_worker(client):
    x = da.arange(CHUNKS * 8, chunks=8, dtype=np.float64)  # the kernel takes float32
    y = da.zeros(CHUNKS * 8, chunks=8, dtype=np.float32)
    with pytest.raises(GpuArgumentTypeError) as info:
        client.compute(cdask.map_blocks(k.add_scaled, 2.0, x, y)).result()
    exc = info.value
    assert exc.param == "x" and "float64" in str(exc)
    named = [a for a in _workers(client) if f"on dask worker {a} " in str(exc)]
    assert len(named) == 1, str(exc)


def test_the_plugin_prepares_once_per_worker_and_pipelines_stay_warm(client):
    x = da.arange(CHUNKS * 16, chunks=16, dtype=np.int32)
    for steps in (1, 2, 3):  # several computations, one setup
        got = client.compute(cdask.map_blocks(k.count_up, steps, x, da.zeros_like(x))).result()
        np.testing.assert_array_equal(got, np.arange(CHUNKS * 16) + steps)
    stats = client.run(cdask.worker_stats)
    assert len(stats) == 2
    registered = {f"{r.__module__}.{r.__qualname__}" for r in REGISTERED}
    for address, s in stats.items():
        assert s["setups"] == 1, (address, s)
        assert {r.name for r in REGISTERED} <= set(s["prepared"]), s
        cold = {name: c for name, c in s["cold_launches"].items() if name in registered}
        assert cold == {}, (address, s)  # every task of a registered kernel found it built
    assert sum(s["launches"].get("dask_kernels.count_up", 0) for s in stats.values()) >= 3 * CHUNKS
    from cthreads.runtime import validation_messages

    assert client.run(validation_messages) == {a: [] for a in stats}


def test_a_plugin_kernel_that_does_not_compile_fails_the_registration(client):
    plugin = cdask.GpuWorkerPlugin([k.does_not_compile], name="cthreads-does-not-compile")
    try:
        with pytest.raises(GpuCompileError, match="on dask worker tcp://") as info:
            client.register_plugin(plugin)
    finally:
        client.unregister_worker_plugin(plugin.name)
    assert info.value.lineno is not None and "does_not_compile" in str(info.value)


# Last in the module: it restarts one worker (later tests would see a fresh process).
def test_a_worker_killed_mid_computation_loses_nothing(client):
    # The input chunks wait for an Event the test sets only after the kill, so the victim is
    # certain to hold running tasks of the computation when it dies, on any machine (no
    # "slow enough" chunks: nothing here depends on how fast the device or the host is).
    import dask

    size, steps = 4096, 3
    go = distributed.Event(f"cthreads-kill-{os.getpid()}")
    parts = [
        da.from_delayed(
            dask.delayed(k.held_chunk)(i * size, size, go.name), shape=(size,), dtype=np.int32
        )
        for i in range(CHUNKS)
    ]
    x = da.concatenate(parts)
    future = client.compute(cdask.map_blocks(k.count_up, steps, x, da.zeros_like(x)))
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    # wait until the victim holds tasks of this computation (pytest-timeout bounds a hang)
    while not client.processing(workers=[victim]).get(victim):
        time.sleep(0.005)
    assert not future.done()  # (it cannot end before the event is set)
    os.kill(pids[victim], signal.SIGKILL)
    go.set()
    got = future.result()
    np.testing.assert_array_equal(got, np.arange(CHUNKS * size, dtype=np.int32) + steps)
    # the nanny started a fresh process in its place, which set up again
    client.wait_for_workers(2)
    after = client.run(cdask.worker_stats)
    assert pids[victim] not in {s["pid"] for s in after.values()}
    assert all(s["setups"] == 1 for s in after.values())
