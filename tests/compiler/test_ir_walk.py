"""ir.py answers its own traversal: every node kind's children come from its field declarations,
so the passes, the range analysis, codegen's usage scan and the printer follow a new node kind
without an edit of their own."""

from __future__ import annotations


from cthreads.compiler import ir, ir_walk
from cthreads.compiler.ir import F32, I32
from cthreads.record import fields_of

X = ir.LocalRef(I32, "x")
Y = ir.LocalRef(F32, "y")


def _subclasses(base: type) -> list[type]:
    out, todo = [], [base]
    while todo:
        for c in todo.pop().__subclasses__():
            out.append(c)
            todo.append(c)
    return out


def test_every_field_naming_a_node_is_a_child_or_a_block():
    # a field declared with a node type the walker does not recognise would be skipped by
    # every pass: each annotation that mentions Expr or Stmt must be classified
    for cls in _subclasses(ir.Expr) + _subclasses(ir.Stmt):
        exprs, tuples, blocks = ir_walk._fields(cls)
        for name, note in fields_of(cls):
            if "Expr" in note or "Stmt" in note:
                assert name in exprs + tuples + blocks, (cls.__name__, name, note)


def test_children_in_field_order():
    a = ir.Atomic(ir.AtomicOp.COMPARE_EXCHANGE, False, 0, X, ir.Const(I32, 1), ir.Const(I32, 2))
    assert ir.children(a) == (X, ir.Const(I32, 1), ir.Const(I32, 2))
    assert ir.children(ir.Atomic(ir.AtomicOp.ADD, False, 0, X, X)) == (X, X)  # no comparator
    sel = ir.Select(F32, ir.Const(ir.BOOL, True), Y, ir.Const(F32, 0.0))
    assert ir.children(sel) == (sel.cond, Y, sel.if_false)
    call = ir.Call(F32, "atan2", (Y, Y))
    assert ir.children(call) == (Y, Y)
    assert ir.children(ir.Subgroup(ir.SubgroupOp.ELECT, ir.BOOL, "e")) == ()
    assert ir.children(ir.Const(I32, 3)) == ()


def test_blocks_and_walk_stmts_reach_nested_statements():
    inner = ir.Assign("x", ir.Const(I32, 1))
    loop = ir.Loop(ir.Const(ir.BOOL, True), (ir.If(X, (inner,), (ir.Break(),)),), (ir.Continue(),))
    assert ir.blocks(loop) == (loop.body, loop.step)
    kinds = [type(s).__name__ for s in ir.walk_stmts((loop,))]
    assert kinds == ["Loop", "If", "Assign", "Break", "Continue"]


def test_map_stmts_rewrites_every_expression_and_keeps_untouched_nodes():
    load = ir.Load(F32, 0, X)
    body = (
        ir.If(
            ir.Compare(ir.BOOL, ir.CmpOp.LT, X, ir.Const(I32, 4)),
            (ir.Store(0, X, ir.Call(F32, "sqrt", (load,))),),
            (ir.Subgroup(ir.SubgroupOp.BROADCAST, F32, "r", load, X),),
        ),
    )

    def bump(e: ir.Expr) -> ir.Expr:
        return ir.Const(I32, 7) if e == X else e

    out = ir.map_stmts(body, bump)
    seen = [e for s in ir.walk_stmts(out) for c in ir.children(s) for e in ir.walk_exprs(c)]
    assert X not in seen and ir.Const(I32, 7) in seen
    assert len([e for e in seen if isinstance(e, ir.Load)]) == 2
    untouched = (ir.Assign("y", Y),)
    assert ir.map_stmts(untouched, bump)[0] is untouched[0]  # identity kept where nothing changed


def test_map_expr_is_bottom_up():
    order = []
    e = ir.Binary(I32, ir.BinOp.ADD, X, ir.Unary(I32, ir.UnOp.NEG, ir.Const(I32, 1)))
    ir.map_expr(e, lambda n: order.append(type(n).__name__) or n)
    assert order == ["LocalRef", "Const", "Unary", "Binary"]


class _Twice(ir.Expr):
    """A node kind none of the consumers knows by name: they must still reach its operand."""

    operand: Expr


Expr = ir.Expr  # (the annotation above is the string "Expr", as in ir.py)


def test_consumers_follow_a_node_kind_they_do_not_name():
    from cthreads.compiler import passes, ranges
    from cthreads.compiler.spirv import usage

    load = ir.Load(I32, 1, ir.LocalRef(I32, "i"))
    shared = ir.SharedLoad(I32, 0, ir.Const(I32, 3))
    k = ir.Kernel(
        "k",
        (ir.Param("n", I32), ir.Param("xs", ir.ListType(I32))),
        locals={"i": I32, "y": I32, "dead": I32},
        body=(
            ir.Assign("i", ir.Const(I32, 0)),
            ir.Assign("y", _Twice(I32, ir.Binary(I32, ir.BinOp.ADD, load, shared))),
        ),
        shared=(ir.SharedArray("tile", I32, 4),),
    )
    u = usage.scan(k)
    assert u.loads == {1}  # the Load inside the unknown node
    assert set(passes.prune_locals(k).locals) == {"i", "y"}
    assert passes.annotate_usage(k).params[1].reads
    assert id(shared) in ranges.shared_accesses_in_range(k)
    folded = passes.fold_constants(
        k.replace(
            body=(
                ir.Assign(
                    "y",
                    _Twice(I32, ir.Binary(I32, ir.BinOp.ADD, ir.Const(I32, 2), ir.Const(I32, 3))),
                ),
            ),
        )
    )
    assert folded.body[0].value == _Twice(I32, ir.Const(I32, 5))


def test_deep_trees_cost_one_frame_per_level():
    # frontend/depth.py budgets the passes a frame per level of an expression: a 700-level
    # sum must fold, walk, scan and print under the default limit of 1000 frames
    import sys

    from cthreads.compiler import passes, printer
    from cthreads.compiler.spirv import usage

    assert sys.getrecursionlimit() <= 1000
    e: ir.Expr = ir.Load(I32, 0, X)
    for j in range(700):
        e = ir.Binary(I32, ir.BinOp.ADD, e, ir.Const(I32, j))
    k = ir.Kernel("k", (ir.Param("xs", ir.ListType(I32)),), {"x": I32}, (ir.Store(0, X, e),))
    assert len(list(ir.walk_exprs(e))) == 1 + 1 + 2 * 700
    assert passes.optimize(k).params[0].reads
    assert usage.scan(k).loads == {0}
    assert printer.format_kernel(k).count("(add i32") == 700
