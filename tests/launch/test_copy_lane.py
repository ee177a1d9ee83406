"""The copy lane (issue 16, native/lane.c, native/queues.c): copies queued on a Stream go to a
queue of the device's transfer-only family (the DMA engines) where it has one, joined to the
one timeline like every lane; stream order across the lane's two queues is kept by waits.

Each test runs twice: on the device as configured (`auto`: on the H200 the transfer queue, on
lavapipe, which has no transfer-only family, no copy lane: stats say None and stream copies take
the lane's compute queue), and with `CTHREADS_COPY_QUEUE=compute`, which puts the copy lane on
the compute family's queue: the whole mechanism (its command pool, transfer-only barriers,
semaphore, joins, the cross-queue waits) then runs on lavapipe too, under the validation layer
(synchronization checks on). `_direct` is switched off so that the DeviceArray copies stage
through device copies, as on discrete GPUs, instead of the host reaching unified memory.
"""

from __future__ import annotations

import numpy as np
import pytest
from devicehelp import QueueGate

from cthreads import config, runtime
from cthreads.errors import GpuInvalidArgument
from cthreads.runtime import transfer
from cthreads.gpu import DeviceArray, Stream, available, gpu, shutdown
from cthreads.residency.device_array import DeviceArray as _DeviceArray

from stream_kernels import N, add_k, scaled
from stream_kernels import arange as _arange

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")


@pytest.fixture(params=["auto", "compute"])
def copy_queue(request, monkeypatch):
    """The copy lane's queue family on a device made for the mode (None: no copy lane)."""
    monkeypatch.setattr(_DeviceArray, "_direct", lambda self: False)
    shutdown()  # (a device made for the mode asked for)
    monkeypatch.setenv("CTHREADS_COPY_QUEUE", request.param)
    family = runtime.get_device().stats()["copy_queue"]
    yield family
    shutdown()  # (the environment is restored after this: the next device is as before)


def _counters() -> dict:
    return runtime.get_device().stats()["counters"]


def test_stats_report_the_copy_queue(copy_queue, request):
    device = runtime.get_device()
    knob = device.stats()["knobs"]["copy_queue"]  # (CTHREADS_COPY_QUEUE: auto 1, 0, compute 2)
    if "compute" in request.node.name:
        assert knob == 2 and copy_queue is not None
    elif device.info.type == "cpu":
        assert copy_queue is None  # lavapipe: one family, graphics + compute + transfer
    elif device.info.nvidia:
        assert copy_queue is not None  # NVIDIA lists a transfer-only family (copy engines)


def test_an_upload_on_one_stream_is_read_by_a_kernel_on_another(copy_queue):
    up, use = Stream(), Stream()
    d = DeviceArray.from_numpy(np.zeros(N, np.float32))
    y = DeviceArray(N, "f32")
    host = _arange() + 7
    with QueueGate() as gate:
        gpu(add_k, N, 0.0, d)  # the default stream still uses d: copy_from stages
        before = _counters()
        d.copy_from(host, stream=up)
        job = gpu(scaled, N, 2.0, d, y, stream=use)  # reads d: after the upload (array rule)
        after = _counters()
        assert after["copy_submits"] - before["copy_submits"] == (copy_queue is not None)
        assert after["lane_submits"] - before["lane_submits"] == 2
        assert not job.done()
        gate.open()
        job.join()
    np.testing.assert_array_equal(y.numpy(stream=use), 2 * host)


def test_a_download_after_a_kernel_on_the_stream(copy_queue):
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    for _ in range(3):
        gpu(add_k, N, 1.0, x, stream=s)
    before = _counters()["copy_submits"]
    out = np.empty(N, np.float32)
    x.copy_to(out, stream=s)  # the host waits for the kernels; the copy goes on s's lane
    assert _counters()["copy_submits"] - before == (copy_queue is not None)
    np.testing.assert_array_equal(out, _arange() + 3)
    np.testing.assert_array_equal(x.numpy(stream=s), _arange() + 3)


