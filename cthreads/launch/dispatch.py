"""`gpu(fn, *args, **options)` (SPEC §5): route a launch and return a started `GpuJob`. The
common case goes straight to the kernel's C launcher; streams (`stream=`, `after=`, `with
stream:`), other devices, `@autotune` kernels and a kernel's first launch (preparation) are
routed here; what the C launcher declines takes the general path (launch/general.py).

Problem size (SPEC §4): the `int` parameter named `n`, else the longest list, or per axis the
`grid=(nx, ny[, nz])` keyword. Kernels that do not observe the workgroup run as grid-stride loops
(x inside y inside z) at the device's preferred width, so one dispatch covers any size; kernels
that do run with their declared shape, split along x into dispatches of at most the device's
group-count limit with a base-group offset they cannot observe (y and z are never split: more
groups than the device allows along y or z is a `GpuInvalidArgument` naming `grid`).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ..errors import GpuInvalidArgument
from ..runtime import native as _native
from ..runtime.handle import current as _current_device
from ..runtime.handle import resolve as _resolve_device
from . import session

# (called as `_launch`, a name of this module: tests replace it to prove the C launcher took
# a launch)
from .general import general_launch as _launch
from .general import plan_of
from .gpujob import GpuJob
from .plan import native_launcher
from .sizing import parse_grid
from .stream import SCOPED, after_value, check_after, current_stream, resolve_stream

# the calling context's `with device:` device, or None; bound once (a method looked up on the
# ContextVar at each call costs a bound-method object)
scoped_device = _current_device.get

if TYPE_CHECKING:
    from ..gpu.kernel import GpuKernel as _GpuKernel
else:
    # `cthreads.gpu` is the face above launch (its __init__ imports this package), so the
    # kernel class is looked up on the first launch, never while launch loads (_kernel_class).
    _GpuKernel = None

# The kernel class as the C form of gpu() reads it (item 0; None until the first launch)
KERNEL_CLASS: list[type | None] = [None]


def _kernel_class() -> type:
    """`GpuKernel`, bound into this module on the first launch (see the imports)."""
    global _GpuKernel
    from ..gpu.kernel import GpuKernel

    _GpuKernel = KERNEL_CLASS[0] = GpuKernel
    return GpuKernel


def _take_orphaned_keys() -> list:
    """The source keys of kernels no longer referenced (gpu/registry.py counts them)."""
    from ..gpu.registry import take_orphaned_keys

    return take_orphaned_keys()


def gpu(fn: _GpuKernel, *args: Any, **options: Any) -> GpuJob:
    """Launch `@Gpu` kernel `fn` with positional `args`; returns a started `GpuJob`.

    Options (keywords): `force=True` re-prepares everything first; `timed=True` records device
    timestamps around the launch, read back as `job.elapsed_ms` (costly on some drivers, so off
    by default); `grid=(nx, ny[, nz])` gives the problem size per axis in invocations (each
    rounded up to whole workgroups) instead of `n` / the longest list. `stream=s` queues it on
    stream `s` (launch/stream.py; default: the thread's `with` stream, else the device's default
    stream); `after=[job, ...]` starts it after those jobs of any stream of the same device.
    `device=` (a `GpuDevice`, an index in `cthreads.gpu.devices()`, a UUID or a part of a name)
    runs it there instead of on the current device (`with device:`), else the default one.
    Device arrays and arena-bound arguments must live on the device the launch runs on.
    `pins={NAME: value}` fixes `@autotune` choices for this launch (gpu/tuning.py)."""
    # The hot loop, in as few bytecodes as possible (issue 14): the options are one `**`
    # dict, not keyword-only parameters, because CPython looks each missing keyword-only
    # default up in a dict on every call. A launch whose C launcher was built
    # (plan.native_launcher) returns from here; it re-checks the device, the arity and every
    # argument, takes `grid` as an int or 1 to 3 ints, and declines (None) anything else.
    if type(fn) is _GpuKernel and not SCOPED[0] and scoped_device() is None:
        fast = fn._fast_launch
        if fast is not None:
            if not options:
                job = fast(args)
            elif len(options) == 1 and "grid" in options:
                job = fast(args, options["grid"])
            else:
                job = None
            if job is not None:
                return job
    return launch(fn, *args, **options)


def launch(
    fn: _GpuKernel,
    *args: Any,
    force: bool = False,
    timed: bool = False,
    grid: Any = None,
    stream: Any = None,
    after: Any = None,
    device: Any = None,
    pins: Any = None,
    **kwargs: Any,
) -> GpuJob:
    """`gpu()` with its options spelled out (gpu() is this signature, see below): the launch
    past gpu()'s hot loop, or what it declined."""
    if stream is not None or after is not None or SCOPED[0]:
        return _stream_launch(fn, args, force, timed, grid, stream, after, device, pins, kwargs)
    return _general(fn, args, force, timed, grid, device, pins, kwargs)


