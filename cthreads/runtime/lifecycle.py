"""The process's Vulkan state: probe, init, the default device, the other open devices, shutdown.

One instance and one default device at a time, behind a lock; other devices (issue 20) open
on demand (`open_device`, through `cthreads.gpu.device(...)`), each its own native Device (its
own VkDevice, queue and submission thread), keyed by (Vulkan index, logical number): a second
logical device on one physical device is a separate VkDevice (how the tests run two devices on
lavapipe). Every device opened gets a generation number of its own (one counter for all), so a
buffer or pipeline of one device never passes for another's. Which devices are visible, and
which is the default, is runtime/visibility.py's. `shutdown()` waits idle and
destroys the device and everything on it, in order (the instance stays until exit); the next
`get_device()` starts a new generation, and objects of the old one raise GpuUseAfterDestroy. `available()` never raises and caches its answer.

Process events (docs/reliability.md, "Process exit, fork and Ctrl-C"):
- exit: the implicit teardown is registered with atexit when this module is imported, so it
  runs after the exit handlers the program registers later (atexit runs them last-in first-out)
  and those may still launch. It waits for the device at most `config.exit_wait()` seconds;
  past that (a kernel that does not end) the device is abandoned with a warning, not waited for.
- fork: the child drops the parent's device and instance without touching them (no Vulkan
  call, no thread join, fresh locks); its first use opens a device of its own.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import config
from ..errors import CThreadsGPUError, VulkanInitFailed
from . import native
from .device import Device
from .info import DeviceInfo
from .visibility import default_device, visible
from .pipeline_cache import PipelineCacheFile

_lock = threading.RLock()
_instance: Any = None
# True in a child of fork() whose parent had a device open (some drivers cannot open one there)
_inherited_device = False
# In such a child, the name of an inherited device that is not a CPU driver: no Vulkan call is
# made there at all. NVIDIA's driver (580, H200, 2026-12-02) refused vkCreateDevice in a forked
# child at times and at other times hung the child forever inside the driver (a lock some
# driver thread of the parent held at the fork); only CPU drivers (lavapipe) were seen to open
# a fresh instance and device in a forked child reliably.
_forked_from_gpu: str | None = None
_device: Device | None = None
# the devices open besides the default one, by (Vulkan index, logical number)
_others: dict[tuple[int, int], Device] = {}
_generation = 0
_available: bool | None = None
# (instance, its devices described): list_devices()' answer for the live instance
_infos: tuple[Any, list[DeviceInfo]] | None = None
# called (no arguments, no lock taken) whenever the open devices go away: layers above
# (launch/session.py) drop what they built on it
_on_shutdown: list[Callable[[], None]] = []


# called (no arguments, no lock taken by the hook) just before a device is opened: a layer above
# may start work that overlaps the driver's (launch/preload.py: the compiler's import)
_on_opening: list[Callable[[], None]] = []


def on_opening(hook: Callable[[], None]) -> None:
    """Call `hook()` each time a device is about to be opened (before the instance is made,
    for the default device). It must be quick and must not take locks: it runs under this
    module's lock."""
    _on_opening.append(hook)


def _opening() -> None:
    for hook in _on_opening:
        hook()


def on_shutdown(hook: Callable[[], None]) -> None:
    """Call `hook()` each time the default device is shut down (also at exit and after fork).
    It must not take locks: it runs under this module's lock."""
    _on_shutdown.append(hook)


def _refuse_forked(cause: str) -> VulkanInitFailed:
    """The error for a forked child that cannot open a device (`cause`: why)."""
    return VulkanInitFailed(
        f"this process was forked from one that had the GPU open, and {cause}",
        hint="start worker processes with multiprocessing's 'spawn' or 'forkserver' "
        "start method, or fork before the first GPU use",
    )


def _get_instance() -> Any:
    global _instance
    if _forked_from_gpu is not None:
        raise _refuse_forked(
            f"the driver of {_forked_from_gpu} cannot be used again in a forked child "
            "(it can hang there): no Vulkan call is made"
        )
    if _instance is None:
        ext = native.loaded_module()
        _instance = ext.Instance(config.validation_enabled(), "cthreads")
    return _instance


