"""Index builtins `GlobalIdx`, `ThreadIdx`, `BlockIdx`, `BlockDim`, `GridDim` (SPEC §4).

Inside `@Gpu` kernels the compiler reads `.x/.y/.z` of these objects as device builtins. On the
host (a kernel called as plain Python) they read the current emulated invocation: by default
invocation 0 of one 1-wide group (indices 0, dims 1); `invocation(...)` sets another one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

Triple = tuple[int, int, int]

_ORIGIN: dict[str, Triple] = {
    "GlobalIdx": (0, 0, 0),
    "ThreadIdx": (0, 0, 0),
    "BlockIdx": (0, 0, 0),
    "BlockDim": (1, 1, 1),
    "GridDim": (1, 1, 1),
}
# Per thread / per asyncio task, so an emulator may run invocations concurrently.
_current: contextvars.ContextVar[dict[str, Triple]] = contextvars.ContextVar(
    "cthreads_gpu_invocation", default=_ORIGIN
)


class IndexBuiltin:
    """One index builtin; `.x`, `.y`, `.z` are its components (ints)."""

    __slots__ = ("_doc", "_name")
    __gpu_builtin__ = "index"  # how the compiler recognises these objects

    def __init__(self, name: str, doc: str):
        self._name = name
        self._doc = doc

    @property
    def name(self) -> str:
        return self._name

    @property
    def x(self) -> int:
        return _current.get()[self._name][0]

    @property
    def y(self) -> int:
        return _current.get()[self._name][1]

    @property
    def z(self) -> int:
        return _current.get()[self._name][2]

    def __repr__(self) -> str:
        return f"<{self._name}: {self._doc}>"


GlobalIdx = IndexBuiltin("GlobalIdx", "global invocation index = BlockIdx * BlockDim + ThreadIdx")
ThreadIdx = IndexBuiltin("ThreadIdx", "invocation index within its workgroup")
BlockIdx = IndexBuiltin("BlockIdx", "workgroup index")
BlockDim = IndexBuiltin("BlockDim", "workgroup size")
GridDim = IndexBuiltin("GridDim", "number of workgroups")


def _triple(value: int | tuple[int, ...], what: str, fill: int) -> Triple:
    t = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(t) <= 3 or not all(isinstance(v, int) and v >= fill for v in t):
        raise ValueError(
            f"invocation(): {what} must be an int >= {fill} or 1-3 of them; got {value!r}"
        )
    return (t + (fill, fill))[:3]  # type: ignore[return-value]


@contextmanager
def invocation(
    group_id: int | tuple[int, ...] = 0,
    local_id: int | tuple[int, ...] = 0,
    group_size: int | tuple[int, ...] = 1,
    num_groups: int | tuple[int, ...] = 1,
) -> Iterator[None]:
    """Make the index builtins read one invocation while the block runs (host emulation).

    `GlobalIdx` is derived as `group_id * group_size + local_id`, so SPEC §4's relation holds.
    """
    gid, lid = _triple(group_id, "group_id", 0), _triple(local_id, "local_id", 0)
    size, grid = _triple(group_size, "group_size", 1), _triple(num_groups, "num_groups", 1)
    values = {
        "GlobalIdx": tuple(g * s + t for g, s, t in zip(gid, size, lid)),
        "ThreadIdx": lid,
        "BlockIdx": gid,
        "BlockDim": size,
        "GridDim": grid,
    }
    token = _current.set(values)  # type: ignore[arg-type]
    try:
        yield
    finally:
        _current.reset(token)


__all__ = [
    "BlockDim",
    "BlockIdx",
    "GlobalIdx",
    "GridDim",
    "IndexBuiltin",
    "ThreadIdx",
    "invocation",
]
