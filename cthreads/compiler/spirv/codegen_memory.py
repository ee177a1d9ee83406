"""Shared and local arrays and atomics: declarations, zero-fill, guarded access, atomic ops.

Shared arrays are `Workgroup` variables of `OpTypeArray` (no explicit layout), zero-filled by
`main` before the body runs (a strided loop over the workgroup's invocations, then a barrier).
Local arrays are `Function` variables of the body, initialised with OpConstantNull (so zeroed on
every call of the body: once per logical invocation, grid-stride loop included).
Reads clamp the index and select zero when it is out of range (branch-free; element 0 always
exists); writes and atomics outside `[0, size)` are skipped by a selection (SPEC §5.6's rule).

Atomics are relaxed (semantics None), scope Device on lists and Workgroup on shared arrays. Int
ops map to OpAtomic*; float `atomic_add` on a list is OpAtomicFAddEXT when the target has
`atomic_float32_add` (SPV_EXT_shader_atomic_float_add); otherwise, and for float min/max and
float atomics on shared arrays, a compare-exchange loop on the element's int32 bits (lists
through a bitcast physical pointer, shared float arrays touched by atomics stored as int32).
"""

from __future__ import annotations

from .. import ir
from ..ranges import shared_accesses_in_range
from .builder import Module
from .codegen_expr import CodegenError, UnsupportedFeature
from .codegen_stmt import BARRIER_SEMANTICS
from .grammar import (
    BuiltIn,
    Capability,
    LoopControl,
    MemorySemantics,
    Op,
    Scope,
    StorageClass,
)

_INT_ATOMIC = {
    ir.AtomicOp.ADD: Op.AtomicIAdd,
    ir.AtomicOp.MIN: Op.AtomicSMin,
    ir.AtomicOp.MAX: Op.AtomicSMax,
    ir.AtomicOp.AND: Op.AtomicAnd,
    ir.AtomicOp.OR: Op.AtomicOr,
    ir.AtomicOp.XOR: Op.AtomicXor,
    ir.AtomicOp.EXCHANGE: Op.AtomicExchange,
}


_UINT_ATOMIC = {ir.AtomicOp.MIN: Op.AtomicUMin, ir.AtomicOp.MAX: Op.AtomicUMax}


class SharedInfo:
    __slots__ = ("elem", "elem_ptr", "int_view", "size", "size_id", "storage", "t_arr", "var")

    def __init__(self, var, elem, storage, elem_ptr, size, size_id, int_view):
        self.var, self.elem, self.storage, self.elem_ptr = var, elem, storage, elem_ptr
        self.size, self.size_id, self.int_view = size, size_id, int_view


