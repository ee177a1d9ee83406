"""`kernel[grid](*args)`: the bracket launch (issue 15 item 2, SPEC §10).

`grid` counts workgroups, as numba-cuda, Triton, Warp's `launch_tiled` and the phobos model
do; `gpu()` counts invocations (SPEC §4). A bracket launch is the one launch there is,
restated: `g` workgroups along an axis are `gpu(kernel, *args, grid=g * workgroup extent)`
invocations, so argument checks, sizing, the split past the device's group-count limit and the
job all stay `gpu()`'s. This module only reads the grid (an int, 1 to 3 ints, or a callable of
the launch's meta), takes the workgroup shape from the launch session's prepared kernel and
multiplies.

`kernel[grid]` prepares the kernel on its first use, as `gpu()` would (compile errors and a
missing device surface there, before anything runs), and checks a static grid then; the
launcher it returns calls the kernel's C launcher with the invocations bound (what `gpu(...,
grid=)` does first), from C (native/bound.c: no Python frame per launch), and `gpu()` itself
for anything that launcher declines. A callable grid runs at each
launch, with the meta of that launch's arguments. The workgroup shape, read once from the
prepared kernel, is fixed for a kernel object (its compiled form keeps the declared shape on
every device), so the kernel's last launcher hands it on to the next: `kernel[new grid]` in a
loop looks nothing up.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..launch import session
from ..launch.binding import check_list, check_scalar
from ..launch.dispatch import gpu
from ..launch.general import plan_of
from ..launch.gpujob import GpuJob
from ..launch.stream import SCOPED
from ..runtime import native as _native
from ..runtime.extents import extent_items, is_extent
from ..runtime.handle import current as _device_context

# Invocations per axis the parameter block holds (a u32), as dispatch.py checks for gpu(grid=).
MAX_AXIS_INVOCATIONS = 0xFFFFFFFF
META_WORKGROUP = "workgroup_size"


# The call in C where the extension is built (native/bound.c): no Python frame per launch.
_Bound: type = _native.module().BoundLaunch if _native.built() else object


def _call(launch: BracketLaunch, *args: Any, **options: Any) -> GpuJob:
    """A call of `kernel[grid]` past its C part (launch options, a callable grid, `with
    stream:` / `with device:`, a launch the kernel's C launcher declined), and the whole call
    where the extension is not built (then there is no C launcher to try either)."""
    kernel, inv = launch.kernel, launch.invocations
    if inv is None:
        return _callable_launch(kernel, launch.grid, launch.facts, *args, **options)
    if options:
        _check_options(kernel, options)
    return gpu(kernel, *args, grid=inv, **options)


class BracketLaunch(_Bound):
    """`kernel[grid]`: call it with the kernel's arguments (positional, as for `gpu()`) and
    `gpu()`'s launch options (`timed=`, `force=`, `device=`); it returns a started `GpuJob`.

    For a static grid a call is the kernel's C launcher with the invocations bound (called from
    C, native/bound.c), falling back to `gpu(kernel, *args, grid=invocations, **options)`; for
    a callable one `_callable_launch(kernel, grid, facts, *args, **options)`. `.kernel`,
    `.grid` (as written in the brackets), `.groups` (gx, gy, gz) and `.invocations` (per axis;
    both None for a callable grid) and `.workgroup_size` describe it."""

    __slots__ = ("kernel", "grid", "groups", "invocations", "facts")

    def __init__(
        self,
        kernel: Any,
        grid: Any,
        groups: tuple[int, int, int] | None,
        invocations: tuple[int, int, int] | None,
        facts: _KernelFacts,
    ) -> None:
        self.kernel, self.grid, self.groups = kernel, grid, groups
        self.invocations, self.facts = invocations, facts
        if _Bound is not object:
            # what the C call reads: the kernel's launcher attribute (it changes with the
            # device), the invocations, this module's fallback, `with stream:` / `with device:`
            super().__init__(kernel, "_fast_launch", invocations, _call, SCOPED, _device_context)

    if _Bound is object:
        __call__ = _call

    @property
    def workgroup_size(self) -> tuple[int, int, int]:
        """The kernel's workgroup shape, as its prepared form records it."""
        return self.facts.workgroup_size

    def __repr__(self) -> str:
        return f"<kernel[grid] launcher {self.kernel.name}[{self.grid!r}]>"