def list_devices() -> list[DeviceInfo]:
    """Every Vulkan physical device, as plain data (raises the mapped error). Described once
    per instance (the set of physical devices is fixed while an instance lives, and describing
    them is ~0.9 ms on lavapipe: `device=0` and the default-device check read this)."""
    global _infos
    with _lock:
        instance = _get_instance()
        if _infos is None or _infos[0] is not instance:
            _infos = (instance, [DeviceInfo.from_native(d) for d in instance.physical_devices()])
        return list(_infos[1])


def _choose_default(infos: list[DeviceInfo]) -> DeviceInfo:
    return default_device(
        infos, config.device_selector(), config.visible_devices(), config.cuda_visible_devices()
    )


def default_device_info() -> DeviceInfo:
    """The device `init()` opens (CTHREADS_DEVICE, else the first visible device), described
    without opening it: callers can prepare work for it while it is being created."""
    with _lock:
        if _device is not None and _device.alive:
            return _device.info
        return _choose_default(list_devices())


def visible_devices() -> list[DeviceInfo]:
    """The devices this process sees, in order (runtime/visibility.py), none opened."""
    infos = list_devices()
    return visible(infos, config.visible_devices(), config.cuda_visible_devices())


def init() -> Device:
    """Create the default device if needed (idempotent) and return it."""
    global _device, _available
    with _lock:
        if _device is not None and _device.alive:
            return _device
        if _device is not None:  # lost: start over (on the same instance)
            _shutdown_locked(keep_instance=True)
        _opening()
        info = _choose_default(list_devices())
        _device = _open(info)
        _available = True
        return _device


def _open(info: DeviceInfo, logical: int = 0) -> Device:
    """A new native device on `info` with the next generation (the lock is held)."""
    global _generation
    # the native policy knobs, read and checked here: no C code reads the environment
    knobs = config.native_knobs()
    try:
        cache_file = PipelineCacheFile(info)
        knobs["pipeline_cache"] = int(cache_file.in_use)  # (CTHREADS_PIPELINE_CACHE)
        dev = native.module().Device(_get_instance(), info.index, cache_file.load(), knobs)
    except CThreadsGPUError as exc:
        if not _inherited_device:
            raise
        # a driver that refuses vkCreateDevice in a forked child: say why and how
        raise _refuse_forked(
            f"the driver cannot open a device in the forked child ({exc})"
        ) from None
    _generation += 1
    return Device(dev, info, _generation, cache_file, logical)


def is_default(info: DeviceInfo, logical: int = 0) -> bool:
    """Whether (`info`, `logical`) is the default device (open or not)."""
    return logical == 0 and info.index == default_device_info().index


def open_device(info: DeviceInfo, logical: int = 0) -> Device:
    """The open device for physical device `info`, logical number `logical`, opened now if it
    is not: the default device itself where that is the one (logical 0 of the default's
    physical device), else a device of its own, kept until shutdown()."""
    with _lock:
        if is_default(info, logical):
            return get_device()
        key = (info.index, logical)
        dev = _others.get(key)
        if dev is not None and dev.alive:
            return dev
        if dev is not None:  # lost: close what is left and open it anew
            del _others[key]
            with contextlib.suppress(CThreadsGPUError):
                dev.close()
        _opening()
        dev = _others[key] = _open(info, logical)
        return dev


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


def _device_gone() -> None:
    for hook in _on_shutdown:
        hook()


def _shutdown_locked(keep_instance: bool = False) -> None:
    """Destroy the default device and every other open one; the Vulkan instance too unless
    `keep_instance`. `shutdown()` and re-init after a lost device keep it: the instance holds no device state, creating one
    is most of NVIDIA's start-up cost (80-100 ms), and NVIDIA's driver failed to create a new
    one (VK_ERROR_INCOMPATIBLE_DRIVER, then SIGSEGV) after repeated create/destroy cycles
    raced by launching threads. The instance goes at exit."""
    global _device, _instance
    dev, _device = _device, None
    others = list(_others.values())
    _others.clear()
    inst = None
    if not keep_instance:
        inst, _instance = _instance, None
    _device_gone()
    try:
        _close_all([d for d in (dev, *others) if d is not None])
    finally:
        if inst is not None:
            inst.destroy()


