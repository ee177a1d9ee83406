"""Launch state per device: each kernel's compiled form and pipeline, built on first use.

A `_State` holds one device, the compile `Target` derived from it, and each kernel's compiled
form and pipeline (with its launch plan and C launcher), keyed by the kernel's source key (so
a redefined kernel is compiled anew on its first launch). `state` is the default device's;
every other device (issue 20: `gpu(..., device=)`, `with device:`) gets one of its own on its
first launch (`state_for`), kept on its `GpuDevice` handle. The SPIR-V kernel cache is one for
all (it is keyed by the target). A kernel that fails to compile fails alone: its error is kept
and raised when it is launched on that device. `compile()`/`prepare()` of every registered
kernel at once are launch/preparing.py's.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .. import config, runtime
from ..errors import (
    GpuCompileError,
    GpuInternalCompilerError,
    GpuUseAfterDestroy,
)
from ..runtime import lifecycle as runtime_lifecycle
from . import preload

if TYPE_CHECKING:
    from ..compiler.artifact import CompiledKernel
    from ..compiler.cache import KernelCache
    from ..compiler.target import Target

# No compiler module is imported here (issue 19): `import cthreads.gpu` must not pay for the
# compiler (~50 ms on lavapipe, most of it compiler.ir). The kernel cache and the compile
# target load on the first prepare/launch/compile, the compiler itself on the first cache miss.

# What one kernel's compile may raise without stopping the others (SPEC §2): its own error, or
# a compiler bug (reported for that kernel, never for its neighbours).
_KERNEL_ERRORS = (GpuCompileError, GpuInternalCompilerError)


def _log() -> Any:
    """The `cthreads.gpu` logger (logging loads on the first message, not at import)."""
    import logging

    return logging.getLogger("cthreads.gpu")


class Prepared:
    """A kernel ready to launch on the current device (a plain class: a dataclass's code
    generation costs ~1 ms at `import cthreads.gpu`, issue 19)."""

    __slots__ = ("compiled", "pipeline", "physical_wg", "generation", "plan", "fast", "info")

    def __init__(
        self,
        compiled: CompiledKernel,
        pipeline: Any,
        physical_wg: int,
        generation: int,
        plan: Any = None,
        fast: Any = None,
        info: dict | None = None,
    ) -> None:
        self.compiled = compiled
        self.pipeline = pipeline
        self.physical_wg = physical_wg  # workgroup size along x the pipeline was built with
        self.generation = generation
        self.plan = plan  # its plan.LaunchPlan, made on the first launch (dispatch.py)
        self.fast = fast  # its C launcher (plan.native_launcher) or a stand-in, on first launch
        self.info = {} if info is None else info


class _State:
    """The launch state of one device. `opener()` returns its open runtime device (opening it
    if needed); `describe()` its DeviceInfo without opening it; `shared` is the default
    device's state, whose kernel cache every state uses."""

    def __init__(
        self,
        opener: Any = None,
        describe: Any = None,
        shared: _State | None = None,
    ) -> None:
        self.opener = opener or runtime.get_device
        self.describe = describe or runtime.default_device_info
        self.shared = shared
        self.lock = threading.RLock()
        self.device: Any = None
        self.generation = -1
        self.target: Target | None = None
        self.compiled: dict[tuple[str, str], CompiledKernel] = {}
        self.prepared: dict[str, Prepared] = {}
        self.errors: dict[str, BaseException] = {}
        self._cache: KernelCache | None = None
        self._cache_lock = threading.Lock()  # prepare() looks the cache up on several threads
        self.logged: set[str] = set()

    @property
    def cache(self) -> KernelCache:
        """The SPIR-V kernel cache, made on first use (its module loads compiler.ir)."""
        if self.shared is not None:
            return self.shared.cache
        cache = self._cache
        if cache is None:
            with self._cache_lock:
                cache = self._cache
                if cache is None:
                    from ..compiler import cache as kcache

                    cache = self._cache = kcache.KernelCache(
                        config.cache_dir() / "spirv", config.disk_cache_enabled()
                    )
        return cache

    @cache.setter
    def cache(self, value: KernelCache) -> None:
        self._cache = value

    @property
    def cache_loaded(self) -> bool:
        """Whether the kernel cache exists yet (nothing was compiled or looked up before)."""
        if self.shared is not None:
            return self.shared.cache_loaded
        return self._cache is not None


