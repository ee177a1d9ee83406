"""The process's Vulkan state: probe, init, the default device, shutdown.

One instance and one default device at a time, behind a lock. `shutdown()` waits idle and
destroys everything in order; the next `get_device()` starts a new generation, and objects of
the old one raise GpuUseAfterDestroy. `available()` never raises and caches its answer.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from typing import Any

from .. import config
from ..errors import CThreadsGPUError
from . import native
from .device import Device
from .info import DeviceInfo, choose
from .pipeline_cache import PipelineCacheFile

_lock = threading.RLock()
_instance: Any = None
_device: Device | None = None
_generation = 0
_available: bool | None = None
_atexit_registered = False


def _get_instance() -> Any:
    global _instance, _atexit_registered
    if _instance is None:
        ext = native.loaded_module()
        _instance = ext.Instance(config.validation_enabled(), "cthreads")
        if not _atexit_registered:
            atexit.register(_at_exit)
            _atexit_registered = True
    return _instance


def list_devices() -> list[DeviceInfo]:
    """Every Vulkan physical device, as plain data (raises the mapped error)."""
    with _lock:
        return [DeviceInfo.from_native(d) for d in _get_instance().physical_devices()]


def default_device_info() -> DeviceInfo:
    """The device `init()` opens (CTHREADS_DEVICE honoured), described without opening it:
    callers can prepare work for it while it is being created."""
    with _lock:
        if _device is not None and _device.alive:
            return _device.info
        infos = [DeviceInfo.from_native(d) for d in _get_instance().physical_devices()]
        return choose(infos, config.device_selector())


def init() -> Device:
    """Create the default device if needed (idempotent) and return it."""
    global _device, _generation, _available
    with _lock:
        if _device is not None and _device.alive:
            return _device
        if _device is not None:  # lost: start over
            _shutdown_locked()
        instance = _get_instance()
        infos = [DeviceInfo.from_native(d) for d in instance.physical_devices()]
        info = choose(infos, config.device_selector())
        cache_file = PipelineCacheFile(info)
        dev = native.module().Device(instance, info.index, cache_file.load())
        _generation += 1
        _device = Device(dev, info, _generation, cache_file)
        _available = True
        return _device


def get_device() -> Device:
    """The default device, created on first use."""
    dev = _device
    if dev is not None and dev.alive:
        return dev
    return init()


def current_generation() -> int:
    """The generation of the live default device; 0 when there is none."""
    dev = _device
    return dev.generation if dev is not None and dev.alive else 0


def available() -> bool:
    """Whether a usable Vulkan device exists. Never raises; the answer is cached."""
    global _available
    if _available is None:
        try:
            init()
            _available = True
        except (CThreadsGPUError, OSError):
            _available = False
    return _available


def device_name() -> str:
    """The default device's name (raises the mapped error when there is none)."""
    return get_device().info.name


def _shutdown_locked() -> None:
    global _device, _instance
    dev, _device = _device, None
    inst, _instance = _instance, None
    try:
        if dev is not None:
            dev.close()
    finally:
        if inst is not None:
            inst.destroy()


def shutdown() -> None:
    """Wait for the device, save the pipeline cache and destroy every Vulkan object."""
    with _lock:
        _shutdown_locked()


def validation_messages(clear: bool = True) -> list[str]:
    """Messages captured from the Khronos validation layer (CTHREADS_VALIDATION=1)."""
    if not native.built():
        return []
    return native.module().validation_messages(clear)


def _at_exit() -> None:
    # at interpreter exit a failed teardown must not turn into a traceback: Vulkan objects
    # die with the process anyway
    with contextlib.suppress(CThreadsGPUError, OSError):
        shutdown()
