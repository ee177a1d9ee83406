"""The 4-wide element-wise form: one grid-stride step runs four consecutive logical invocations.

Chosen by vectorize.plan (every list access at the global index, 32-bit elements). `main` walks
blocks b = 4 consecutive indexes 4b..4b+3:

- a *full* block (4b+3 below `total`, below every accessed list's length, and every list address
  16-byte aligned) loads each list the body reads once as a 16-byte vec4, runs the vector body
  once per lane, then stores each written list as one vec4 when all four lanes stored it, else
  lane by lane for the lanes that did. The vector body is the scalar body with list accesses
  redirected: reads of a read-only list are the lane's loaded value (a parameter), a written
  list is a Function-storage cell (initialised from the load when the list is also read) plus a
  "stored" flag. Each element is touched only by its own lane, so results equal the scalar
  form's bit for bit; lists only written are never loaded. Read-only lists that are also read
  at other indexes are not in the plan: every lane reads them with the usual guarded loads.
- any other block runs the unchanged scalar body for each lane below `total` (guarded accesses).

Launch dispatches a quarter of the invocations (`CompiledKernel.elements_per_invocation`), or,
for problems too small to fill the device that way, one invocation per element
(launch/sizing.py, `spread_below`): a dispatch with `stride >= total` runs the scalar body once
per invocation instead of the block loop. Either form is correct for any dispatch size.
"""

from __future__ import annotations

from .builder import Function
from .grammar import Decoration, LoopControl, MemoryAccess, Op, SelectionControl, StorageClass
from .grammar import GLSLstd450 as G
from .vectorize import WIDTH, VecPlan

PSB = StorageClass.PhysicalStorageBuffer
FN = StorageClass.Function