state = _State()


def all_states() -> list[_State]:
    """The launch states in use: the default device's and those of the handles launched on."""
    from ..runtime.handle import _handles

    states = [state]
    for h in list(_handles.values()):
        if h.session is not None and h.session is not state:
            states.append(h.session)
    return states


def state_for(handle: Any) -> _State:
    """The launch state of device `handle` (a `GpuDevice`; None: the default device's
    `state`), made on its first launch. The default device's handle shares `state`, so a
    launch on it by name is the same as one without `device=`."""
    if handle is None:
        return state
    st = handle.session
    if st is None:
        with _states_lock:  # (two threads' first launches on one device: one state)
            st = handle.session
            if st is None:
                if handle.is_default:
                    st = state
                else:
                    st = _State(handle.open, lambda: handle.info, shared=state)
                handle.session = st
    return st


def default_target() -> Target:
    """The compile target used while no device is open (`compiler.target.DEFAULT_TARGET`)."""
    from ..compiler.target import DEFAULT_TARGET

    return DEFAULT_TARGET


_stats_lock = threading.Lock()
_states_lock = threading.Lock()


def _device_gone() -> None:
    """The runtime's devices are going away (runtime.shutdown(), the exit teardown, fork):
    what was built on the default one is dropped, so the next launch prepares on the new
    device, and the vector forms being built finish first (before the devices are destroyed).
    Takes no lock (the runtime's lock is held: a launch holding state.lock may be waiting for
    it; the builder threads take none)."""
    state.generation = -1
    state.prepared.clear()
    wait_for_vector_forms()


def _after_fork_in_child() -> None:
    global _stats_lock, _states_lock, _behind_lock
    _behind_lock = threading.Lock()
    _behind.clear()  # (their threads are the parent's)
    state.lock = threading.RLock()  # (may have been held by a thread of the parent)
    _states_lock = threading.Lock()
    state._cache_lock = threading.Lock()
    _stats_lock = threading.Lock()
    state.device = None
    state.target = None


runtime_lifecycle.on_shutdown(_device_gone)
runtime_lifecycle.on_opening(preload.start)
os.register_at_fork(before=lambda: wait_for_vector_forms(), after_in_child=_after_fork_in_child)


def target_from_device(device: Any) -> Target:
    """The compile target for a runtime device (plain data only crosses into the compiler)."""
    return target_from_info(device.info)


def target_from_info(info: Any) -> Target:
    """The compile target for a device description (`runtime.DeviceInfo`): the compiler's one
    profile -> Target conversion, so a launch and `kernel.compile(chip=...)` agree."""
    from ..compiler.target import target_from_profile

    return target_from_profile(
        {
            "type": info.type,
            "limits": info.limits,
            "features": info.features,
            "cooperative_matrix": getattr(info, "cooperative_matrix", []),
        }
    )


def physical_workgroup(device: Any) -> int:
    """Workgroup width for kernels that do not observe the workgroup (SPEC §4).

    Wide groups win on GPUs (a GLSL saxpy on the H200: 3.3 TB/s at 256 vs 1.3 TB/s at 64); on
    CPU devices (lavapipe) the width only changes per-group overhead, where wider is also better.
    """
    limit = int(device.info.limits.get("max_compute_work_group_invocations", 256))
    return min(config.workgroup_width() or 256, limit)


def _current_device(st: _State | None = None) -> Any:
    """The runtime device of `st` (default: the default device's state), re-read after a
    shutdown (a new generation drops prepared kernels)."""
    st = st or state
    device = st.opener()
    if device.generation != st.generation:
        st.device = device
        st.generation = device.generation
        st.target = target_from_device(device)
        st.prepared.clear()
    return device


def _compile_one(kernel: Any, target: Target, force: bool) -> tuple[CompiledKernel, bool, float]:
    """Compile (or fetch from cache) one kernel; returns (compiled, cache_hit, seconds)."""
    preload.wait()  # (the compiler's import, when a cold process started it as the device opened)
    from ..compiler import cache as kcache

    t0 = time.perf_counter()
    key = kcache.cache_key(kernel.source_key, target.key())
    if not force:
        hit = state.cache.get(key)
        if hit is not None:
            return hit, True, time.perf_counter() - t0
    # The compiler loads on the first cache miss only (its import alone is ~20 ms on the CI
    # machine): a warm process never imports it (a cold one starts it as the device opens).
    from ..compiler.compile import compile_kernel

    ir_kernel = kernel.lower(target)
    compiled = compile_kernel(ir_kernel, target, cache_key=key)
    with _stats_lock:  # prepare() compiles on several threads
        kcache.stats["compiled"] += 1
    state.cache.put(key, compiled)
    return compiled, False, time.perf_counter() - t0


