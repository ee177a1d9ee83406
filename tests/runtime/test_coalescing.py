"""Submission coalescing: submits made while work is in flight join one pending batch, which
the background thread submits when the in-flight work completes (or a wait, a poll past the
in-flight work, or the batch cap submits it sooner). See native/README.md. Failures, shutdown
and the counters that show it are in test_coalescing_faults.py."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest
from coalescehelp import Token, _busy, _counter, _eventually, _read


def test_thousand_dependent_submits_without_waits(device, kernels):
    device.wait_idle()
    n = 256
    buf = _counter(device, n)
    before = device.stats()["queue_submits"]
    busy, gate = _busy(device, kernels)
    values = [
        device.submit([kernels.dispatch("add_i32", n, buf.address, n, 1)], keep=(buf,))
        for _ in range(1000)
    ]
    assert values == sorted(values) and len(set(values)) == 1000  # one value per submit
    assert device.completed() < busy
    gate.open()
    assert device.wait(values[-1], timeout=60)
    assert (_read(buf, n) == 1000).all()
    batches = device.stats()["queue_submits"] - before
    assert batches < 500, batches  # coalesced (1 + about 1000 / 256 while the spin runs)
    assert device.completed() >= busy


def test_lone_submit_on_idle_queue_goes_out_at_once(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    time.sleep(0.002)  # quiet for longer than the stream window (100 µs)
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    st = device.stats()
    assert st["submitted"] >= value and st["batches_pending"] == 0
    # nobody waits: the counter still reaches it
    assert _eventually(lambda: device.stats()["completed"] >= value)


def test_pending_batch_is_submitted_by_the_background_thread(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    c0 = device.stats()["counters"]
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    c1 = device.stats()["counters"]
    assert device.stats()["completed"] < busy  # in flight: the submit opened a pending batch
    assert c1["deferred"] - c0["deferred"] == 1 and c1["direct"] == c0["direct"]
    gate.open()
    # stats() submits nothing: only the background thread can make this happen
    assert _eventually(lambda: device.stats()["completed"] >= value)
    assert device.wait(value, timeout=0)
    assert (_read(buf) == 1).all()


_INFLIGHT_CHILD = r"""
import os, sys, time
sys.path[:0] = [sys.argv[1], os.path.dirname(sys.argv[1])]  # conftest and the devicehelp it uses
import numpy as np
from conftest import Kernels
from devicehelp import QueueGate
from cthreads import runtime

device = runtime.get_device()
kernels = Kernels(device)
assert device.stats()["knobs"]["inflight"] == 2
buf = device.buffer(4 * 256)
buf.write(np.zeros(256, np.int32))
gate = QueueGate(device=device)  # in flight until opened, on any device
value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
# the submission thread sends the pending batch while the gate's batch still runs; the
# deadline only bounds the failure (a regression would leave it pending until the gate opens)
deadline = time.monotonic() + 60
while device.stats()["submitted"] < value and time.monotonic() < deadline:
    time.sleep(0.001)