class _KernelFacts:
    """What launchers of one kernel object share, handed from each to the next: its
    workgroup shape and, once a callable grid needs it, the meta plan."""

    __slots__ = ("workgroup_size", "meta_plan")

    def __init__(self, workgroup_size: tuple[int, int, int]) -> None:
        self.workgroup_size = workgroup_size
        self.meta_plan: tuple | None = None


def launcher(kernel: Any, grid: Any) -> BracketLaunch:
    """`kernel[grid]`, remembered on the kernel as its last launcher (`kernel[grid]` again
    with the same grid object returns it: kernel.py checks that; an equal static grid in a
    new object returns it too)."""
    last = kernel._bracket
    facts = last.facts if last is not None else _KernelFacts(_prepared_workgroup(kernel))
    if _is_callable_grid(grid):
        made = BracketLaunch(kernel, grid, None, None, facts)
    else:
        # parse_groups' commonest cases written out (this runs at every `kernel[new grid]`)
        if type(grid) is int and grid >= 0:
            groups = (grid, 1, 1)
        elif type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and grid[0] >= 0:
            groups = (grid[0], 1, 1)
        else:
            groups = parse_groups(grid, kernel)
        if last is not None and last.groups == groups:
            return last
        inv = _invocations(kernel, groups, facts.workgroup_size)
        made = BracketLaunch(kernel, grid, groups, inv, facts)
    kernel._bracket = made
    return made


def _prepared_workgroup(kernel: Any) -> tuple[int, int, int]:
    """The kernel's declared workgroup shape as its prepared (compiled) form records it,
    preparing it now if this session has not (the same call `gpu()` makes)."""
    prep = session.state.prepared.get(kernel.source_key)
    if prep is None or prep.generation != session.state.generation:
        prep = session.kernel_for_launch(kernel)  # compile errors surface here, as in gpu()
    # (never the physical width a kernel that does not observe its workgroup runs with: that
    # one is invisible to it, and the device's choice)
    return tuple(prep.compiled.workgroup_size)  # type: ignore[return-value]


def _callable_launch(
    kernel: Any, grid: Callable, facts: _KernelFacts, /, *args: Any, **options: Any
) -> GpuJob:
    """A launch through `kernel[grid]` with a callable grid: meta from these arguments, the
    callable, then gpu() with the invocations it asks for. (Meta and the call are written out
    here rather than in helpers: this runs per launch.)"""
    if options:
        _check_options(kernel, options)
    plan = facts.meta_plan
    if plan is None:
        # the launch plan's parameters: check_scalar reads their kind and range
        prep = session.kernel_for_launch(kernel)
        params = plan_of(prep, session.state.device).params
        plan = facts.meta_plan = _meta_plan(kernel, params)
    if len(args) != len(plan):
        names = kernel.param_names
        raise TypeError(
            f"kernel `{kernel.name}` takes {len(names)} argument(s) ({', '.join(names)}); "
            f"got {len(args)}, expected {len(names)} args"
        )
    # meta: each scalar argument and each list argument's element count by parameter name. A
    # scalar of another Python type than its parameter's goes through the launch's own check
    # first, so a bad argument is reported as gpu() reports it, not as a failing grid callable
    # (and a numpy scalar arrives as the Python number the launch passes).
    meta: dict[str, Any] = {}
    for i, name, param, as_is in plan:
        value = args[i]
        if as_is is None:
            meta[name] = len(value) if type(value) is list else _element_count(i, param, value)
        elif type(value) in as_is:
            meta[name] = value
        else:
            meta[name] = check_scalar(param, value)
    if kernel._choices:  # an @autotune variant: its choices by name too (gpu/tuning.py)
        meta.update(kernel._choices)
    wg = meta[META_WORKGROUP] = facts.workgroup_size
    try:
        returned = grid(meta)  # a new dict per launch: the callable may keep or edit it
    except Exception as exc:
        raise _grid_raised(kernel, grid, plan, exc) from exc
    if type(returned) is int and returned >= 0:
        gx, gy, gz = returned, 1, 1
    else:
        groups = _fast_tuple(returned) if type(returned) is tuple else None
        gx, gy, gz = groups or _returned_groups(kernel, grid, returned)
    inv = (gx * wg[0], gy * wg[1], gz * wg[2])
    if max(inv) > MAX_AXIS_INVOCATIONS:
        _invocations(kernel, (gx, gy, gz), wg)  # raises, naming the axis
    if options:
        return gpu(kernel, *args, grid=inv, **options)
    return gpu(kernel, *args, grid=inv)


# ------------------------------------------------------------------------------ the grid


def _is_callable_grid(grid: Any) -> bool:
    return callable(grid) and not isinstance(grid, (int, tuple, list))


