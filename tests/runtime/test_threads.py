"""Many Python threads allocating, submitting and waiting on one device at once."""

from __future__ import annotations

import threading

import numpy as np


def test_many_threads_submit_and_wait(device, kernels):
    pipe_add = kernels.pipe("add_i32")  # created up front: pipelines are shared
    assert pipe_add is not None
    errors: list[BaseException] = []
    n_threads, rounds, n = 8, 40, 777
    start = threading.Barrier(n_threads)

    def worker(tid: int) -> None:
        try:
            buf = device.buffer(4 * n)
            buf.write(np.full(n, tid, np.int32))
            start.wait()
            for r in range(rounds):
                value = device.submit(
                    [kernels.dispatch("add_i32", n, buf.address, n, 1)], keep=(buf,)
                )
                if r % 5 == 0:
                    assert device.wait(value, timeout=60)
            device.wait(device.last_value)
            out = np.empty(n, np.int32)
            buf.read_into(out)
            assert (out == tid + rounds).all(), (tid, out[:4])
            buf.release()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    device.wait_idle()
    assert device.stats()["ring_in_flight"] == 0


def test_more_submissions_than_ring_slots(device, kernels):
    n = 64
    buf = device.buffer(4 * n)
    buf.write(np.zeros(n, np.int32))
    for _ in range(300):  # the ring has 64 slots: submit recycles them as work completes
        device.submit([kernels.dispatch("add_i32", n, buf.address, n, 1)], keep=(buf,))
    device.wait(device.last_value)
    out = np.empty(n, np.int32)
    buf.read_into(out)
    assert (out == 300).all()


def test_waiters_in_threads_while_main_submits(device, kernels):
    n = 1 << 14
    buf = device.buffer(4 * n)
    values = [
        device.submit([kernels.dispatch("spin", n, buf.address, n, 200)], keep=(buf,))
        for _ in range(10)
    ]
    results = []
    threads = [
        threading.Thread(target=lambda v=v: results.append(device.wait(v, timeout=60)))
        for v in values
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * len(values)
