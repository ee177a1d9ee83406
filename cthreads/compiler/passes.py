"""Small IR -> IR passes run after the frontend, each a pure function `Kernel -> Kernel`.

`fold_constants` (values from the one table of operation meaning, semantics.py: int32 wrapping
and float32 rounding exactly as on the device; nothing whose device result may differ), `remove_dead_code` (after return/break/continue, constant branches),
`prune_locals`, and `annotate_usage` (the contract facts: list reads/writes, workgroup use).
Atomics and stores are side effects: dead-code removal keeps them unless unreachable.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import ir
from . import semantics as S
from .frontend import typerules as tr
from .ir import BinOp, UnOp

ExprFn = Callable[[ir.Expr], ir.Expr]

# ------------------------------------------------------------------------- traversal
# (ir.py answers it; these names stay for the frontend modules that read them from here)

map_expr = ir.map_expr
map_stmts = ir.map_stmts
walk_exprs = ir.walk_exprs
walk_stmts = ir.walk_stmts
stmt_exprs = ir.stmt_exprs


# -------------------------------------------------------------------- constant folding


def _legacy(e: ir.Expr) -> bool:
    return tr.is_legacy(e.type) and all(
        tr.is_legacy(x.type)
        for x in (getattr(e, "operand", None), getattr(e, "lhs", None), getattr(e, "rhs", None))
        if x is not None
    )


def _fold(e: ir.Expr) -> ir.Expr:
    C = ir.Const
    if not _legacy(e):
        # explicit types (f64, i64, u32): only exact conversions of int / float constants
        if (
            isinstance(e, ir.Cast)
            and isinstance(e.operand, C)
            and not (e.type.is_int and e.operand.type.is_float)
        ):
            return tr.cast(e.operand, e.type)
        return e
    if isinstance(e, ir.Cast) and isinstance(e.operand, C):
        v = e.operand.value
        if (
            e.type.is_int
            and isinstance(v, float)
            and not (math.isfinite(v) and tr.INT_MIN <= int(v) <= tr.INT_MAX)
        ):
            return e  # (the device saturates, S.float_to_int; left unfolded as it always was)
        return tr.cast(e.operand, e.type)
    if isinstance(e, ir.Unary):
        x = e.operand
        if e.op is UnOp.NOT:
            if isinstance(x, C):
                return tr.const(not x.value)
            if isinstance(x, ir.Unary) and x.op is UnOp.NOT:
                return x.operand
        elif isinstance(x, C):
            return tr.const(S.UNARY[e.op.value](x.value), e.type)
        return e
    if isinstance(e, ir.Binary):
        a, b = e.lhs, e.rhs
        if e.op in (BinOp.AND, BinOp.OR):
            absorbing = e.op is BinOp.OR  # True absorbs `or`, False absorbs `and`
            for x, other in ((a, b), (b, a)):
                if isinstance(x, C):
                    return tr.const(absorbing) if x.value is absorbing else other
            return e
        if isinstance(a, C) and isinstance(b, C):
            if not S.folds(e.op.value, e.type.kind, a.value, b.value):
                return e
            return tr.const(S.binary(e.op.value, e.type, a.value, b.value), e.type)
        return e
    if isinstance(e, ir.Compare) and isinstance(e.lhs, C) and isinstance(e.rhs, C):
        return tr.const(S.compare(e.op.value, e.lhs.value, e.rhs.value))
    if isinstance(e, ir.Select):
        if isinstance(e.cond, C):
            return e.if_true if e.cond.value else e.if_false
        if e.if_true == e.if_false:
            return e.if_true
    return e


def fold_expr(e: ir.Expr) -> ir.Expr:
    """Fold one node whose children are already folded (for `map_expr`)."""
    return _fold(e)


def fold_constants(k: ir.Kernel) -> ir.Kernel:
    return k.replace(body=map_stmts(k.body, _fold))


# ------------------------------------------------------------------- dead code


def _terminates(s: ir.Stmt) -> bool:
    if isinstance(s, ir.Return | ir.Break | ir.Continue):
        return True
    if isinstance(s, ir.If):
        return bool(s.then and s.orelse) and _terminates(s.then[-1]) and _terminates(s.orelse[-1])
    return False


def _dce(body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.If):
            then, orelse = _dce(s.then), _dce(s.orelse)
            if isinstance(s.cond, ir.Const):
                expanded: tuple[ir.Stmt, ...] = then if s.cond.value else orelse
            elif not then and not orelse:
                expanded = ()  # conditions are pure
            elif not then:
                expanded = (ir.If(_fold(ir.Unary(s.cond.type, UnOp.NOT, s.cond)), orelse),)
            else:
                expanded = (ir.If(s.cond, then, orelse),)
        elif isinstance(s, ir.Loop):
            if isinstance(s.cond, ir.Const) and not s.cond.value:
                expanded = ()
            else:
                expanded = (s.replace(body=_dce(s.body), step=_dce(s.step)),)
        else:
            expanded = (s,)
        for t in expanded:
            out.append(t)
            if _terminates(t):
                return tuple(out)  # the rest of the block can never run
    return tuple(out)


def remove_dead_code(k: ir.Kernel) -> ir.Kernel:
    return k.replace(body=_dce(k.body))


def prune_locals(k: ir.Kernel) -> ir.Kernel:
    """Drop locals the (optimized) body no longer mentions."""
    used: set[str] = set()
    for s in walk_stmts(k.body):
        if isinstance(s, ir.Assign):
            used.add(s.name)
        elif isinstance(s, ir.Atomic | ir.Subgroup) and s.result is not None:
            used.add(s.result)
        for e in stmt_exprs(s):
            used.update(x.name for x in walk_exprs(e) if isinstance(x, ir.LocalRef))
    return k.replace(locals={n: t for n, t in k.locals.items() if n in used})


# ---------------------------------------------------------------------- usage facts


def annotate_usage(k: ir.Kernel) -> ir.Kernel:
    """Set `Param.reads/writes` of lists and `Kernel.observes_workgroup` from the body."""
    reads: set[int] = set()
    writes: set[int] = set()
    # shared arrays live per workgroup: the shape is fixed (local arrays live per invocation)
    observes = any(not a.private for a in k.shared)
    for s in walk_stmts(k.body):
        if isinstance(s, ir.Store):
            writes.add(s.list_index)
        elif isinstance(s, ir.Atomic) and not s.shared:
            reads.add(s.array)
            writes.add(s.array)
        elif isinstance(s, (ir.Barrier, ir.Subgroup, *ir.TILE_STMTS)):
            observes = True  # subgroups are parts of the workgroup: the shape is fixed
            if isinstance(s, ir.TileLoad) and not s.shared:
                reads.add(s.array)
            elif isinstance(s, ir.TileStore) and not s.shared:
                writes.add(s.array)
        for e in stmt_exprs(s):
            for x in walk_exprs(e):
                if isinstance(x, ir.Load):
                    reads.add(x.list_index)
                elif (
                    isinstance(x, ir.Builtin) and x.kind is not ir.BuiltinKind.GLOBAL_ID
                ) or isinstance(x, ir.SubgroupValue):
                    observes = True
    params = tuple(
        p.replace(reads=i in reads, writes=i in writes) if p.is_list else p
        for i, p in enumerate(k.params)
    )
    return k.replace(params=params, observes_workgroup=observes)


# ------------------------------------------------------------------- narrow types


def _widen(e: ir.Expr) -> ir.Expr:
    """f16 / i8 / i16 / u8 / u16 operations computed in their 32-bit type and converted back
    (ints wrap, f16 rounds to nearest even): the device needs only conversions, loads and stores
    in the narrow types, and the results are those of numpy's same-type arithmetic."""
    narrow = tr.is_narrow
    if isinstance(e, ir.Binary) and narrow(e.type):
        w = tr.wide(e.type)
        return tr.cast(ir.Binary(w, e.op, tr.cast(e.lhs, w), tr.cast(e.rhs, w)), e.type)
    if isinstance(e, ir.Unary) and narrow(e.type):
        w = tr.wide(e.type)
        return tr.cast(ir.Unary(w, e.op, tr.cast(e.operand, w)), e.type)
    if isinstance(e, ir.Compare) and narrow(e.lhs.type):
        w = tr.wide(e.lhs.type)
        return ir.Compare(e.type, e.op, tr.cast(e.lhs, w), tr.cast(e.rhs, w))
    if isinstance(e, ir.Call) and (narrow(e.type) or any(narrow(a.type) for a in e.args)):
        args = tuple(tr.cast(a, tr.wide(a.type)) for a in e.args)
        return tr.cast(ir.Call(tr.wide(e.type), e.name, args), e.type)
    return e


def widen_narrow(k: ir.Kernel) -> ir.Kernel:
    """Rewrite narrow-type arithmetic as 32-bit arithmetic plus conversions (see `_widen`)."""
    if not any(tr.is_narrow(ir.Scalar(*_type_of(name))) for name, _ in k.type_lines):
        return k
    return k.replace(body=map_stmts(k.body, _widen))


def _type_of(name: str) -> tuple[str, int]:
    kind = {"f": "float", "i": "int", "u": "uint"}.get(name[0], "bool")
    return (kind, int(name[1:])) if kind != "bool" else ("bool", 32)


def optimize(k: ir.Kernel) -> ir.Kernel:
    """The default pipeline the frontend runs (fold, dead code, locals, usage)."""
    k = fold_constants(k)
    k = remove_dead_code(k)
    k = prune_locals(k)
    return annotate_usage(k)