class VecGen:
    """Mixin for codegen.Codegen: vec4 views of lists, the vector body's extra parameters, and
    the block loop in `main`."""

    vec: VecPlan | None

    def _declare_vec_views(self) -> None:
        """Per vectorized list: a PSB pointer to a block of vec4 (stride 16) and to one vec4."""
        m = self.m
        self.vviews: dict[int, tuple[int, int, int]] = {}  # list -> (block ptr, vec4 ptr, vec4)
        for i in self.vec.lists:
            li = self.lists[i]
            v4 = m.t_vector(li.storage, WIDTH)
            arr = m.t_runtime_array(v4, 16)
            blk = m.t_struct([arr], [0], block=True)
            m.name(blk, f"{self.k.params[i].name}_v4")
            m.member_decorate(blk, 0, Decoration.Restrict)
            if i not in self.vec.writes:
                m.member_decorate(blk, 0, Decoration.NonWritable)
            self.vviews[i] = (m.t_pointer(PSB, blk), m.t_pointer(PSB, v4), v4)

    def vec_extra_types(self) -> list[tuple[str, int, int]]:
        """(role, list, type) of the vector body's parameters after the scalar body's:
        'cell' and 'flag' pointers for written lists, 'value' for lists only read."""
        m, out = self.m, []
        for i in self.vec.lists:
            st = self.lists[i].storage
            if i in self.vec.writes:
                out.append(("cell", i, m.t_pointer(FN, st)))
                out.append(("flag", i, m.t_pointer(FN, self.t_bool)))
            else:
                out.append(("value", i, st))
        return out

    # ------------------------------------------------------------------------- main loop
    def emit_vec_loop(
        self, fn: Function, vals: dict, inputs: list, body_id: int, vbody_id: int,
        total: int, g0: int, stride: int, pred: int,
    ) -> None:  # fmt: skip
        """The loop over blocks of 4, entered from block `pred`; ends in its merge block (the
        caller closes the enclosing y/z loops). A dispatch with an invocation per element
        (`stride >= total`: launch/sizing.py spreads small problems so) runs the scalar body
        once per invocation instead."""
        self.code, self.cur_label, self.terminated = fn.body, pred, False
        op, ins, new = self.op, self.ins, self.m.new_id
        one_l, blocks_l, done = new(), new(), new()
        spread = op(Op.ULessThanEqual, self.t_bool, total, stride)
        ins(Op.SelectionMerge, done, SelectionControl.None_)
        ins(Op.BranchConditional, spread, one_l, blocks_l)
        self.begin(one_l)
        self._guarded_call(vals, inputs, body_id, g0, total)
        self.br(done)
        self.begin(blocks_l)
        self._block_loop(fn, vals, inputs, body_id, vbody_id, total, g0, stride)
        self.br(done)
        self.begin(done)

    def _block_loop(self, fn, vals, inputs, body_id, vbody_id, total, g0, stride) -> None:
        m, i32, bt = self.m, self.t_i32, self.t_bool
        op, ins, new = self.op, self.ins, m.new_id
        plan = self.vec
        u32 = m.t_int(32, False)
        v2u = m.t_vector(u32, 2)

        # Hoisted: the first index not covered by full blocks, the block count, vec4 pointers.
        limit, aligned = total, None
        vptr: dict[int, int] = {}
        for i in plan.lists:
            limit = self.ext(G.UMin, i32, limit, vals[("len", i)])
            addr = vals[("addr", i)]
            lo = op(Op.CompositeExtract, u32, op(Op.Bitcast, v2u, addr), 0)
            ok = op(Op.IEqual, bt, op(Op.BitwiseAnd, u32, lo, m.const(u32, 15)), m.const(u32, 0))
            aligned = ok if aligned is None else op(Op.LogicalAnd, bt, aligned, ok)
            vptr[i] = op(Op.Bitcast, self.vviews[i][0], addr)
        limit = op(Op.Select, i32, aligned, limit, self.c0)  # misaligned: every block is scalar
        two = self.ki(2)
        full_blocks = op(Op.ShiftRightLogical, i32, limit, two)
        rem = op(Op.INotEqual, bt, op(Op.BitwiseAnd, i32, total, self.ki(3)), self.c0)
        blocks = op(
            Op.IAdd, i32, op(Op.ShiftRightLogical, i32, total, two),
            op(Op.Select, i32, rem, self.ki(1), self.c0),
        )  # fmt: skip
        cells = {
            i: (fn.variable(m.t_pointer(FN, self.lists[i].storage), FN),
                fn.variable(m.t_pointer(FN, bt), FN))
            for i in plan.writes
        }  # fmt: skip

        header, body_l, cont, merge = new(), new(), new(), new()
        b, b_next = new(), new()
        entry = self.cur_label
        self.br(header)
        self.begin(header)
        ins(Op.Phi, i32, b, g0, entry, b_next, cont)
        inside = op(Op.ULessThan, bt, b, blocks)
        ins(Op.LoopMerge, merge, cont, LoopControl.None_)
        ins(Op.BranchConditional, inside, body_l, merge)
        self.begin(body_l)
        base = op(Op.ShiftLeftLogical, i32, b, two)
        full = op(Op.ULessThan, bt, b, full_blocks)
        vec_l, tail_l, sel = new(), new(), new()
        ins(Op.SelectionMerge, sel, SelectionControl.None_)
        ins(Op.BranchConditional, full, vec_l, tail_l)
        self.begin(vec_l)
        self._vec_block(vals, inputs, vbody_id, vptr, cells, b, base)
        self.br(sel)
        self.begin(tail_l)
        self._tail_block(vals, inputs, body_id, base, total)
        self.br(sel)
        self.begin(sel)
        self.br(cont)
        self.begin(cont)
        ins(Op.IAdd, i32, b_next, b, stride)
        self.br(header)
        self.begin(merge)

    def _vec_block(self, vals, inputs, vbody_id, vptr, cells, b, base) -> None:
        m, op, ins, plan = self.m, self.op, self.ins, self.vec
        loaded: dict[int, int] = {}
        for i in plan.lists:
            if i in plan.reads:
                _, p4, v4 = self.vviews[i]
                ptr = op(Op.AccessChain, p4, vptr[i], self.c0, b)
                loaded[i] = op(Op.Load, v4, ptr, MemoryAccess.Aligned, 16)
        got: dict[int, list[tuple[int, int]]] = {i: [] for i in plan.writes}
        for lane in range(WIDTH):
            g = op(Op.IAdd, self.t_i32, base, self.ki(lane)) if lane else base
            extra = []
            for i in plan.lists:
                st = self.lists[i].storage
                if i in plan.writes:
                    cell, flag = cells[i]
                    init = (
                        op(Op.CompositeExtract, st, loaded[i], lane)
                        if i in loaded
                        else m.const(st, 0)
                    )
                    ins(Op.Store, cell, init)
                    ins(Op.Store, flag, self.kb(False))
                    extra += [cell, flag]
                else:
                    extra.append(op(Op.CompositeExtract, st, loaded[i], lane))
            args = [g if a == ("g", None) else vals[a] for a in inputs]
            op(Op.FunctionCall, self.t_void, vbody_id, *args, *extra)
            for i in plan.writes:
                cell, flag = cells[i]
                st = self.lists[i].storage
                got[i].append((op(Op.Load, st, cell), op(Op.Load, self.t_bool, flag)))
        for i in sorted(plan.writes):
            self._write_back(i, got[i], vptr[i], vals[("addr", i)], b, base)

    def _write_back(self, i: int, lanes, vp: int, addr: int, b: int, base: int) -> None:
        """One vec4 store when every lane stored list `i`, else one store per storing lane."""
        op, ins, new = self.op, self.ins, self.m.new_id
        li = self.lists[i]
        _, p4, v4 = self.vviews[i]
        every = lanes[0][1]
        for _, f in lanes[1:]:
            every = op(Op.LogicalAnd, self.t_bool, every, f)
        whole, part, done = new(), new(), new()
        ins(Op.SelectionMerge, done, SelectionControl.None_)
        ins(Op.BranchConditional, every, whole, part)
        self.begin(whole)
        vec = op(Op.CompositeConstruct, v4, *(c for c, _ in lanes))
        ins(Op.Store, op(Op.AccessChain, p4, vp, self.c0, b), vec, MemoryAccess.Aligned, 16)
        self.br(done)
        self.begin(part)
        for lane, (c, f) in enumerate(lanes):
            yes, skip = new(), new()
            ins(Op.SelectionMerge, skip, SelectionControl.None_)
            ins(Op.BranchConditional, f, yes, skip)
            self.begin(yes)
            g = op(Op.IAdd, self.t_i32, base, self.ki(lane)) if lane else base
            ptr = op(Op.AccessChain, li.elem_ptr, addr, self.c0, g)
            ins(Op.Store, ptr, c, MemoryAccess.Aligned, li.align)
            self.br(skip)
            self.begin(skip)
        self.br(done)
        self.begin(done)

    def _tail_block(self, vals, inputs, body_id, base, total) -> None:
        """The scalar body for each lane of a partial block that is below `total`."""
        op, ins, new = self.op, self.ins, self.m.new_id
        i32, bt = self.t_i32, self.t_bool
        header, body_l, cont, merge = new(), new(), new(), new()
        lane, lane_next = new(), new()
        pre = self.cur_label
        self.br(header)
        self.begin(header)
        ins(Op.Phi, i32, lane, self.c0, pre, lane_next, cont)
        g = op(Op.IAdd, i32, base, lane)
        go = op(
            Op.LogicalAnd, bt, op(Op.SLessThan, bt, lane, self.ki(WIDTH)),
            op(Op.ULessThan, bt, g, total),
        )  # fmt: skip
        ins(Op.LoopMerge, merge, cont, LoopControl.None_)
        ins(Op.BranchConditional, go, body_l, merge)
        self.begin(body_l)
        self._call(vals, inputs, body_id, g)
        self.br(cont)
        self.begin(cont)
        ins(Op.IAdd, i32, lane_next, lane, self.ki(1))
        self.br(header)
        self.begin(merge)

    def _guarded_call(self, vals, inputs, body_id, g, total) -> None:
        """The scalar body for index `g` when it is below `total`."""
        yes, skip = self.m.new_id(), self.m.new_id()
        below = self.op(Op.ULessThan, self.t_bool, g, total)
        self.ins(Op.SelectionMerge, skip, SelectionControl.None_)
        self.ins(Op.BranchConditional, below, yes, skip)
        self.begin(yes)
        self._call(vals, inputs, body_id, g)
        self.br(skip)
        self.begin(skip)

    def _call(self, vals, inputs, body_id, g) -> None:
        args = [g if a == ("g", None) else vals[a] for a in inputs]
        self.op(Op.FunctionCall, self.t_void, body_id, *args)
