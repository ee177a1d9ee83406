"""What counts as an extent, for every parser of sizes: DeviceArray shapes
(residency/device_array.py), `gpu(..., grid=)` (launch/dispatch.py) and `kernel[grid]`
(gpu/bracket.py).

An extent is an exact integer: a Python int, a numpy integer or anything else with `__index__`,
never a bool or a float (`True` and `2.0` are mistakes, not sizes). A size is one extent or a
tuple/list of them. That reading is shared, and so is the sign rule of a shape and a problem
size (`nonnegative`, one wording for both); the number of axes allowed and the other errors
belong to the caller (a workgroup count, gpu/bracket.py, words even its sign rule its own way).
Lowest layer, imports only the exception tree, so residency and launch may both use it.
"""

from __future__ import annotations

from typing import Any

from ..errors import GpuInvalidArgument


def is_extent(v: Any) -> bool:
    """`v` is an exact integer (see the module docstring)."""
    if type(v) is int:
        return True
    # an integer array has __index__ too, but only a 0-d one converts (its shape is ())
    return (
        not isinstance(v, (bool, float))
        and hasattr(v, "__index__")
        and getattr(v, "shape", ()) == ()
    )


def extent_items(value: Any) -> tuple | None:
    """The extents `value` spells, not yet converted: a tuple/list's items, or `(value,)` for
    one extent; None where an item (or `value` itself) is not an extent. Convert with
    `v.__index__()`."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return items if all(is_extent(v) for v in items) else None


def nonnegative(items: tuple, param: str) -> tuple[int, ...]:
    """`items` (what `extent_items` returned) converted to ints; GpuInvalidArgument naming
    `param` where one is negative (a DeviceArray's `shape`, `gpu(..., grid=)`)."""
    dims = tuple(v.__index__() for v in items)
    if any(d < 0 for d in dims):
        raise GpuInvalidArgument(
            f"`{param}` extents must be >= 0; got {dims}",
            param=param,
            expected="non-negative extents",
            got=str(dims),
        )
    return dims
