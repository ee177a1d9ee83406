"""What the compiler hands to launch: SPIR-V words plus the launch contract and push layout.

Binding model (docs/internals.md): every list is a buffer reached through its 64-bit device
address (Vulkan 1.2 `bufferDeviceAddress`), so a launch binds nothing but push constants:
a small header, one address and one element count per list, then the scalars. When that block is
larger than the device's push-constant size, `PushLayout.in_buffer` is True: the push constants
hold one 8-byte address of a host-written buffer with the same layout.

A warm launch loads this module to rebuild kernels from the disk cache, so its classes are
frozen records written out by hand (`Record`, compiler/target.py), not dataclasses (issue 19).
"""

from __future__ import annotations

import struct

from .ir_types import Param
from ..record import Record


class PushField(Record):
    """One field of the parameter block.

    `role` is 'total' (u32 logical invocations along x), 'base_group' (u32 group offset along x
    for split dispatches), 'grid_x' (u32 logical group count along x), 'addr' (u64 device
    address of list `param`), 'len' (u32 element count of list `param`) or 'scalar' (scalar
    parameter `param`). `fmt` is its `struct` code ('I', 'Q', 'i', 'f'; 'd' f64, 'q' i64; u32 is 'I')."""

    __slots__ = _fields = ("role", "param", "offset", "fmt")
    role: str
    param: int | None
    offset: int
    fmt: str


class PushLayout(Record):
    """The parameter block: its fields, its size in bytes (a multiple of 8), and `in_buffer`:
    the block lives in a buffer and the push constants hold its u64 address."""

    __slots__ = _fields = ("fields", "size", "in_buffer")
    _defaults = {"in_buffer": False}
    fields: tuple[PushField, ...]
    size: int
    in_buffer: bool

    @property
    def push_size(self) -> int:
        """Bytes of push constants the pipeline layout declares."""
        return 8 if self.in_buffer else self.size

    def struct_format(self) -> str:
        """A little-endian `struct` format covering the block, with explicit padding."""
        out, pos = ["<"], 0
        for f in sorted(self.fields, key=lambda f: f.offset):
            if f.offset > pos:
                out.append(f"{f.offset - pos}x")
            out.append(f.fmt)
            pos = f.offset + struct.calcsize("<" + f.fmt)
        if self.size > pos:
            out.append(f"{self.size - pos}x")
        return "".join(out)


class CompiledKernel(Record):
    """One kernel compiled for one target: its SPIR-V and launch contract.

    `params`: names, types, reads/writes of lists; `workgroup_size`: the logical shape the
    kernel observes (or the default); `observes_workgroup` False: the runtime may pick the
    physical size through spec ids 0..2; `elements_per_invocation`: logical invocations one
    physical invocation covers per grid-stride step, 4 in the vector form (16-byte list
    accesses, codegen_vec.py), else 1 (launch divides its group count by it)."""

    __slots__ = _fields = (
        "name",
        "spirv",
        "params",
        "push",
        "workgroup_size",
        "observes_workgroup",
        "cache_key",
        "ir_text",
        "entry_point",
        "elements_per_invocation",
    )
    _defaults = {"ir_text": "", "entry_point": "main", "elements_per_invocation": 1}
    name: str
    spirv: bytes
    params: tuple[Param, ...]
    push: PushLayout
    workgroup_size: tuple[int, int, int]
    observes_workgroup: bool
    cache_key: str
    ir_text: str
    entry_point: str
    elements_per_invocation: int

    def contract(self) -> dict:
        """Plain-data description: parameter names/types and which lists are read/written."""
        return {
            "name": self.name,
            "params": [
                {
                    "name": p.name,
                    "type": str(p.type),
                    **({"reads": p.reads, "writes": p.writes} if p.is_list else {}),
                }
                for p in self.params
            ],
            "workgroup_size": self.workgroup_size,
            "observes_workgroup": self.observes_workgroup,
            "elements_per_invocation": self.elements_per_invocation,
        }