class MemoryGen:
    """Mixin for codegen.Codegen (needs ExprGen's helpers and StmtGen's function state)."""

    # ----------------------------------------------------------------- declarations
    def declare_shared(self) -> None:
        m = self.m
        self.shared_info: list[SharedInfo] = []
        if not self.k.shared:
            return  # declare nothing: kernels without shared arrays keep their exact output
        u32 = m.t_int(32, False)
        for i, arr in enumerate(self.k.shared):
            int_view = i in self.usage.shared_int_view
            storage = self.t_i32 if int_view else self.ty(arr.elem)
            t_arr = m.t_array(storage, m.const(u32, arr.size))
            sc = StorageClass.Function if arr.private else StorageClass.Workgroup
            var = 0  # a local array's variable is made in the body function (declare_local_vars)
            if not arr.private:
                var = m.variable(m.t_pointer(sc, t_arr), sc)
                m.name(var, arr.name)
                self.interface.append(var)
            info = SharedInfo(
                var,
                arr.elem,
                storage,
                m.t_pointer(sc, storage),
                arr.size,
                self.ki(arr.size),
                int_view,
            )
            info.t_arr = t_arr
            self.shared_info.append(info)

    def declare_local_vars(self, fn) -> None:
        """The body's local arrays: Function variables initialised to all zeros, so every call
        of the body (each logical invocation) starts with zero-filled arrays."""
        for arr, info in zip(self.k.shared, self.shared_info):
            if arr.private:
                ptr = self.m.t_pointer(StorageClass.Function, info.t_arr)
                info.var = fn.variable(ptr, StorageClass.Function, self.m.const_null(info.t_arr))
                self.m.name(info.var, arr.name)

    def emit_shared_init(self, fn) -> None:
        """In `main` (observing form): every invocation zeroes elements lid, lid + W, ...; then a
        workgroup barrier, so the body starts with zero-filled shared arrays."""
        workgroup = [info for a, info in zip(self.k.shared, self.shared_info) if not a.private]
        if not workgroup:
            return
        m, i32 = self.m, self.t_i32
        self.code, self.cur_label, self.terminated = fn.body, fn.entry_label, False
        wx, wy, wz = self.k.workgroup_size
        lid = self.op(Op.Load, m.t_vector(i32, 3), self.input_var(BuiltIn.LocalInvocationId))
        flat = self.op(Op.CompositeExtract, i32, lid, 0)
        if wy * wz > 1:
            y = self.op(Op.CompositeExtract, i32, lid, 1)
            z = self.op(Op.CompositeExtract, i32, lid, 2)
            yz = self.op(Op.IAdd, i32, y, self.op(Op.IMul, i32, z, self.ki(wy)))
            flat = self.op(Op.IAdd, i32, flat, self.op(Op.IMul, i32, yz, self.ki(wx)))
        step = self.ki(wx * wy * wz)
        for info in workgroup:
            zero = self.m.const(
                info.storage, False if info.elem.is_bool and not info.int_view else 0
            )
            pre = self.cur_label
            header, test, body, cont, merge = (m.new_id() for _ in range(5))
            j, j_next = m.new_id(), m.new_id()
            self._loop_header(header, pre, j, flat, j_next, cont, merge, test)
            c = self.op(Op.SLessThan, self.t_bool, j, info.size_id)
            self.ins(Op.BranchConditional, c, body, merge)
            self.begin(body)
            self.ins(Op.Store, self.op(Op.AccessChain, info.elem_ptr, info.var, j), zero)
            self.br(cont)
            self.begin(cont)
            Module.emit(self.code, Op.IAdd, i32, j_next, j, step)
            self.br(header)
            self.begin(merge)
        sc = self.ki(Scope.Workgroup)
        self.ins(Op.ControlBarrier, sc, sc, self.ki(BARRIER_SEMANTICS))

    def _loop_header(
        self,
        header: int,
        pre: int,
        phi: int,
        init: int,
        nxt: int,
        cont: int,
        merge: int,
        first: int,
    ) -> None:
        """Branch into loop block `header`: its int32 `phi` is `init` coming from `pre` and `nxt`
        coming back from `cont`; the loop merges at `merge` and its body starts at `first`."""
        self.br(header)
        self.begin(header)
        Module.emit(self.code, Op.Phi, self.t_i32, phi, init, pre, nxt, cont)
        self.ins(Op.LoopMerge, merge, cont, LoopControl.None_)
        self.br(first)
        self.begin(first)

    # ----------------------------------------------------------------------- access
    def _in_range(self, node: ir.SharedLoad | ir.SharedStore, size: int) -> bool | None:
        """True/False when known at compile time (a constant index, or one the range analysis
        proves in bounds: no guard then), None when only known at run time."""
        if isinstance(node.index, ir.Const):
            return 0 <= node.index.value < size
        proven = getattr(self, "_shared_in_range", None)
        if proven is None:
            proven = self._shared_in_range = shared_accesses_in_range(
                self.k, self.target.min_subgroup_size
            )
        return True if proven.get(id(node)) is node else None

    def _from_storage(self, info: SharedInfo, v: int) -> int:
        return self.op(Op.Bitcast, self.t_f32, v) if info.int_view else v

    def _to_storage(self, info: SharedInfo, v: int) -> int:
        return self.op(Op.Bitcast, self.t_i32, v) if info.int_view else v

    def visit_SharedLoad(self, e: ir.SharedLoad) -> int:
        info = self.shared_info[e.array]
        known = self._in_range(e, info.size)
        if known is False:
            return self.zero(e.type)
        idx = self.expr(e.index)
        if known:
            ptr = self.op(Op.AccessChain, info.elem_ptr, info.var, idx)
            return self._from_storage(info, self.op(Op.Load, info.storage, ptr))
        inb = self.op(Op.ULessThan, self.t_bool, idx, info.size_id)
        safe = self.op(Op.Select, self.t_i32, inb, idx, self.c0)
        ptr = self.op(Op.AccessChain, info.elem_ptr, info.var, safe)
        v = self._from_storage(info, self.op(Op.Load, info.storage, ptr))
        return self.op(Op.Select, self.ty(e.type), inb, v, self.zero(e.type))

    def visit_SharedStore(self, s: ir.SharedStore) -> None:
        info = self.shared_info[s.array]
        known = self._in_range(s, info.size)
        if known is False:
            return
        idx = self.expr(s.index)
        val = self._to_storage(info, self.expr(s.value))
        if known:
            self.ins(Op.Store, self.op(Op.AccessChain, info.elem_ptr, info.var, idx), val)
            return
        _, merge = self._open_guard(idx, info.size_id)
        self.ins(Op.Store, self.op(Op.AccessChain, info.elem_ptr, info.var, idx), val)
        self.br(merge)
        self.begin(merge)

    # ---------------------------------------------------------------------- atomics
    def visit_Atomic(self, s: ir.Atomic) -> None:
        elem = s.value.type
        idx = self.expr(s.index)
        val = self.expr(s.value)
        cmp = self.expr(s.comparator) if s.comparator is not None else 0
        if s.shared:
            info = self.shared_info[s.array]
            length, scope = info.size_id, Scope.Workgroup
        else:
            li = self.lists[s.array]
            length, scope = li.len, Scope.Device
        pre = self.cur_label
        _, merge = self._open_guard(idx, length)
        if s.shared:
            ptr = self.op(Op.AccessChain, info.elem_ptr, info.var, idx)  # int32 for float arrays
        else:
            ptr = self.op(Op.AccessChain, li.elem_ptr, li.base, self.c0, idx)
        sc = self.ki(scope)
        sem = self.ki(MemorySemantics.Relaxed)
        if elem.is_int:
            t = self.ty(elem)
            if elem.bits == 64:
                if not self.target.int64_atomics:
                    raise UnsupportedFeature(
                        f"atomics on {elem} lists need the device feature "
                        "`shaderBufferInt64Atomics` (SPIR-V capability Int64Atomics), which this "
                        "device lacks"
                    )
                self.m.capability(Capability.Int64Atomics)
            opc = _INT_ATOMIC.get(s.op)
            if elem.kind == "uint" and s.op in _UINT_ATOMIC:
                opc = _UINT_ATOMIC[s.op]
            if s.op is ir.AtomicOp.COMPARE_EXCHANGE:
                old = self.op(Op.AtomicCompareExchange, t, ptr, sc, sem, sem, val, cmp)
            else:
                old = self.op(opc, t, ptr, sc, sem, val)
        elif elem.is_float:
            old = self._float_atomic(s, ptr, sc, sem, val, cmp)
        else:
            raise CodegenError(f"atomic on {elem} elements")
        done = self.cur_label
        self.br(merge)
        self.begin(merge)
        result = self.op(Op.Phi, self.ty(elem), old, done, self.zero(elem), pre)
        if s.result is not None:
            self.ins(Op.Store, self.local_vars[s.result], result)

    def _float_atomic(self, s: ir.Atomic, ptr: int, sc: int, sem: int, val: int, cmp: int) -> int:
        m, f32, i32 = self.m, self.t_f32, self.t_i32
        if s.op is ir.AtomicOp.ADD and not s.shared and self.target.atomic_float32_add:
            m.capability(Capability.AtomicFloat32AddEXT)
            m.extension("SPV_EXT_shader_atomic_float_add")
            return self.op(Op.AtomicFAddEXT, f32, ptr, sc, sem, val)
        if not s.shared:  # the element's bits through an int32 physical pointer
            ptr = self.op(Op.Bitcast, m.t_pointer(StorageClass.PhysicalStorageBuffer, i32), ptr)

        def bits(v: int) -> int:
            return self.op(Op.Bitcast, i32, v)

        if s.op is ir.AtomicOp.EXCHANGE:
            return self.op(
                Op.Bitcast, f32, self.op(Op.AtomicExchange, i32, ptr, sc, sem, bits(val))
            )
        if s.op is ir.AtomicOp.COMPARE_EXCHANGE:
            old = self.op(Op.AtomicCompareExchange, i32, ptr, sc, sem, sem, bits(val), bits(cmp))
            return self.op(Op.Bitcast, f32, old)
        # add / min / max: read, compute, compare-exchange until no other invocation intervened
        first = self.op(Op.AtomicLoad, i32, ptr, sc, sem)
        pre = self.cur_label
        header, body, cont, merge = (m.new_id() for _ in range(4))
        old_bits, prev = m.new_id(), m.new_id()
        self._loop_header(header, pre, old_bits, first, prev, cont, merge, body)
        old = self.op(Op.Bitcast, f32, old_bits)
        if s.op is ir.AtomicOp.ADD:
            new = self.op(Op.FAdd, f32, old, val)
        else:  # Python's min(old, v) / max(old, v): v replaces old only if it compares below/above
            cmp_op = Op.FOrdLessThan if s.op is ir.AtomicOp.MIN else Op.FOrdGreaterThan
            new = self.op(Op.Select, f32, self.op(cmp_op, self.t_bool, val, old), val, old)
        Module.emit(
            self.code, Op.AtomicCompareExchange, i32, prev, ptr, sc, sem, sem, bits(new), old_bits
        )
        swapped = self.op(Op.IEqual, self.t_bool, prev, old_bits)
        self.ins(Op.BranchConditional, swapped, merge, cont)
        self.begin(cont)
        self.br(header)
        self.begin(merge)
        return old
