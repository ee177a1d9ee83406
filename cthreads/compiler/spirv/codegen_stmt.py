"""Statements, structured control flow and bounds-checked list access.

Every `if` is a selection construct and every loop a loop construct with its own header,
condition block, body, continue target (the loop's `step`) and merge block, so the output is
structured as Vulkan requires. `break`/`continue` branch to the innermost loop's merge/continue
block, `return` is OpReturn of the body function (one logical invocation ends; the grid-stride
loop in `main` goes on). Code after a terminator is dead and not emitted.

List access: `uint(i) < len` (one unsigned compare also rejects negative i) guards a selection
around the access; reads outside give zero through an OpPhi, writes outside are dropped
(SPEC §5.6). Every access to a physical pointer carries `Aligned <element size>`.
"""

from __future__ import annotations

from .. import ir
from .codegen_expr import CodegenError
from .usage import barriers_ordering_lists
from .grammar import (
    BuiltIn,
    LoopControl,
    MemoryAccess,
    MemorySemantics,
    Op,
    Scope,
    SelectionControl,
    StorageClass,
)

# A barrier orders shared arrays (workgroup memory) between the invocations of a workgroup,
# and list (buffer) memory too where a written list may be reached before it
# (usage.barriers_ordering_lists).
BARRIER_SEMANTICS = MemorySemantics.AcquireRelease | MemorySemantics.WorkgroupMemory
BARRIER_SEMANTICS_LISTS = BARRIER_SEMANTICS | MemorySemantics.UniformMemory


