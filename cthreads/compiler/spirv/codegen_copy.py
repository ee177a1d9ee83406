"""`copy16` (ir.Copy16): 16 bytes of a list into a shared array with one load when it can.

One guard decides: the source elements lie in the list, the destination elements in the
shared array, and the first source element's address is a multiple of 16 (the list's address
plus the offset in bytes: lists are only element-aligned, a view may start anywhere). Then the
16 bytes are one `OpLoad ... Aligned 16` through the element pointer bitcast to a 16-byte
vector pointer (`Aligned` is a promise, which the guard makes true), and the elements go to the
shared array as separate stores: shared arrays have no explicit layout, so they cannot be viewed
as vectors. Vectors are 4 x 32-bit or 2 x 64-bit elements; 2-byte elements are loaded as 4 x u32
and each word is bitcast to a pair (8-wide 16-bit vectors would need the Vector16 capability).
Otherwise the statement's body runs: the element copies, each with its own guard (SPEC §5.6).
"""

from __future__ import annotations

from .. import ir
from .grammar import MemoryAccess, Op, SelectionControl, StorageClass

PSB = StorageClass.PhysicalStorageBuffer


class CopyGen:
    """Mixin for codegen.Codegen (needs ExprGen's helpers, StmtGen's blocks, MemoryGen's
    shared arrays)."""

    def visit_Copy16(self, s: ir.Copy16) -> None:
        li, info = self.lists[s.src], self.shared_info[s.dst]
        if s.src in self.access:  # a vector body's redirected list: the element copies
            self.stmts(s.body)
            return
        m, op, bt, i32 = self.m, self.op, self.t_bool, self.t_i32
        u32 = m.t_int(32, False)
        size = li.elem.bits // 8
        so, do = self.expr(s.src_offset), self.expr(s.dst_offset)
        last = self.ki(s.count - 1)

        def inside(first: int, length: int) -> int:
            # [first, first + count) in [0, length): both ends as unsigned (a negative first, or
            # a last that wrapped past 2**31, is huge)
            end = op(Op.IAdd, i32, first, last)
            return op(
                Op.LogicalAnd, bt,
                op(Op.ULessThan, bt, first, length), op(Op.ULessThan, bt, end, length),
            )  # fmt: skip

        lo = op(Op.CompositeExtract, u32, op(Op.Bitcast, m.t_vector(u32, 2), li.base), 0)
        at = op(Op.IAdd, u32, lo, op(Op.Bitcast, u32, op(Op.IMul, i32, so, self.ki(size))))
        aligned = op(Op.IEqual, bt, op(Op.BitwiseAnd, u32, at, m.const(u32, 15)), m.const(u32, 0))
        ok = op(
            Op.LogicalAnd, bt, aligned,
            op(Op.LogicalAnd, bt, inside(so, li.len), inside(do, info.size_id)),
        )  # fmt: skip
        fast, slow, merge = m.new_id(), m.new_id(), m.new_id()
        self.ins(Op.SelectionMerge, merge, SelectionControl.None_)
        self.ins(Op.BranchConditional, ok, fast, slow)
        self.begin(fast)
        ptr = op(Op.AccessChain, li.elem_ptr, li.base, self.c0, so)
        for j, v in enumerate(self._copy_elements(li, ptr, size)):
            at_j = op(Op.IAdd, i32, do, self.ki(j)) if j else do
            dst = op(Op.AccessChain, info.elem_ptr, info.var, at_j)
            self.ins(Op.Store, dst, self._to_storage(info, v))
        self.br(merge)
        self.begin(slow)
        self.stmts(s.body)
        self.br(merge)
        self.begin(merge)

    def _copy_elements(self, li, ptr: int, size: int) -> list[int]:
        """The 16 // size elements at element pointer `ptr` (16-byte aligned), one load."""
        m, op = self.m, self.op
        words = 16 // max(size, 4)
        word = li.storage if size >= 4 else m.t_int(32, False)
        vec = m.t_vector(word, words)
        v = op(Op.Load, vec, op(Op.Bitcast, m.t_pointer(PSB, vec), ptr), MemoryAccess.Aligned, 16)
        parts = [op(Op.CompositeExtract, word, v, w) for w in range(words)]
        if size >= 4:
            return parts
        pair = m.t_vector(li.storage, 2)
        out = []
        for w in parts:
            halves = op(Op.Bitcast, pair, w)
            out += [op(Op.CompositeExtract, li.storage, halves, h) for h in (0, 1)]
        return out
