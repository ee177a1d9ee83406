"""Tiny structural reader of SPIR-V words for tests: decorations, capabilities, memory access."""

from __future__ import annotations

from collections import defaultdict

from cthreads.compiler.spirv.builder import instructions
from cthreads.compiler.spirv.grammar import (
    HAS_RESULT,
    HAS_RESULT_TYPE,
    Decoration,
    Op,
    StorageClass,
)


class Spv:
    def __init__(self, spirv: bytes):
        import array

        w = array.array("I")
        w.frombytes(spirv)
        self.words = list(w)
        self.insts = list(instructions(self.words))
        self.caps = {o[0] for op, o in self.insts if op == Op.Capability}
        self.decorations = defaultdict(set)  # id -> {(decoration, *literals)}
        self.member_decorations = defaultdict(set)  # (id, member) -> {...}
        self.types = {}  # result id -> (op, operands)
        self.result_type = {}  # result id -> type id
        self.exec_modes = [o for op, o in self.insts if op == Op.ExecutionMode]
        for op, o in self.insts:
            if op == Op.Decorate:
                self.decorations[o[0]].add(tuple(o[1:]))
            elif op == Op.MemberDecorate:
                self.member_decorations[(o[0], o[1])].add(tuple(o[2:]))
            elif Op.TypeVoid <= op <= Op.TypeForwardPointer or op == Op.TypePointer:
                self.types[o[0]] = (op, o[1:])
            if op in HAS_RESULT_TYPE and op in HAS_RESULT:
                self.result_type[o[1]] = o[0]

    def count(self, opcode: int) -> int:
        return sum(1 for op, _ in self.insts if op == opcode)

    def is_psb_pointer(self, type_id: int) -> bool:
        t = self.types.get(type_id)
        return (
            t is not None
            and t[0] == Op.TypePointer
            and t[1][0] == StorageClass.PhysicalStorageBuffer
        )

    def psb_accesses(self):
        """(opcode, operands) of every OpLoad/OpStore through a PhysicalStorageBuffer pointer."""
        for op, o in self.insts:
            if op == Op.Load and self.is_psb_pointer(self.result_type.get(o[2], -1)):
                yield op, o[3:]
            elif op == Op.Store and self.is_psb_pointer(self.result_type.get(o[0], -1)):
                yield op, o[2:]

    def blocks_with(self, decoration: int):
        """Struct ids whose member 0 carries `decoration`."""
        return {
            sid
            for (sid, mem), decs in self.member_decorations.items()
            if mem == 0 and any(d[0] == decoration for d in decs)
        }


__all__ = ["Decoration", "Spv"]
