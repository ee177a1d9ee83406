"""SPEC §3: `compile()` and `prepare()` of every registered kernel, on launch/session.py's state.

`prepare()` opens the device while the kernels compile (or come from the disk cache) for its
description on a thread of their own, then builds their pipelines side by side. One kernel that
does not compile is reported (and raised when launched); the others are prepared all the same.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .. import runtime
from ..errors import CThreadsGPUError
from . import session
from .session import _KERNEL_ERRORS, _announce, _log, default_target, state_for, target_from_info


def _registered() -> list[Any]:
    from ..gpu.kernel import registered_kernels

    # an @autotune kernel is prepared as its first-choice variant (what its launches run first)
    return [k if k._tuner is None else k.default_variant() for k in registered_kernels()]


def compile(force: bool = False) -> dict[str, dict]:
    """Compile every registered kernel to SPIR-V (from the cache when unchanged).

    Returns `{kernel name: {name, cache_hit, spirv_bytes, compile_ms, error}}`; a kernel that
    fails to compile reports its error here and raises it when launched.
    """
    state = session.state
    with state.lock:
        target = state.target
        if target is None and runtime.available():
            session._current_device()
            target = state.target
        target = target or default_target()
        report: dict[str, dict] = {}
        for kernel in _registered():
            try:
                compiled, hit, seconds = session._compile_one(kernel, target, force)
            except _KERNEL_ERRORS as exc:
                state.errors[kernel.source_key] = exc
                report[kernel.name] = {"name": kernel.name, "error": exc}
                continue
            state.errors.pop(kernel.source_key, None)
            report[kernel.name] = {
                "name": kernel.name,
                "cache_hit": hit,
                "spirv_bytes": len(compiled.spirv),
                "compile_ms": round(seconds * 1e3, 3),
                "cache_key": compiled.cache_key,
            }
        return report


def prepare(force: bool = False, device: Any = None) -> dict[str, dict]:
    """Make sure Vulkan is usable (raises `GPUNotAvailable` and its subclasses if not), then
    compile every registered kernel and build its pipeline on `device` (a `GpuDevice` or what
    `cthreads.gpu.device()` takes; default: the current device, else the default one).
    `force=True` shuts Vulkan down (every device), re-initializes it and rebuilds every kernel."""
    from ..runtime.handle import resolve

    if force:
        session.shutdown()
    state = state_for(resolve(device))
    with state.lock:
        kernels = _registered()
        workers = max(1, min(8, len(kernels), os.cpu_count() or 1))

        def compile_one(kernel: Any, target: Any) -> tuple | CThreadsGPUError:
            try:
                return session._compile_one(kernel, target, force)
            except _KERNEL_ERRORS as exc:
                return exc

        # The Python compile steps take turns on the GIL; validation and the driver's
        # pipeline builds run side by side.
        if state.device is None or not state.device.alive:
            compiled, device = _compile_while_opening(state, kernels, compile_one, workers)
        else:
            target = state.target
            compiled = _map(lambda kernel: compile_one(kernel, target), kernels, workers)
            device = state.device

        def build_one(item: tuple) -> Any:
            kernel, c = item
            return c if isinstance(c, _KERNEL_ERRORS) else session._pipeline(kernel, device, *c)

        results = _map(build_one, list(zip(kernels, compiled)), workers)
        report: dict[str, dict] = {}
        for kernel, result in zip(kernels, results):
            key = kernel.source_key
            if isinstance(result, _KERNEL_ERRORS):
                state.errors[key] = result
                report[kernel.name] = {"name": kernel.name, "error": result}
                _log().warning(
                    "kernel %s does not compile: %s", kernel.name, getattr(result, "reason", result)
                )
                continue
            prep, info = result
            state.errors.pop(key, None)
            state.prepared[key] = prep
            report[kernel.name] = info
            _announce(kernel, state)
        device.save_pipeline_cache()  # a later process starts warm even if this one crashes
        return report


def _compile_while_opening(
    state: Any, kernels: list, compile_one: Any, workers: int
) -> tuple[list, Any]:
    """Describe and open `state`'s device on this thread while the kernels compile (or come
    from the disk cache) for its description on a thread of their own; returns (what
    `compile_one(kernel, target)` gave for each kernel, the device).

    Creating the Vulkan instance and then the device is most of a warm prepare() (NVIDIA:
    ~65 ms each, the GIL released), so the compile steps cost nothing beside them. The device
    opens here, not on the helper thread: on the H200 (driver 580.159.04) a device opened on a
    Python thread that had ended by the first pipeline build made that build wait 6-14 ms in
    the driver (every build, when 8 threads started together), against 0.1-0.9 ms when the
    thread that opened it lived on (bench/prepare_timeline.py, 2026-12-03)."""
    described = threading.Event()
    info: list = []

    def compile_all() -> list | None:
        _warm_up(state, kernels)
        described.wait()
        if not info:
            return None  # describing failed: this thread's caller raises that
        target = target_from_info(info[0])
        return _map(lambda kernel: compile_one(kernel, target), kernels, workers)

    compiling = _Call(compile_all)
    try:
        try:
            info.append(state.describe())
        finally:
            described.set()  # (also when describing raised)
        device = session._current_device(state)
    finally:
        compiling.wait()  # never left compiling behind a raise
    return compiling.result(), device


def _warm_up(state: Any, kernels: list) -> None:
    """What the compile steps need that does not depend on the device: the kernel cache
    (its modules load on first use) and each kernel's source key."""
    from ..compiler import target as _target  # noqa: F401 - loaded while the device opens

    state.cache  # noqa: B018 - made (and its modules loaded) on first use
    for kernel in kernels:
        try:
            kernel.source_key  # noqa: B018 - computed once, kept by the kernel
        except Exception:  # noqa: BLE001 - raised again, for that kernel, by its compile step
            pass


# prepare()'s threads are plain `threading` ones: concurrent.futures loads logging, string and
# queue (~7 ms on the CI machine), a fifth of a warm prepare() there (issue 19).


class _Call:
    """`fn()` on a thread of its own; `result()` waits for it and returns or raises its
    outcome."""

    def __init__(self, fn: Any) -> None:
        self._fn, self._value, self._error = fn, None, None
        self._thread = threading.Thread(target=self._run, name="cthreads-prepare", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to result()'s caller
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _map(fn: Any, items: list, workers: int) -> list:
    """`[fn(x) for x in items]` on up to `workers` threads, in order; the first error raised
    is re-raised once every call has ended."""
    out: list = [None] * len(items)
    if len(items) <= 1 or workers <= 1:
        return [fn(x) for x in items]
    lock = threading.Lock()
    position = iter(range(len(items)))

    def work() -> None:
        while True:
            with lock:
                i = next(position, None)
            if i is None:
                return
            out[i] = fn(items[i])

    calls = [_Call(work) for _ in range(min(workers, len(items)))]
    errors = []
    for call in calls:
        try:
            call.result()
        except BaseException as exc:
            errors.append(exc)
    if errors:
        raise errors[0]
    return out
