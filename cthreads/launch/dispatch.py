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

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..compiler.cache import cache_key
from ..compiler.target import DEFAULT_TARGET
from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..residency.arena import PACK_SIZE, _resident, resident_fits
from ..residency.device_array import DeviceArray
from . import fastpath, session, transfer
from .aliasing import check_aliasing
from .binding import ListArg, check_list, check_scalar, device_buffer_for, type_name
from .gpujob import GpuJob

if TYPE_CHECKING:
    from ..gpu.kernel import GpuKernel as _GpuKernel
else:
    # `cthreads.gpu` is the face above launch (its __init__ imports this package), so the
    # kernel class is looked up on the first launch, never while launch loads (_kernel_class).
    _GpuKernel = None


@dataclass
class _Plan:
    """Per-kernel launch facts derived once from its compiled form and the device."""

    scalar_params: tuple  # (index, Param) of scalar parameters
    list_params: tuple  # (index, Param) of list parameters
    pack: Any  # pack(total, base_group, grid_x, total_y, total_z, addr, count, scalar, shape)
    fields: tuple  # PushField, in offset order
    packer_struct: struct.Struct
    n_index: int | None
    wg: int  # logical workgroup width
    wg3: tuple  # logical workgroup shape (x, y, z)
    max_groups: int
    max_groups_yz: tuple  # the device's group-count limits along y and z
    shapes: dict  # list parameter index -> highest axis of `x.shape[axis]` the kernel reads
    in_buffer: bool
    direct_read: bool  # host reads device buffers directly (unified memory: CPU, iGPU)
    writes_lists: bool  # some list parameter is written (aliasing must be checked)


def _make_packer(fields: tuple, packer: struct.Struct):
    """A function packing the parameter block, generated once per kernel so that a launch
    does no per-field branching."""
    exprs = []
    for f in fields:
        exprs.append(
            {
                "total": "total",
                "base_group": "base_group",
                "grid_x": "grid_x",
                "total_y": "total_y",
                "total_z": "total_z",
                "addr": f"addr[{f.param}]",
                "len": f"count[{f.param}]",
                "scalar": f"scalar[{f.param}]",
                "shape0": f"shape[{f.param}][0]",
                "shape1": f"shape[{f.param}][1]",
                "shape2": f"shape[{f.param}][2]",
            }[f.role]
        )
    src = (
        "def pack(total, base_group, grid_x, total_y, total_z, addr, count, scalar, shape):\n"
        f"    return _pack({', '.join(exprs)})\n"
    )
    scope = {"_pack": packer.pack}
    exec(src, scope)  # noqa: S102 - source built from our own field table above
    return scope["pack"]


def _plan(prep: session.Prepared, device: Any) -> _Plan:
    if prep.plan is None:
        compiled = prep.compiled
        params = compiled.params
        n_index = next(
            (
                i
                for i, p in enumerate(params)
                if p.name == "n" and not p.is_list and p.type.kind == "int"
            ),
            None,
        )
        fields = tuple(sorted(compiled.push.fields, key=lambda f: f.offset))
        packer = struct.Struct(compiled.push.struct_format())
        shapes: dict[int, int] = {}
        for f in fields:
            if f.role.startswith("shape"):
                shapes[f.param] = max(shapes.get(f.param, 0), int(f.role[5:]))
        limits = device.info.limits["max_compute_work_group_count"]
        prep.plan = _Plan(
            scalar_params=tuple((i, p) for i, p in enumerate(params) if not p.is_list),
            list_params=tuple((i, p) for i, p in enumerate(params) if p.is_list),
            pack=_make_packer(fields, packer),
            fields=fields,
            packer_struct=packer,
            n_index=n_index,
            wg=compiled.workgroup_size[0],
            wg3=tuple(compiled.workgroup_size),
            max_groups=int(limits[0]),
            max_groups_yz=(int(limits[1]), int(limits[2])),
            shapes=shapes,
            in_buffer=compiled.push.in_buffer,
            # Reading mapped device memory over PCIe (resizable BAR) is orders of magnitude
            # slower than a copy into host-cached memory; only unified memory is read directly.
            direct_read=device.info.type in ("cpu", "integrated"),
            writes_lists=any(p.is_list and p.writes for p in params),
        )
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


