"""`shared(type, size)` and `local(type, size)`: arrays declared inside a `@Gpu` kernel.

Inside a kernel, `tile = shared(float, 256)` gives every workgroup its own zero-filled array of
256 floats that all its invocations read and write (order them with `__sync_threads()`);
`acc = local(float, 64)` gives every invocation its own zero-filled array (registers, when the
driver can keep it there). The compiler recognises these objects by their tags; on the host they
return a zero-filled Python list, so a kernel called as plain Python still runs.
"""

from __future__ import annotations

from .builtin import tagged

_TYPES = {int: 0, float: 0.0, bool: False}


def _zeroed(what: str, elem: type, size: int) -> list:
    if elem not in _TYPES:
        raise TypeError(f"{what}() element type must be int, float or bool; got {elem!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"{what}() size must be a positive int; got {size!r}")
    return [_TYPES[elem]] * size


def shared(elem: type, size: int) -> list:
    """A workgroup shared array of `size` elements of `elem` (`int`, `float` or `bool`).

    In a `@Gpu` kernel `size` must be known when compiling: a literal, a module-level int
    constant, `BlockDim.x`, or arithmetic on those. On the host: `[elem()] * size`.
    """
    return _zeroed("shared", elem, size)


def local(elem: type, size: int) -> list:
    """A per-invocation (private) array of `size` elements of `elem`, e.g. a register tile.

    The size rules are those of `shared`. On the host: `[elem()] * size`.
    """
    return _zeroed("local", elem, size)


tagged(shared, local)

__all__ = ["local", "shared"]