def test_a_copy_after_a_kernel_on_its_stream_waits_for_it_without_a_named_dependency(copy_queue):
    """A raw copy submit names no dependency: only stream order makes it read the kernel's
    result, a device wait where the copy lane is on another queue than the kernel."""
    device = runtime.get_device()
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    out = device.buffer(4 * N, usage="download")
    try:
        with QueueGate() as gate:
            gpu(scaled, N, 3.0, x, y, stream=s)
            before = _counters()["lane_waits"]
            value = device.submit(
                [("copy", y.buffer, out, 4 * N, 0, 0)], keep=(y.buffer, out), lane=s._lane
            )
            assert _counters()["lane_waits"] - before == (copy_queue is not None)
            assert not device.wait(value, timeout=0)
            gate.open()
            assert device.wait(value, timeout=60)
        got = np.empty(N, np.float32)
        transfer.read_into(out, memoryview(got).cast("B"))
        np.testing.assert_array_equal(got, 3 * _arange())
    finally:
        out.release()


def test_a_stream_alternating_uploads_and_kernels_keeps_its_order(copy_queue):
    s, other = Stream(), Stream()
    x = DeviceArray.from_numpy(np.zeros(N, np.float32))
    y = DeviceArray.from_numpy(np.zeros(N, np.float32))
    for k in range(6):
        x.copy_from(np.full(N, k, np.float32), stream=s)
        gpu(add_k, N, 1.0, x, stream=s)  # x = k + 1
        gpu(scaled, N, 1.0, x, y, stream=other)  # y = x, on another lane (array rule)
        gpu(add_k, N, 0.5, y, stream=other)
    np.testing.assert_array_equal(y.numpy(stream=other), np.full(N, 6.5, np.float32))
    np.testing.assert_array_equal(x.numpy(stream=s), np.full(N, 6.0, np.float32))


def test_a_pooled_buffer_the_default_stream_wrote_is_written_again_on_the_copy_lane(copy_queue):
    """H200, 2026-12-02 (test_streams.py's test_with_stream_covers_copies): the copy lane's
    download took the pooled buffer a default-stream download had written on queue 0, ordered
    only by the host having seen that copy complete; validation 1.3.239 reads timeline
    semaphores as binary and cannot see host waits on them, so it reported the two copies as
    WRITE_RACING_WRITE. The sequence made deterministic (a lane submit first: the layer's
    record of the timeline's signal is then older than the default stream's copy); the
    slots' fences (native/timeline.c) tell the layer what completed. On lavapipe the lanes
    share one queue, where the layer sees queue order: there, the fences are what is checked."""
    from cthreads.runtime import lifecycle

    device = runtime.get_device()
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray.from_numpy(_arange() * 2)
    gpu(add_k, N, 1.0, y, stream=s)
    s.synchronize()
    first = device.buffer(4 * N, usage="download")
    address = first.address
    device.wait(device.submit([("copy", x.buffer, first, 4 * N, 0, 0)], keep=(x.buffer, first)))
    first.release()  # back to the pool: its last use completed
    again = device.buffer(4 * N, usage="download")
    try:
        assert again.address == address  # the pool handed the same VkBuffer out again
        value = device.submit(
            [("copy", y.buffer, again, 4 * N, 0, 0)], keep=(y.buffer, again), lane=s._lane
        )
        assert device.wait(value, timeout=60)
        got = np.empty(N, np.float32)
        transfer.read_into(again, memoryview(got).cast("B"))
        np.testing.assert_array_equal(got, _arange() * 2 + 1)
    finally:
        again.release()
    told = device._dev._layer_fences()  # completions told to the layer through fences
    if copy_queue is not None and lifecycle._instance.validation:
        assert told is not None and told >= 2  # (the default stream's copy among them)
    else:
        assert told is None  # no fences where the layer is off or there is one queue


def test_a_failed_copy_submission_raises_and_the_copy_lane_stays_usable(copy_queue):
    from cthreads.errors import VulkanOutOfMemory

    device = runtime.get_device()
    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    device._dev._inject_submit_error(-2)  # VK_ERROR_OUT_OF_DEVICE_MEMORY
    with pytest.raises(VulkanOutOfMemory):  # a fill: the copy lane's, where there is one
        device.submit([("fill", x.buffer, 0, 4 * N, 0)], keep=(x.buffer,), lane=s._lane)
    job = gpu(add_k, N, 1.0, x, stream=s)  # the copy semaphore and the timeline went on
    job.join()
    np.testing.assert_array_equal(x.numpy(stream=s), _arange() + 1)  # the fill did not run


