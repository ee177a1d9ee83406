"""Subgroup builtins and operations: OpGroupNonUniform* with Subgroup scope (Vulkan 1.1).

`subgroup_size()` & co. load the scalar `SubgroupSize`, `SubgroupLocalInvocationId`,
`SubgroupId` and `NumSubgroups` inputs (u32, bitcast to int). Reductions and scans map to
OpGroupNonUniform{I,F}Add / SMin / SMax / FMin / FMax with GroupOperation Reduce, InclusiveScan
or ExclusiveScan (float min/max then settle NaN lanes and signed-zero ties with one more
reduction, see `_float_min_max_fixup`); `subgroup_ballot(c)` is OpGroupNonUniformBallot +
BallotBitCount (a count); elect / all / any / broadcast_first are the single instructions.

Reading another lane (`subgroup_broadcast`, `subgroup_shuffle`, `subgroup_shuffle_xor`) never
yields an undefined value: the lane is checked against SubgroupSize and the mask of active
invocations (OpGroupNonUniformBallot(true) + BallotBitExtract), and reads as 0 when it is
outside or inactive. A broadcast's lane must be dynamically uniform in SPIR-V (1.5 allows a
non-constant one): a non-constant lane first goes through OpGroupNonUniformBroadcastFirst, so
the lane of the first active invocation counts and the instruction is always well defined.
"""

from __future__ import annotations

from .. import ir
from .codegen_expr import CodegenError
from .grammar import BuiltIn, Capability, GroupOperation, Op, Scope, StorageClass

_VALUE_BUILTIN = {
    "size": BuiltIn.SubgroupSize,
    "lane": BuiltIn.SubgroupLocalInvocationId,
    "id": BuiltIn.SubgroupId,
    "count": BuiltIn.NumSubgroups,
}
SO = ir.SubgroupOp
_GROUP_OP = {
    SO.ADD: GroupOperation.Reduce,
    SO.MIN: GroupOperation.Reduce,
    SO.MAX: GroupOperation.Reduce,
    SO.INCLUSIVE_ADD: GroupOperation.InclusiveScan,
    SO.EXCLUSIVE_ADD: GroupOperation.ExclusiveScan,
}
_ARITH = {  # (int op, float op)
    SO.ADD: (Op.GroupNonUniformIAdd, Op.GroupNonUniformFAdd),
    SO.INCLUSIVE_ADD: (Op.GroupNonUniformIAdd, Op.GroupNonUniformFAdd),
    SO.EXCLUSIVE_ADD: (Op.GroupNonUniformIAdd, Op.GroupNonUniformFAdd),
    SO.MIN: (Op.GroupNonUniformSMin, Op.GroupNonUniformFMin),
    SO.MAX: (Op.GroupNonUniformSMax, Op.GroupNonUniformFMax),
}


_UNSIGNED = {SO.MIN: Op.GroupNonUniformUMin, SO.MAX: Op.GroupNonUniformUMax}


