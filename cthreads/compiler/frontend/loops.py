"""`for v in range(...)` -> IR `Loop`, with Python's meaning.

The range is evaluated once (stop and step are copied to hidden locals unless they cannot
change), a step of 0 runs zero times (Python raises ValueError; a kernel cannot), and assigning
`v` in the body does not change the iteration: then a hidden counter drives the loop and `v`
is set from it at the top of each iteration. Loops of a constant, small trip count whose body
reaches a local array are marked for unrolling (`_unroll`).
"""

from __future__ import annotations

import ast
import builtins

from .. import ir
from ..ir import BOOL, I32, BinOp, CmpOp
from . import typerules as tr
from .names import walk_body
from .source import keyword_position


# The largest constant trip count unrolled (see `_unroll`): a register tile's row or a shared
# tile's depth (8 x 8 x 16 nested is still only a few thousand instructions).
UNROLL_MAX = 64


class LoopLowering:
    """Mixin of stmts.StmtLowerer: `for v in range(...)` (`visit_For` delegates here)."""

    def for_range(self, node: ast.For) -> list[ir.Stmt]:
        ctx = self.ctx
        if node.orelse:
            self.fail(
                keyword_position(self.source, node.body[-1], node.orelse[0], "else"),
                "`for ... else` is not supported in kernels",
                "a flag local set before `break`, tested after the loop",
            )
        if not isinstance(node.target, ast.Name):
            self.fail(node.target, "a for loop must assign a single name", "for i in range(n):")
        args = self.range_args(node)
        var = node.target.id
        p = ctx.param(var)
        if p is not None and p.is_list:
            self.assign_local(node.target, var, tr.const(0))  # reports: a list cannot be assigned
        info = ctx.locals.get(var)
        if info is not None and info.type != I32:
            self.fail(
                node.target,
                f"loop variable `{var}` is {tr.a_type(info.type)} local (line {info.line}), but range() gives ints",
                "a new name for the loop variable",
            )

        values = [tr.cast(a, I32) for a in args]
        start, stop, step = (
            values
            if len(values) == 3
            else (
                (values[0], values[1], tr.const(1))
                if len(values) == 2
                else (tr.const(0), values[0], tr.const(1))
            )
        )
        body_stores = _stored_names(node.body)
        out: list[ir.Stmt] = []

        def once(value: ir.Expr, what: str) -> ir.Expr:
            # The range is evaluated once: keep a copy unless nothing in the loop can change it.
            if _invariant(value, body_stores | {var}):
                return value
            name = ctx.hidden(what)
            ctx.declare(name, I32, node)
            out.append(ir.Assign(name, value))
            return ir.LocalRef(I32, name)

        stop, step = once(stop, "stop"), once(step, "step")
        # The loop variable itself can count when the body never assigns it and nobody reads it
        # after the loop (where Python leaves the last value, not the one past the end).
        direct = var not in body_stores and _loads_outside(ctx, node, var) == 0
        if direct:
            if info is None:
                ctx.declare(var, I32, node)
            counter = var
        else:
            counter = ctx.hidden("i")
            ctx.declare(counter, I32, node)
            if info is None:
                ctx.declare(var, I32, node)
                ctx.locals[var].top_level = False  # set only inside the loop: zero it at entry
        out.append(ir.Assign(counter, start))
        k = ir.LocalRef(I32, counter)

        if isinstance(step, ir.Const):
            if step.value > 0:
                cond: ir.Expr = ir.Compare(BOOL, CmpOp.LT, k, stop)
            elif step.value < 0:
                cond = ir.Compare(BOOL, CmpOp.GT, k, stop)
            else:
                cond = tr.const(False)  # range(a, b, 0): no iterations (documented)
        else:
            zero = tr.const(0)
            up = ir.Binary(
                BOOL,
                BinOp.AND,
                ir.Compare(BOOL, CmpOp.GT, step, zero),
                ir.Compare(BOOL, CmpOp.LT, k, stop),
            )
            down = ir.Binary(
                BOOL,
                BinOp.AND,
                ir.Compare(BOOL, CmpOp.LT, step, zero),
                ir.Compare(BOOL, CmpOp.GT, k, stop),
            )
            cond = ir.Binary(BOOL, BinOp.OR, up, down)

        ctx.loop_depth += 1
        try:
            body = self.nested(node.body)
        finally:
            ctx.loop_depth -= 1
        if not direct:
            body = (ir.Assign(var, k), *body)
        unroll = _unroll(ctx, values, body)
        out.append(ir.Loop(cond, body, _advance(ctx, node, counter, stop, step), unroll))
        return out

    def range_args(self, node: ast.For) -> list[ir.Expr]:
        it = node.iter
        allowed = "for i in range(n), range(a, b) or range(a, b, step); index lists with x[i]"
        if isinstance(it, ast.Name):
            p = self.ctx.param(it.id)
            if p is not None and p.is_list:
                self.fail(
                    it,
                    f"kernels cannot iterate over a list directly (`for ... in {it.id}`)",
                    f"for i in range(len({it.id})): v = {it.id}[i]",
                )
        if not isinstance(it, ast.Call):
            self.fail(it, "only `for ... in range(...)` loops are supported in kernels", allowed)
        if not (self.x.is_static(it.func) and self.x.resolve_static(it.func) is builtins.range):
            self.fail(it, "only `for ... in range(...)` loops are supported in kernels", allowed)
        if it.keywords:
            self.fail(it.keywords[0], "range() takes no keyword arguments", allowed)
        if not 1 <= len(it.args) <= 3:
            self.fail(it, f"range() takes 1 to 3 arguments; got {len(it.args)}", allowed)
        values = []
        for a in it.args:
            if isinstance(a, ast.Starred):
                self.fail(a, "starred arguments (`*x`) are not supported in kernels", allowed)
            value = self.x.expr(a)
            if value.type.is_float:
                self.fail(
                    a, "range() arguments must be ints, but this is a float", "int(...) to convert"
                )
            values.append(value)
        return values


