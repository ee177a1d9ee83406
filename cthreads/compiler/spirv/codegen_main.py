"""The entry point `main`: the physical dispatch -> logical invocations of the body (SPEC §4).

`main` loads every parameter-block field once, then either runs the grid-stride loops (over x,
nested in y and z for 2-D/3-D launches; the workgroup size a specialization constant, SpecId
0/1/2) calling `body(g, ...)`, or, for kernels that observe their workgroup, calls the body once
with `LocalSize = kernel.workgroup_size` and BlockIdx.x = WorkgroupId.x + base_group. The vector
form's block loop is codegen_vec.py; the module set-up and the body function are codegen.py.
"""

from __future__ import annotations

from .builder import Function, Module
from .grammar import BuiltIn, Decoration, ExecutionMode, LoopControl, Op


class MainGen:
    """Mixin of codegen.Codegen: emits `main` into a function the caller opened."""

    def _emit_main(
        self, fn: Function, body_id: int, vbody_id: int, inputs: list[tuple[str, int | None]]
    ) -> None:
        m, k, i32 = self.m, self.k, self.t_i32
        code = fn.body
        emit = Module.emit
        pblock = self._load_pblock(fn)
        vals: dict[tuple[str, int | None], int] = {}
        # Every field, passed or not: the vector loop reads list lengths and addresses here.
        for role, i in self.inputs:
            if role in ("addr", "len", "scalar") or role.startswith("shape"):
                vals[(role, i)] = self.load_param(fn, role, i, pblock)

        def x_of(builtin: int) -> int:
            v, x = m.new_id(), m.new_id()
            emit(code, Op.Load, m.t_vector(i32, 3), v, self.input_var(builtin))
            emit(code, Op.CompositeExtract, i32, x, v, 0)
            return x

        if self.observes:
            wx, wy, wz = k.workgroup_size
            m.execution_mode(fn.id, ExecutionMode.LocalSize, wx, wy, wz)
            bx, g, t = m.new_id(), m.new_id(), m.new_id()
            emit(
                code,
                Op.IAdd,
                i32,
                bx,
                x_of(BuiltIn.WorkgroupId),
                self.load_param(fn, "base_group", None, pblock),
            )
            emit(code, Op.IMul, i32, t, bx, m.const(i32, wx))
            emit(code, Op.IAdd, i32, g, t, x_of(BuiltIn.LocalInvocationId))
            vals[("g", None)], vals[("bx", None)] = g, bx
            if ("grid_x", None) in inputs:
                vals[("grid_x", None)] = self.load_param(fn, "grid_x", None, pblock)
            self.emit_shared_init(fn)
            emit(
                code, Op.FunctionCall, self.t_void, m.new_id(), body_id, *(vals[a] for a in inputs)
            )
            emit(code, Op.Return)
            return
        # Grid-stride loop; the workgroup size is a spec-constant composite (SpecId 0, 1, 2).
        # LocalSize too, as glslang emits: the WorkgroupSize builtin overrides it.
        m.execution_mode(fn.id, ExecutionMode.LocalSize, *k.workgroup_size)
        # Unsigned, as glslang declares it: Mesa's spirv_to_nir rejects a signed WorkgroupSize.
        u32 = m.t_int(32, False)
        spec = [m.spec_const(u32, n, sid) for sid, n in enumerate(k.workgroup_size)]
        wg = m.new_id()
        emit(m.globals, Op.SpecConstantComposite, m.t_vector(u32, 3), wg, *spec)
        m.decorate(wg, Decoration.BuiltIn, BuiltIn.WorkgroupSize)
        m.name(wg, "workgroup_size")
        total = self.load_param(fn, "total", None, pblock)
        g0 = x_of(BuiltIn.GlobalInvocationId)
        wgx_u, wgx, stride = m.new_id(), m.new_id(), m.new_id()
        emit(code, Op.CompositeExtract, u32, wgx_u, wg, 0)
        emit(code, Op.Bitcast, i32, wgx, wgx_u)
        emit(code, Op.IMul, i32, stride, x_of(BuiltIn.NumWorkgroups), wgx)
        # 2-D/3-D launches: grid-stride loops over z and y around the loop over x (for a 1-D
        # launch total_y == total_z == 1, so each runs once).
        outer = []  # (header, cont, merge, var, next) of the z and y loops, outermost first
        pred = fn.entry_label
        axes = [
            (axis, self.load_param(fn, role, None, pblock), *self._axis_start_stride(fn, wg, axis))
            for axis, role in ((2, "total_z"), (1, "total_y"))
        ]  # loaded once, before the loops
        for axis, extent, start, step in axes:
            header, body_l, cont, merge = (m.new_id() for _ in range(4))
            var, nxt, inside = m.new_id(), m.new_id(), m.new_id()
            emit(code, Op.Branch, header)
            emit(code, Op.Label, header)
            emit(code, Op.Phi, i32, var, start, pred, nxt, cont)
            emit(code, Op.ULessThan, self.t_bool, inside, var, extent)
            emit(code, Op.LoopMerge, merge, cont, LoopControl.None_)
            emit(code, Op.BranchConditional, inside, body_l, merge)
            emit(code, Op.Label, body_l)
            outer.append((header, cont, merge, var, nxt, step))
            pred = body_l
            vals[("gz" if axis == 2 else "gy", None)] = var
        if self.vec is not None:
            self.emit_vec_loop(fn, vals, inputs, body_id, vbody_id, total, g0, stride, pred)
        else:
            header, loop_body, cont, merge = (m.new_id() for _ in range(4))
            g, g_next, inside = m.new_id(), m.new_id(), m.new_id()
            emit(code, Op.Branch, header)
            emit(code, Op.Label, header)
            emit(code, Op.Phi, i32, g, g0, pred, g_next, cont)
            emit(code, Op.ULessThan, self.t_bool, inside, g, total)  # unsigned: total is a u32
            emit(code, Op.LoopMerge, merge, cont, LoopControl.None_)
            emit(code, Op.BranchConditional, inside, loop_body, merge)
            emit(code, Op.Label, loop_body)
            vals[("g", None)] = g
            emit(
                code, Op.FunctionCall, self.t_void, m.new_id(), body_id, *(vals[a] for a in inputs)
            )
            emit(code, Op.Branch, cont)
            emit(code, Op.Label, cont)
            emit(code, Op.IAdd, i32, g_next, g, stride)
            emit(code, Op.Branch, header)
            emit(code, Op.Label, merge)
        for header, cont, merge, var, nxt, step in reversed(outer):
            emit(code, Op.Branch, cont)
            emit(code, Op.Label, cont)
            emit(code, Op.IAdd, i32, nxt, var, step)
            emit(code, Op.Branch, header)
            emit(code, Op.Label, merge)
        emit(code, Op.Return)

    def _axis_start_stride(self, fn: Function, wg: int, axis: int) -> tuple[int, int]:
        """GlobalInvocationId[axis] and NumWorkgroups[axis] * WorkgroupSize[axis] (spec const)."""
        m, i32, code, emit = self.m, self.t_i32, fn.body, Module.emit
        u32 = m.t_int(32, False)
        out = []
        for builtin in (BuiltIn.GlobalInvocationId, BuiltIn.NumWorkgroups):
            v, c = m.new_id(), m.new_id()
            emit(code, Op.Load, m.t_vector(i32, 3), v, self.input_var(builtin))
            emit(code, Op.CompositeExtract, i32, c, v, axis)
            out.append(c)
        w_u, w, step = m.new_id(), m.new_id(), m.new_id()
        emit(code, Op.CompositeExtract, u32, w_u, wg, axis)
        emit(code, Op.Bitcast, i32, w, w_u)
        emit(code, Op.IMul, i32, step, out[1], w)
        return out[0], step
