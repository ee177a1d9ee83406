"""`emulate(fn, *args, grid=None, workgroup=None, oob='raise')`: run a `@Gpu` kernel as plain Python
over every invocation of its grid, with the device's semantics (semantics.py), and write the lists
it stores to back into the caller's objects, as `gpu(...).join()` does.

The oracle for differential tests and a debugger for users: an out-of-bounds index raises
`IndexError` naming the list (or shared array), the index and the invocation. Shared arrays
are zero-filled per workgroup; atomics are sequential (one invocation runs at a time). Of
`cthreads.compiler` it reads only the operation table (compiler/semantics.py, through
semantics.py here), which imports nothing else: no frontend or codegen code.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from . import semantics as S
from . import translate_subgroup as SG
from .semantics import EmulationError, KernelUndefined
from .translate_stmt import Translation, translate

DEFAULT_WORKGROUP = 64


class _OOB(Exception):
    def __init__(self, name: str, index: int, write: bool):
        self.name, self.index, self.write = name, index, write


def kernel_workgroup(fn: Any) -> tuple[int, int, int]:
    """The kernel's logical workgroup size: its `workgroup_size` option, else (64, 1, 1)."""
    for source in (fn, getattr(fn, "__gpu_kernel_meta__", None), getattr(fn, "options", None)):
        if source is None:
            continue
        value = (
            source.get("workgroup_size")
            if isinstance(source, dict)
            else getattr(source, "workgroup_size", None)
        )
        if value is not None:
            return _triple(value, "workgroup_size")
    return (DEFAULT_WORKGROUP, 1, 1)