gpu.__signature__ = inspect.signature(launch)  # what help(gpu) and IDEs show

if _native.built():
    # gpu()'s hot loop in C where the extension is built (native/bound.c LaunchEntry, issue
    # 14): the function above, its checks and calls in the same order, with no Python frame
    # (about 700 host instructions a launch); what it does not take goes to launch() as the
    # same call. The function stays the documented form (and the one without the extension).
    _gpu_function = gpu
    gpu = _native.module().LaunchEntry(
        "_fast_launch", KERNEL_CLASS, launch, SCOPED, _current_device
    )
    for _name in ("__doc__", "__name__", "__qualname__", "__module__", "__signature__"):
        setattr(gpu, _name, getattr(_gpu_function, _name))


def _general(
    fn: Any,
    args: tuple,
    force: bool,
    timed: bool,
    grid: Any,
    device: Any,
    pins: Any,
    kwargs: dict,
    lane: int = 0,
    after: int = 0,
) -> GpuJob:
    """gpu() past the hot loop: checks, preparation, then the C launcher or `_launch` (on
    `lane` >= 1, a stream's, after the value `after`)."""
    _check_kernel(fn)
    if kwargs:
        names = ", ".join(f"`{k}`" for k in kwargs)
        raise TypeError(
            f"gpu() passes kernel arguments by position only; got keyword argument(s) {names} "
            f"for kernel `{fn.name}` (write gpu({fn.name}, {', '.join(fn.param_names)}))"
        )
    if pins is not None or fn._tuner is not None:
        # an @autotune kernel picks (or tunes) a variant, which launches through here again
        from ..gpu.tuning import launch as tuned_launch

        options = {"force": force, "timed": timed, "grid": grid, "device": device}
        return tuned_launch(fn, args, pins, options)
    grid3 = None if grid is None else parse_grid(grid)
    handle = _resolve_device(device)
    if force:
        session.prepare(force=True)
    st = session.state if handle is None else session.state_for(handle)
    prep = st.prepared.get(fn.source_key)
    if prep is None or prep.generation != st.generation:
        with st.lock:
            forget_kernels(_take_orphaned_keys())  # redefined kernels' pipelines
            prep = session.kernel_for_launch(fn, st)
    if len(args) != len(prep.compiled.params):
        raise TypeError(
            f"kernel `{fn.name}` takes {len(fn.param_names)} argument(s) "
            f"({', '.join(fn.param_names)}); got {len(args)}, expected {len(fn.param_names)} args"
        )
    if timed:
        return _launch(prep, st.device, args, timed, grid3, lane, after)
    fast = prep.fast
    if fast is None:
        dev = st.device
        plan = plan_of(prep, dev)
        fast = native_launcher(plan, prep.pipeline, dev, prep.generation)
        fast = prep.fast = fast or _no_fast_path
        if (
            fast is not _no_fast_path
            and st is session.state
            and st.prepared.get(fn.source_key) is prep
        ):
            # (the kernel's own launcher is the default device's: other devices' launchers
            # are reached through their state, one dict look-up on; and only the current
            # form's: a vector form built behind the first launch may have replaced this one)
            fn._fast_launch = fast
    if lane:
        job = fast(args, grid3, lane, after)
    else:
        job = fast(args) if grid3 is None else fast(args, grid3)
    if job is not None:
        return job
    return _launch(prep, st.device, args, grid=grid3, lane=lane, after=after)


