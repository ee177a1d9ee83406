"""The parameter block a launch fills: header, list addresses and lengths, scalars.

Pure arithmetic over `ir.Kernel.params` -> `artifact.PushLayout`; codegen mirrors it as a
Block-decorated struct with explicit Offset decorations, launch packs it with `struct`.
"""

from __future__ import annotations

from ..artifact import PushField, PushLayout
from ..ir import Kernel, ListType, Scalar
from ..target import Target

# u32 each; 12..16 is padding. Kernels that observe the workgroup run with their declared shape
# and a grid split along x over several dispatches: BlockIdx.x = WorkgroupId.x + base_group,
# GridDim.x = grid_x. Kernels that do not run a grid-stride loop per axis over the logical
# invocations total (x), total_y and total_z (docs/internals.md, "Dispatch shape").
HEADER = (("total", 0), ("base_group", 4), ("grid_x", 8))
HEADER_FREE = (("total", 0), ("total_y", 4), ("total_z", 8))
HEADER_SIZE = 16


_FMT = {
    ("int", 32): "i", ("float", 32): "f", ("bool", 32): "I", ("uint", 32): "I",
    ("int", 64): "q", ("float", 64): "d", ("uint", 64): "Q",
    # narrow types travel widened to 32 bits (the kernel converts them on entry)
    ("float", 16): "f", ("int", 8): "i", ("int", 16): "i", ("uint", 8): "I", ("uint", 16): "I",
}  # fmt: skip


def scalar_fmt(t: Scalar) -> str:
    """`struct` code of a scalar parameter: int 'i', float 'f', bool and u32 'I' (bool 0/1),
    i64 'q', f64 'd', u64 'Q'; f16 as float32 'f', i8/i16 as 'i', u8/u16 as 'I'."""
    fmt = _FMT.get((t.kind, t.bits))
    if fmt is None:
        raise NotImplementedError(f"{t} scalar parameters are not supported yet")
    return fmt


def push_layout(kernel: Kernel, target: Target, observes: bool = True, shapes=()) -> PushLayout:
    """Lay out every parameter (used or not, so launch packs arguments uniformly):
    header at 0 (`HEADER` when the kernel observes its workgroup, else `HEADER_FREE`), u64 list
    addresses from 16 (8-aligned), u32 list lengths, u32 extents `shape0..2` of the
    (list, axis) pairs in `shapes` (only those the body reads), scalars (4 bytes, or 8
    bytes 8-aligned for f64/i64).
    `in_buffer` when the block exceeds the device's push-constant size."""
    header = HEADER if observes else HEADER_FREE
    fields = [PushField(role, None, off, "I") for role, off in header]
    off = HEADER_SIZE
    lists = [i for i, p in enumerate(kernel.params) if isinstance(p.type, ListType)]
    for i in lists:
        fields.append(PushField("addr", i, off, "Q"))
        off += 8
    for i in lists:
        fields.append(PushField("len", i, off, "I"))
        off += 4
    for i, axis in sorted(shapes):
        fields.append(PushField(f"shape{axis}", i, off, "I"))
        off += 4
    for i, p in enumerate(kernel.params):
        if isinstance(p.type, Scalar):
            size = 8 if p.type.bits == 64 else 4
            off = (off + size - 1) & ~(size - 1)  # 8-byte scalars (f64, i64) are 8-aligned
            fields.append(PushField("scalar", i, off, scalar_fmt(p.type)))
            off += size
    size = (off + 7) & ~7
    return PushLayout(tuple(fields), size, in_buffer=size > target.max_push_constants_size)
