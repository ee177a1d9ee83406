"""The GPU-side hand-off's control flow (handoff.py, mode "gpu") on any device that exports
memory, with CUDA and the semaphores replaced by stand-ins (issue 17).

test_fake_cuda.py's FakeContext moves bytes on the host; here the semaphores are stand-ins
too: a CUDA signal and our queue's wait are logged, our queue's signal records the timeline
value it covers, and a CUDA stream's wait is a host wait for that value (what the GPU would
do). That checks, without CUDA: the order signal -> wait in both directions, one hand-off per
stream, rising values per semaphore, no cuStreamSynchronize at all, results exact. What only
the H200 can show (the driver, the validation layer) is test_cuda_handoff.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_fake_cuda import CaiView, FakeCudaArray, saxpy
from test_fake_cuda import fake  # noqa: F401 - the fixture (a FakeContext) `stand` asks for

from cthreads.gpu import DeviceArray, gpu
from cthreads.interop import handoff
from cthreads.runtime import get_device


class Stand:
    """The semaphores of one device, as handoff._Gpu holds them."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.log = ctx.log
        self.lock = threading.Lock()
        self.covers: dict[int, int] = {}  # outbound value -> our timeline value it follows
        self.links = 0
        self.outbound = self.link()
        self.inbound: dict = {}

    def link(self):
        stand = self

        class Link:
            index = stand.links
            value = 0

            class cuda:  # noqa: N801 - plays cuda.Semaphore
                @staticmethod
                def signal(value, stream):
                    stand.log.append(("cuda signal", Link.index, value, stream))

                @staticmethod
                def wait(value, stream):
                    stand.log.append(("cuda wait", Link.index, value, stream))
                    get_device().wait(stand.covers[value])

        self.links += 1
        return Link


@pytest.fixture
def stand(request, monkeypatch):
    device = get_device()
    s = Stand(request.getfixturevalue("fake"))
    monkeypatch.setitem(handoff._state, device, s)
    monkeypatch.setattr(handoff, "_Gpu", Stand)
    monkeypatch.setattr(handoff, "_Link", lambda device, ctx: s.link())

    def queue(device, index, *, wait=0, signal=0):
        if signal:
            s.covers[signal] = device.last_value
        s.log.append(("queue", index, wait, signal))

    monkeypatch.setattr(handoff, "_queue", queue)
    # lavapipe may finish a launch before its hand-off: order it all the same
    monkeypatch.setattr(handoff, "_reached", lambda device, value: value == 0)
    yield s
    assert handoff.mode(device) == ("gpu", "")  # nothing fell back to host waits


def test_zero_copy_launch_hands_off_on_the_gpu_both_ways(stand):
    n = 300
    d = DeviceArray.from_numpy(np.full(n, 5.0, np.float32), exportable=True)
    e = DeviceArray.from_numpy(np.ones(n, np.float32), exportable=True)
    gpu(saxpy, n, 2.0, CaiView(d.__cuda_array_interface__), CaiView(e.__cuda_array_interface__))
    flow = [x for x in stand.log if x[0] in ("cuda signal", "cuda wait", "queue", "sync")]
    # one inbound semaphore for stream 7 (index 1), the outbound one (index 0)
    assert flow == [
        ("cuda signal", 1, 1, 7),
        ("queue", 1, 1, 0),
        ("queue", 0, 0, 1),
        ("cuda wait", 0, 1, 7),
    ]
    np.testing.assert_array_equal(e.numpy(), np.full(n, 11.0, np.float32))


def test_staged_arguments_and_rising_values(stand):
    n = 256
    x, y = FakeCudaArray(np.ones(n, np.float32)), FakeCudaArray(np.zeros(n, np.float32))
    for _ in range(3):
        gpu(saxpy, n, 1.0, x, y)
    np.testing.assert_array_equal(y.a, np.full(n, 3.0, np.float32))
    assert not [e for e in stand.log if e[0] == "sync"]  # no cuStreamSynchronize
    signals = [e[2] for e in stand.log if e[0] == "cuda signal"]
    assert signals == [1, 2, 3]  # one per launch (two arguments, one stream)
    outbound = [e[3] for e in stand.log if e[0] == "queue" and e[1] == 0]
    assert outbound == sorted(outbound) and len(set(outbound)) == len(outbound)
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
    assert inbound == {(1, 7), (2, 9)}
    np.testing.assert_array_equal(b.a, np.ones(n, np.float32))
