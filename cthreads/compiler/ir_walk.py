"""Traversal of the IR (ir.py), answered once for every node kind: a node's children are its
fields typed `Expr` (an operand; `Expr | None` when optional; `tuple[Expr, ...]` for call
arguments) and, for statements, `tuple[Stmt, ...]` (nested blocks), read from the record
declarations (compiler/target.py's `Record`). A new node kind therefore needs no edit in the passes, the range analysis,
codegen's usage scan or the printer: `children`, `stmt_exprs`, `blocks`, `walk_*` and `map_*`
follow its fields.

Nothing here names a node class (the field annotations are strings under `from __future__ import
annotations`), so ir.py imports this module and re-exports its functions without a cycle.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..record import fields_of

if TYPE_CHECKING:
    from .ir import Expr, Stmt


# Which fields of a node kind hold expressions and which hold nested blocks, from the field
# annotations of the ir.py node classes (strings under `from __future__ import annotations`); one entry per class,
# computed on first use: (expr fields, expr-tuple fields, block fields), in declaration order.
_EXPR_ANNOTATIONS = frozenset(("Expr", "Expr | None"))
_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _fields(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    entry = _FIELDS.get(cls)
    if entry is None:
        exprs, tuples, blocks = [], [], []
        for name, note in fields_of(cls):
            if note in _EXPR_ANNOTATIONS:
                exprs.append(name)
            elif note == "tuple[Expr, ...]":
                tuples.append(name)
            elif note == "tuple[Stmt, ...]":
                blocks.append(name)
        entry = _FIELDS[cls] = (tuple(exprs), tuple(tuples), tuple(blocks))
    return entry


_GETTERS: dict[type, Callable] = {}


def _no_children(node) -> tuple:
    return ()


def _getter(cls: type) -> Callable:
    """A fast `children` for one node kind (the walk runs per node, in every pass)."""
    exprs, tuples, _ = _fields(cls)
    optional = any(note == "Expr | None" for name, note in fields_of(cls) if name in exprs)
    if not exprs and not tuples:
        get = _no_children
    elif tuples or optional:

        def get(node, exprs=exprs, tuples=tuples):
            out = [v for v in (getattr(node, n) for n in exprs) if v is not None]
            for n in tuples:
                out.extend(getattr(node, n))
            return tuple(out)

    elif len(exprs) == 1:
        one = operator.attrgetter(exprs[0])

        def get(node, one=one):
            return (one(node),)

    else:
        get = operator.attrgetter(*exprs)  # (a tuple, in field order)
    _GETTERS[cls] = get
    return get


def children(node: Expr | Stmt) -> tuple[Expr, ...]:
    """The expressions directly inside `node`, in field order: an expression's operands, or
    the expressions a statement evaluates itself (not those of its nested blocks)."""
    get = _GETTERS.get(type(node)) or _getter(type(node))
    return get(node)


stmt_exprs = children  # (the name the statement-side callers read best with)


def blocks(s: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The nested statement blocks of `s` (`If`: then, orelse; `Loop`: body, step)."""
    return tuple(getattr(s, n) for n in _fields(type(s))[2])


def walk_exprs(e: Expr) -> Iterator[Expr]:
    """`e` and every expression inside it, parents before children, left to right. With a stack
    of its own, not recursion: deep trees (a 2500-term sum) cost no frames and O(1) per node."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(children(x)))


def walk_stmts(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of `body` and of its nested blocks, in program order."""
    for s in body:
        yield s
        for block in blocks(s):
            yield from walk_stmts(block)


def map_children(node, fn: Callable[[Expr], Expr]):
    """`node` with `fn` applied to each direct child expression (the node itself when nothing
    changed, so unchanged sub-trees keep their identity)."""
    exprs, tuples, _ = _fields(type(node))
    changes = {}
    for n in exprs:
        v = getattr(node, n)
        if v is not None:
            new = fn(v)
            if new is not v:
                changes[n] = new
    for n in tuples:
        old = getattr(node, n)
        new = tuple(fn(v) for v in old)
        if any(a is not b for a, b in zip(new, old, strict=True)):
            changes[n] = new
    return node.replace(**changes) if changes else node


def map_expr(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Rebuild `e` bottom-up, applying `fn` to every node after its children (one Python frame
    per level of the tree, as the frontend's recursion guard counts them: frontend/depth.py)."""
    exprs, tuples, _ = _fields(type(e))
    changes = {}
    for n in exprs:
        v = getattr(e, n)
        if v is not None:
            new = map_expr(v, fn)
            if new is not v:
                changes[n] = new
    for n in tuples:
        old = getattr(e, n)
        new = tuple([map_expr(v, fn) for v in old])
        if any(x is not y for x, y in zip(new, old, strict=True)):
            changes[n] = new
    return fn(e.replace(**changes) if changes else e)


def map_stmts(body: tuple[Stmt, ...], fn: Callable[[Expr], Expr]) -> tuple[Stmt, ...]:
    """`body` with `map_expr(.., fn)` applied to every expression of every statement, nested
    blocks included."""
    out = []
    for s in body:
        s = map_children(s, lambda e: map_expr(e, fn))
        names = _fields(type(s))[2]
        if names:
            blocks = {}
            for n in names:
                blocks[n] = map_stmts(getattr(s, n), fn)
            s = s.replace(**blocks)
        out.append(s)
    return tuple(out)