def _close_all(devices: list[Device]) -> None:
    """Close each device; every one is closed even when one fails (the first error is raised)."""
    error: BaseException | None = None
    for dev in devices:
        try:
            dev.close()
        except CThreadsGPUError as exc:
            error = error or exc
    if error is not None:
        raise error


def shutdown() -> None:
    """Wait for every open device, save the pipeline caches and destroy the devices and every
    object on them (the Vulkan instance stays for the next init(); it is destroyed at exit)."""
    with _lock:
        _shutdown_locked(keep_instance=True)


def validation_messages(clear: bool = True) -> list[str]:
    """Messages captured from the Khronos validation layer (CTHREADS_VALIDATION=1)."""
    if not native.built():
        return []
    return native.module().validation_messages(clear)


def _at_exit() -> None:
    # at interpreter exit a failed teardown must not turn into a traceback: Vulkan objects
    # die with the process anyway
    with contextlib.suppress(CThreadsGPUError, OSError):
        with _lock:
            wait = _exit_wait()
            alive = [d for d in (_device, *_others.values()) if d is not None and d.alive]
            busy = [d for d in alive if not _idle_within(d, wait)]
            if busy:
                _abandon_locked(busy)
            _shutdown_locked()


def _exit_wait() -> float:
    try:
        return config.exit_wait()
    except ValueError as exc:  # (no traceback at exit: say it and use the default)
        warnings.warn(f"cthreads: {exc}; waiting 10 s", RuntimeWarning, stacklevel=1)
        return 10.0


def _idle_within(dev: Device, seconds: float) -> bool:
    """Whether everything submitted to `dev` completes within `seconds` (True when waiting
    fails: a lost device has nothing to wait for, its teardown does not block)."""
    try:
        return dev.wait(dev.last_value, seconds)
    except KeyboardInterrupt:  # a second Ctrl-C at exit: stop waiting
        return False
    except CThreadsGPUError:
        return True


def _abandon_locked(devs: list[Device]) -> None:
    """Leave `devs` to the process's exit: a kernel still runs on each, and destroying one
    would wait for that kernel (for ever, if it never ends). The instance is left too (a
    device on it lives on); the other devices are shut down as usual after this."""
    global _device, _instance
    if _device in devs:
        _device = None
    for key in [k for k, d in _others.items() if d in devs]:
        del _others[key]
    _instance = None
    _device_gone()
    warnings.warn(
        f"cthreads: GPU work still running at exit after {_exit_wait():g} s; the device "
        "is abandoned without waiting for it (set CTHREADS_EXIT_WAIT to wait longer)",
        RuntimeWarning,
        stacklevel=1,
    )
    for dev in devs:
        dev._dev._abandon()


# Registered at import, before the program can register exit handlers that launch: atexit
# runs handlers last-in first-out, so this teardown comes after them.
atexit.register(_at_exit)


def _after_fork_in_child() -> None:
    """The child of fork(): nothing of the parent's device is usable here (its submission
    thread does not exist, a lock may be held by a thread that does not exist, the driver's
    state is the parent's). Drop it without a Vulkan call; the next use opens a new one."""
    global _lock, _device, _instance, _available, _inherited_device, _forked_from_gpu
    _lock = threading.RLock()  # (_others: cleared below)
    devs = [d for d in (_device, *_others.values()) if d is not None]
    _inherited_device = _inherited_device or bool(devs)
    gpus = [d.info.name for d in devs if d.info.type != "cpu"]
    if gpus and _forked_from_gpu is None:
        _forked_from_gpu = gpus[0]
    _device = None
    _others.clear()
    inst, _instance = _instance, None
    for dev in devs:
        dev._dev._forget()
    if inst is not None:
        inst._forget()
    if _available is False:  # (a failed probe is retried: the child may fare better)
        _available = None
    _device_gone()


os.register_at_fork(after_in_child=_after_fork_in_child)