def _advance(ctx, node: ast.For, counter: str, stop: ir.Expr, step: ir.Expr) -> tuple:
    """The loop's step: `counter = counter + step`, or `stop` where that addition wraps.

    `k + step` wraps in int32 (OpIAdd is two's complement), and past the last value it could
    land back inside the range: `range(2147483640, 2147483647, 5)` ran 65,535 times instead
    of twice. A wrapped sum moved the wrong way (below `k` for a positive step, above it for
    a negative one); the true sum is then beyond every int32 and so past `stop`, and `stop`
    ends the loop just as well. Steps of +-1 and constant ranges whose next value cannot pass
    the int32 limits keep the plain `k = k + step` (what vectorize and the range analysis
    read)."""
    k = ir.LocalRef(I32, counter)
    plain = ir.Binary(I32, BinOp.ADD, k, step)
    if isinstance(step, ir.Const):
        c = int(step.value)
        if c in (1, -1, 0):
            return (ir.Assign(counter, plain),)  # k < stop <= INT32_MAX: k + 1 cannot wrap
        if isinstance(stop, ir.Const):
            after = int(stop.value) - 1 + c if c > 0 else int(stop.value) + 1 + c
            if -(2**31) <= after < 2**31:  # the last value is within 1 of stop
                return (ir.Assign(counter, plain),)
    name = ctx.hidden("next")
    ctx.declare(name, I32, node)
    nxt = ir.LocalRef(I32, name)
    if isinstance(step, ir.Const):
        wrapped: ir.Expr = ir.Compare(BOOL, CmpOp.LT if step.value > 0 else CmpOp.GT, nxt, k)
    else:  # step > 0: the sum fell below k; step < 0: it rose above (step 0 never runs this)
        down = ir.Compare(BOOL, CmpOp.LT, nxt, k)
        wrapped = ir.Compare(BOOL, CmpOp.EQ, down, ir.Compare(BOOL, CmpOp.GT, step, tr.const(0)))
    return (ir.Assign(name, plain), ir.Assign(counter, ir.Select(I32, wrapped, stop, nxt)))


def _unroll(ctx, args: list[ir.Expr], body: tuple[ir.Stmt, ...]) -> bool:
    """Whether to ask the driver to unroll: a constant trip count of at most UNROLL_MAX and a
    body that reaches a local array. Unrolled, every index of the array is a constant, which is
    what lets a driver keep the array in registers (NVIDIA's does only then; with a variable
    index the array lives in slow local memory). Other loops keep the driver's own choice."""
    from .. import passes

    folded = [passes.map_expr(a, passes.fold_expr) for a in args]
    if not all(isinstance(a, ir.Const) for a in folded):
        return False
    bounds = [int(a.value) for a in folded]  # type: ignore[union-attr]
    if (len(bounds) == 3 and bounds[2] == 0) or len(range(*bounds)) > UNROLL_MAX:
        return False
    private = {i for i, a in enumerate(ctx.shared_arrays) if a.private}
    if not private:
        return False
    for s in ir.walk_stmts(body):
        if isinstance(s, ir.SharedStore) and s.array in private:
            return True
        for e in ir.stmt_exprs(s):
            if any(isinstance(x, ir.SharedLoad) and x.array in private for x in ir.walk_exprs(e)):
                return True
    return False


def _stored_names(body: list[ast.stmt]) -> set[str]:
    names = set()
    for n in walk_body(body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names


def _loads_outside(ctx, node: ast.For, var: str) -> int:
    """How many reads of `var` the function has outside `node`'s body."""
    counts = ctx.load_counts
    if counts is None:
        counts = ctx.load_counts = {}
        for n in walk_body(ctx.fn_node.body):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
    inside = sum(
        1
        for n in walk_body(node.body)
        if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load)
    )
    # AugAssign targets read too (`v += 1` after the loop), though their ctx is Store.
    aug = sum(
        1
        for n in walk_body(ctx.fn_node.body)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == var
    )
    return counts.get(var, 0) - inside + aug


def _invariant(e: ir.Expr, changing: set[str]) -> bool:
    """Whether `e` has the same value on every iteration of a loop assigning `changing`."""
    if isinstance(e, (ir.Const, ir.ParamRef, ir.Builtin, ir.ListLen, ir.ListShape)):
        return True
    if isinstance(e, ir.LocalRef):
        return e.name not in changing
    if isinstance(e, ir.Load):
        return False  # the body may store into the list
    if isinstance(e, ir.Unary | ir.Cast):
        return _invariant(e.operand, changing)
    if isinstance(e, ir.Binary | ir.Compare):
        return _invariant(e.lhs, changing) and _invariant(e.rhs, changing)
    if isinstance(e, ir.Select):
        return all(_invariant(a, changing) for a in (e.cond, e.if_true, e.if_false))
    if isinstance(e, ir.Call):
        return all(_invariant(a, changing) for a in e.args)
    return False
