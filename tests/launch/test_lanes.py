"""Native lanes (native/lane.c): each Stream submits on a lane of its own (lanes 1..3, dealt
round-robin), joined back to the device's one timeline; after=, Stream.wait and the implicit
array rule become waits on the device; lane 0 (the default stream) keeps its batches.

On lavapipe every lane shares the one queue, so overlap in device time cannot be seen here
(bench/streams.py measures it on the H200). What these tests pin down holds on any device:
results, the device-side waits a lane submit carries (`stats()["counters"]["lane_waits"]`),
the default stream's pending batch going out before a lane submit (the timeline stays in value
order: the validation layer, on for the suite, would report anything else), memory released
after lane work never handed out again before that work completed, and teardown / fork with
work on several lanes. `QueueGate` holds the queue, so "not finished yet" needs no clock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from devicehelp import QueueGate, use_launcher

from cthreads import runtime
from cthreads.gpu import (
    DeviceArray,
    GpuArena,
    GpuUseAfterDestroy,
    Stream,
    available,
    gpu,
    shutdown,
)
from cthreads.launch.stream import LANES

from stream_kernels import N, add_k, scaled
from stream_kernels import arange as _arange

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")


def _counters() -> dict:
    return runtime.get_device().stats()["counters"]


def test_streams_are_dealt_lanes_round_robin():
    lanes = [Stream()._lane for _ in range(2 * (LANES - 1))]
    assert set(lanes) == set(range(1, LANES))  # lane 0 is the default stream's only
    assert lanes[: LANES - 1] == lanes[LANES - 1 :]  # the 4th stream shares the 1st's lane
    st = runtime.get_device().stats()
    assert st["lanes"] == LANES and 1 <= st["lane_queues"] <= LANES


def test_two_lanes_with_cross_dependencies_compute_the_chain():
    s1, s2 = Stream(), Stream()
    assert s1._lane != s2._lane
    before = _counters()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    for _ in range(10):
        a = gpu(add_k, N, 1.0, x, stream=s1)  # x += 1 on lane 1
        gpu(scaled, N, 2.0, x, y, stream=s2, after=[a])  # y = 2x on lane 2, after it
        s1.wait(gpu(add_k, N, 0.0, y, stream=s2))  # lane 1 waits for lane 2's y
    s1.synchronize()
    s2.synchronize()
    np.testing.assert_array_equal(x.numpy(), _arange() + 10)
    np.testing.assert_array_equal(y.numpy(), 2 * (_arange() + 10))
    after = _counters()
    assert after["lane_submits"] - before["lane_submits"] == 30  # every launch on a lane
    # (how many carried a device wait depends on what had completed by then: not asserted)


def test_after_across_lanes_is_a_device_wait_not_a_host_wait():
    s1, s2 = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    y, z = DeviceArray(N, "f32"), DeviceArray(N, "f32")
    with QueueGate() as gate:
        before = _counters()["lane_waits"]
        made = gpu(scaled, N, 2.0, x, y, stream=s1)
        used = gpu(scaled, N, 3.0, y, z, stream=s2, after=[made])  # returns at once
        assert not runtime.get_device().wait(gate.value, timeout=0)  # the gate still closed
        assert _counters()["lane_waits"] == before + 1
        assert not made.done() and not used.done()
        gate.open()
        s2.synchronize()
    assert made.done()
    np.testing.assert_array_equal(z.numpy(), 6 * _arange())


@pytest.mark.parametrize("named", [True, False], ids=["after", "implicit"])
def test_a_lane_submit_sends_the_default_streams_pending_batch_first(named):
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    device = runtime.get_device()
    with QueueGate() as gate:
        first = gpu(add_k, N, 1.0, x)  # default stream, behind the gate: a pending batch
        assert device.stats()["batches_pending"] == 1
        before = _counters()["lane_waits"]
        # reads x, which `first` writes: waits for it, by after= or by the implicit rule
        job = gpu(scaled, N, 2.0, x, y, stream=s, after=[first] if named else None)
        assert not device.wait(gate.value, timeout=0)  # returned with the gate still closed
        assert device.stats()["batches_pending"] == 0  # sent before the lane's join
        assert _counters()["lane_waits"] == before + 1
        assert first._value < job._value
        gate.open()
        job.join()
    np.testing.assert_array_equal(y.numpy(), 2 * (_arange() + 1))


def test_a_lane_writing_an_array_waits_for_its_readers_elsewhere():
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    with QueueGate() as gate:
        read = gpu(scaled, N, 2.0, x, y)  # the default stream reads x
        before = _counters()["lane_waits"]
        gpu(add_k, N, 5.0, x, stream=s)  # a stream then writes x: after that read
        assert _counters()["lane_waits"] == before + 1
        gate.open()
        s.synchronize()
    assert read.done()
    np.testing.assert_array_equal(y.numpy(), 2 * _arange())
    np.testing.assert_array_equal(x.numpy(), _arange() + 5)


def test_memory_released_after_lane_work_is_not_handed_out_before_it_completed():
    streams = [Stream(), Stream(), Stream()]
    # Behind the gate every submit holds one of the 64 ring slots until the gate opens, and a
    # submit finding none waits for one: an iteration takes 2 lane submits, plus up to 3 on the
    # default stream where uploads and fills are device copies (the H200: 25 iterations there
    # hung this test waiting for a slot the gate held), so 10 fit beside the gate's own slot on
    # any device. (Lavapipe's gate ends by itself, which hid this there.)
    rounds = 10
    ins = [[float(k + i) for i in range(256)] for k in range(rounds)]
    outs = [[0.0] * 256 for _ in range(rounds)]
    with QueueGate() as gate:
        arrays, jobs = [], []
        for k in range(rounds):
            # plain lists: their buffers come from the pool and go back to it at once
            jobs.append(gpu(scaled, 256, float(k), ins[k], outs[k], stream=streams[k % 3]))
            # a DeviceArray read on a lane, then released while that launch waits
            x = DeviceArray.from_numpy(np.full(N, k, np.float32))
            y = DeviceArray(N, "f32")
            gpu(scaled, N, 1.0, x, y, stream=streams[k % 3])
            address = x.buffer.address
            x.release()
            fresh = DeviceArray.from_numpy(np.full(N, -1.0, np.float32))  # same size class
            assert fresh.buffer.address != address
            arrays.append((k, y, fresh))
        gate.open()
        for job in jobs:
            job.join()  # (the lists' results are copied back by join)
    for k in range(rounds):
        assert outs[k] == [k * float(k + i) for i in range(256)]
    for k, y, fresh in arrays:
        np.testing.assert_array_equal(y.numpy(), np.full(N, k, np.float32))
        np.testing.assert_array_equal(fresh.numpy(), np.full(N, -1.0, np.float32))


def test_shutdown_with_work_on_every_lane_and_the_default_stream():
    streams = [Stream() for _ in range(LANES - 1)]
    xs = [DeviceArray.from_numpy(_arange()) for _ in streams]
    d = DeviceArray.from_numpy(_arange())
    for _ in range(8):
        for s, x in zip(streams, xs):
            gpu(add_k, N, 1.0, x, stream=s)
        gpu(add_k, N, 1.0, d)
    shutdown()  # the lanes' work completes, then everything is destroyed: no hang
    for s in streams:
        with pytest.raises(GpuUseAfterDestroy):
            s.synchronize()
    s = Stream()  # the next device has its lanes again
    z = DeviceArray.from_numpy(_arange())
    gpu(add_k, N, 1.0, z, stream=s)
    np.testing.assert_array_equal(z.numpy(stream=s), _arange() + 1)


FORK = """
import json, os, sys
import numpy as np
from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, Stream, VulkanInitFailed, gpu
from cthreads.runtime import validation_messages

