"""`copy16(dst, dst_offset, src, src_offset)`: 16 bytes from a list into a shared array.

Inside a `@Gpu` kernel it is a statement that copies `16 // itemsize` elements (8 of a 2-byte
type, 4 of a 4-byte one, 2 of an 8-byte one):
`dst[dst_offset + j] = src[src_offset + j]` for each j, with the language's out-of-range rule
per element (a read past `src` gives 0, a write past `dst` is dropped). It names one staging
step of a tiled kernel as one operation, so the compiler can choose how to move the bytes.

On the host it runs as that loop, so a kernel called as plain Python still works; the element
size comes from the source's `itemsize` (a numpy array or an `array.array`), since a Python list
does not carry one.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence

from .builtin import tagged

COPY_BYTES = 16
ITEM_SIZES = (2, 4, 8)  # element sizes copy16 takes (1-byte elements would need 16 per copy)


def copy16(dst: MutableSequence, dst_offset: int, src: Sequence, src_offset: int) -> None:
    """Copy `16 // src.itemsize` elements of `src` from `src_offset` into `dst` from
    `dst_offset`; reads past `src` give 0 and writes past `dst` are dropped."""
    size = getattr(src, "itemsize", None)
    if size not in ITEM_SIZES:
        raise TypeError(
            f"copy16(): on the host `src` must be a numpy array or array.array of 2-, 4- or "
            f"8-byte elements (its itemsize gives the element count); got {type(src).__name__}"
            + (f" with itemsize {size}" if size is not None else "")
        )
    for j in range(COPY_BYTES // size):
        i, o = src_offset + j, dst_offset + j
        value = src[i] if 0 <= i < len(src) else 0
        if 0 <= o < len(dst):
            dst[o] = value


tagged(copy16)

__all__ = ["copy16"]
