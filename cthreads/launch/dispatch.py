"""`gpu(fn, *args, force=False)` (SPEC §5): check the arguments, move lists to the device, record
the dispatch (plus copies) as one stream-ordered submission and return a started `GpuJob`.

Problem size (SPEC §4): the `int` parameter named `n`, else the longest list. Kernels that do not
observe the workgroup run as a grid-stride loop at the device's preferred width, so one dispatch
covers any size; kernels that do are split into dispatches of at most the device's group-count
limit, with a base-group offset they cannot observe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..residency.arena import lookup
from . import session
from .binding import ListArg, check_aliasing, check_list, check_scalar, type_name
from .completion import CompletionWatcher
from .gpujob import GpuJob

_watchers: dict[int, CompletionWatcher] = {}


@dataclass
class _Plan:
    """Per-kernel launch facts derived once from its compiled form."""

    packer: struct.Struct
    fields: tuple  # PushField, in offset order
    n_index: int | None
    wg: int  # logical workgroup width
    max_groups: int
    in_buffer: bool
    block_size: int


def _plan(prep: session.Prepared, device: Any) -> _Plan:
    if prep.plan is None:
        compiled = prep.compiled
        n_index = next(
            (i for i, p in enumerate(compiled.params) if p.name == "n" and not p.is_list and p.type.kind == "int"),
            None,
        )
        fields = tuple(sorted(compiled.push.fields, key=lambda f: f.offset))
        prep.plan = _Plan(
            packer=struct.Struct(compiled.push.struct_format()),
            fields=fields,
            n_index=n_index,
            wg=compiled.workgroup_size[0],
            max_groups=int(device.info.limits["max_compute_work_group_count"][0]),
            in_buffer=compiled.push.in_buffer,
            block_size=compiled.push.size,
        )
    return prep.plan


def _watcher(device: Any) -> CompletionWatcher:
    watcher = _watchers.get(id(device))
    if watcher is None or watcher._device is not device:
        watcher = _watchers[id(device)] = CompletionWatcher(device)
    return watcher


def stop_watchers() -> None:
    """Stop completion threads (device shutdown): pending awaits fail cleanly."""
    for watcher in list(_watchers.values()):
        watcher.stop()
    _watchers.clear()


def gpu(fn: Any, *args: Any, force: bool = False, **kwargs: Any) -> GpuJob:
    """Launch `@Gpu` kernel `fn` with positional `args`; returns a started `GpuJob`."""
    from ..gpu.kernel import GpuKernel

    if not isinstance(fn, GpuKernel):
        name = getattr(fn, "__name__", type(fn).__name__)
        raise TypeError(f"gpu() needs a @Gpu kernel as its first argument; got `{name}`, which is not decorated with @Gpu")
    if kwargs:
        names = ", ".join(f"`{k}`" for k in kwargs)
        raise TypeError(
            f"gpu() passes kernel arguments by position only; got keyword argument(s) {names} "
            f"for kernel `{fn.name}` (write gpu({fn.name}, {', '.join(fn.param_names)}))"
        )
    if len(args) != len(fn.param_names):
        raise TypeError(
            f"kernel `{fn.name}` takes {len(fn.param_names)} argument(s) "
            f"({', '.join(fn.param_names)}); got {len(args)}"
        )
    if force:
        session.prepare(force=True)
    with session.state.lock:
        prep = session.kernel_for_launch(fn)
        device = session.state.device
    return _launch(prep, device, args)


def _launch(prep: session.Prepared, device: Any, args: tuple) -> GpuJob:
    compiled = prep.compiled
    plan = _plan(prep, device)
    params = compiled.params
    scalars: dict[int, int | float] = {}
    lists: list[ListArg] = []
    for i, (param, value) in enumerate(zip(params, args)):
        if param.is_list:
            lists.append(check_list(i, param, value))
        else:
            scalars[i] = check_scalar(param, value)
    if len(lists) > 1:
        check_aliasing(lists)
    resident = _resident_args(lists, device)

    if plan.n_index is not None:
        size = max(int(scalars[plan.n_index]), 0)
    else:
        size = max((a.count for a in lists), default=0)

    commands: list[tuple] = []
    buffers: list[Any] = []
    addresses: dict[int, tuple[int, int]] = {}
    dev_bufs: dict[int, Any] = {}
    writebacks: list[tuple[ListArg, Any]] = []
    try:
        for arg in lists:
            res = resident.get(arg.index)
            if res is not None:
                dev_bufs[arg.index] = res.buffer
                addresses[arg.index] = (res.buffer.address, res.count)
                continue
            dev_buf = dev_bufs[arg.index] = device.buffer(arg.nbytes)
            buffers.append(dev_buf)
            target = dev_buf if dev_buf.host_visible else device.buffer(arg.nbytes, usage="upload")
            if target is not dev_buf:
                buffers.append(target)
            _fill(target, arg)
            if target is not dev_buf:
                commands.append(("copy", target, dev_buf, arg.nbytes, 0, 0))
            addresses[arg.index] = (dev_buf.address, arg.count)
        if size > 0:
            commands.extend(_dispatches(prep, plan, device, size, scalars, addresses, buffers))
        for arg in lists:
            if not arg.param.writes:
                continue
            if arg.index in resident:
                writebacks.append((arg, resident[arg.index]))
                continue
            dev_buf = dev_bufs[arg.index]
            if dev_buf.host_visible:
                writebacks.append((arg, dev_buf))
            else:
                down = device.buffer(arg.nbytes, usage="download")
                buffers.append(down)
                commands.append(("copy", dev_buf, down, arg.nbytes, 0, 0))
                writebacks.append((arg, down))
        keep = tuple(buffers) + tuple(r.buffer for r in resident.values()) + tuple(a.value for a in lists)
        value = device.submit(commands, keep=keep) if commands else 0
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
    return GpuJob(device, value, compiled.name, writebacks, buffers, _watcher(device))


def _resident_args(lists: list[ListArg], device: Any) -> dict[int, Any]:
    """Arena-bound arguments (SPEC §7: by identity plus length), checked against the kernel."""
    found: dict[int, Any] = {}
    for arg in lists:
        res = lookup(arg.value)
        if res is None:
            continue
        res.check_alive()
        if res.count != arg.count:
            raise GpuInvalidArgument(
                f"`{arg.param.name}` is bound in a GpuArena as `{res.name}` with {res.count} "
                f"elements but now has {arg.count}",
                param=arg.param.name,
                hint=f"re-bind it (arena.bind({res.name}=...)) after changing its length",
            )
        if res.kind != arg.param.type.elem.kind:
            raise GpuArgumentTypeError(
                f"`{arg.param.name}` expects {type_name(arg.param.type)}; the resident `{res.name}` "
                f"holds {res.kind} elements",
                param=arg.param.name,
                hint="bind a list or array of the kernel's element type",
            )
        found[arg.index] = res
    return found


def _fill(buf: Any, arg: ListArg) -> None:
    if arg.view is None:
        try:
            buf.pack_list(arg.value, arg.pack)
        except (GpuInvalidArgument, TypeError, ValueError, OverflowError) as exc:
            raise _prefixed(exc, arg) from None
    else:
        buf.write(arg.view)


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
    size: int,
    scalars: dict[int, int | float],
    addresses: dict[int, tuple[int, int]],
    buffers: list[Any],
) -> list[tuple]:
    wg = plan.wg
    grid_x = -(-size // wg)
    total = grid_x * wg
    if total > 0xFFFFFFFF:
        raise GpuInvalidArgument(f"problem size {size} exceeds 2**32 invocations", hint="split the work")

    def block(base_group: int) -> bytes:
        values = []
        for f in plan.fields:
            role = f.role
            if role == "addr":
                values.append(addresses[f.param][0])
            elif role == "len":
                values.append(addresses[f.param][1])
            elif role == "scalar":
                values.append(scalars[f.param])
            elif role == "total":
                values.append(total)
            elif role == "base_group":
                values.append(base_group)
            elif role == "grid_x":
                values.append(grid_x)
        return plan.packer.pack(*values)

    def push_for(base_group: int) -> bytes:
        data = block(base_group)
        if not plan.in_buffer:
            return data
        # The block travels like a list: device memory, written directly or through staging.
        pbuf = device.buffer(len(data))
        buffers.append(pbuf)
        if pbuf.host_visible:
            pbuf.write(data)
        else:
            staging = device.buffer(len(data), usage="upload")
            buffers.append(staging)
            staging.write(data)
            staged.append(("copy", staging, pbuf, len(data), 0, 0))
        return struct.pack("<Q", pbuf.address)

    pipeline = prep.pipeline
    staged: list[tuple] = []
    out: list[tuple] = []
    if not prep.compiled.observes_workgroup:
        groups = min(-(-total // prep.physical_wg), plan.max_groups)
        out.append(("dispatch", pipeline, push_for(0), (groups, 1, 1)))
    else:
        for base in range(0, grid_x, plan.max_groups):
            out.append(("dispatch", pipeline, push_for(base), (min(plan.max_groups, grid_x - base), 1, 1)))
    return staged + out