@Gpu
def add_k(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + k

def lanes(k):
    streams = [Stream(), Stream(), Stream()]
    xs = [DeviceArray.from_numpy(np.zeros(1024, np.float32)) for _ in streams]
    for _ in range(k):
        for s, x in zip(streams, xs):
            gpu(add_k, 1024, 1.0, x, stream=s)
    return [float(x.numpy()[7]) for x in xs]

assert lanes(3) == [3.0] * 3  # the parent used every lane
pid = os.fork()
if pid == 0:
    try:
        ok = lanes(2) == [2.0] * 3
    except VulkanInitFailed as exc:  # NVIDIA: a forked child may not open a device
        ok = "refused" if "fork" in str(exc) else repr(exc)
    print(json.dumps(["child", ok]), flush=True)
    sys.exit(3)
_, status = os.waitpid(pid, 0)
print(json.dumps(["parent", os.waitstatus_to_exitcode(status), lanes(4), validation_messages()]))
"""


def test_fork_with_work_on_several_lanes(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(FORK))
    proc = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    assert ["child", True] in lines or ["child", "refused"] in lines, lines
    assert ["parent", 3, [4.0] * 3, []] in lines, lines


def test_timed_launch_on_a_lane():
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    job = gpu(add_k, N, 1.0, x, stream=s, timed=True)
    job.join()
    assert job.elapsed_ms is not None and job.elapsed_ms >= 0.0
    np.testing.assert_array_equal(x.numpy(), _arange() + 1)


def test_a_failed_lane_submission_raises_and_the_lanes_stay_usable():
    from cthreads.errors import VulkanOutOfMemory

    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    gpu(add_k, N, 1.0, x, stream=s).join()
    runtime.get_device()._dev._inject_submit_error(-2)  # VK_ERROR_OUT_OF_DEVICE_MEMORY
    with pytest.raises(VulkanOutOfMemory):
        gpu(add_k, N, 1.0, x, stream=s)
    job = gpu(add_k, N, 1.0, x, stream=s)  # the lane's semaphore and the timeline went on
    job.join()
    s.synchronize()
    np.testing.assert_array_equal(x.numpy(), _arange() + 2)  # the failed one did not run


@pytest.mark.parametrize("native", [True, False], ids=["c-launcher", "python"])
def test_lane_launches_through_either_launch_path(native, monkeypatch):
    from cthreads.launch import dispatch, plan

    monkeypatch.setattr(plan, "NATIVE", plan.NATIVE)  # restored after the test
    use_launcher(add_k, native)
    use_launcher(scaled, native)
    s1, s2 = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    gpu(add_k, N, 1.0, x, stream=s1).join()  # builds the launcher (or not)
    if native:  # every launch below must be the C launcher's: the Python path is shut
        monkeypatch.setattr(dispatch, "_launch", None)
    with QueueGate() as gate:
        before = _counters()
        a = gpu(add_k, N, 1.0, x, stream=s1)
        gpu(scaled, N, 2.0, x, y, stream=s2)  # reads x: after `a` (the implicit rule)
        gpu(add_k, N, 1.0, x, stream=s1, after=[a])  # writes x, which s2 reads: after it
        after = _counters()
        assert after["lane_submits"] - before["lane_submits"] == 3
        assert after["lane_waits"] - before["lane_waits"] == 2  # (x's last use completed)
        gate.open()
        s1.synchronize()
        s2.synchronize()
    np.testing.assert_array_equal(y.numpy(), 2 * (_arange() + 2))
    np.testing.assert_array_equal(x.numpy(), _arange() + 3)


def test_arena_bound_lists_across_lanes_follow_the_implicit_rule():
    n = 256
    src = [float(i) for i in range(n)]
    mid, out = [0.0] * n, [0.0] * n
    s1, s2 = Stream(), Stream()
    with GpuArena().bind(src=src, mid=mid, out=out) as arena, QueueGate() as gate:
        before = _counters()["lane_waits"]
        gpu(scaled, n, 2.0, src, mid, stream=s1)
        job = gpu(scaled, n, 3.0, mid, out, stream=s2)  # reads mid: after s1's write of it
        assert _counters()["lane_waits"] == before + 1
        gate.open()
        job.join(download=False)
        arena.sync("out")
    assert out == [6.0 * i for i in range(n)]