def _stream_launch(
    fn: Any,
    args: tuple,
    force: bool,
    timed: bool,
    grid: Any,
    stream: Any,
    after: Any,
    device: Any,
    pins: Any,
    kwargs: dict,
) -> GpuJob:
    """A launch with `stream=` / `after=` or inside `with stream:`: the keywords checked, then
    the launch itself, through the C launcher when it takes it. On a stream it goes onto the
    stream's lane (native/lane.c), started on the device after `after=`, the stream's
    `wait()`s and the implicit array rule."""
    _check_kernel(fn)
    elsewhere = device is not None or _current_device.get() is not None
    if elsewhere and stream is None and after is None and current_stream() is None:
        # another thread's `with stream:` brought this launch here: not a stream launch
        return _general(fn, args, force, timed, grid, device, pins, kwargs)
    if elsewhere:
        raise GpuInvalidArgument(
            "streams run on the default device so far: `stream=` / `after=` (or `with stream:`) "
            "cannot be combined with `device=` or `with device:`",
            param="stream" if stream is not None else "after" if after is not None else "device",
            hint="launch on the default device, or leave out the stream for this launch",
        )
    if force:  # first: it starts a new device, which the stream and jobs are checked against
        session.prepare(force=True)
        force = False
    # the device in use now, re-read (a device lost and reopened leaves the old one in
    # state.device until something re-reads it: streams made since belong to the new one)
    dev = session._current_device()
    s = resolve_stream(stream, dev)
    if after is not None:
        after = check_after(after, dev)
    else:
        after = ()
    if s is None:
        # the default stream (lane 0): every lane's work queued earlier is joined on its queue
        # before it (native/lane.c), so a job named in `after=` precedes it already
        job = None
        if type(fn) is _GpuKernel and pins is None and not (kwargs or force or timed):
            fast = fn._fast_launch
            if fast is not None:
                job = fast(args) if grid is None else fast(args, parse_grid(grid))
        if job is None:
            job = _general(fn, args, force, timed, grid, None, pins, kwargs)
        return job
    # a stream: its own lane, after what it waits for (the C launcher takes both; it adds the
    # implicit array rule as _launch does)
    wait_for = after_value(s, after)
    job = None
    if type(fn) is _GpuKernel and pins is None and not (kwargs or force or timed):
        fast = fn._fast_launch
        if fast is not None:
            g = None if grid is None else parse_grid(grid)
            job = fast(args, g, s._lane, wait_for)
    if job is None:
        job = _general(fn, args, force, timed, grid, None, pins, kwargs, s._lane, wait_for)
    s._note(job._value)
    return job


def _check_kernel(fn: Any) -> None:
    kernel_class = _GpuKernel or _kernel_class()
    if type(fn) is not kernel_class and not isinstance(fn, kernel_class):
        name = getattr(fn, "__name__", type(fn).__name__)
        raise TypeError(
            f"gpu() needs a @Gpu kernel (a callable decorated with @Gpu) as its first argument; "
            f"got `{name}`, which is {'not decorated with @Gpu' if callable(fn) else 'not callable'}"
        )


def forget_kernels(source_keys: list[str]) -> None:
    """Drop what was built for kernels no longer alive (redefined, then unreferenced): their
    pipelines, launchers and compiled forms in memory. A pipeline goes once no launch in
    flight holds it (batches keep theirs); the on-disk cache keeps the SPIR-V."""
    if not source_keys:
        return
    state = session.state
    for st in session.all_states():
        for key in source_keys:
            st.prepared.pop(key, None)
            st.errors.pop(key, None)
            st.logged.discard(key)
    if not state.cache_loaded:
        return  # nothing was compiled or looked up in this process: no compiled forms to drop
    from ..compiler.cache import cache_key

    targets = {t.key() for st in session.all_states() for t in (st.target,) if t is not None}
    targets.add(session.default_target().key())
    for key in source_keys:
        for target in targets:
            state.cache.forget(cache_key(key, target))


def _no_fast_path(args: tuple, grid: Any = None, lane: int = 0, after: int = 0) -> None:
    return None
