"""Probe, init, shutdown and re-init; objects of a shut-down device raise, never crash."""

from __future__ import annotations

import struct

import pytest

from cthreads import runtime
from cthreads.errors import GpuUseAfterDestroy
from cthreads.runtime import DeviceInfo


def test_probe_functions(device):
    assert runtime.available() is True
    assert runtime.device_name() == device.info.name
    assert runtime.init() is device
    assert runtime.get_device() is device
    assert runtime.current_generation() == device.generation


def test_device_info_is_plain_data(device):
    infos = runtime.list_devices()
    assert infos and all(isinstance(i, DeviceInfo) for i in infos)
    info = device.info
    assert info.type in ("discrete", "integrated", "virtual", "cpu", "other")
    assert info.api_version.count(".") == 2 and info.driver_version
    assert len(info.limits["max_compute_work_group_count"]) == 3
    assert len(info.limits["max_compute_work_group_size"]) == 3
    for key in (
        "max_compute_work_group_invocations",
        "max_storage_buffer_range",
        "max_push_constants_size",
        "max_memory_allocation_size",
        "subgroup_size",
        "timestamp_period",
        "min_storage_buffer_offset_alignment",
    ):
        assert key in info.limits
    assert info.memory_heaps and all({"size", "device_local"} <= set(h) for h in info.memory_heaps)
    assert info.memory_types
    for key in (
        "buffer_device_address",
        "timeline_semaphore",
        "storage_buffer_8bit",
        "shader_int64",
        "shader_float64",
        "shader_float16",
        "shader_int16",
        "storage_buffer_16bit",
        "atomic_float32_add",
        "subgroup_basic",
        "host_visible_device_local",
    ):
        assert isinstance(info.features[key], bool)
    assert info.features["buffer_device_address"] and info.features["timeline_semaphore"]
    with pytest.raises(AttributeError):
        info.name = "x"  # type: ignore[misc]


def test_host_visible_device_buffers_match_the_feature(device):
    buf = device.buffer(64)
    assert buf.host_visible == device.host_visible_device_local
    assert device.buffer(64, usage="upload").host_visible
    assert device.buffer(64, usage="download").host_visible


def test_shutdown_then_new_use_and_old_objects_raise(device, kernels):
    pipe = kernels.pipe("add_i32")
    buf = device.buffer(64)
    buf.write(bytes(64))
    in_flight = device.submit([kernels.dispatch("add_i32", 16, buf.address, 16, 1)], keep=(buf,))
    old_generation = device.generation

    runtime.shutdown()
    runtime.shutdown()  # idempotent
    assert not device.alive
    assert runtime.current_generation() == 0

    with pytest.raises(GpuUseAfterDestroy):
        buf.write(b"x")
    with pytest.raises(GpuUseAfterDestroy):
        buf.read_into(bytearray(4))
    with pytest.raises(GpuUseAfterDestroy):
        buf.pack_list([1], "i")
    with pytest.raises(GpuUseAfterDestroy):
        _ = buf.address
    with pytest.raises(GpuUseAfterDestroy):
        device.buffer(16)
    with pytest.raises(GpuUseAfterDestroy):
        device.submit([("dispatch", pipe, bytes(16), (1, 1, 1))])
    with pytest.raises(GpuUseAfterDestroy):
        device.wait(in_flight)
    with pytest.raises(GpuUseAfterDestroy):
        device.pipeline(runtime.load_shader("add_i32"), 16)
    assert buf.released and not pipe.alive
    buf.release()  # harmless

    new = runtime.get_device()
    assert new is not device and new.alive
    assert new.generation == old_generation + 1 == runtime.current_generation()
    # old objects cannot be mixed into the new device
    new_buf = new.buffer(64)
    with pytest.raises(GpuUseAfterDestroy):
        new.submit([("dispatch", pipe, struct.pack("<QIi", new_buf.address, 16, 1), (1, 1, 1))])
    with pytest.raises(GpuUseAfterDestroy):
        new.submit([("copy", buf, new_buf, 4, 0, 0)])
    new_pipe = new.pipeline(runtime.load_shader("add_i32"), 16)
    new_buf.write(bytes(64))
    new.wait(
        new.submit([("dispatch", new_pipe, struct.pack("<QIi", new_buf.address, 16, 3), (1, 1, 1))])
    )
    out = [0] * 16
    new_buf.unpack_into_list(out, "i")
    assert out == [3] * 16
    del buf, pipe


