"""Submission coalescing when things go wrong or end: a failed or device-lost background
submit, shutdown with a pending batch or a blocked waiter; and the stats() counters and
environment knobs that show the coalescing policy (the batching itself: test_coalescing.py)."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
from coalescehelp import (
    VK_ERROR_DEVICE_LOST,
    VK_ERROR_OUT_OF_DEVICE_MEMORY,
    Token,
    _busy,
    _counter,
    _eventually,
    _read,
)

from cthreads import runtime
from cthreads.errors import GpuDeviceLost, GpuUseAfterDestroy, VulkanOutOfMemory


def test_background_submit_failure_surfaces_on_next_wait_and_submit(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    device._dev._inject_submit_error(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    assert device.stats()["completed"] < busy  # appended: the background thread submits it
    gate.open()
    # the background thread submits (and fails) the batch
    assert _eventually(lambda: device.stats()["completed"] >= value)
    with pytest.raises(VulkanOutOfMemory):
        device.submit([])  # the next submit reports it once
    with pytest.raises(VulkanOutOfMemory):
        device.wait(value)  # and a wait on one of its values reports it
    # the device stays usable
    ok = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    assert device.wait(ok)
    assert (_read(buf) == 1).all()  # the failed batch's commands did not run


def test_lone_submit_failure_raises_at_once(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    device._dev._inject_submit_error(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    with pytest.raises(VulkanOutOfMemory):
        device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    assert device.wait(value)
    assert (_read(buf) == 1).all()  # the failed submit's commands did not run


def test_device_lost_in_background_submit(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    device._dev._inject_submit_error(VK_ERROR_DEVICE_LOST)
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    assert device.stats()["completed"] < busy  # appended: the background thread submits it
    gate.open()
    with pytest.raises(GpuDeviceLost):
        device.wait(value, timeout=60)
    assert not device.alive
    runtime.shutdown()
    fresh = runtime.get_device()
    assert fresh.alive and fresh is not device


def test_shutdown_with_a_pending_batch_completes_it(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    _, gate = _busy(device, kernels)
    token = Token()
    ref = weakref.ref(token)
    value = device.submit(
        [kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf, token)
    )
    del token
    assert device.stats()["batches_pending"] == 1
    gate.open()
    runtime.shutdown()  # submits the pending batch, joins the thread, waits idle: no hang
    assert not device.alive
    gc.collect()
    assert ref() is None
    with pytest.raises(GpuUseAfterDestroy):
        device.wait(value)
    with pytest.raises(GpuUseAfterDestroy):
        device.submit([])


def test_waiter_blocked_during_shutdown_returns(device, kernels):
    device.wait_idle()
    buf = _counter(device)
    busy, gate = _busy(device, kernels)
    value = device.submit([kernels.dispatch("add_i32", 256, buf.address, 256, 1)], keep=(buf,))
    results: list[object] = []
    blocked = threading.Event()

    def waiter():
        blocked.set()
        try:
            results.append(device.wait(value, timeout=60))
        except GpuUseAfterDestroy as exc:
            results.append(exc)

    t = threading.Thread(target=waiter)
    t.start()
    blocked.wait()
    assert device.completed() < busy
    gate.open()  # (shutdown waits for the device: it must be able to finish)
    runtime.shutdown()
    t.join(timeout=30)
    assert not t.is_alive()
    assert results and (results[0] is True or isinstance(results[0], GpuUseAfterDestroy))


def test_stats_count_vulkan_objects(device):
    device.wait_idle()
    device.completed()
    s0 = device.stats()
    # the 64 ring slots', the lanes' join and, where the device has a transfer-only family
    # (the copy lane, CTHREADS_COPY_QUEUE=auto by default; not lavapipe), one per ring slot
    copy = s0["command_buffer_uses"]["copy"]  # (made by the first stream copy: 0 before)
    assert copy in ((0,) if s0["copy_queue"] is None else (0, 64))
    assert s0["command_buffer_uses"] == {"ring": 64, "join": 1, "copy": copy}
    assert s0["command_buffers"] == 65 + copy and s0["submit_thread"] == 1
    assert s0["vk_buffers"] == s0["vk_memory"] == s0["allocations"]
    pipe = device.pipeline(runtime.load_shader("fill_u32"), 16)
    assert device.stats()["pipelines"] == s0["pipelines"] + 1
    del pipe
    gc.collect()
    assert device.stats()["pipelines"] == s0["pipelines"]
    buf = device.buffer(3 * 1024 * 1024 + 12345)  # a size class nobody pooled
    s1 = device.stats()
    assert s1["vk_buffers"] == s0["vk_buffers"] + 1
    assert s1["buffers_in_use"] == s0["buffers_in_use"] + 1
    buf.release()
    s2 = device.stats()
    assert s2["buffers_in_use"] == s0["buffers_in_use"] and s2["pooled"] == s0["pooled"] + 1
    device.trim()
    s3 = device.stats()
    assert s3["vk_buffers"] == s3["buffers_in_use"] == s0["buffers_in_use"] and s3["pooled"] == 0
    assert s3["kept_objects"] == 0 and s3["ring_in_flight"] == 0


def test_stats_count_the_copy_lanes_command_buffers_too(monkeypatch):
    # CTHREADS_COPY_QUEUE=compute: a copy lane even on lavapipe, one command buffer per slot,
    # made by the first copy bound for the copy queue (issue 19: none at open)
    if not runtime.available():
        pytest.skip("no Vulkan device")
    runtime.shutdown()
    monkeypatch.setenv("CTHREADS_COPY_QUEUE", "compute")
    try:
        device = runtime.get_device()
        s = device.stats()
        assert s["copy_queue"] is not None
        assert s["command_buffer_uses"] == {"ring": 64, "join": 1, "copy": 0}
        assert device._dev._copy_lane_wait(1.0) is True  # nothing copied: nothing to wait for
        src, dst = device.buffer(64), device.buffer(64)
        src.write(bytes(range(64)))
        device.submit([("fill", dst, 0, 64, 0)], keep=(dst,), lane=1)  # (one buffer each)
        assert device.stats()["command_buffer_uses"]["copy"] == 64
        value = device.submit([("copy", src, dst, 64, 0, 0)], keep=(src, dst), lane=1)
        assert device.wait(value)
        out = bytearray(64)
        dst.read_into(out)
        assert bytes(out) == bytes(range(64))
        s = device.stats()
        assert s["command_buffer_uses"] == {"ring": 64, "join": 1, "copy": 64}
        assert s["command_buffers"] == 129 and s["counters"]["copy_submits"] == 2
        runtime.shutdown()
        assert device.stats()["command_buffers"] == 0  # the pools took them with them
    finally:
        runtime.shutdown()  # (the environment is restored after this: the next device is as before)


def test_a_stream_of_submits_appends_without_counter_reads(device, kernels):
    """The hot path: submits appended to the pending batch read no timeline counter (an ioctl
    on some drivers) and wake no thread; the counters of stats() show it."""
    buf = _counter(device)
    cmd = [kernels.dispatch("add_i32", 256, buf.address, 256, 1)]
    device.wait_idle()
    busy, gate = _busy(device, kernels)  # in flight: what follows is appended
    c0 = device.stats()["counters"]
    for _ in range(200):
        value = device.submit(cmd)
    c1 = device.stats()["counters"]
    d = {k: c1[k] - c0[k] for k in c0}
    assert device.completed() < busy
    gate.open()
    assert d["appends"] + d["deferred"] + d["direct"] + d["full"] == 200
    assert d["appends"] >= 150, d
    assert d["host_polls"] <= d["deferred"] + d["direct"], d  # at most one per opened batch
    assert d["clock_reads"] == d["deferred"] + d["direct"], d  # none per append
    device.wait(value)
    assert (_read(buf) == 200).all()
    knobs = device.stats()["knobs"]
    assert knobs["coalesce"] == 1 and knobs["batch_max"] >= 1


def test_policy_knobs_are_read_from_the_environment():
    import os
    import subprocess
    import sys

    code = (
        "from cthreads import runtime; d = runtime.get_device(); k = d.stats()['knobs'];"
        "print(k['coalesce'], k['spin_ns'], k['bg_delay_ns'], k['batch_max'], k['inflight'])"
    )
    env = dict(
        os.environ,
        CTHREADS_COALESCE="0",
        CTHREADS_SPIN_US="7",
        CTHREADS_BG_DELAY_US="0",
        CTHREADS_BATCH_MAX="9",
        CTHREADS_INFLIGHT="1",
    )
    env.pop("CTHREADS_VALIDATION", None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out == ["0", "7000", "0", "9", "1"]
