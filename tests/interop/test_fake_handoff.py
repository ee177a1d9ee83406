"""The GPU-side hand-off's control flow (handoff.py, mode "gpu") on any device that exports
memory, with CUDA and the semaphores replaced by stand-ins (issue 17).

test_fake_cuda.py's FakeContext moves bytes on the host; here the semaphores are stand-ins
too: a CUDA signal and the wait attached to our next batch are logged, and a CUDA stream's
wait on our timeline is a host wait for that value (what the GPU would do). The flush of the
launch's batch is the real one (`Device.handoff_flush`). That checks, without CUDA: the order
signal -> wait in both directions, one hand-off per stream, rising values per semaphore, one
queue submission per launch and none of the hand-off's own, no cuStreamSynchronize at all, a
repeated exchange that describes nothing again, results exact. What only the H200 can show
(the driver, the validation layer) is test_cuda_handoff.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_fake_cuda import CaiView, FakeCudaArray, saxpy
from test_fake_cuda import fake  # noqa: F401 - the fixture (a FakeContext) `stand` asks for

from cthreads.gpu import DeviceArray, gpu
from cthreads.interop import describe, handoff
from cthreads.runtime import get_device


class Stand:
    """The semaphores of one device, as handoff._Gpu holds them."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.log = ctx.log
        self.lock = threading.Lock()
        self.links = 0
        self.timeline = self.semaphore("timeline")
        self.inbound: dict = {}

    def semaphore(self, index):
        log = self.log

        class Semaphore:  # plays cuda.Semaphore
            @staticmethod
            def signal(value, stream):
                log.append(("cuda signal", index, value, stream))

            @staticmethod
            def wait(value, streams):
                for stream in dict.fromkeys(streams):
                    log.append(("cuda wait", index, value, stream))
                get_device().wait(value)

        return Semaphore

    def link(self):
        class Link:
            index = self.links
            value = 0
            cuda = self.semaphore(self.links)

        self.links += 1
        return Link


@pytest.fixture
def stand(request, monkeypatch):
    device = get_device()
    s = Stand(request.getfixturevalue("fake"))
    monkeypatch.setitem(handoff._state, device, s)
    monkeypatch.setattr(handoff, "_Gpu", Stand)
    monkeypatch.setattr(handoff, "_Link", lambda device, ctx: s.link())
    monkeypatch.setattr(
        handoff, "_attach", lambda dev, index, value: s.log.append(("attach", index, value))
    )

    def submitted(dev, value):
        dev._dev.handoff_flush(value)  # (the real one: the launch's batch goes out)
        s.log.append(("flush", value))
        return True  # lavapipe may finish a launch before its hand-off: order it all the same

    monkeypatch.setattr(handoff, "_submitted", submitted)
    yield s
    assert handoff.mode(device) == ("gpu", "")  # nothing fell back to host waits


def _flow(log):
    return [x for x in log if x[0] in ("cuda signal", "cuda wait", "attach", "flush", "sync")]


def test_zero_copy_launch_hands_off_on_the_gpu_both_ways(stand):
    n = 300
    device = get_device()
    d = DeviceArray.from_numpy(np.full(n, 5.0, np.float32), exportable=True)
    e = DeviceArray.from_numpy(np.ones(n, np.float32), exportable=True)
    vd, ve = CaiView(d.__cuda_array_interface__), CaiView(e.__cuda_array_interface__)
    before = device.stats()["queue_submits"]
    gpu(saxpy, n, 2.0, vd, ve)
    # the launch's batch is the exchange's only vkQueueSubmit: its wait rides on it
    assert device.stats()["queue_submits"] - before == 1
    v = e.last_use
    assert _flow(stand.log) == [
        ("cuda signal", 0, 1, 7),  # stream 7's semaphore (index 0)
        ("attach", 0, 1),  # our next batch waits for it
        ("flush", v),  # the launch's batch submitted
        ("cuda wait", "timeline", v, 7),  # stream 7 waits for the launch's own value
    ]
    np.testing.assert_array_equal(e.numpy(), np.full(n, 11.0, np.float32))


def test_a_repeated_exchange_describes_nothing_again(stand, monkeypatch):
    n = 64
    described, asked = [], []
    real_describe, real_ordinal = describe.describe, stand.ctx.pointer_ordinal
    monkeypatch.setattr(
        describe, "describe", lambda o, name: described.append(name) or real_describe(o, name)
    )
    monkeypatch.setattr(stand.ctx, "pointer_ordinal", lambda p: asked.append(p) or real_ordinal(p))
    x, y = FakeCudaArray(np.ones(n, np.float32)), FakeCudaArray(np.zeros(n, np.float32))
    for _ in range(3):
        gpu(saxpy, n, 1.0, x, y)
    assert described == ["x", "y"] and len(asked) == 2  # the first exchange only
    y.a = np.zeros(n, np.float32)  # new memory behind the same object: described again
    gpu(saxpy, n, 1.0, x, y)
    assert described == ["x", "y", "y"]
    np.testing.assert_array_equal(y.a, np.ones(n, np.float32))


def test_staged_arguments_and_rising_values(stand):
    n = 256
    x, y = FakeCudaArray(np.ones(n, np.float32)), FakeCudaArray(np.zeros(n, np.float32))
    for _ in range(3):
        gpu(saxpy, n, 1.0, x, y)
    np.testing.assert_array_equal(y.a, np.full(n, 3.0, np.float32))
    assert not [e for e in stand.log if e[0] == "sync"]  # no cuStreamSynchronize
    signals = [e[2] for e in stand.log if e[0] == "cuda signal"]
    assert signals == [1, 2, 3]  # one per launch (two arguments, one stream)
    waits = [e[2] for e in stand.log if e[0] == "cuda wait"]
    assert waits == sorted(waits) and len(set(waits)) == 3  # each launch's own value
    # every copy back comes after the stream's wait for the launch
    for i, e in enumerate(stand.log):
        if e[0] == "back":
            assert stand.log[i - 1][0] == "cuda wait"


def test_a_second_stream_gets_its_own_semaphore(stand):
    n = 64
    a = FakeCudaArray(np.ones(n, np.float32), stream=7)
    b = FakeCudaArray(np.zeros(n, np.float32), stream=9)
    gpu(saxpy, n, 1.0, a, b)
    inbound = {(e[1], e[3]) for e in stand.log if e[0] == "cuda signal"}
    assert inbound == {(0, 7), (1, 9)}
    assert {e[1] for e in stand.log if e[0] == "attach"} == {0, 1}
    np.testing.assert_array_equal(b.a, np.ones(n, np.float32))


def test_the_description_table_keeps_no_object_alive(stand):
    import gc
    import weakref

    x = FakeCudaArray(np.ones(8, np.float32))
    gpu(saxpy, 8, 1.0, x, FakeCudaArray(np.zeros(8, np.float32)))
    assert describe.is_known(x)
    gone = weakref.ref(x)
    del x
    gc.collect()
    assert gone() is None


def test_past_eight_producer_streams_a_new_one_waits_on_the_host(stand):
    n = 16
    out = DeviceArray(n, "f32", exportable=True)
    for stream in range(10, 19):  # nine streams: one semaphore each for the first eight
        gpu(saxpy, n, 1.0, FakeCudaArray(np.ones(n, np.float32), stream=stream), out)
    signalled = {e[3] for e in stand.log if e[0] == "cuda signal"}
    assert signalled == set(range(10, 18))
    assert ("sync", 18) in stand.log  # (the ninth: cuStreamSynchronize)
    np.testing.assert_array_equal(out.numpy(), np.full(n, 9.0, np.float32))