def gpu(
    fn: _GpuKernel,
    *args: Any,
    force: bool = False,
    timed: bool = False,
    grid: Any = None,
    **kwargs: Any,
) -> GpuJob:
    """Launch `@Gpu` kernel `fn` with positional `args`; returns a started `GpuJob`.

    `force=True` re-prepares everything first; `timed=True` records device timestamps around
    the launch, read back as `job.elapsed_ms` (costly on some drivers, so off by default);
    `grid=(nx, ny[, nz])` gives the problem size per axis in invocations (each rounded up to
    whole workgroups) instead of `n` / the longest list."""
    if type(fn) is _GpuKernel and not (kwargs or force or timed or grid is not None):
        # The hot loop: a launch whose fast path was built (fastpath.py) returns from here;
        # that function re-checks the device generation, the arity and every argument.
        fast = fn._fast_launch
        if fast is not None:
            job = fast(args)
            if job is not None:
                return job
    kernel_class = _GpuKernel or _kernel_class()
    if type(fn) is not kernel_class and not isinstance(fn, kernel_class):
        name = getattr(fn, "__name__", type(fn).__name__)
        raise TypeError(
            f"gpu() needs a @Gpu kernel (a callable decorated with @Gpu) as its first argument; "
            f"got `{name}`, which is {'not decorated with @Gpu' if callable(fn) else 'not callable'}"
        )
    if kwargs:
        names = ", ".join(f"`{k}`" for k in kwargs)
        raise TypeError(
            f"gpu() passes kernel arguments by position only; got keyword argument(s) {names} "
            f"for kernel `{fn.name}` (write gpu({fn.name}, {', '.join(fn.param_names)}))"
        )
    grid3 = None if grid is None else parse_grid(grid)
    if force:
        session.prepare(force=True)
    prep = session.state.prepared.get(fn.source_key)
    if prep is None or prep.generation != session.state.generation:
        with session.state.lock:
            forget_kernels(_take_orphaned_keys())  # redefined kernels' pipelines
            prep = session.kernel_for_launch(fn)
    if len(args) != len(prep.compiled.params):
        raise TypeError(
            f"kernel `{fn.name}` takes {len(fn.param_names)} argument(s) "
            f"({', '.join(fn.param_names)}); got {len(args)}, expected {len(fn.param_names)} args"
        )
    if timed or grid3 is not None:
        return _launch(prep, session.state.device, args, timed=timed, grid=grid3)
    fast = prep.fast
    if fast is None:
        device = session.state.device
        _plan(prep, device)
        fast = prep.fast = fastpath.build(prep, prep.plan, device) or _no_fast_path
        if fast is not _no_fast_path:
            fn._fast_launch = fast
    job = fast(args)
    if job is not None:
        return job
    return _launch(prep, session.state.device, args)


def forget_kernels(source_keys: list[str]) -> None:
    """Drop what was built for kernels no longer alive (redefined, then unreferenced): their
    pipelines, launchers and compiled forms in memory. A pipeline goes once no launch in
    flight holds it (batches keep theirs); the on-disk cache keeps the SPIR-V."""
    if not source_keys:
        return
    state = session.state
    targets = {t.key() for t in (state.target, DEFAULT_TARGET) if t is not None}
    for key in source_keys:
        state.prepared.pop(key, None)
        state.errors.pop(key, None)
        state.logged.discard(key)
        for target in targets:
            state.cache.forget(cache_key(key, target))


def _no_fast_path(args: tuple) -> None:
    return None


def parse_grid(grid: Any) -> tuple[int, int, int]:
    """`grid=` as (nx, ny, nz): an int or a tuple/list of 1 to 3 ints, each >= 0."""
    if isinstance(grid, (tuple, list)):
        items = tuple(grid)
    else:
        items = (grid,)
    if any(isinstance(v, (bool, float)) or not hasattr(v, "__index__") for v in items):
        raise GpuArgumentTypeError(
            f"`grid` expects an int or a tuple of 1 to 3 ints (invocations per axis); got {grid!r}",
            param="grid",
            expected="(nx,), (nx, ny) or (nx, ny, nz)",
            got=describe_grid(grid),
            hint="e.g. grid=(width, height)",
        )
    if not 1 <= len(items) <= 3:
        raise GpuInvalidArgument(
            f"`grid` has {len(items)} axes; launches have 1 to 3 (x, y, z)",
            param="grid",
            expected="1 to 3 extents",
            got=str(tuple(items)),
        )
    dims = tuple(v.__index__() for v in items)
    if any(d < 0 for d in dims):
        raise GpuInvalidArgument(
            f"`grid` extents must be >= 0; got {dims}",
            param="grid",
            expected="non-negative extents",
            got=str(dims),
        )
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]