def compiled_for(kernel: Any, target: Target | None = None, force: bool = False) -> CompiledKernel:
    """The compiled form of `kernel` for `target` (default: the current device's, else the
    default target). Raises the kernel's compile error."""
    with state.lock:
        if target is None:
            target = state.target or default_target()
        compiled, _, _ = _compile_one(kernel, target, force)
        return compiled


def _build(kernel: Any, force: bool = False, st: _State | None = None) -> tuple[Prepared, dict]:
    st = st or state
    device = _current_device(st)  # first: it sets the target
    target = st.target
    first = _scalar_first(kernel, target, force, st)
    compiled, hit, seconds = _compile_one(kernel, first or target, force)
    built = _pipeline(kernel, device, compiled, hit, seconds)
    if first is not None:
        _vector_form_behind(kernel, st, device, target)
    return built


# -- the vector form behind a first launch ----------------------------------------------------
# Issue 19: NVIDIA's driver builds a kernel's pipeline in ~10 ms in the scalar form and in ~20-30
# ms with the 4-wide form beside it (codegen_vec.py; H200, 2026-12-03: a first dispatch of 22 ms
# against 37 ms). A first launch whose vector form is not in the kernel cache therefore runs the
# scalar form (same results: both forms are tested alike), while a thread compiles and builds
# the vector form; it takes the kernel's place once ready (later processes find it in the
# caches). The thread takes no lock, so a shutdown may wait for it under the runtime's lock.

_behind: set[threading.Thread] = set()  # the threads building vector forms now
_behind_lock = threading.Lock()
_BEHIND_WAIT_S = 10.0  # bounds a shutdown's or fork's wait for them (they take ms)


def _scalar_first(kernel: Any, target: Target, force: bool, st: _State) -> Target | None:
    """The scalar target for `kernel`'s first launch when its vector form would be compiled
    and built now (not cached); None when the launch should use `target` itself."""
    if force or not target.vector_form or config.vector_form() is not None:
        return None  # (CTHREADS_VECTORIZE / CTHREADS_NO_VECTORIZE: the form asked for, only)
    if not config.scalar_first():
        return None
    from ..compiler import cache as kcache

    if st.cache.get(kcache.cache_key(kernel.source_key, target.key())) is not None:
        return None  # compiled before: its pipeline is likely in the driver's caches too
    return target.replace(vector_form=False)


def _vector_form_behind(kernel: Any, st: _State, device: Any, target: Target) -> None:
    """Compile and build `kernel`'s vector form for `target` on a thread; it replaces the
    scalar form in `st.prepared` if the device is still the one it was built on."""
    generation = device.generation

    def build() -> None:
        try:
            compiled, hit, seconds = _compile_one(kernel, target, False)
            if compiled.elements_per_invocation == 1 or st.generation != generation:
                return  # no vector form (the scalar one is it), or the device went away
            prep, _ = _pipeline(kernel, device, compiled, hit, seconds)
            key = kernel.source_key
            current = st.prepared.get(key)
            if current is not None and current.generation == generation == st.generation:
                st.prepared[key] = prep  # (a dict store: atomic; launches read it unlocked)
                kernel._fast_launch = None  # its C launcher ran the scalar form's pipeline
        except BaseException as exc:  # noqa: BLE001 - the scalar form stays in use
            _log().debug("vector form of %s not built: %s", kernel.name, exc)
        finally:
            with _behind_lock:
                _behind.discard(thread)

    thread = threading.Thread(target=build, name=f"cthreads-vector-{kernel.name}", daemon=True)
    with _behind_lock:
        _behind.add(thread)
    thread.start()


def wait_for_vector_forms(timeout: float = _BEHIND_WAIT_S) -> None:
    """Until the vector forms being built behind first launches are in place (or `timeout`
    seconds have passed)."""
    deadline = time.monotonic() + timeout
    with _behind_lock:
        threads = list(_behind)
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))


