"""`gpu(fn, *args, force=False)` (SPEC §5): check the arguments, move lists to the device, record
the dispatch (plus copies) as one stream-ordered submission and return a started `GpuJob`.

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

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..residency.arena import SELF_RECORD_TYPES, resident_of
from ..runtime import formats, transfer
from ..runtime.handle import current as _current_device
from ..runtime.handle import resolve as _resolve_device
from . import session
from .aliasing import check_aliasing
from .binding import (
    ListArg,
    check_list,
    check_scalar,
    cuda_arguments,
    device_buffer_for,
    type_name,
)
from .gpujob import GpuJob
from .plan import LaunchPlan, make_plan, native_launcher
from .sizing import dispatches, parse_grid, shape_of
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


def plan_of(prep: session.Prepared, device: Any) -> LaunchPlan:
    """The kernel's launch plan (made on its first launch) and, with it, its C launcher."""
    if prep.plan is None:
        prep.plan = make_plan(prep.compiled, prep.physical_wg, device)
    return prep.plan


def _kernel_class() -> type:
    """`GpuKernel`, bound into this module on the first launch (see the imports)."""
    global _GpuKernel
    from ..gpu.kernel import GpuKernel

    _GpuKernel = GpuKernel
    return GpuKernel


def _take_orphaned_keys() -> list:
    """The source keys of kernels no longer referenced (gpu/kernel.py counts them)."""
    from ..gpu.kernel import take_orphaned_keys

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
        if fast is not _no_fast_path and st is session.state:
            # (the kernel's own launcher is the default device's: other devices' launchers
            # are reached through their state, one dict look-up on)
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


def _launch(
    prep: session.Prepared,
    device: Any,
    args: tuple,
    timed: bool = False,
    grid: tuple | None = None,
    lane: int = 0,
    after: int = 0,
) -> GpuJob:
    plan = prep.plan or plan_of(prep, device)
    if cuda_arguments(plan, args):  # CUDA objects: staged, then this launch again (issue 17)
        from ..interop import imports

        return imports.launch(prep, device, args, plan, _launch, timed=timed, grid=grid)
    generation = prep.generation
    scalar: dict[int, int | float] = {}
    for param in plan.scalars:
        scalar[param.index] = check_scalar(param, args[param.index])
    lists: list[ListArg] = []
    resident: dict[int, Any] = {}
    addr: dict[int, int] = {}
    count: dict[int, int] = {}
    for param in plan.lists:
        i = param.index
        value = args[i]
        res = resident_of(value)
        if res is not None and res.generation != generation:
            _check_same_device(param, res, device)
        if res is value:
            # a self-record (a DeviceArray): it checks itself against the parameter and stays
            # on the device (no writeback)
            res = resident[i] = value.launch_record(param)
            addr[i] = res.buffer.address
            count[i] = res.count
            lists.append(ListArg(i, param, value, res.count, res.nbytes, res.pack, None, None))
            continue
        if res is not None:
            if (
                res.generation != generation
                or res.count != len(value)
                or not formats.serves(res.pack, param.fmt)
            ):
                _check_resident(param, value, res)
            if param.writes and res.view is not None and res.view.readonly:
                _read_only_resident(param, value, res)
            resident[i] = res
            addr[i] = res.buffer.address
            count[i] = res.count
            lists.append(ListArg(i, param, value, res.count, res.nbytes, res.pack, None, res.view))
        else:
            lists.append(check_list(i, param, value))
    if len(lists) > 1 and plan.writes_lists:
        check_aliasing(lists)
    shape: dict[int, tuple] = {}
    for arg in lists:
        axis = plan.shapes.get(arg.index)
        if axis is not None:
            shape[arg.index] = shape_of(arg.param, arg.value, arg.count, axis)

    if grid is not None:
        size = grid
        if min(grid) == 0:
            # an explicit zero extent runs nothing: the arguments were checked, nothing moves
            # and the job is finished already (the same for kernel[grid], gpu/bracket.py)
            return GpuJob(device, 0, prep.compiled.name, [], [])
    elif plan.n_index is not None:
        size = (scalar[plan.n_index], 1, 1)
    else:
        size = (max(a.count for a in lists) if lists else 0, 1, 1)

    commands: list[tuple] = []
    buffers: list[Any] = []
    writebacks: list[tuple[ListArg, Any]] = []
    try:
        dev_bufs = {}
        for arg in lists:
            if arg.index in resident:
                continue
            dev_buf = dev_bufs[arg.index] = device_buffer_for(
                device, arg.param.name, arg.count, arg.nbytes
            )
            buffers.append(dev_buf)
            if dev_buf.host_visible:
                _fill(dev_buf, arg)
            else:
                staging = device.buffer(arg.nbytes, usage="upload")
                buffers.append(staging)
                _fill(staging, arg)
                commands.append(("copy", staging, dev_buf, arg.nbytes, 0, 0))
            addr[arg.index] = dev_buf.address
            count[arg.index] = arg.count
        if min(size) > 0 or (grid is None and plan.observes_workgroup):
            # n <= 0 still runs one workgroup of a kernel that observes it (as cthreads-gpu);
            # an explicit zero `grid` extent runs nothing
            size = tuple(max(0, s) for s in size)
            dispatches(prep, plan, device, size, addr, count, scalar, shape, buffers, commands)
        for arg in lists:
            if not arg.param.writes:
                continue
            res = resident.get(arg.index)
            if res is not None:
                if res is not arg.value:  # a self-record (DeviceArray) stays on the device
                    writebacks.append((arg, res))
                continue
            dev_buf = dev_bufs[arg.index]
            if plan.direct_read and dev_buf.host_visible:
                writebacks.append((arg, dev_buf))
            else:
                down = device.buffer(arg.nbytes, usage="download")
                buffers.append(down)
                commands.append(("copy", dev_buf, down, arg.nbytes, 0, 0))
                writebacks.append((arg, down))
        if commands:
            keep: tuple = (*buffers, *[r.buffer for r in resident.values()], args)
            if lane:
                # implicit ordering across lanes: after the last write of what it reads and the
                # last use of what it writes (a race-free program loses nothing by it)
                for arg in lists:
                    res = resident.get(arg.index)
                    if res is not None:
                        dep = res.last_use if arg.param.writes else res.last_write
                        if dep > after:
                            after = dep
                value = device.submit(commands, keep=keep, timed=timed, lane=lane, after=after)
            else:
                value = device.submit(commands, keep=keep, timed=timed)
        else:
            value = 0
        for arg in lists:
            res = resident.get(arg.index)
            if res is not None:
                res.last_use = value
                if arg.param.writes:
                    res.last_write = value
    except BaseException:
        for buf in buffers:
            buf.release()
        raise
    return GpuJob(device, value, prep.compiled.name, writebacks, buffers)


