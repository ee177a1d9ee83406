"""`shared(type, size)`: a workgroup shared array, declared inside a `@Gpu` kernel.

Inside a kernel, `tile = shared(float, 256)` gives every workgroup its own zero-filled array of
256 floats that all its invocations read and write (order them with `__sync_threads()`). The
compiler recognises this object by its tag; on the host it returns a zero-filled Python list, so a
kernel called as plain Python still runs.
"""

from __future__ import annotations

_TYPES = {int: 0, float: 0.0, bool: False}


def shared(elem: type, size: int) -> list:
    """A workgroup shared array of `size` elements of `elem` (`int`, `float` or `bool`).

    In a `@Gpu` kernel `size` must be known when compiling: a literal, a module-level int
    constant, `BlockDim.x`, or arithmetic on those. On the host: `[elem()] * size`.
    """
    if elem not in _TYPES:
        raise TypeError(f"shared() element type must be int, float or bool; got {elem!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"shared() size must be a positive int; got {size!r}")
    return [_TYPES[elem]] * size


shared.__gpu_builtin__ = "shared"  # type: ignore[attr-defined]

__all__ = ["shared"]