def parse_groups(grid: Any, kernel: Any, source: Any = None) -> tuple[int, int, int]:
    """`grid` as workgroups (gx, gy, gz): an int or a tuple/list of 1 to 3 ints, each >= 0.
    `source` is the grid callable when `grid` is what it returned (errors name it)."""
    if type(grid) is int:
        if grid >= 0:
            return (grid, 1, 1)
    elif isinstance(grid, (tuple, list)):
        fast = _fast_tuple(tuple(grid))
        if fast is not None:
            return fast
    return _checked_groups(grid, kernel, source)


def _fast_tuple(items: tuple) -> tuple[int, int, int] | None:
    """1 to 3 plain non-negative ints as (gx, gy, gz), else None (the slow path decides)."""
    n = len(items)
    if n == 3:
        x, y, z = items
        if type(x) is int and type(y) is int and type(z) is int and min(items) >= 0:
            return items  # type: ignore[return-value]
    elif n == 2:
        x, y = items
        if type(x) is int and type(y) is int and x >= 0 and y >= 0:
            return (x, y, 1)
    elif n == 1:
        (x,) = items
        if type(x) is int and x >= 0:
            return (x, 1, 1)
    return None


def _checked_groups(grid: Any, kernel: Any, source: Any) -> tuple[int, int, int]:
    """parse_groups past its fast path: other integer types, or the error that says what is
    wrong."""
    kernel_name = kernel.name
    returned_by = _callable_name(source) if source is not None else ""
    if returned_by:
        where = f"the grid callable {returned_by} of kernel `{kernel_name}` returned {grid!r}"
    else:
        where = f"`{kernel_name}[{grid!r}]`"
    items = extent_items(grid)
    if items is None:
        raise GpuArgumentTypeError(
            f"{where}: a grid is a number of workgroups, an int or a tuple of 1 to 3 ints"
            + ("" if returned_by else " (or a callable grid(meta) returning one)")
            + f"; got {_describe(grid)}",
            param="grid",
            expected="gx, (gx,), (gx, gy) or (gx, gy, gz)"
            + ("" if returned_by else ", or a callable returning one"),
            got=_describe(grid),
            hint=f"e.g. {kernel_name}[-(-n // 64)](...) or {kernel_name}[gx, gy](...)",
        )
    if not 1 <= len(items) <= 3:
        raise GpuInvalidArgument(
            f"{where}: a grid has 1 to 3 axes (x, y, z); got {len(items)}",
            param="grid",
            expected="1 to 3 workgroup counts",
            got=f"{len(items)} axes",
            hint="give at least the x extent, e.g. (gx,)"
            if not items
            else "fold the extra axes into x, y and z",
        )
    try:
        dims = tuple(v.__index__() for v in items)
    except TypeError:  # an integer array of several elements: not one extent
        raise GpuArgumentTypeError(
            f"{where}: a grid is a number of workgroups, an int or a tuple of 1 to 3 ints; "
            f"got {_describe(grid)}",
            param="grid",
            expected="gx, (gx,), (gx, gy) or (gx, gy, gz)",
            got=_describe(grid),
            hint="pass tuple(arr) for an array of extents",
        ) from None
    if any(d < 0 for d in dims):
        axis = "xyz"[next(k for k, d in enumerate(dims) if d < 0)]
        raise GpuInvalidArgument(
            f"{where}: workgroup counts must be >= 0; got {dims} (negative along {axis})",
            param="grid",
            expected="workgroup counts >= 0",
            got=str(dims),
            hint="a zero count runs nothing; there is no negative grid",
        )
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]


def _describe(grid: Any) -> str:
    if isinstance(grid, (tuple, list)):
        bad = [type(v).__name__ for v in grid if not is_extent(v)]
        kind = "tuple" if isinstance(grid, tuple) else "list"
        return f"a {kind} holding {', '.join(bad)}" if bad else f"a {kind} {grid!r}"
    return f"{type(grid).__name__} {grid!r}"


