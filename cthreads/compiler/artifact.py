"""What the compiler hands to launch: SPIR-V words plus the launch contract and push layout.

Binding model (docs/internals.md): every list is a buffer reached through its 64-bit device
address (Vulkan 1.2 `bufferDeviceAddress`), so a launch binds nothing but push constants:
a small header, one address and one element count per list, then the scalars. When that block is
larger than the device's push-constant size, `PushLayout.in_buffer` is True: the push constants
hold one 8-byte address of a host-written buffer with the same layout.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .ir import Param


@dataclass(frozen=True)
class PushField:
    """One field of the parameter block.

    `role` is 'total' (u32 logical invocations along x), 'base_group' (u32 group offset along x
    for split dispatches), 'grid_x' (u32 logical group count along x), 'addr' (u64 device
    address of list `param`), 'len' (u32 element count of list `param`) or 'scalar' (scalar
    parameter `param`). `fmt` is its `struct` code ('I', 'Q', 'i', 'f'; 'd' f64, 'q' i64; u32 is 'I')."""

    role: str
    param: int | None
    offset: int
    fmt: str


@dataclass(frozen=True)
class PushLayout:
    fields: tuple[PushField, ...]
    size: int  # bytes of the parameter block (multiple of 8)
    in_buffer: bool = False  # block lives in a buffer; push constants hold its u64 address

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


@dataclass(frozen=True)
class CompiledKernel:
    name: str
    spirv: bytes
    params: tuple[Param, ...]  # the launch contract: names, types, reads/writes of lists
    push: PushLayout
    workgroup_size: tuple[int, int, int]  # logical shape the kernel observes (or the default)
    observes_workgroup: bool  # False: runtime may pick the physical size via spec ids 0..2
    cache_key: str
    ir_text: str = ""
    entry_point: str = "main"
    # Logical invocations one physical invocation covers per grid-stride step: 4 in the vector
    # form (16-byte list accesses, codegen_vec.py), else 1. Launch divides its group count by it.
    elements_per_invocation: int = 1

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