def _check_same_device(param: Any, res: Any, device: Any) -> None:
    """An array (DeviceArray or arena-bound) of another live device passed to this launch:
    refused, never copied behind the user's back (its memory is another VkDevice's)."""
    other = getattr(res, "_device", None) or getattr(res, "device", None)
    if other is None or not other.alive or other is device:
        return  # (a shut-down device's array: its own check says so)
    what = (
        "a DeviceArray"
        if type(res) in SELF_RECORD_TYPES
        else f"bound in a GpuArena as `{res.name}`"
    )
    raise GpuInvalidArgument(
        f"`{param.name}` is {what} on device {other.label}; this launch runs on "
        f"{device.label}: arrays are never copied between devices implicitly",
        param=param.name,
        expected=f"an array on {device.label}",
        got=f"an array on {other.label}",
        hint="copy it on purpose with array.to(device), or launch with device= the array's device",
    )


def _check_resident(param: Any, value: Any, res: Any) -> None:
    """An arena-bound argument (SPEC §7: by identity plus length), checked against the kernel."""
    res.check_alive()
    n = (
        len(value)
        if isinstance(value, list)
        else memoryview(value).nbytes // formats.PACK_SIZE[res.pack]
    )
    if res.count != n:
        raise GpuInvalidArgument(
            f"`{param.name}` is bound in a GpuArena as `{res.name}` with {res.count} "
            f"elements but now has {n}: its length changed since it was bound",
            param=param.name,
            hint=f"re-bind it (arena.bind({res.name}=...)) after changing its length",
        )
    if not formats.serves(res.pack, param.fmt):
        raise GpuArgumentTypeError(
            f"`{param.name}` expects {type_name(param.type)}; the resident `{res.name}` "
            f"holds {res.kind} elements (arena.bind() packs a Python list as int32, float32 or "
            "bool)",
            param=param.name,
            hint=f"bind it with arena.bind_as({param.type.elem}, {res.name}=...) or as a numpy "
            "array of that element type",
        )


def _read_only_resident(param: Any, value: Any, res: Any) -> None:
    """A kernel writing a read-only array bound in an arena: refused at the launch, before
    anything runs (its results could never reach the array)."""
    from .binding import describe

    raise GpuInvalidArgument(
        f"`{param.name}` is written by the kernel but is a read-only {describe(value)} bound "
        f"in a GpuArena as `{res.name}`",
        param=param.name,
        expected="a writable array",
        got="read-only array",
        hint=f"bind a writable copy (arena.bind({res.name}=arr.copy())) and pass that",
    )


def _fill(buf: Any, arg: ListArg) -> None:
    if arg.view is None:
        try:
            buf.pack_list(arg.value, arg.pack)
        except (GpuInvalidArgument, TypeError, ValueError, OverflowError) as exc:
            raise _prefixed(exc, arg) from None
    else:
        transfer.write(buf, arg.view)


def _prefixed(exc: BaseException, arg: ListArg) -> BaseException:
    """Re-raise a native packing error with the parameter's name in front."""
    from .binding import type_name

    cls = type(exc)
    message = f"`{arg.param.name}` expects {type_name(arg.param.type)}; {exc}"
    try:
        new = cls(message, param=arg.param.name)  # our GpuInvalidArgument family
    except TypeError:
        new = cls(message)
    return new