def test_pipeline_cache_is_written(device, kernels):
    from cthreads.runtime.pipeline_cache import cache_path

    kernels.pipe("copy_u32")
    runtime.shutdown()
    path = cache_path(device.info)
    assert path.exists() and path.stat().st_size > 0
    assert not list(path.parent.glob("*.tmp"))
    dev = runtime.get_device()  # created again from the cache file
    dev.pipeline(runtime.load_shader("copy_u32"), 20)


def test_native_objects_misused_directly_raise_instead_of_crashing(device):
    from cthreads import _native
    from cthreads.errors import GpuInvalidArgument

    raw = _native.Device.__new__(_native.Device)
    with pytest.raises(GpuUseAfterDestroy):
        raw.submit([])
    with pytest.raises(GpuUseAfterDestroy):
        raw.buffer(16)
    with pytest.raises(GpuUseAfterDestroy):
        raw.wait(1)
    raw.destroy()
    inst = _native.Instance.__new__(_native.Instance)
    with pytest.raises(GpuUseAfterDestroy):
        inst.physical_devices()
    with pytest.raises(TypeError):
        _native.Buffer()
    # the instance refuses to go away under a live device
    from cthreads.runtime import lifecycle

    with pytest.raises(GpuInvalidArgument, match="device"):
        lifecycle._instance.destroy()
    assert device.alive


def test_teardown_refuses_waiters_that_let_the_gil_go(device, kernels):
    """Once shutdown began, no wait that released the GIL may touch the device again: a waiter
    blocked on work that cannot finish yet leaves (GpuUseAfterDestroy) at its next wait slice,
    while teardown itself still waits for the device. (Before, such a waiter stayed inside
    vkWaitSemaphores, and one that had paused without the GIL polled the timeline after teardown
    had waited for the others: the H200's SIGSEGV in the shutdown race test.)"""
    import threading

    from conftest import Gate

    gate = Gate(device, n=65535 * 64)  # closed, it runs for many minutes anywhere
    outcome: list[object] = []
    left = threading.Event()

    def waiter():
        try:
            outcome.append(device.wait(gate.value))
        except GpuUseAfterDestroy as exc:
            outcome.append(exc)
        left.set()

    w = threading.Thread(target=waiter)
    w.start()
    closing = threading.Thread(target=runtime.shutdown)  # waits for the device: the gate
    closing.start()
    assert left.wait(60), "a waiter kept blocking through shutdown"
    assert isinstance(outcome[0], GpuUseAfterDestroy)
    assert closing.is_alive()  # teardown itself still waits for the device (the gate)
    gate.open()
    closing.join(60)
    w.join(60)
    assert not closing.is_alive() and not device.alive


OPEN_PHASES = (
    "physical",
    "create_device",
    "functions",
    "memory",
    "timeline",
    "command_buffers",
    "join",
    "layer_fences",
    "pipeline_cache",
    "threads",
)


def test_stats_account_for_the_cost_of_opening_the_device(device):
    """stats()["open_ms"]: every phase of Device(...) (issue 19), in order, none negative,
    together no more than the whole open_total_ms, which vkCreateDevice is a part of."""
    s = device.stats()
    phases, total = s["open_ms"], s["open_total_ms"]
    assert tuple(phases) == OPEN_PHASES
    assert all(isinstance(v, float) and v >= 0.0 for v in phases.values())
    assert 0.0 < phases["create_device"] <= total
    assert sum(phases.values()) <= total + 1e-9
    assert device.stats()["open_ms"] == phases  # measured once, at open


def test_physical_devices_read_the_same_from_the_instances_extension_lists(device):
    """Each physical device's extensions are listed once per instance (physdev.c): a second
    description on the live instance, whose lists are filled (describing and opening asked),
    and one from a fresh instance, which lists them anew, say the same."""
    from cthreads import config
    from cthreads.runtime import native

    live = runtime.lifecycle._get_instance()
    again = live.physical_devices()
    fresh_instance = native.loaded_module().Instance(config.validation_enabled(), "cthreads")
    try:
        fresh = fresh_instance.physical_devices()
    finally:
        fresh_instance.destroy()
    assert again == fresh and again[device.info.index]["name"] == device.info.name