class StmtGen:
    """Mixin: the body function. Needs ExprGen's helpers and codegen.Codegen's declarations."""

    def emit_body(self, fn, args: dict, access: dict | None = None) -> None:
        """Emit the kernel body into `fn`. `access` (vector body only, codegen_vec.py) maps a
        list to (value, cell, flag) ids that replace its memory accesses."""
        m, k = self.m, self.k
        self.fn, self.code, self.args = fn, fn.body, args
        self.access = access or {}
        self.cur_label, self.terminated = fn.entry_label, False
        self.loops: list[tuple[int, int]] = []  # (merge, continue) of enclosing loops
        self.depth = 0  # open selections and loops of the kernel's own if/while/for
        for (role, i), v in args.items():
            if role == "addr":
                self.lists[i].base = v
            elif role == "len":
                self.lists[i].len = v
            elif role == "scalar" and k.params[i].type.is_bool:  # u32 in the block -> bool
                args[(role, i)] = self.op(Op.INotEqual, self.t_bool, v, self.c0)
        self.local_vars = {}
        by_name = {p.name: i for i, p in enumerate(k.params) if not p.is_list}
        for name, t in k.locals.items():
            var = fn.variable(
                m.t_pointer(StorageClass.Function, self.ty(t)), StorageClass.Function, self.zero(t)
            )
            m.name(var, name)
            self.local_vars[name] = var
            if name in by_name:  # an assigned scalar parameter: the local starts with its value
                self.ins(Op.Store, var, args[("scalar", by_name[name])])
        self.declare_local_vars(fn)  # codegen_memory.py
        if k.tiles:
            self.declare_tile_vars(fn)  # codegen_tiles.py
        self._builtins()
        self.stmts(k.body)
        if not self.terminated:
            self.ins(Op.Return)

    def _builtins(self) -> None:
        """Compute every builtin the body reads once, at entry (dominates all uses)."""
        self.builtin_vals = vals = {}
        loaded: dict[int, int] = {}
        obs, args = self.observes, self.args

        def comp(builtin: int, axis: int) -> int:
            v = loaded.get(builtin)
            if v is None:
                v = loaded[builtin] = self.op(
                    Op.Load, self.m.t_vector(self.t_i32, 3), self.input_var(builtin)
                )
            return self.op(Op.CompositeExtract, self.t_i32, v, axis)

        K = ir.BuiltinKind
        for kind, axis in sorted(self.usage.builtins, key=lambda b: (b[0].value, b[1])):
            if kind is K.GLOBAL_ID:
                v = (
                    args[("g", None)]
                    if axis == 0
                    else comp(BuiltIn.GlobalInvocationId, axis)
                    if obs
                    else args[("gy" if axis == 1 else "gz", None)]  # grid-stride loop variables
                )
            elif kind is K.LOCAL_ID:
                v = comp(BuiltIn.LocalInvocationId, axis)
            elif kind is K.WORKGROUP_ID:
                v = args[("bx", None)] if axis == 0 else comp(BuiltIn.WorkgroupId, axis)
            elif kind is K.WORKGROUP_SIZE:
                v = self.ki(self.k.workgroup_size[axis])
            else:
                v = args[("grid_x", None)] if axis == 0 else comp(BuiltIn.NumWorkgroups, axis)
            vals[(kind, axis)] = v

    # -------------------------------------------------------------------- statements
    def stmts(self, body: tuple[ir.Stmt, ...]) -> None:
        visitors = self.VISITORS
        for s in body:
            if self.terminated:
                return  # after break/continue/return: unreachable, like Python
            visit = visitors.get(type(s)) or self.visitor(type(s), ir.Stmt, "statement")
            visit(self, s)

    def visit_Assign(self, s: ir.Assign) -> None:
        var = self.local_vars.get(s.name)
        if var is None:
            raise CodegenError(f"local `{s.name}` is not declared in Kernel.locals")
        self.ins(Op.Store, var, self.expr(s.value))

    def visit_If(self, s: ir.If) -> None:
        links, final = ir.elif_chain(s)
        # Flat when long, or when nesting it would pass the budget the frontend checked (its
        # count assumed a flat chain where the source had one; the passes may have shortened it).
        if len(links) >= ir.ELIF_FLATTEN or (
            len(links) > 2 and self.depth + len(links) > ir.MAX_NESTING
        ):
            self._flat_chain(links, final)
            return
        self.depth += 1
        try:
            self._selection(s)
        finally:
            self.depth -= 1

    def _selection(self, s: ir.If) -> None:
        c = self.expr(s.cond)
        new = self.m.new_id
        then_l, merge = new(), new()
        else_l = new() if s.orelse else merge
        self.ins(Op.SelectionMerge, merge, SelectionControl.None_)
        self.ins(Op.BranchConditional, c, then_l, else_l)
        self.begin(then_l)
        self.stmts(s.then)
        reached = not self.terminated or not s.orelse
        if not self.terminated:
            self.br(merge)
        if s.orelse:
            self.begin(else_l)
            self.stmts(s.orelse)
            if not self.terminated:
                self.br(merge)
                reached = True
        self.begin(merge)
        if not reached:  # both arms left the construct: the merge block exists but is dead
            self.ins(Op.Unreachable)
            self.terminated = True

    def _flat_chain(self, links, final: tuple[ir.Stmt, ...]) -> None:
        """A long if/elif chain without nested merge blocks (ir.ELIF_FLATTEN): a `done` flag,
        then per link `if not done: if cond: done = True; body`, and `if not done: else-body`.
        Each condition is still evaluated only when the earlier ones were false, as in Python.
        """
        m = self.m
        done = self.fn.variable(
            m.t_pointer(StorageClass.Function, self.t_bool), StorageClass.Function
        )
        m.name(done, "elif_done")
        self.ins(Op.Store, done, self.kb(False))  # per execution: the chain may be in a loop
        self.depth += 2
        try:
            self._flat_links(done, links, final)
        finally:
            self.depth -= 2

    def _flat_links(self, done: int, links, final: tuple[ir.Stmt, ...]) -> None:
        def taken(body: tuple[ir.Stmt, ...]) -> None:
            self.ins(Op.Store, done, self.kb(True))  # first: the body may break or return
            self.stmts(body)

        for n, (cond, body) in enumerate(links):
            if n == 0:
                self._when(self.expr(cond), lambda body=body: taken(body))
                continue

            def test(cond=cond, body=body) -> None:
                self._when(self.expr(cond), lambda: taken(body))

            self._when(self._not_done(done), test)
        if final:
            self._when(self._not_done(done), lambda: self.stmts(final))

    def _not_done(self, done: int) -> int:
        return self.op(Op.LogicalNot, self.t_bool, self.op(Op.Load, self.t_bool, done))

    def _when(self, c: int, then) -> None:
        """A selection without else: `then()` emits the taken block's code."""
        then_l, merge = self.m.new_id(), self.m.new_id()
        self.ins(Op.SelectionMerge, merge, SelectionControl.None_)
        self.ins(Op.BranchConditional, c, then_l, merge)
        self.begin(then_l)
        then()
        if not self.terminated:
            self.br(merge)
        self.begin(merge)

    def visit_Loop(self, s: ir.Loop) -> None:
        new = self.m.new_id
        header, cond_l, body_l, cont, merge = new(), new(), new(), new(), new()
        self.br(header)
        self.begin(header)
        self.ins(Op.LoopMerge, merge, cont, LoopControl.Unroll if s.unroll else LoopControl.None_)
        self.br(cond_l)
        self.begin(cond_l)  # the condition may itself need blocks (guarded loads, int **)
        c = self.expr(s.cond)
        self.ins(Op.BranchConditional, c, body_l, merge)
        self.begin(body_l)
        self.loops.append((merge, cont))
        self.depth += 1
        self.stmts(s.body)
        self.depth -= 1
        self.loops.pop()
        if not self.terminated:
            self.br(cont)
        self.begin(cont)
        self.stmts(s.step)
        if not self.terminated:
            self.br(header)
        self.begin(merge)

    def visit_Break(self, s: ir.Break) -> None:
        if not self.loops:
            raise CodegenError("`break` outside a loop")
        self.br(self.loops[-1][0])

    def visit_Continue(self, s: ir.Continue) -> None:
        if not self.loops:
            raise CodegenError("`continue` outside a loop")
        self.br(self.loops[-1][1])

    def visit_Return(self, s: ir.Return) -> None:
        self.ins(Op.Return)
        self.terminated = True

    def visit_Barrier(self, s: ir.Barrier) -> None:
        sc = self.ki(Scope.Workgroup)
        ordering = getattr(self, "_list_barriers", None)
        if ordering is None:
            ordering = self._list_barriers = barriers_ordering_lists(self.k, self.usage.stores)
        lists = ordering.get(id(s)) is s
        semantics = BARRIER_SEMANTICS_LISTS if lists else BARRIER_SEMANTICS
        self.ins(Op.ControlBarrier, sc, sc, self.ki(semantics))

    # ---------------------------------------------------------------- list access
    def _open_guard(self, idx: int, length: int) -> tuple[int, int]:
        """Open `if uint(idx) < length` (a list's or a shared array's): returns (access block,
        merge block); in the access block."""
        inb = self.op(Op.ULessThan, self.t_bool, idx, length)
        access, merge = self.m.new_id(), self.m.new_id()
        self.ins(Op.SelectionMerge, merge, SelectionControl.None_)
        self.ins(Op.BranchConditional, inb, access, merge)
        self.begin(access)
        return access, merge

    def visit_Load(self, e: ir.Load) -> int:
        li = self.lists[e.list_index]
        redirect = self.access.get(e.list_index)
        if redirect is not None:  # vector body: the index is this lane's own, in range
            value, cell, _ = redirect
            return value or self.op(Op.Load, li.storage, cell)
        zero = self.zero(e.type)
        if isinstance(e.index, ir.Const) and e.index.value < 0:
            return zero
        idx = self.expr(e.index)
        pre = self.cur_label
        access, merge = self._open_guard(idx, li.len)
        ptr = self.op(Op.AccessChain, li.elem_ptr, li.base, self.c0, idx)
        v = self.op(Op.Load, li.storage, ptr, MemoryAccess.Aligned, li.align)
        if li.elem.is_bool:  # one byte -> bool (any nonzero byte is True)
            u32 = self.m.t_int(32, False)
            v = self.op(
                Op.INotEqual, self.t_bool, self.op(Op.UConvert, u32, v), self.m.const(u32, 0)
            )
        self.br(merge)
        self.begin(merge)
        return self.op(Op.Phi, self.ty(e.type), v, access, zero, pre)

    def visit_Store(self, s: ir.Store) -> None:
        li = self.lists[s.list_index]
        redirect = self.access.get(s.list_index)
        if redirect is not None:  # vector body: record the lane's value; main writes it back
            _, cell, flag = redirect
            self.ins(Op.Store, cell, self.expr(s.value))
            self.ins(Op.Store, flag, self.kb(True))
            return
        if isinstance(s.index, ir.Const) and s.index.value < 0:
            return
        idx = self.expr(s.index)
        val = self.expr(s.value)
        _, merge = self._open_guard(idx, li.len)
        if li.elem.is_bool:
            u32 = self.m.t_int(32, False)
            w = self.op(Op.Select, u32, val, self.m.const(u32, 1), self.m.const(u32, 0))
            val = self.op(Op.UConvert, li.storage, w)
        ptr = self.op(Op.AccessChain, li.elem_ptr, li.base, self.c0, idx)
        self.ins(Op.Store, ptr, val, MemoryAccess.Aligned, li.align)
        self.br(merge)
        self.begin(merge)
