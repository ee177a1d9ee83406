"""A per-kernel fast path for the commonest hot loop: every list argument resident in a
`GpuArena` (of any element type), every scalar of its exact builtin type and in its
parameter type's range (int for int/i64/u32/u64/narrow ints, float for float/f64/f16).

`build` describes the kernel as a compact plan for the C launcher (`_native.FastLauncher`,
native/launch.c), which does the checks, packs the parameter block and enqueues the dispatch
without running Python code. Where that is unavailable (no native device) a Python function
is generated instead, with the same checks written out straight. Both return None whenever
anything is unusual; `dispatch._launch` then does the full, general work and raises the
documented errors, so this file never has to word an error.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..residency.arena import OVERLAPS, READ_ONLY, _Resident, _resident
from ..runtime import native as _native_access
from . import session
from .binding import FLOAT16_MAX, INT32_MAX, INT32_MIN, INT_RANGES, list_format
from .gpujob import GpuJob

_FLOAT32_MAX = 3.4028234663852886e38

# False: always generate the Python launcher (tests and benchmarks compare the two)
NATIVE = True

# native/launch.c: parameter kinds, block field roles
_P_LIST, _P_INT, _P_U64, _P_BOOL, _P_F32, _P_F64, _P_F16 = range(7)
_ROLES = {"total": 0, "base_group": 1, "grid_x": 2, "total_y": 3, "total_z": 3}
_ROLES.update(addr=4, len=5, scalar=6)
_MAX_PARAMS = 32


def _f16(v: float) -> float:
    from ..gpu.types import f16

    return f16(v)


def _scalar_check(t: Any, a: str) -> str:
    """The condition under which scalar argument `a` of type `t` is not the plain case: not
    of the exact builtin Python type, or out of the type's range (then the general path
    converts it or words the error). Every value accepted here packs as it is."""
    if t.kind == "bool":
        return f"type({a}) is not bool"
    if t.kind == "float":
        if t.bits == 64:
            return f"type({a}) is not float"
        limit = "FMAX" if t.bits == 32 else FLOAT16_MAX  # a finite f16 stays finite rounded
        return f"type({a}) is not float or not -{limit} <= {a} <= {limit}"
    lo, hi = INT_RANGES.get((t.kind, t.bits), (INT32_MIN, INT32_MAX))
    return f"type({a}) is not int or not {lo} <= {a} <= {hi}"


def build(prep: Any, plan: Any, device: Any) -> Any:
    """The fast launcher `fast(args) -> GpuJob | None` of one prepared kernel, or None when
    the kernel's shape is not covered (parameter block in a buffer, `x.shape[k]` reads).
    `gpu(..., grid=...)` launches never come here (dispatch._launch handles them)."""
    if plan.in_buffer or plan.shapes:
        return None
    return _build_native(prep, plan, device) or _build_python(prep, plan, device)


def _param_entry(p: Any) -> tuple:
    """(kind, lo, hi, packs, itemsize, writes) of one parameter for native/launch.c."""
    t = p.type
    if p.is_list:
        code, itemsize = list_format(t.elem)
        packs = "BC" if code == "C" else code  # a uint8 array serves list[u8] too
        return (_P_LIST, 0, 0, packs, itemsize, int(bool(p.writes)))
    if t.kind == "bool":
        return (_P_BOOL, 0, 0, "", 0, 0)
    if t.kind == "float":
        return ({16: _P_F16, 32: _P_F32, 64: _P_F64}[t.bits], 0, 0, "", 0, 0)
    if (t.kind, t.bits) == ("uint", 64):
        return (_P_U64, 0, 0, "", 0, 0)
    lo, hi = INT_RANGES.get((t.kind, t.bits), (INT32_MIN, INT32_MAX))
    return (_P_INT, lo, hi, "", 0, 0)


_RECORD_FIELDS = (
    "obj", "generation", "pack", "count", "buffer", "last_use", "last_write", "hazard",
)  # fmt: skip


def _plain_attributes(cls: type, names: tuple) -> bool:
    """Whether instances of `cls` keep `names` in their `__dict__` with no descriptor, no
    custom attribute hooks: then reading and writing the dict is reading and writing them."""
    if (
        cls.__getattribute__ is not object.__getattribute__
        or cls.__setattr__ is not object.__setattr__
    ):
        return False
    if "__slots__" in cls.__dict__ or not cls.__dictoffset__:
        return False
    return all(
        not hasattr(type(inspect.getattr_static(cls, n, None)), "__get__") for n in names
    ) and not hasattr(cls, "__getattr__")


def _build_native(prep: Any, plan: Any, device: Any) -> Any:
    """The C launcher's `launch` method, or None where it does not apply."""
    native = getattr(device, "_dev", None)
    compiled = prep.compiled
    if (
        not NATIVE
        or not _native_access.built()
        or type(native) is not _native_access.module().Device
        or len(compiled.params) > _MAX_PARAMS
        or GpuJob.__new__ is not object.__new__  # the launcher makes jobs with object.__new__
        or not _plain_attributes(_Resident, _RECORD_FIELDS)  # it reads records' __dict__
    ):
        return None
    try:
        params = tuple(_param_entry(p) for p in compiled.params)
    except KeyError:
        return None
    fields = tuple(
        (f.offset, f.fmt, _ROLES[f.role], -1 if f.param is None else f.param) for f in plan.fields
    )
    if compiled.observes_workgroup:
        per = 0
    else:
        per = prep.physical_wg * getattr(compiled, "elements_per_invocation", 1)
    n_index = -1 if plan.n_index is None else plan.n_index
    sizing = (
        n_index,
        plan.wg,
        per,
        plan.max_groups,
        compiled.observes_workgroup,
        compiled.push.size,
    )
    try:
        launcher = _native_access.module().FastLauncher(
            native,
            prep.pipeline,
            params,
            fields,
            sizing,
            _resident,
            _Resident,
            session.state,
            GpuJob,
            device,
            compiled.name,
            prep.generation,
        )
    except (TypeError, ValueError, OverflowError):  # a layout it does not cover
        return None
    return launcher.launch