st = device.stats()
sent_while_busy = st["submitted"] >= value and st["completed"] < gate.value
gate.open()
assert device.wait(value, timeout=60)
out = np.empty(256, np.int32)
buf.read_into(out)
print(sent_while_busy, int(out.min()), int(out.max()))
"""


def test_next_batch_is_queued_while_the_one_before_runs():
    """CTHREADS_INFLIGHT=2: the thread submits the pending batch while the batch before it
    still runs, so the device does not wait for a vkQueueSubmit between them. (Not the
    default: on the H200 it made batches smaller and queued launches slower, 7.0 vs 4.0 µs.)"""
    import os
    import subprocess
    import sys

    env = dict(os.environ, CTHREADS_INFLIGHT="2")
    env.pop("CTHREADS_VALIDATION", None)
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run(
        [sys.executable, "-c", _INFLIGHT_CHILD, here],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    sent_while_busy, lo, hi = run.stdout.split()
    assert (lo, hi) == ("1", "1")
    assert sent_while_busy == "True", "the batch waited for the one before it to complete"


def test_value_in_a_pending_batch_is_not_completed(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    done = device.completed()
    assert done < busy and done < value
    assert not device.wait(value, timeout=0)
    gate.open()
    assert device.wait(value, timeout=60)
    assert device.completed() >= value


def test_wait_on_an_intermediate_value_of_a_pending_batch(device, kernels):
    device.wait_idle()
    bufs = [_counter(device) for _ in range(10)]
    busy, gate = _busy(device, kernels)
    values = [
        device.submit([kernels.dispatch("add_i32", 256, b.address, 256, 1)], keep=(b,))
        for b in bufs
    ]
    assert device.completed() < busy
    assert device.stats()["batches_pending"] == 1
    assert not device.wait(values[4], timeout=0)  # submits the pending batch at once...
    assert device.stats()["batches_pending"] == 0
    gate.open()  # ...behind the gate
    assert device.wait(values[4], timeout=60)
    assert device.completed() >= values[4]
    for b in bufs[:5]:
        assert (_read(b) == 1).all()
    assert device.wait(values[-1], timeout=60)
    for b in bufs:
        assert (_read(b) == 1).all()


def test_poll_past_the_in_flight_work_submits_the_pending_batch(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    assert device.completed() < busy
    gate.open()
    assert _eventually(lambda: device.completed() >= value)


def test_batch_cap_submits_without_the_in_flight_work_completing(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    values = [
        device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
        for _ in range(300)
    ]
    st = device.stats()
    assert st["completed"] < busy  # the first 256 went out when the batch filled up
    assert st["submitted"] >= values[255]
    assert st["batches_pending"] == 1
    gate.open()
    assert device.wait(values[-1], timeout=60)
    assert (_read(buf) == 300).all()


def test_keep_objects_live_until_their_batch_completes(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    _, gate = _busy(device, kernels)
    token = Token()
    ref = weakref.ref(token)
    value = device.submit(
        [kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf, token)
    )
    del token
    gc.collect()
    assert device.stats()["completed"] < value
    assert ref() is not None
    gate.open()
    device.wait(value)
    device.completed()
    gc.collect()
    assert ref() is None


def test_buffer_of_a_pending_batch_is_not_reused(device, kernels):
    device.wait_idle()
    n = 1 << 12
    _, gate = _busy(device, kernels)
    buf = device.buffer(4 * n)
    addr = buf.address
    value = device.submit([kernels.dispatch("add_i32", n, buf.address, n, 1)], keep=(buf,))
    buf.release()
    fresh = [device.buffer(4 * n) for _ in range(3)]
    assert device.stats()["completed"] < value
    assert addr not in [f.address for f in fresh]
    gate.open()
    device.wait(value)
    for f in fresh:
        f.release()


def test_timed_submits_inside_one_batch(device, kernels):
    if not device.info.limits.get("timestamp_period"):
        pytest.skip("no timestamps on this device")
    device.wait_idle()
    buf = _counter(device)
    _, gate = _busy(device, kernels)
    values = [
        device.submit(
            [kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,), timed=True
        )
        for _ in range(5)
    ]
    untimed = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    assert device.stats()["batches_pending"] == 1  # all six in one batch
    gate.open()
    device.wait(untimed)
    for v in values:
        ms = device.elapsed_ms(v)
        assert ms is not None and ms >= 0.0
    assert device.elapsed_ms(untimed) is None


def test_many_timed_submits_recycle_query_pairs(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    values = [
        device.submit(
            [kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,), timed=True
        )
        for _ in range(2100)  # more than the query pairs (1024): old ones are waited for
    ]
    device.wait(values[-1])
    assert (_read(buf) == 2100).all()
    assert device.elapsed_ms(values[-1]) is not None


def test_threads_hammer_submit_and_wait(device, kernels):
    kernels.pipe("add_i32")
    n_threads, rounds, n = 8, 200, 256
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads + 1)
    last = [0]

    def worker(tid: int) -> None:
        try:
            buf = _counter(device, n, tid)
            start.wait()
            for r in range(rounds):
                value = device.submit(
                    [kernels.dispatch("add_i32", n, buf.address, n, 1)], keep=(buf,)
                )
                last[0] = max(last[0], value)
                if r % 7 == 0:
                    assert device.wait(value, timeout=60)
                if r % 11 == 0:
                    device.completed()
            assert device.wait(value, timeout=60)
            assert (_read(buf, n) == tid + rounds).all()
            buf.release()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def waiter() -> None:  # waits on whatever was handed out last, intermediate or not
        try:
            start.wait()
            while any(t.is_alive() for t in threads):
                v = last[0]
                if v:
                    assert device.wait(v, timeout=60)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    w = threading.Thread(target=waiter)
    for t in threads:
        t.start()
    w.start()
    for t in threads:
        t.join()
    w.join()
    assert not errors, errors
    device.wait_idle()
    st = device.stats()
    assert st["ring_in_flight"] == 0 and st["kept_objects"] == 0


def test_push_constants_in_one_batch_follow_each_dispatch(device, kernels):
    """A batch records a dispatch's push constants only where the same bytes of the same
    pipeline layout are not in place already (record.c): repeated, changed and interleaved
    blocks (two pipelines with blocks of one size, even with the same bytes) in one pending
    batch each dispatch with its own."""
    device.wait_idle()
    n = 256
    buf = _counter(device, n)
    busy, gate = _busy(device, kernels)

    def add(k):
        return kernels.dispatch("add_i32", n, buf.address, n, k)

    def fill(value):
        return kernels.dispatch("fill_u32", n, buf.address, n, value)

    steps = [add(1), add(1), add(2), fill(10), add(2), add(2), fill(3), add(3), add(3)]
    values = [device.submit([cmd], keep=(buf,)) for cmd in steps]
    assert device.completed() < busy  # all of them in the batch the gate holds back
    gate.open()
    assert device.wait(values[-1], timeout=60)
    assert (_read(buf, n) == 9).all()