def _pipeline(
    kernel: Any, device: Any, compiled: CompiledKernel, hit: bool, seconds: float
) -> tuple[Prepared, dict]:
    """Build the pipeline of a compiled kernel (the driver's work; the GIL is released)."""
    t0 = time.perf_counter()
    wg, spec = launch_spec(kernel, device, compiled)
    pipeline = device.pipeline(compiled.spirv, compiled.push.push_size, spec, compiled.entry_point)
    info = {
        "name": kernel.name,
        "cache_hit": hit,
        "spirv_bytes": len(compiled.spirv),
        "compile_ms": round(seconds * 1e3, 3),
        "pipeline_ms": round((time.perf_counter() - t0) * 1e3, 3),
        "workgroup_size": (wg, 1, 1) if spec else compiled.workgroup_size,
        "cache_key": compiled.cache_key,
    }
    return Prepared(compiled, pipeline, wg, device.generation, info=info), info


def launch_spec(
    kernel: Any, device: Any, compiled: CompiledKernel
) -> tuple[int, dict[int, int] | None]:
    """The workgroup width a launch pipeline of `compiled` gets on `device`, and the
    specialization constants that set it (None where the kernel fixes its workgroup)."""
    if compiled.observes_workgroup:
        return compiled.workgroup_size[0], None
    wg = physical_workgroup(device)
    if getattr(kernel, "_physical_width", None):  # an autotune variant's workgroup choice
        limit = int(device.info.limits.get("max_compute_work_group_invocations", 256))
        wg = min(kernel._physical_width, limit)
    return wg, {0: wg, 1: 1, 2: 1}


def pipeline_statistics(kernel: Any, st: _State | None = None) -> list[dict] | None:
    """The driver's report on `kernel`'s launch pipeline on `st`'s device (default: the
    default device), from a pipeline built apart with statistics capture on; None where the
    device lacks VK_KHR_pipeline_executable_properties. Raises the kernel's compile error."""
    st = st or state
    with st.lock:
        device = _current_device(st)
        compiled, _, _ = _compile_one(kernel, st.target, False)
        _, spec = launch_spec(kernel, device, compiled)
    return device.pipeline_statistics(
        compiled.spirv, compiled.push.push_size, spec, compiled.entry_point
    )


def kernel_for_launch(kernel: Any, st: _State | None = None) -> Prepared:
    """The prepared form of `kernel` on `st`'s device (default: the default device),
    compiling and building it on first use."""
    st = st or state
    key = kernel.source_key
    prep = st.prepared.get(key)
    if prep is not None and prep.generation == st.generation:
        return prep
    with st.lock:
        error = st.errors.get(key)
        if error is not None:
            raise error.with_traceback(None)
        try:
            prep, _ = _build(kernel, st=st)
        except _KERNEL_ERRORS as exc:
            st.errors[key] = exc
            raise exc.with_traceback(None) from None
        st.prepared[key] = prep
        _announce(kernel, st)
        return prep


def _announce(kernel: Any, st: _State | None = None) -> None:
    """`@Gpu(log=True)`: say once per kernel definition which device it runs on.

    The user asked to see this line, so it must not vanish under Python's default logging
    (no handler, WARNING): it goes through the `cthreads.gpu` logger at INFO where logging is
    set up to show that, and to stderr otherwise."""
    st = st or state
    key = kernel.source_key
    if not getattr(kernel, "log", False) or key in st.logged:
        return
    st.logged.add(key)
    text = f"@Gpu(log=True): kernel `{kernel.name}` runs on {st.device.info.name}"
    log = _log()
    if log.isEnabledFor(20) and log.hasHandlers():  # 20: logging.INFO
        log.info(text)
    else:
        print(f"cthreads.gpu: {text}", file=sys.stderr, flush=True)


def prepare(force: bool = False, device: Any = None) -> dict[str, dict]:
    """SPEC §3 `prepare()` (launch/preparing.py has it; the launch's retry after a lost
    device calls it through here)."""
    from .preparing import prepare as run

    return run(force, device)


def shutdown() -> None:
    """Release every device; prepared pipelines become invalid and are rebuilt on next use."""
    with state.lock:
        state.prepared.clear()
        state.device = None
        state.generation = -1
        state.target = None
        runtime.shutdown()


def check_generation(generation: int, what: str) -> None:
    if generation != state.generation:
        raise GpuUseAfterDestroy(
            f"{what} belongs to a device that was shut down",
            hint="launch again after prepare()",
        )