def _build_python(prep: Any, plan: Any, device: Any) -> Any:
    """The generated Python launcher (the same checks as native/launch.c, written out)."""
    compiled = prep.compiled
    params = compiled.params
    lines = ["def fast(args):"]
    # gpu() calls this before any other check: a shut-down device, a re-prepared kernel or a
    # wrong argument count goes to the general path (which words the error)
    lines.append(f"    if len(args) != {len(params)} or STATE.generation != G: return None")
    names = [f"a{i}" for i in range(len(params))]
    lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
    lists = []
    n_lists = sum(1 for p in params if p.is_list)
    alias_check = n_lists > 1 and any(p.is_list and p.writes for p in params)
    for i, p in enumerate(params):
        a = names[i]
        if not p.is_list:
            lines.append(f"    if {_scalar_check(p.type, a)}: return None")
            continue
        code, itemsize = list_format(p.type.elem)
        packs = ("B", "C") if code == "C" else (code,)  # a uint8 array serves list[u8] too
        r = f"r{i}"
        lists.append((i, p, r))
        lines.append(f"    {r} = R(ID({a}))")
        lines.append(
            f"    if {r} is None or {r}.obj is not {a} or {r}.generation != G or {r}.pack not in {packs!r}: return None"
        )
        lines.append(
            f"    if (len({a}) if type({a}) is list else MV({a}).nbytes // {itemsize}) != {r}.count: return None"
        )
        # a read-only buffer the kernel writes, or buffers sharing bytes next to a written
        # list: the general path refuses them with a message (arena.READ_ONLY, OVERLAPS)
        bits = (READ_ONLY if p.writes else 0) | (OVERLAPS if alias_check else 0)
        if bits:
            lines.append(f"    if {r}.hazard & {bits}: return None")
    if len(lists) > 1 and any(p.writes for _, p, _ in lists):
        # one object for two list parameters: the general path refuses it with a message
        ids = ", ".join(f"ID({names[i]})" for i, _, _ in lists)
        lines.append(f"    if len({{{ids}}}) != {len(lists)}: return None")
    n_index = plan.n_index
    if n_index is not None:
        lines.append(f"    size = {names[n_index]}")
    else:
        counts = ", ".join(f"r{i}.count" for i, _, _ in lists)
        lines.append(f"    size = max({counts}, 0)" if lists else "    size = 0")
    lines.append("    if size <= 0: return None")
    wg = plan.wg
    lines.append(f"    grid_x = (size + {wg - 1}) // {wg}")
    lines.append(f"    total = grid_x * {wg}")
    lines.append("    if total > 0xFFFFFFFF: return None")
    if compiled.observes_workgroup:
        lines.append("    if grid_x > MAXG: return None")
        lines.append("    groups = grid_x")
    else:
        per = prep.physical_wg * getattr(compiled, "elements_per_invocation", 1)
        lines.append("    total = size  # exact: no invocation past the problem (dispatch._dispatches)")
        lines.append(f"    groups = min((total + {per - 1}) // {per}, MAXG)")
    # the parameter block, fields in offset order (see artifact.PushLayout)
    values = []
    for f in plan.fields:
        if f.role == "total":
            values.append("total")
        elif f.role == "base_group":
            values.append("0")
        elif f.role == "grid_x":
            values.append("grid_x")
        elif f.role in ("total_y", "total_z"):
            values.append("1")  # a 1-D launch
        elif f.role == "addr":
            values.append(f"r{f.param}.buffer.address")
        elif f.role == "len":
            values.append(f"r{f.param}.count")
        else:
            t = params[f.param].type
            a = names[f.param]
            if t.kind == "bool":
                values.append(f"(1 if {a} else 0)")
            elif t.kind == "float" and t.bits == 16:
                values.append(f"F16({a})")  # rounded here, as binding.check_scalar does
            else:
                values.append(a)
    lines.append(f"    block = PACK({', '.join(values)})")
    keep = ", ".join(f"r{i}.buffer" for i, _, _ in lists)
    lines.append(
        f"    value = SUBMIT([('dispatch', PIPE, block, (groups, 1, 1))], ({keep}{',' if lists else ''} args), False)"
    )
    writebacks = []
    for i, p, r in lists:
        lines.append(f"    {r}.last_use = value")
        if p.writes:
            lines.append(f"    {r}.last_write = value")
            writebacks.append(f"(None, {r})")
    lines.append(f"    return JOB(DEVICE, value, NAME, [{', '.join(writebacks)}], [])")
    scope = {
        "R": _resident.get,
        "ID": id,
        "MV": memoryview,
        "G": prep.generation,
        "FMAX": _FLOAT32_MAX,
        "F16": _f16,
        "MAXG": plan.max_groups,
        "PACK": plan.packer_struct.pack,
        "SUBMIT": device._dev.submit,  # the native method: (commands, keep, timed)
        "STATE": session.state,
        "PIPE": prep.pipeline,
        "JOB": GpuJob,
        "DEVICE": device,
        "NAME": compiled.name,
    }
    exec("\n".join(lines) + "\n", scope)  # noqa: S102 - source built from our own tables above
    return scope["fast"]