def describe_grid(grid: Any) -> str:
    return type(grid).__name__ if not isinstance(grid, (tuple, list)) else repr(grid)


def _shape_of(param: Any, value: Any, count: int, axis: int) -> tuple[int, int, int]:
    """The extents the kernel reads through `x.shape[k]` (k <= axis), padded to 3."""
    if isinstance(value, list):
        shape: tuple = (len(value),)
    elif type(value) is DeviceArray:
        shape = value.shape or (count,)
    else:
        shape = tuple(memoryview(value).shape) or (count,)
    if len(shape) <= axis:
        raise GpuInvalidArgument(
            f"kernel reads `{param.name}.shape[{axis}]` but the argument has {len(shape)} "
            f"dimension(s) (shape {shape})",
            param=param.name,
            expected=f"an array of at least {axis + 1} dimensions",
            got=f"shape {shape}",
            hint="pass a numpy array of that shape (e.g. arr.reshape(rows, cols)); Python lists are 1-D",
        )
    return (shape + (1, 1, 1))[:3]  # type: ignore[return-value]


def _launch(
    prep: session.Prepared, device: Any, args: tuple, timed: bool = False, grid: tuple | None = None
) -> GpuJob:
    plan = prep.plan or _plan(prep, device)
    generation = prep.generation
    scalar: dict[int, int | float] = {}
    for i, param in plan.scalar_params:
        scalar[i] = check_scalar(param, args[i])
    lists: list[ListArg] = []
    resident: dict[int, Any] = {}
    addr: dict[int, int] = {}
    count: dict[int, int] = {}
    for i, param in plan.list_params:
        value = args[i]
        # -- DeviceArray (residency/device_array.py): resident, and itself its own record --
        if type(value) is DeviceArray:
            res = resident[i] = value.launch_record(param)
            addr[i] = res.buffer.address
            count[i] = res.count
            lists.append(ListArg(i, param, value, res.count, res.nbytes, res.pack, None, None))
            continue
        # -- end DeviceArray --
        res = _resident.get(id(value))
        if res is not None and res.obj is value:
            if (
                res.generation != generation
                or res.count != len(value)
                or not resident_fits(res.pack, param.type.elem)
            ):
                _check_resident(param, value, res)
            if param.writes and res.view is not None and res.view.readonly:
                _read_only_resident(param, value, res)
            resident[i] = res
            addr[i] = res.buffer.address
            count[i] = res.count
            lists.append(
                ListArg(i, param, value, res.count, res.nbytes, res.pack, None, res.view)
            )
        else:
            lists.append(check_list(i, param, value))
    if len(lists) > 1 and plan.writes_lists:
        check_aliasing(lists)
    shape: dict[int, tuple] = {}
    for arg in lists:
        axis = plan.shapes.get(arg.index)
        if axis is not None:
            shape[arg.index] = _shape_of(arg.param, arg.value, arg.count, axis)

    if grid is not None:
        size = grid
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
        if min(size) > 0 or (grid is None and prep.compiled.observes_workgroup):
            # n <= 0 still runs one workgroup of a kernel that observes it (as cthreads-gpu);
            # an explicit zero `grid` extent runs nothing
            size = tuple(max(0, s) for s in size)
            _dispatches(prep, plan, device, size, addr, count, scalar, shape, buffers, commands)
        for arg in lists:
            if not arg.param.writes:
                continue
            res = resident.get(arg.index)
            if res is not None:
                if res is not arg.value:  # a DeviceArray (its own record) stays on the device
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