class SubgroupGen:
    """Mixin for codegen.Codegen (needs ExprGen's helpers and StmtGen's function state)."""

    def _sg_input(self, builtin: int) -> int:
        """The scalar u32 Input variable of a subgroup builtin, declared on first use."""
        m = self.m
        cache = self.__dict__.setdefault("_sg_inputs", {})
        vid = cache.get(builtin)
        if vid is None:
            from .grammar import Decoration

            m.capability(Capability.GroupNonUniform)
            u32 = m.t_int(32, False)
            vid = cache[builtin] = m.variable(
                m.t_pointer(StorageClass.Input, u32), StorageClass.Input
            )
            m.decorate(vid, Decoration.BuiltIn, builtin)
            self.interface.append(vid)
        return vid

    def _sg_u32(self, builtin: int) -> int:
        return self.op(Op.Load, self.m.t_int(32, False), self._sg_input(builtin))

    def visit_SubgroupValue(self, e: ir.SubgroupValue) -> int:
        return self.op(Op.Bitcast, self.t_i32, self._sg_u32(_VALUE_BUILTIN[e.what]))

    # ------------------------------------------------------------------------ operations
    def visit_Subgroup(self, s: ir.Subgroup) -> None:
        m = self.m
        m.capability(Capability.GroupNonUniform)
        sc = self.ki(Scope.Subgroup)
        t = self.ty(s.type)
        op = s.op
        if op in _ARITH:
            m.capability(Capability.GroupNonUniformArithmetic)
            iop, fop = _ARITH[op]
            v = self.expr(s.value)
            if s.type.kind == "uint" and op in _UNSIGNED:
                iop = _UNSIGNED[op]
            r = self.op(fop if s.type.is_float else iop, t, sc, _GROUP_OP[op], v)
            if s.type.is_float and op in _UNSIGNED:
                r = self._float_min_max_fixup(op is SO.MIN, s.type, v, r, sc)
        elif op is SO.BALLOT:
            m.capability(Capability.GroupNonUniformBallot)
            u32 = m.t_int(32, False)
            mask = self.op(Op.GroupNonUniformBallot, m.t_vector(u32, 4), sc, self.expr(s.value))
            count = self.op(Op.GroupNonUniformBallotBitCount, u32, sc, GroupOperation.Reduce, mask)
            r = self.op(Op.Bitcast, self.t_i32, count)
        elif op is SO.ELECT:
            r = self.op(Op.GroupNonUniformElect, self.t_bool, sc)
        elif op in (SO.ALL, SO.ANY):
            m.capability(Capability.GroupNonUniformVote)
            opcode = Op.GroupNonUniformAll if op is SO.ALL else Op.GroupNonUniformAny
            r = self.op(opcode, self.t_bool, sc, self.expr(s.value))
        elif op is SO.BROADCAST_FIRST:
            m.capability(Capability.GroupNonUniformBallot)
            r = self.op(Op.GroupNonUniformBroadcastFirst, t, sc, self.expr(s.value))
        elif op in (SO.BROADCAST, SO.SHUFFLE, SO.SHUFFLE_XOR):
            r = self._read_lane(s, t, sc)
        else:
            raise CodegenError(f"unknown subgroup operation {op}")
        self.ins(Op.Store, self.local_vars[s.result], r)

    def _float_min_max_fixup(self, is_min: bool, st: ir.Scalar, v: int, r: int, sc: int) -> int:
        """The device-independent meaning of a float subgroup_min/max (docs/language-extensions):
        NaN when any active lane holds NaN, else the least (greatest) value with -0.0 below 0.0.

        GroupNonUniformFMin/FMax leave NaN operands undefined (lavapipe ignored them, NVIDIA
        returned NaN) and may return either zero of a -0.0/0.0 tie. One more reduction, a u32
        UMax over a per-lane flag (2: NaN, 1: the zero that must win, else 0), settles both."""
        m, bt = self.m, self.t_bool
        t, u32 = self.ty(st), m.t_int(32, False)
        zero = self.zero(st)
        if st.bits == 64:  # the sign bit: the high word of the (low word first) pair
            pair = self.op(Op.Bitcast, m.t_vector(self.t_i32, 2), v)
            high = self.op(Op.CompositeExtract, self.t_i32, pair, 1)
        else:
            high = self.op(Op.Bitcast, self.t_i32, v)
        neg = self.op(Op.SLessThan, bt, high, self.ki(0))
        if not is_min:  # max: the +0.0 lanes win a tie
            neg = self.op(Op.LogicalNot, bt, neg)
        wins = self.op(Op.LogicalAnd, bt, self.op(Op.FOrdEqual, bt, v, zero), neg)
        k0, k1, k2 = (m.const(u32, c) for c in (0, 1, 2))
        flag = self.op(Op.Select, u32, self.is_nan_bits(v, t), k2,
                       self.op(Op.Select, u32, wins, k1, k0))  # fmt: skip
        f = self.op(Op.GroupNonUniformUMax, u32, sc, GroupOperation.Reduce, flag)
        neg_zero, pos_zero = m.const(t, -0.0), zero
        won, lost = (neg_zero, pos_zero) if is_min else (pos_zero, neg_zero)
        tie = self.op(Op.Select, t, self.op(Op.IEqual, bt, f, k1), won, lost)
        r = self.op(Op.Select, t, self.op(Op.FOrdEqual, bt, r, zero), tie, r)
        return self.op(Op.Select, t, self.op(Op.IEqual, bt, f, k2), m.const(t, float("nan")), r)

    def _read_lane(self, s: ir.Subgroup, t: int, sc: int) -> int:
        """`value` of another lane, or zero when that lane is outside the subgroup or inactive."""
        m = self.m
        m.capability(Capability.GroupNonUniformBallot)
        u32 = m.t_int(32, False)
        v = self.expr(s.value)
        zero = self.zero(s.type)
        if s.op is SO.BROADCAST and isinstance(s.lane, ir.Const):
            if s.lane.value < 0:
                return zero
            lane = m.const(u32, s.lane.value)
            safe = lane  # a constant id; out of range it gives an undefined value, selected away
        else:
            lane = self.op(Op.Bitcast, u32, self.expr(s.lane))
            if s.op is SO.SHUFFLE_XOR:
                own = self._sg_u32(BuiltIn.SubgroupLocalInvocationId)
                lane = self.op(Op.BitwiseXor, u32, own, lane)
            elif s.op is SO.BROADCAST:  # dynamically uniform by construction
                lane = self.op(Op.GroupNonUniformBroadcastFirst, u32, sc, lane)
            safe = None
        inside = self.op(Op.ULessThan, self.t_bool, lane, self._sg_u32(BuiltIn.SubgroupSize))
        if safe is None:
            safe = self.op(Op.Select, u32, inside, lane, m.const(u32, 0))
        active = self.op(Op.GroupNonUniformBallot, m.t_vector(u32, 4), sc, self.kb(True))
        bit = self.op(Op.GroupNonUniformBallotBitExtract, self.t_bool, sc, active, safe)
        valid = self.op(Op.LogicalAnd, self.t_bool, inside, bit)
        if s.op is SO.BROADCAST:
            got = self.op(Op.GroupNonUniformBroadcast, t, sc, v, safe)
        else:
            m.capability(Capability.GroupNonUniformShuffle)
            got = self.op(Op.GroupNonUniformShuffle, t, sc, v, safe)
        return self.op(Op.Select, t, valid, got, zero)
