"""shutdown() with work in flight, and jobs outliving their device or event loop (issue 6,
item 5).

What the implementation does, asserted exactly: `shutdown()` waits until the device is idle
(in-flight kernels run to completion) and then destroys every buffer, so the results of jobs
not joined before it are lost: `join()`, `done()` and `await` on them raise
`GpuUseAfterDestroy` — also for a thread already blocked in `join()`, and for an `await`
already pending — and never write anything back into the caller's lists. A job joined before
shutdown stays joinable. The next `gpu()` opens a new device.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GpuTimeout, GpuUseAfterDestroy, gpu, shutdown
from cthreads.runtime import current_generation, get_device


@Gpu
def lcg(n: int, rounds: int, x: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        acc: int = x[i]
        for r in range(rounds):
            acc = acc * 1103515245 + 12345
        x[i] = acc


def lcg_ref(seed: int, rounds: int) -> int:
    acc = seed & 0xFFFFFFFF
    for _ in range(rounds):
        acc = (acc * 1103515245 + 12345) & 0xFFFFFFFF
    return acc - (1 << 32) if acc >= 1 << 31 else acc


# ~0.1 s of lavapipe time per launch (about as long on an H200). Mesa's llvmpipe stops loops
# after 65,535 iterations (test_fault_driver.py), so the work comes from many invocations.
def on_cpu() -> bool:
    return get_device().info.type == "cpu"


def rounds() -> int:
    return 20_000 if on_cpu() else 60_000


def slow_n() -> int:
    return 1 << 14 if on_cpu() else 1 << 24


def slow_launch(seed: int):
    x = np.arange(seed, seed + slow_n(), dtype=np.int32)
    return gpu(lcg, x.size, rounds(), x), x


def test_shutdown_with_jobs_in_flight():
    lcg_warm = [1]
    gpu(lcg, 1, 1, lcg_warm).join()
    generation = current_generation()
    joined, joined_x = slow_launch(0)
    joined.join()
    assert int(joined_x[5]) == lcg_ref(5, rounds())

    seeds = [1000 * k for k in range(1, 5)]
    launched = [slow_launch(seed) for seed in seeds]
    as_list = list(range(64))
    list_job = gpu(lcg, 64, rounds(), as_list)
    resident = [7] * 32
    arena = GpuArena().bind(r=resident)
    gpu(lcg, 32, 3, resident)  # a resident launch in flight too

    # a thread blocked in join() and an event loop awaiting, while shutdown() runs; they wait
    # on the last launches in the queue, which cannot have run yet when shutdown() comes
    (await_job, await_x), (join_job, join_x) = launched[-2:]
    await_seed, join_seed = seeds[-2:]
    outcome: dict[str, BaseException | str] = {}

    def blocked_join() -> None:
        try:
            join_job.join()
            outcome["join"] = "completed"
        except BaseException as exc:  # noqa: BLE001
            outcome["join"] = exc

    def awaiting() -> None:
        try:
            asyncio.run(_await(await_job))
            outcome["await"] = "completed"
        except BaseException as exc:  # noqa: BLE001
            outcome["await"] = exc

    threads = [threading.Thread(target=blocked_join), threading.Thread(target=awaiting)]
    for t in threads:
        t.start()
    time.sleep(0.02)

    shutdown()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a waiter hung across shutdown()"

    # A waiter gets GpuUseAfterDestroy; only if the device finished its job before shutdown()
    # began (never seen: it sits behind ~0.3 s of queued work) may it complete, with results.
    completed = []
    for key, job, x, seed in (
        ("join", join_job, join_x, join_seed),
        ("await", await_job, await_x, await_seed),
    ):
        if outcome[key] == "completed":
            assert int(x[0]) == lcg_ref(seed, rounds())
            completed.append(job)
        else:
            assert isinstance(outcome[key], GpuUseAfterDestroy), outcome[key]
    if outcome["await"] != "completed":
        assert "shut down while this job was pending" in str(outcome["await"])
    for (job, x), seed in zip(launched, seeds):
        if any(job is j for j in completed):
            continue
        with pytest.raises(GpuUseAfterDestroy, match="shut down"):
            job.done()
        with pytest.raises(GpuUseAfterDestroy, match="shut down"):
            job.join()
        with pytest.raises(GpuUseAfterDestroy):
            asyncio.run(_await(job))
        assert (x == np.arange(seed, seed + x.size)).all()  # nothing written back
    with pytest.raises(GpuUseAfterDestroy):
        list_job.join()
    assert as_list == list(range(64))
    joined.join()  # joined before shutdown: still fine, nothing new written
    assert int(joined_x[5]) == lcg_ref(5, rounds())

    # a live arena refuses use but releases quietly
    with pytest.raises(GpuUseAfterDestroy, match="shut down"):
        arena.sync()
    with pytest.raises(GpuUseAfterDestroy):
        arena.bind(s=[1.0])
    with pytest.raises(GpuUseAfterDestroy):
        gpu(lcg, 32, 1, resident)
    assert resident == [7] * 32
    arena.release()
    arena.release()

    # the next gpu() starts a new device and works, also for the list the arena had
    y = list(range(10))
    gpu(lcg, 10, 3, y).join()
    assert y == [lcg_ref(s, 3) for s in range(10)]
    assert current_generation() == generation + 1 and get_device().alive
    with GpuArena().bind(r=resident) as again:
        gpu(lcg, 32, 1, resident).join(download=False)
        again.sync()
    assert resident == [lcg_ref(7, 1)] * 32


async def _await(job) -> None:
    await job


def test_join_timeout_then_join_on_a_long_kernel():
    job, x = slow_launch(3)
    with pytest.raises(GpuTimeout, match="did not finish within 0.01 s"):
        job.join(timeout=0.01)
    assert not job.done()
    assert x.tolist()[:3] == [3, 4, 5]  # untouched while pending
    job.join()
    assert job.done()
    last = x.size - 1
    assert [int(x[i]) for i in (0, 1, last)] == [lcg_ref(3 + i, rounds()) for i in (0, 1, last)]


def test_await_on_a_loop_closed_after_the_job_started():
    ahead = [slow_launch(s) for s in (20, 21)]  # queued work, so the awaited job stays pending
    job, x = slow_launch(11)
    loop = asyncio.new_event_loop()
    task = loop.create_task(_await(job))
    loop.run_until_complete(asyncio.sleep(0.001))  # the await is registered and pending
    assert not task.done() and not job.done()
    task.cancel()
    loop.close()  # the completion thread finds it closed when the job finishes
    job.join()  # the job itself is unharmed
    assert int(x[0]) == lcg_ref(11, rounds())
    for j, _ in ahead:
        j.join()
    # the completion thread survived the closed loop: another await works
    y = [1, 2, 3]
    asyncio.run(_await(gpu(lcg, 3, 2, y)))
    assert y == [lcg_ref(v, 2) for v in (1, 2, 3)]


SHUTDOWN_RACE = textwrap.dedent(
    """
    import collections, json, random, sys, threading, time
    from cthreads import runtime
    from cthreads.gpu import GlobalIdx, Gpu, GpuUseAfterDestroy, gpu, shutdown
    from cthreads.runtime import validation_messages

    @Gpu
    def bump(n: int, k: float, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = x[i] + k

    stop = False
    tally = collections.Counter()
    rng = random.Random(int(sys.argv[1]))

    def launches(seed):
        # one to three jobs in a row: later ones join the pending batch the submission thread
        # sends, and their waits take the paths that wait for a batch being submitted
        lists = [[float(seed)] * 64 for _ in range(1 + seed % 3)]
        jobs = []
        try:
            for xs in lists:
                jobs.append(gpu(bump, 64, 1.0, xs))
            for k, job in enumerate(jobs):
                if k % 2:
                    while not job.done():
                        pass
                job.join()
            tally["ok" if all(xs == [seed + 1.0] * 64 for xs in lists) else "WRONG"] += 1
        except GpuUseAfterDestroy:
            fine = all(xs in ([seed + 1.0] * 64, [float(seed)] * 64) for xs in lists)
            tally["destroyed" if fine else "PARTIAL"] += 1

    def worker(seed):
        while not stop:
            launches(seed)

    def waiter():  # waits on whatever value the device handed out last, intermediate or not
        while not stop:
            try:
                dev = runtime.get_device()
                dev.wait(dev.last_value, 1.0)
            except GpuUseAfterDestroy:
                pass

    gpu(bump, 1, 1.0, [0.0]).join()
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    threads.append(threading.Thread(target=waiter))
    for t in threads:
        t.start()
    for _ in range(40):
        time.sleep(rng.random() * 0.01)
        shutdown()
    stop = True
    for t in threads:
        t.join(30)
    xs = [1.0]
    gpu(bump, 1, 1.0, xs).join()
    print(json.dumps([dict(tally), xs, validation_messages()]))
    """
)


@pytest.mark.parametrize("seed", [1, 2])
def test_shutdown_racing_launches_from_threads(tmp_path, seed):
    """Run in a child: a crash here must fail this test, not end the suite. (On the H200 a
    thread waiting for a batch that another thread was submitting let the GIL go, then polled
    the timeline after teardown had waited for the others: SIGSEGV. Lavapipe rarely shows it.)"""
    script = tmp_path / "race.py"
    script.write_text(SHUTDOWN_RACE)
    proc = subprocess.run(
        [sys.executable, str(script), str(seed)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    tally, xs, messages = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(tally) <= {"ok", "destroyed"}, tally  # never a wrong or partial writeback
    assert tally.get("ok", 0) > 0 and tally.get("destroyed", 0) > 0, tally
    assert xs == [2.0] and messages == []


EXIT_IN_FLIGHT = textwrap.dedent(
    """
    import atexit, json

    def report():
        from cthreads.runtime import validation_messages
        print("at exit:", json.dumps(validation_messages()))

    # registered before cthreads (imported below) registers its exit teardown, so it runs
    # after that teardown (atexit runs last-in first-out)
    atexit.register(report)

    import numpy as np
    from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu

    @Gpu
    def lcg(n: int, rounds: int, x: list[int]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            acc: int = x[i]
            for r in range(rounds):
                acc = acc * 1103515245 + 12345
            x[i] = acc

    keep = [1] * 8
    arena = GpuArena().bind(keep=keep)
    jobs = [gpu(lcg, 1 << 14, 20000, np.zeros(1 << 14, np.int32)) for _ in range(3)]
    gpu(lcg, 8, 5, keep)
    print("leaving with work in flight", flush=True)
    """
)


def test_interpreter_exit_with_work_in_flight(tmp_path):
    """The process ends (atexit shutdown) with launches queued and an arena bound."""
    script = tmp_path / "leave.py"
    script.write_text(EXIT_IN_FLIGHT)
    proc = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "leaving with work in flight" in proc.stdout
    assert "at exit: []" in proc.stdout, proc.stdout  # teardown and the layer's leak checks clean
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr[-3000:]