def _invocations(kernel: Any, groups: tuple, wg: tuple) -> tuple[int, int, int]:
    """Workgroups times the workgroup shape, per axis: what `gpu(grid=)` takes."""
    x, y, z = inv = (groups[0] * wg[0], groups[1] * wg[1], groups[2] * wg[2])
    if x <= MAX_AXIS_INVOCATIONS and y <= MAX_AXIS_INVOCATIONS and z <= MAX_AXIS_INVOCATIONS:
        return inv
    for axis in range(3):
        if inv[axis] > MAX_AXIS_INVOCATIONS:
            raise GpuInvalidArgument(
                f"`grid` asks kernel `{kernel.name}` for {groups[axis]} workgroups of "
                f"{wg[axis]} along {'xyz'[axis]}, {inv[axis]} invocations: more than a launch "
                f"holds per axis (2**32 - 1)",
                param="grid",
                expected=f"at most {MAX_AXIS_INVOCATIONS // wg[axis]} workgroups along "
                f"{'xyz'[axis]}",
                got=str(groups[axis]),
                hint="split the work into several launches, or spread it over more axes",
            )
    return inv


# ------------------------------------------------------------------------- callable grids


def _meta_plan(kernel: Any, params: tuple) -> tuple:
    """Per parameter (index, name, param, the Python types its value enters meta as given,
    None for a list), made once per prepared kernel."""
    if any(p.name == META_WORKGROUP for p in params):
        raise GpuInvalidArgument(
            f"kernel `{kernel.name}` has a parameter named `{META_WORKGROUP}`, the key a grid "
            f"callable's meta keeps for the workgroup shape",
            param="grid",
            hint=f"rename the parameter, or pass a static grid ({kernel.name}[gx, gy])",
        )
    return tuple(
        (i, p.name, p, None if p.is_list else _AS_IS[p.type.kind]) for i, p in enumerate(params)
    )


# Python types a scalar parameter's value goes into meta as given (range checks stay gpu()'s)
_AS_IS = {"int": (int,), "uint": (int,), "float": (float, int), "bool": (bool,)}


def _element_count(index: int, param: Any, value: Any) -> int:
    """Elements of a list argument as the kernel sees it (flat, row-major): a Python list's
    length, an array's size (numpy, device arrays), a buffer's items."""
    if type(value) is list:
        return len(value)
    size = getattr(value, "size", None)
    if type(size) is int:
        return size
    return check_list(index, param, value).count  # other buffers (and the error for a bad one)


def _grid_raised(kernel: Any, grid: Any, plan: tuple, exc: Exception) -> GpuInvalidArgument:
    keys = ", ".join([*(entry[1] for entry in plan), META_WORKGROUP])
    return GpuInvalidArgument(
        f"the grid callable {_callable_name(grid)} of kernel `{kernel.name}` raised "
        f"{type(exc).__name__}: {exc} (its meta has: {keys})",
        param="grid",
        hint="grid(meta) gets a dict of the scalar arguments and list lengths by "
        "parameter name plus `workgroup_size`, and returns the workgroup counts",
    )


def _returned_groups(kernel: Any, grid: Any, returned: Any) -> tuple[int, int, int]:
    """What a grid callable returned, past the fast path: parsed, or the error for it."""
    if _is_callable_grid(returned):
        raise GpuArgumentTypeError(
            f"the grid callable {_callable_name(grid)} of kernel `{kernel.name}` returned "
            f"another callable ({_describe(returned)}); it must return the workgroup counts",
            param="grid",
            expected="an int or a tuple of 1 to 3 ints",
            got=_describe(returned),
        )
    return parse_groups(returned, kernel, grid)


def _callable_name(grid: Any) -> str:
    """How errors name a grid callable: `qualname`, or where a lambda was written."""
    if getattr(grid, "__name__", None) == "<lambda>":
        code = getattr(grid, "__code__", None)
        if code is not None:
            return f"(a lambda at {os.path.basename(code.co_filename)}:{code.co_firstlineno})"
        return "(a lambda)"
    return f"`{getattr(grid, '__qualname__', None) or type(grid).__name__}`"


def _check_options(kernel: Any, options: dict[str, Any]) -> None:
    """The keywords of `kernel[grid](...)` are gpu()'s launch options; kernel arguments are
    positional and the grid is in the brackets."""
    if "grid" in options:
        raise TypeError(
            f"kernel[grid](...) takes its grid in the brackets; got grid= as well for kernel "
            f"`{kernel.name}` (write {kernel.name}[grid](...), or gpu({kernel.name}, ..., "
            f"grid=invocations))"
        )
    named = [k for k in options if k in kernel.param_names]
    if named:
        raise TypeError(
            f"kernel[grid](...) passes kernel arguments by position only; got keyword "
            f"argument(s) {', '.join(f'`{k}`' for k in named)} for kernel `{kernel.name}` "
            f"(write {kernel.name}[grid]({', '.join(kernel.param_names)}))"
        )


__all__ = ["BracketLaunch", "launcher", "parse_groups"]
