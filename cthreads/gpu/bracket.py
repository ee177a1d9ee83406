"""`kernel[grid](*args)`: the bracket launch (issue 15 item 2, SPEC §10).

`grid` counts workgroups, as numba-cuda, Triton, Warp's tiles and the phobos model do; `gpu()`
counts invocations (SPEC §4). A bracket launch is the one launch there is, restated: `g`
workgroups along an axis are `gpu(kernel, *args, grid=g * workgroup extent)` invocations, so
argument checks, sizing, the split past the device's group-count limit and the job all stay
`gpu()`'s. This module only reads the grid (an int, 1 to 3 ints, or a callable of the launch's
meta), takes the workgroup shape from the launch session's prepared kernel and multiplies.

`kernel[grid]` is cheap: a static grid is checked once, when the launcher is made, and its
invocation counts once per prepared kernel; a repeated `kernel[grid]` with the same grid object
returns the kernel's last launcher. A call then costs a dict hit on top of `gpu()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..launch import session
from ..launch.binding import check_list, check_scalar
from ..launch.dispatch import gpu
from ..launch.gpujob import GpuJob

# Invocations per axis the parameter block holds (a u32), as dispatch.py checks for gpu(grid=).
MAX_AXIS_INVOCATIONS = 0xFFFFFFFF
META_WORKGROUP = "workgroup_size"


class BracketLaunch:
    """`kernel[grid]`: call it with the kernel's arguments (positional, as for `gpu()`) and
    the launch options `gpu()` takes (`timed=`, `force=`); returns a started `GpuJob`."""

    __slots__ = ("kernel", "grid", "_groups", "_key", "_prep", "_invocations")

    def __init__(self, kernel: Any, grid: Any) -> None:
        self.kernel = kernel
        self.grid = grid
        # A static grid is checked here, before any launch; a callable one at each call.
        self._groups = None if _is_callable_grid(grid) else parse_groups(grid, kernel.name)
        self._key: str | None = None  # the kernel's source key, read on the first call
        self._prep: Any = None  # the prepared kernel `_invocations` was computed for
        self._invocations: tuple[int, int, int] | None = None

    def __repr__(self) -> str:
        return f"<kernel[grid] launcher {self.kernel.name}[{self.grid!r}]>"

    def __call__(self, *args: Any, **options: Any) -> GpuJob:
        # The hot loop: a static grid whose invocation counts were computed for the kernel as
        # prepared now (one dict hit) goes straight to gpu().
        if not options and self._invocations is not None:
            if session.state.prepared.get(self._key) is self._prep:  # type: ignore[arg-type]
                return gpu(self.kernel, *args, grid=self._invocations)
        return self._launch(args, options)

    def _launch(self, args: tuple, options: dict[str, Any]) -> GpuJob:
        kernel = self.kernel
        if options:
            options = _launch_options(kernel, options)
        if self._key is None:
            self._key = kernel.source_key
        prep = session.state.prepared.get(self._key)
        if prep is None or prep.generation != session.state.generation:
            prep = session.kernel_for_launch(kernel)  # compile errors surface here, as in gpu()
        params = prep.compiled.params
        if len(args) != len(params):
            names = kernel.param_names
            raise TypeError(
                f"kernel `{kernel.name}` takes {len(names)} argument(s) ({', '.join(names)}); "
                f"got {len(args)}, expected {len(names)} args"
            )
        # The declared shape as the compiled kernel records it (never the physical width a
        # kernel that does not observe its workgroup is run with: that one is invisible).
        wg = tuple(prep.compiled.workgroup_size)
        if self._groups is not None:
            groups = self._groups
        else:
            groups = _call_grid(self.grid, kernel, _meta(kernel, params, args, wg))
        invocations = _invocations(kernel.name, groups, wg)
        if self._groups is not None:
            self._prep, self._invocations = prep, invocations
        return gpu(kernel, *args, grid=invocations, **options)


def launcher(kernel: Any, grid: Any) -> BracketLaunch:
    """`kernel[grid]`, remembered on the kernel as its last launcher (a loop that launches
    `kernel[grid]` with the same grid object makes one launcher, checks the grid once)."""
    made = BracketLaunch(kernel, grid)
    kernel._bracket = made
    return made


# ------------------------------------------------------------------------------ the grid


def _is_callable_grid(grid: Any) -> bool:
    return callable(grid) and not isinstance(grid, (int, tuple, list))


def _is_extent(v: Any) -> bool:
    if type(v) is int:
        return True
    # numpy integers and other exact integers (operator.index); never bool or float
    return not isinstance(v, (bool, float)) and hasattr(v, "__index__")


def parse_groups(grid: Any, kernel_name: str, returned_by: str = "") -> tuple[int, int, int]:
    """`grid` as workgroups (gx, gy, gz): an int or a tuple/list of 1 to 3 ints, each >= 0.
    `returned_by` names the grid callable when `grid` is what it returned."""
    if returned_by:
        where = f"the grid callable {returned_by} of kernel `{kernel_name}` returned {grid!r}"
    else:
        where = f"`{kernel_name}[{grid!r}]`"
    if isinstance(grid, (tuple, list)):
        items = tuple(grid)
    elif _is_extent(grid):
        items = (grid,)
    else:
        items = None
    if items is None or not all(_is_extent(v) for v in items):
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
    dims = tuple(v.__index__() for v in items)
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
        bad = [type(v).__name__ for v in grid if not _is_extent(v)]
        kind = "tuple" if isinstance(grid, tuple) else "list"
        return f"a {kind} holding {', '.join(bad)}" if bad else f"a {kind} {grid!r}"
    return f"{type(grid).__name__} {grid!r}"


def _invocations(kernel_name: str, groups: tuple, wg: tuple) -> tuple[int, int, int]:
    """Workgroups times the workgroup shape, per axis: what `gpu(grid=)` takes."""
    inv = (groups[0] * wg[0], groups[1] * wg[1], groups[2] * wg[2])
    for axis in range(3):
        if inv[axis] > MAX_AXIS_INVOCATIONS:
            raise GpuInvalidArgument(
                f"`grid` asks kernel `{kernel_name}` for {groups[axis]} workgroups of "
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


def _meta(kernel: Any, params: tuple, args: tuple, wg: tuple) -> dict[str, Any]:
    """What a grid callable reads: each scalar argument (as the launch passes it) and each
    list argument's element count under its parameter name, and `workgroup_size`.

    The arguments are checked with the launch's own checks, so a bad argument is reported as
    gpu() reports it, not as a failing grid callable."""
    meta: dict[str, Any] = {}
    for i, param in enumerate(params):
        value = args[i]
        if param.is_list:
            meta[param.name] = _element_count(i, param, value)
        else:
            meta[param.name] = check_scalar(param, value)
    if META_WORKGROUP in meta:
        raise GpuInvalidArgument(
            f"kernel `{kernel.name}` has a parameter named `{META_WORKGROUP}`, the key a grid "
            f"callable's meta keeps for the workgroup shape",
            param="grid",
            hint=f"rename the parameter, or pass a static grid ({kernel.name}[(gx, gy)])",
        )
    meta[META_WORKGROUP] = wg
    return meta


def _element_count(index: int, param: Any, value: Any) -> int:
    """Elements of a list argument as the kernel sees it (flat, row-major): a Python list's
    length, an array's size (numpy, device arrays), a buffer's items."""
    if type(value) is list:
        return len(value)
    size = getattr(value, "size", None)
    if type(size) is int:
        return size
    return check_list(index, param, value).count  # other buffers (and the error for a bad one)


def _call_grid(grid: Callable[[dict], Any], kernel: Any, meta: dict) -> tuple[int, int, int]:
    name = getattr(grid, "__qualname__", None) or type(grid).__name__
    shown = f"`{name}`" if name != "<lambda>" else "(a lambda)"
    keys = ", ".join(meta)
    try:
        returned = grid(dict(meta))  # its own copy: a callable that edits meta changes nothing
    except Exception as exc:
        raise GpuInvalidArgument(
            f"the grid callable {shown} of kernel `{kernel.name}` raised "
            f"{type(exc).__name__}: {exc} (its meta has: {keys})",
            param="grid",
            hint="grid(meta) gets a dict of the scalar arguments and list lengths by "
            "parameter name plus `workgroup_size`, and returns the workgroup counts",
        ) from exc
    if _is_callable_grid(returned):
        raise GpuArgumentTypeError(
            f"the grid callable {shown} of kernel `{kernel.name}` returned another callable "
            f"({_describe(returned)}); it must return the workgroup counts",
            param="grid",
            expected="an int or a tuple of 1 to 3 ints",
            got=_describe(returned),
        )
    return parse_groups(returned, kernel.name, returned_by=shown)


def _launch_options(kernel: Any, options: dict[str, Any]) -> dict[str, Any]:
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
    if options.get("force"):
        session.prepare(force=True)  # before the kernel is looked up: it is rebuilt there
        options = {k: v for k, v in options.items() if k != "force"}
    return options


__all__ = ["BracketLaunch", "launcher", "parse_groups"]
