"""The launch plan: everything a launch needs to know about one compiled kernel on one device,
derived once, here only, from the compiler's contract (`CompiledKernel`: parameters, the
parameter-block layout, workgroup shape) and the device's limits.

Both launch paths consume it: the general Python path (`general.general_launch`,
`binding.check_scalar`) reads the `LaunchPlan` itself; the C launcher (native/launch.c, `FastLauncher`)
gets `native_launcher(...)`'s compact encoding of it. The C module defines its own parameter
kinds and field roles and exports them (`FastLauncher.codes()`); this module spells them by
name and reads the numbers from there, so no code is mirrored by hand.

    gpu(fn, *args) ─▶ Prepared (session) ─▶ LaunchPlan (here, once) ─┬▶ FastLauncher.launch (C)
                                                                     └▶ general_launch (Python)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cached_property
from operator import itemgetter
from typing import Any

from ..record import Record
from ..residency import arena as residency
from ..runtime import formats
from ..runtime import native as _native_access
from .gpujob import GpuJob
from .sizing import spread_threshold


class ParamPlan(Record):
    """One kernel parameter as a launch sees it. It reads like the compiler's `Param` (name,
    type, is_list, writes), so argument checks and messages take either."""

    index: int
    name: str
    type: Any  # the IR type (Scalar or ListType)
    is_list: bool
    writes: bool  # a list the kernel stores into (written back; aliasing matters)
    kind: str  # 'list', or the scalar kind: 'int' (in [lo, hi]), 'u64', 'bool', 'f32', 'f64', 'f16'
    lo: int = 0  # int scalars: the range a value must lie in
    hi: int = 0
    fmt: formats.ElementFormat | None = None  # lists: the element format
    shape_axis: int | None = None  # lists: the highest k of `x.shape[k]` the kernel reads


class LaunchPlan(Record):
    """The launch contract of one prepared kernel (see the module docstring)."""

    name: str
    params: tuple[ParamPlan, ...]
    fields: tuple[Any, ...]  # artifact.PushField, in offset order
    push_size: int  # bytes of the parameter block
    in_buffer: bool  # the block lives in a buffer; the push constants hold its address
    pack: Callable[
        ..., bytes
    ]  # pack(total, base_group, grid_x, total_y, total_z, addr, count, scalar, shape)
    # sizing: the problem size is `n` (params[n_index]), else the longest list, or `grid=`
    n_index: int | None
    wg3: tuple[int, int, int]  # logical workgroup shape
    per_group: int  # invocations one physical workgroup covers per grid-stride step
    width: int  # invocations of one physical workgroup (the pipeline's width along x)
    spread_below: int  # sizing.spread_below when the plan was made, for the C launcher
    observes_workgroup: bool  # whole workgroups of wg3, x split across dispatches
    max_groups: tuple[int, int, int]  # the device's group-count limits
    writes_lists: bool  # some list is written: aliasing must be checked (with > 1 list)
    direct_read: bool  # the host reads device buffers directly (unified memory)

    # derived views, computed once (cached_property writes the instance dict, frozen or not)
    @cached_property
    def scalars(self) -> tuple[ParamPlan, ...]:
        return tuple(p for p in self.params if not p.is_list)

    @cached_property
    def lists(self) -> tuple[ParamPlan, ...]:
        return tuple(p for p in self.params if p.is_list)

    @cached_property
    def shapes(self) -> dict[int, int]:
        """list parameter index -> highest axis of `x.shape[axis]` the kernel reads"""
        return {p.index: p.shape_axis for p in self.params if p.shape_axis is not None}


def _param_plan(index: int, p: Any, shape_axis: int | None) -> ParamPlan:
    t = p.type
    if p.is_list:
        fmt = formats.of(t.elem)
        return ParamPlan(
            index, p.name, t, True, bool(p.writes), "list", fmt=fmt, shape_axis=shape_axis
        )
    common = (index, p.name, t, False, False)
    if t.kind == "bool":
        return ParamPlan(*common, "bool")
    if t.kind == "float":
        return ParamPlan(*common, {16: "f16", 32: "f32", 64: "f64"}[t.bits])
    if (t.kind, t.bits) == ("uint", 64):
        return ParamPlan(*common, "u64", *formats.INT_RANGES["uint", 64])
    return ParamPlan(*common, "int", *formats.INT_RANGES[t.kind, t.bits])


_HEADER = ("total", "base_group", "grid_x", "total_y", "total_z")
_TABLES = ("addr", "len", "scalar")  # roles read from the packer's tables by parameter index


def _make_packer(fields: tuple, packer: struct.Struct) -> Callable[..., bytes]:
    """A function packing the parameter block: `pack(total, base_group, grid_x, total_y,
    total_z, addr, count, scalar, shape)` (the last four: dicts by parameter index; `shape`'s
    values are tuples by axis). It gathers the header, then each table's entries, then the
    extents, and one `itemgetter` puts them in field order; where each value is was read from
    the field table once per kernel. No source is generated and compiled (issue 19: `exec` was
    ~0.2 ms of a warm first launch on lavapipe; this costs ~0.5 us more a launch)."""
    keys = {role: [f.param for f in fields if f.role == role] for role in _TABLES}
    extents = tuple((f.param, int(f.role[5:])) for f in fields if f.role.startswith("shape"))
    gathered = [(r, None) for r in _HEADER]
    gathered += [(role, p) for role in _TABLES for p in keys[role]]
    gathered += [(f"shape{k}", p) for p, k in extents]
    order = [gathered.index((f.role, None if f.role in _HEADER else f.param)) for f in fields]
    put = _getter(order)
    addr_of, len_of, scalar_of = (_getter(keys[r]) for r in _TABLES)
    extents_of = (lambda shape: tuple(shape[p][k] for p, k in extents)) if extents else None
    pack = packer.pack

    def pack_block(
        total: int,
        base_group: int,
        grid_x: int,
        total_y: int,
        total_z: int,
        addr: dict,
        count: dict,
        scalar: dict,
        shape: dict,
    ) -> bytes:
        values = (
            total,
            base_group,
            grid_x,
            total_y,
            total_z,
            *addr_of(addr),
            *len_of(count),
            *scalar_of(scalar),
            *(extents_of(shape) if extents_of else ()),
        )
        return pack(*put(values))

    return pack_block


def _getter(keys: list) -> Callable[[Any], tuple]:
    """`itemgetter(*keys)`, always giving a tuple (also for one key or none)."""
    if len(keys) > 1:
        return itemgetter(*keys)
    if keys:
        key = keys[0]
        return lambda table: (table[key],)
    return lambda table: ()


def make_plan(compiled: Any, physical_wg: int, device: Any) -> LaunchPlan:
    """The plan of `compiled` (a `CompiledKernel`) built with physical width `physical_wg` on
    `device` (a runtime Device)."""
    params = compiled.params
    fields = tuple(sorted(compiled.push.fields, key=lambda f: f.offset))
    axes: dict[int, int] = {}
    for f in fields:
        if f.role.startswith("shape"):
            axes[f.param] = max(axes.get(f.param, 0), int(f.role[5:]))
    n_index = next(
        (
            i
            for i, p in enumerate(params)
            if p.name == "n" and not p.is_list and p.type.kind == "int"
        ),
        None,
    )
    limits = device.info.limits["max_compute_work_group_count"]
    per_invocation = getattr(compiled, "elements_per_invocation", 1)
    return LaunchPlan(
        name=compiled.name,
        params=tuple(_param_plan(i, p, axes.get(i)) for i, p in enumerate(params)),
        fields=fields,
        push_size=compiled.push.size,
        in_buffer=compiled.push.in_buffer,
        pack=_make_packer(fields, struct.Struct(compiled.push.struct_format())),
        n_index=n_index,
        wg3=tuple(compiled.workgroup_size),  # type: ignore[arg-type]
        per_group=physical_wg * per_invocation,
        width=physical_wg,
        spread_below=spread_threshold(per_invocation, device.info),
        observes_workgroup=bool(compiled.observes_workgroup),
        max_groups=tuple(int(v) for v in limits[:3]),  # type: ignore[arg-type]
        writes_lists=any(p.is_list and p.writes for p in params),
        # Reading mapped device memory over PCIe (resizable BAR) is orders of magnitude
        # slower than a copy into host-cached memory; only unified memory is read directly.
        direct_read=device.info.type in ("cpu", "integrated"),
    )


# -- the C launcher -------------------------------------------------------------------------

# False: never build the C launcher (tests compare it with the general path)
NATIVE = True


def native_encoding(plan: LaunchPlan, codes: dict[str, Any]) -> tuple[bytes, bytes, bytes] | None:
    """(params, fields, sizing) for `FastLauncher`: the plan packed in the layout the C module
    exports (`codes`), or None where the C launcher does not cover the kernel (parameter block
    in a buffer, `x.shape[k]` reads)."""
    if plan.in_buffer or plan.shapes:
        return None
    param = struct.Struct(codes["PARAM_FORMAT"]).pack
    params = b"".join(
        param(
            codes["P_" + p.kind.upper()],
            int(p.writes),
            *((p.lo, p.hi) if p.kind == "int" else (0, 0)),  # u64 is range-checked by type
            p.fmt.itemsize if p.fmt else 0,
            formats.accepted_packs(p.fmt).encode() if p.fmt else b"",
        )
        for p in plan.params
    )
    field = struct.Struct(codes["FIELD_FORMAT"]).pack
    fields = b"".join(
        field(
            f.offset,
            codes["R_" + f.role.upper()],
            -1 if f.param is None else f.param,
            f.fmt.encode(),
        )
        for f in plan.fields
    )
    sizing = struct.pack(
        codes["SIZING_FORMAT"],
        -1 if plan.n_index is None else plan.n_index,
        *plan.wg3,
        0 if plan.observes_workgroup else plan.per_group,
        *plan.max_groups,
        plan.observes_workgroup,
        plan.push_size,
        residency.READ_ONLY,
        residency.OVERLAPS,
        # the spread rule (sizing.grid_stride_groups): grid-stride kernels only
        0 if plan.observes_workgroup else plan.spread_below,
        plan.width,
    )
    return params, fields, sizing


def native_launcher(plan: LaunchPlan, pipeline: Any, device: Any, generation: int) -> Any:
    """The C launcher's `launch(args, grid=None, lane=0, after=0) -> GpuJob | None` for `plan`
    (lane >= 1: a stream's lane, native/lane.c), or None where it
    does not apply (no native device, a layout it does not cover)."""
    native = getattr(device, "_dev", None)
    if not NATIVE or not _native_access.built():
        return None
    module = _native_access.module()
    record_types = (residency.Resident, *residency.SELF_RECORD_TYPES)
    if (
        type(native) is not module.Device
        or len(plan.params) > module.FastLauncher.codes()["MAX_PARAMS"]
        # the launcher makes jobs with object.__new__ and sets their attributes as object does
        or GpuJob.__new__ is not object.__new__
        or GpuJob.__setattr__ is not object.__setattr__
    ):
        return None
    try:
        encoded = native_encoding(plan, module.FastLauncher.codes())
        if encoded is None:
            return None
        launcher = module.FastLauncher(
            native,
            pipeline,
            *encoded,
            residency.RECORDS,
            residency.RECORDS_CHANGES,
            record_types,
            residency.RECORD_FIELDS,  # slots of each record type (it declines a type without)
            GpuJob,
            GpuJob.QUEUED_FIELDS,
            device,
            plan.name,
            generation,
        )
    except (TypeError, ValueError, OverflowError, struct.error):  # a layout it does not cover
        return None
    return launcher.launch