def _triple(value: Any, what: str) -> tuple[int, int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    value = tuple(int(v) for v in value)
    if not 1 <= len(value) <= 3 or any(v < 1 for v in value):
        raise ValueError(
            f"{what} must be a positive int or a tuple of 1-3 positive ints; got {value!r}"
        )
    return value + (1,) * (3 - len(value))


def _to_device(name: str, elem: str, value: Any) -> list:
    """A copy of a list argument in the device representation (float32 / int32 / bool)."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy: flat C order, like gpu()
        items = value.reshape(-1).tolist()
    else:
        try:
            items = list(value)
        except TypeError:
            raise TypeError(f"`{name}` expects list[{elem}]; got {type(value).__name__}") from None
    if elem == "float":
        return [S.f32(float(v)) for v in items]
    if elem == "f64":
        return [float(v) for v in items]
    if elem == "f16":
        return [S.f16(float(v)) for v in items]
    if elem in S._RANGES and elem != "int":
        lo, hi = S._RANGES[elem]
        out = []
        for v in items:
            if isinstance(v, (bool, float)) or not hasattr(v, "__index__"):
                raise TypeError(f"`{name}` expects list[{elem}]; got an element {v!r}")
            v = v.__index__()
            if not lo <= v <= hi:
                raise ValueError(
                    f"`{name}` expects list[{elem}]; element {v} is outside [{lo}, {hi}]"
                )
            out.append(v)
        return out
    if elem == "int":
        out = []
        for v in items:
            if isinstance(v, float) or not hasattr(v, "__index__"):
                raise TypeError(f"`{name}` expects list[int]; got an element {v!r}")
            v = v.__index__()
            if not S.INT32_MIN <= v <= S.INT32_MAX:
                raise ValueError(
                    f"`{name}` expects list[int] (int32); element {v} does not fit in 32 bits"
                )
            out.append(v)
        return out
    return [bool(v) for v in items]


def _scalar(name: str, t: str, value: Any):
    if t == "bool":
        return bool(value)
    if t == "f64":
        return float(value)
    if t == "f16":
        return S.f16(float(value))
    if t in S._RANGES and t != "int":
        lo, hi = S._RANGES[t]
        if isinstance(value, (bool, float)) or not hasattr(value, "__index__"):
            raise TypeError(f"`{name}` expects {t}; got {type(value).__name__}")
        v = value.__index__()
        if not lo <= v <= hi:
            raise ValueError(f"`{name}` expects {t}; got {v}, outside [{lo}, {hi}]")
        return v
    if t == "int":
        if isinstance(value, float) or not hasattr(value, "__index__"):
            raise TypeError(f"`{name}` expects int (int32); got {type(value).__name__}")
        v = value.__index__()
        if not S.INT32_MIN <= v <= S.INT32_MAX:
            raise ValueError(f"`{name}` expects int (int32); got {v}, outside [-2**31, 2**31 - 1]")
        return v
    return S.f32(float(value))


def _write_back(target: Any, values: list) -> None:
    if isinstance(target, list):
        target[:] = values
    elif hasattr(target, "dtype") and hasattr(target, "reshape"):
        import numpy as np

        target[...] = np.asarray(values, dtype=target.dtype).reshape(target.shape)
    else:  # array.array and other mutable sequences
        target[:] = type(target)(target.typecode, values) if hasattr(target, "typecode") else values


def launch_shape(tr: Translation, values: dict, grid, workgroup) -> tuple[tuple, tuple]:
    """(groups, workgroup, extent) per axis. Default (SPEC §4): problem size = the int parameter
    `n`, else the longest list; groups = ceil(size / workgroup.x), at least 1 (n = 0 runs one
    workgroup of a kernel that observes it). `grid`, as in `gpu(..., grid=...)`: an int problem
    size along x, or a tuple of 1-3 invocation counts per axis, each rounded up
    to whole workgroups (a zero extent runs nothing). `extent` is the exact size per axis: a kernel that
    does not observe the workgroup runs only the invocations below it, as on the device
    (launch/sizing.py, `dispatches`)."""
    if isinstance(grid, (tuple, list)):
        if not 1 <= len(grid) <= 3 or any(
            isinstance(v, (bool, float)) or not hasattr(v, "__index__") or v.__index__() < 0
            for v in grid
        ):
            raise ValueError(
                f"grid must be an int or a tuple of 1-3 ints >= 0 (invocations per axis); got {grid!r}"
            )
        dims = tuple(v.__index__() for v in grid) + (1,) * (3 - len(grid))
        return tuple(-(-d // w) for d, w in zip(dims, workgroup)), workgroup, dims
    if grid is None:
        if any(p == "n" and t == "int" for p, t in tr.params):
            size = values["n"]
        else:
            size = max((len(values[p]) for p, t in tr.params if t.startswith("list[")), default=0)
    else:
        size = max(int(grid), 0)
        return (-(-size // workgroup[0]), 1, 1), workgroup, (size, 1, 1)
    size = max(size, 0)
    return (max(1, -(-size // workgroup[0])), 1, 1), workgroup, (size, 1, 1)


def emulate(
    fn: Any,
    *args: Any,
    grid: Any = None,
    workgroup: Any = None,
    oob: str = "raise",
    subgroup_size: int | None = None,
    pins: Any = None,
) -> None:
    """Run kernel `fn` on `args` in Python, invocation by invocation, in increasing global index
    (within a workgroup, invocations step together from barrier to barrier).

    grid: None (the `gpu()` rule), or as `gpu(..., grid=...)`: an int problem size along x or a
        tuple of 1-3 invocation counts per axis, each rounded up to whole workgroups.
        workgroup: overrides the kernel's workgroup size.
    oob: 'raise' (IndexError naming list, index and invocation) or 'device' (reads give 0/0.0/False,
        writes are dropped, as on the device, SPEC §5.6).
    subgroup_size: invocations per subgroup for subgroup operations (translate_subgroup.py);
        default: the default device's subgroup size when Vulkan is available, else 32.
    pins: as `gpu(..., pins=...)`: an @autotune kernel runs as its variant at these choices (the
        first choice of every name not pinned); the body reads them, and `@Gpu(constants=...)`,
        before module globals, as the compiler does.
    Lists the kernel writes are written back into the argument objects; others are left alone.
    Raises `EmulationError` for constructs outside the language, `KernelUndefined` for undefined
    behaviour (float->int of nan/inf/out-of-range values, barriers not reached by every invocation).
    """
    if oob not in ("raise", "device"):
        raise ValueError(f"oob must be 'raise' or 'device'; got {oob!r}")
    if pins is not None or getattr(fn, "_tuner", None) is not None:
        from ..gpu.variants import pinned_variant

        fn = pinned_variant(fn, pins)
    tr = translate(fn)
    if len(args) != len(tr.params):
        names = ", ".join(p for p, _ in tr.params)
        raise TypeError(
            f"kernel `{tr.name}` takes {len(tr.params)} argument(s) ({names}); got {len(args)}"
        )
    values: dict[str, Any] = {}
    lists: dict[str, list] = {}
    shapes: dict[str, tuple] = {}
    for (name, t), value in zip(tr.params, args):
        if t.startswith("list["):
            lists[name] = values[name] = _to_device(name, t[5:-1], value)
            shape = tuple(getattr(value, "shape", None) or (len(lists[name]),))
            axis = tr.shapes.get(name)
            if axis is not None and len(shape) <= axis:
                raise ValueError(
                    f"kernel `{tr.name}` reads `{name}.shape[{axis}]` but the argument has "
                    f"{len(shape)} dimension(s) (shape {shape}); Python lists are 1-D"
                )
            shapes[name] = (shape + (1, 1, 1))[:3]
        else:
            values[name] = _scalar(name, t, value)
    wg = _triple(workgroup, "workgroup") if workgroup is not None else kernel_workgroup(fn)
    groups, wg, extent = launch_shape(tr, values, grid, wg)
    run_lists(
        tr, values, lists, groups, wg, oob, shapes, subgroup_size=subgroup_size, extent=extent
    )
    for (name, _), value in zip(tr.params, args):
        if name in tr.written:
            _write_back(value, lists[name])


def run_lists(
    tr: Translation,
    values: dict,
    lists: dict,
    groups: tuple,
    wg: tuple,
    oob: str,
    shapes: dict | None = None,
    subgroup_size: int | None = None,
    extent: tuple | None = None,
) -> None:
    """Run every invocation on already converted `lists` (mutated in place); `shapes` gives each
    list's extents for `x.shape[k]` (default: 1-D). With `extent`, a kernel that does not observe
    the workgroup runs only the invocations whose global index is below it on every axis."""
    whole = tr.observes_workgroup or tr.has_subgroup or tr.has_barrier or bool(tr.shared)
    if extent is None or whole:
        extent = tuple(g * w for g, w in zip(groups, wg))

    def oob_r(name, index, z):
        if oob == "device":
            return z
        raise _OOB(name, index, False)

    def oob_w(name, index):
        if oob == "raise":
            raise _OOB(name, index, True)

    kw = {f"_ct_L_{n}": v for n, v in lists.items()}
    kw.update({f"_ct_n_{n}": len(v) for n, v in lists.items()})
    kw.update({f"_ct_h_{n}": (shapes or {}).get(n, (len(v), 1, 1)) for n, v in lists.items()})
    kw.update({n: v for n, v in values.items() if n not in lists})
    kw.update(
        _ct_bdx=wg[0],
        _ct_bdy=wg[1],
        _ct_bdz=wg[2],
        _ct_gdx=groups[0],
        _ct_gdy=groups[1],
        _ct_gdz=groups[2],
    )
    kw.update(_ct_oob_r=oob_r, _ct_oob_w=oob_w)
    if tr.has_subgroup:
        subgroup_size = subgroup_size or SG.default_subgroup_size()
        if (
            isinstance(subgroup_size, bool)
            or not isinstance(subgroup_size, int)
            or subgroup_size < 1
        ):
            raise ValueError(f"subgroup_size must be a positive int; got {subgroup_size!r}")
        kw.update(_ct_sgs=subgroup_size)
    inv = tr.factory(**kw)
    state = [0] * 9  # the invocation being run, for error messages
    try:
        if tr.has_subgroup:  # subgroups step together, like barriers
            SG.run_workgroups(
                inv, groups, wg, state, subgroup_size, _groups, _members, KernelUndefined
            )
        elif tr.has_barrier:
            _run_barriers(inv, groups, wg, state)
        elif tr.shared:  # fresh shared arrays per workgroup
            for group in _groups(groups):
                inv.new_group()
                for ids in _members(group, wg):
                    state[:] = ids
                    inv(*ids)
        elif groups[1] == groups[2] == wg[1] == wg[2] == 1:
            w = wg[0]
            for g in range(min(groups[0] * w, extent[0])):
                state[0] = g
                inv(g, 0, 0, g % w, 0, 0, g // w, 0, 0)
        else:
            ex, ey, ez = extent
            for ids in _invocations(groups, wg):
                if ids[0] < ex and ids[1] < ey and ids[2] < ez:
                    state[:] = ids
                    inv(*ids)
    except _OOB as exc:
        if exc.name in lists:
            n, kind = len(lists[exc.name]), "len"
            shown = exc.name
        else:
            array = "local array" if exc.name in inv.local_arrays else "shared array"
            n, kind = inv.shared_sizes[exc.name], f"{array} of size"
            shown = f"{array} {exc.name}"
        what = f"write to {shown}[{exc.index}]" if exc.write else f"{shown}[{exc.index}]"
        raise IndexError(
            f"{what} out of range ({kind} {n}) in invocation {_where(state)} "
            f"of kernel `{tr.name}`{_kernel_line(tr)}"
        ) from None
    except KernelUndefined as exc:
        raise KernelUndefined(
            f"{exc} in invocation {_where(state)} of kernel `{tr.name}`{_kernel_line(tr)}"
        ) from None


def _kernel_line(tr: Translation) -> str:
    """' (file:line)' of the kernel statement that was running, from the live traceback."""
    tb = sys.exc_info()[2]
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<cthreads.emulate"):
            line = tr.line_map.get(tb.tb_lineno) or line
        tb = tb.tb_next
    return f" ({tr.filename}:{line})" if line else ""


def _where(ids: list) -> str:
    if ids[1] == ids[2] == 0:
        return f"GlobalIdx.x={ids[0]}"
    return f"GlobalIdx=({ids[0]}, {ids[1]}, {ids[2]})"


def _groups(groups):
    for bz, by, bx in itertools.product(range(groups[2]), range(groups[1]), range(groups[0])):
        yield bx, by, bz


def _members(group, wg) -> list[tuple]:
    bx, by, bz = group
    return [
        (bx * wg[0] + tx, by * wg[1] + ty, bz * wg[2] + tz, tx, ty, tz, bx, by, bz)
        for tz, ty, tx in itertools.product(range(wg[2]), range(wg[1]), range(wg[0]))
    ]


def _invocations(groups, wg):
    """All invocations in increasing (z, y, x) group order, then local (z, y, x) order."""
    for group in _groups(groups):
        yield from _members(group, wg)


def _run_barriers(inv, groups, wg, state) -> None:
    """Each workgroup's invocations are generators; all run to the next barrier, then the next
    round starts. Every invocation must reach the same barrier, or all must finish."""
    size = wg[0] * wg[1] * wg[2]
    for group in _groups(groups):
        members = _members(group, wg)
        inv.new_group()
        gens = [inv(*ids) for ids in members]
        alive = list(range(size))
        while alive:
            waiting, finished, where = [], [], {}
            for k in alive:
                state[:] = members[k]
                try:
                    where[k] = next(gens[k])
                    waiting.append(k)
                except StopIteration:
                    finished.append(k)
            if waiting and finished:
                raise KernelUndefined(
                    f"barrier at line {where[waiting[0]]} is reached by {len(waiting)} invocation(s) while "
                    f"{len(finished)} returned (e.g. GlobalIdx.x={members[finished[0]][0]}); a barrier must "
                    "be reached by every invocation of the workgroup"
                )
            lines = {where[k] for k in waiting}
            if len(lines) > 1:
                raise KernelUndefined(
                    f"invocations of one workgroup wait at different barriers (lines {sorted(lines)})"
                )
            alive = waiting


__all__ = ["EmulationError", "KernelUndefined", "emulate", "kernel_workgroup"]
