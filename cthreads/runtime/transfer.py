"""Large host <-> mapped-memory copies, split across threads.

One thread copying into write-combined device memory (resizable BAR) or out of host-cached
staging memory reaches a fraction of what the bus and memory system allow; the native copy
releases the GIL, so a few threads copying disjoint slices add up. Small copies stay on the
calling thread, where a thread hand-off would cost more than it saves.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

PARALLEL_MIN_BYTES = 8 << 20  # below this, one memcpy is faster than a hand-off
_CHUNK_ALIGN = 1 << 16
_pool: ThreadPoolExecutor | None = None


def _workers() -> int:
    return max(1, min(8, (os.cpu_count() or 1)))


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        # concurrent.futures (and the logging it loads, ~10 ms) only for the first large copy,
        # not with `import cthreads.gpu` (issue 19)
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="cthreads-copy")
    return _pool


def _slices(nbytes: int) -> list[tuple[int, int]]:
    parts = _workers()
    step = -(-nbytes // parts)
    step = -(-step // _CHUNK_ALIGN) * _CHUNK_ALIGN
    return [(lo, min(lo + step, nbytes)) for lo in range(0, nbytes, step)]


def write(buf: Any, view: memoryview) -> None:
    """Copy the bytes of `view` into the mapped buffer `buf` (from offset 0)."""
    _copy(buf.write, view)


def read_into(buf: Any, view: memoryview) -> None:
    """Copy the mapped buffer `buf` (from offset 0) into the writable bytes of `view`."""
    _copy(buf.read_into, view)


def _copy(method: Any, view: memoryview) -> None:
    """`method(part, offset)` over slices of `view` on the copy threads; one call when small."""
    nbytes = view.nbytes
    if nbytes < PARALLEL_MIN_BYTES or _workers() == 1:
        method(view)
        return
    futures = [_executor().submit(method, view[lo:hi], lo) for lo, hi in _slices(nbytes)]
    for f in futures:
        f.result()