def _check_resident(param: Any, value: Any, res: Any) -> None:
    """An arena-bound argument (SPEC §7: by identity plus length), checked against the kernel."""
    res.check_alive()
    n = len(value) if isinstance(value, list) else memoryview(value).nbytes // PACK_SIZE[res.pack]
    if res.count != n:
        raise GpuInvalidArgument(
            f"`{param.name}` is bound in a GpuArena as `{res.name}` with {res.count} "
            f"elements but now has {n}: its length changed since it was bound",
            param=param.name,
            hint=f"re-bind it (arena.bind({res.name}=...)) after changing its length",
        )
    if not resident_fits(res.pack, param.type.elem):
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


def _dispatches(
    prep: session.Prepared,
    plan: _Plan,
    device: Any,
    size: tuple[int, int, int],
    addr: dict[int, int],
    count: dict[int, int],
    scalar: dict[int, int | float],
    shape: dict[int, tuple],
    buffers: list[Any],
    commands: list[tuple],
) -> None:
    """Append the dispatch(es) covering `size` (x, y, z) logical invocations to `commands`.

    A kernel that observes the workgroup runs whole workgroups: per axis `size` rounded up (at
    least one: the caller launches n <= 0 only for such kernels, as cthreads-gpu does). One that does not runs exactly the indexes
    below `size` (its grid-stride loop stops at `total`): the rounding is ours, so invocations
    past the problem never run — an unguarded kernel whose extra invocations would read zeros
    and loop forever (docs/reliability.md, "Out of range") behaves the same on every device."""
    groups3 = tuple(max(1, -(-n // w)) for n, w in zip(size, plan.wg3))
    totals = tuple(g * w for g, w in zip(groups3, plan.wg3))
    for axis, total_a in enumerate(totals):
        if total_a > 0xFFFFFFFF:
            what = (
                f"problem size {size[0]}"
                if size[1:] == (1, 1)
                else f"`grid` extent {size[axis]} along {'xyz'[axis]}"
            )
            raise GpuInvalidArgument(
                f"{what} exceeds 2**32 invocations",
                param=None if size[1:] == (1, 1) else "grid",
                hint="split the work",
            )
    grid_x, grid_y, grid_z = groups3
    total, total_y, total_z = totals
    pipeline = prep.pipeline
    if not prep.compiled.observes_workgroup:
        my, mz = plan.max_groups_yz
        total, total_y, total_z = size  # exact: the grid-stride loops stop at the problem size
        groups = min(
            max(1, -(-total // (prep.physical_wg * prep.compiled.elements_per_invocation))),
            plan.max_groups,
        )
        block = plan.pack(total, 0, grid_x, total_y, total_z, addr, count, scalar, shape)
        dims = (groups, max(1, min(total_y, my)), max(1, min(total_z, mz)))
        commands.append(("dispatch", pipeline, _push(plan, device, block, buffers, commands), dims))
        return
    for axis in (1, 2):
        limit = plan.max_groups_yz[axis - 1]
        if groups3[axis] > limit:
            raise GpuInvalidArgument(
                f"`grid` needs {groups3[axis]} workgroups of {plan.wg3[axis]} along "
                f"{'xyz'[axis]} for kernel `{prep.compiled.name}`, more than the device's limit "
                f"of {limit} (only x is split across dispatches for kernels that observe the workgroup)",
                param="grid",
                expected=f"at most {limit * plan.wg3[axis]} invocations along {'xyz'[axis]}",
                got=str(size[axis]),
                hint="put the longest axis first (x), or declare a larger workgroup_size along that axis",
            )
    for base in range(0, grid_x, plan.max_groups):
        block = plan.pack(total, base, grid_x, total_y, total_z, addr, count, scalar, shape)
        groups = min(plan.max_groups, grid_x - base)
        dims = (groups, grid_y, grid_z)
        commands.append(("dispatch", pipeline, _push(plan, device, block, buffers, commands), dims))


def _push(
    plan: _Plan, device: Any, block: bytes, buffers: list[Any], commands: list[tuple]
) -> bytes:
    """The push-constant bytes: the block itself, or the address of a buffer holding it when it
    exceeds the device's push-constant space (the block travels like a list)."""
    if not plan.in_buffer:
        return block
    pbuf = device.buffer(len(block))
    buffers.append(pbuf)
    if pbuf.host_visible:
        pbuf.write(block)
    else:
        staging = device.buffer(len(block), usage="upload")
        buffers.append(staging)
        staging.write(block)
        commands.append(("copy", staging, pbuf, len(block), 0, 0))
    return struct.pack("<Q", pbuf.address)