def test_shutdown_with_copies_and_kernels_queued_on_streams(copy_queue):
    device = runtime.get_device()
    streams = [Stream() for _ in range(3)]
    xs = [DeviceArray.from_numpy(_arange()) for _ in streams]
    staging = device.buffer(4 * N, usage="upload")
    staging.write(memoryview(_arange() + 5).cast("B"))
    for _ in range(4):
        for s, x in zip(streams, xs):
            gpu(add_k, N, 1.0, x, stream=s)
            value = device.submit(
                [("copy", staging, x.buffer, 4 * N, 0, 0)],
                keep=(staging, x.buffer),
                lane=s._lane,
                after=x.last_use,
            )
            x.last_use = x.last_write = value
    staging.release()
    shutdown()  # the copies and kernels complete, then everything is destroyed: no hang
    z = DeviceArray.from_numpy(_arange())  # the next device has its copy lane again
    s = Stream()
    z.copy_from(_arange() * 2, stream=s)
    np.testing.assert_array_equal(z.numpy(stream=s), _arange() * 2)
    assert runtime.get_device().stats()["copy_queue"] == copy_queue


@pytest.mark.parametrize(("raw", "knob"), [("auto", 1), ("AUTO", 1), ("0", 0), ("compute", 2)])
def test_the_copy_queue_variable_takes_its_words(monkeypatch, raw, knob):
    monkeypatch.setenv("CTHREADS_COPY_QUEUE", raw)
    assert config.native_knobs()["copy_queue"] == knob


@pytest.mark.parametrize("raw", ["dma", "3", "-1", "0.5"])
def test_a_bad_copy_queue_value_is_refused_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("CTHREADS_COPY_QUEUE", raw)
    with pytest.raises(GpuInvalidArgument, match="CTHREADS_COPY_QUEUE.*auto, 0 or compute"):
        config.native_knobs()


def test_the_copy_lane_is_auto_by_default(monkeypatch):
    # on wherever the device has a transfer-only family (proven on the H200 with validation on)
    monkeypatch.delenv("CTHREADS_COPY_QUEUE", raising=False)
    shutdown()
    device = runtime.get_device()
    stats = device.stats()
    assert stats["knobs"]["copy_queue"] == 1
    if device.info.type == "cpu":
        assert stats["copy_queue"] is None  # lavapipe: one family, graphics + compute + transfer
    elif device.info.nvidia:
        assert stats["copy_queue"] is not None  # NVIDIA's copy engines


def test_a_copy_lane_copy_runs_beside_a_kernel_holding_the_compute_queue():
    # Overlap in device time, shown without a clock: while a gate kernel holds queue 0, a copy
    # on a stream's lane completes on the copy engines (its own semaphore, waited for on the
    # host) and the gate kernel is still running — the two ran at the same time.
    shutdown()  # the device as configured (CTHREADS_COPY_QUEUE=auto by default)
    device = runtime.get_device()
    if device.stats()["copy_queue"] is None:
        assert device._dev._copy_lane_wait(0.0) is None
        pytest.skip(f"{device.name!r} has no transfer-only queue family: no copy lane to overlap")
    nbytes = 4 * N
    host = _arange()
    src, dst = device.buffer(nbytes, usage="upload"), device.buffer(nbytes)
    back = device.buffer(nbytes, usage="download")
    src.write(host)
    s = Stream()
    with QueueGate() as gate:
        value = device.submit([("copy", src, dst, nbytes, 0, 0)], keep=(src, dst), lane=s._lane)
        assert device._dev._copy_lane_wait(60.0) is True  # done on the copy engines ...
        assert not device.wait(gate.value, timeout=0)  # ... while the gate kernel still runs
        assert not device.wait(value, timeout=0)  # (its join on queue 0 waits behind the gate)
    device.wait(device.submit([("copy", dst, back, nbytes, 0, 0)], keep=(dst, back)))
    out = np.empty_like(host)
    back.read_into(out)
    np.testing.assert_array_equal(out, host)
    with pytest.raises(GpuInvalidArgument, match="timeout_s"):
        device._dev._copy_lane_wait(-1.0)


def test_copy_lane_wait_hook_answers_in_both_modes(copy_queue):
    device = runtime.get_device()
    if copy_queue is None:
        assert device._dev._copy_lane_wait(1.0) is None
        return
    nbytes = 4 * N
    src, dst = device.buffer(nbytes, usage="upload"), device.buffer(nbytes)
    src.write(_arange())
    value = device.submit([("copy", src, dst, nbytes, 0, 0)], keep=(src, dst), lane=Stream()._lane)
    assert device._dev._copy_lane_wait(60.0) is True
    device.wait(value)
    with pytest.raises(GpuInvalidArgument, match="timeout_s must be between 0 and 3600"):
        device._dev._copy_lane_wait(float("nan"))
