"""The general launch path (SPEC §5): what `gpu()` does when the C launcher declines (lists not
resident, a parameter block in a buffer, `x.shape[k]` reads, `timed=True`, anything unusual):
check every argument against the kernel's `LaunchPlan`, move lists to the device, record the
dispatches (split along x where needed) and copies as one submission, and return the `GpuJob`
that writes results back.
"""

from __future__ import annotations

from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..residency.arena import SELF_RECORD_TYPES, resident_of
from ..runtime import formats, transfer
from . import session
from .aliasing import check_aliasing
from .binding import ListArg, check_list, check_scalar, cuda_arguments, device_buffer_for, type_name
from .gpujob import GpuJob
from .plan import LaunchPlan, make_plan
from .sizing import dispatches, shape_of


def plan_of(prep: session.Prepared, device: Any) -> LaunchPlan:
    """The kernel's launch plan (made on its first launch) and, with it, its C launcher."""
    if prep.plan is None:
        prep.plan = make_plan(prep.compiled, prep.physical_wg, device)
    return prep.plan


def general_launch(
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

        return imports.launch(prep, device, args, plan, general_launch, timed=timed, grid=grid)
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
