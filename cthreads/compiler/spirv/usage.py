"""One walk over a kernel body recording what codegen must set up before emitting it.

Which lists are loaded, stored or measured, which scalar parameters and builtins are read,
whether a barrier occurs: codegen declares only what is used and loads every parameter once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir


@dataclass
class Usage:
    loads: set[int] = field(default_factory=set)  # list param indices read
    stores: set[int] = field(default_factory=set)  # list param indices written
    lens: set[int] = field(default_factory=set)  # lists whose length is needed (bounds or len())
    scalars: set[int] = field(default_factory=set)  # scalar params read (ParamRef)
    builtins: set[tuple[ir.BuiltinKind, int]] = field(default_factory=set)
    barrier: bool = False

    @property
    def observes_workgroup(self) -> bool:
        """True when the body can tell the physical workgroup shape (SPEC §4)."""
        return self.barrier or any(k is not ir.BuiltinKind.GLOBAL_ID for k, _ in self.builtins)


def scan(kernel: ir.Kernel) -> Usage:
    u = Usage()
    _stmts(kernel.body, u)
    u.lens |= u.loads | u.stores
    return u


def _stmts(stmts: tuple[ir.Stmt, ...], u: Usage) -> None:
    for s in stmts:
        t = type(s)
        if t is ir.Assign:
            _expr(s.value, u)
        elif t is ir.Store:
            u.stores.add(s.list_index)
            _expr(s.index, u)
            _expr(s.value, u)
        elif t is ir.If:
            _expr(s.cond, u)
            _stmts(s.then, u)
            _stmts(s.orelse, u)
        elif t is ir.Loop:
            _expr(s.cond, u)
            _stmts(s.body, u)
            _stmts(s.step, u)
        elif t is ir.Barrier:
            u.barrier = True


def _expr(e: ir.Expr, u: Usage) -> None:
    t = type(e)
    if t is ir.Const or t is ir.LocalRef:
        return
    if t is ir.ParamRef:
        u.scalars.add(e.index)
    elif t is ir.Builtin:
        u.builtins.add((e.kind, e.axis))
    elif t is ir.ListLen:
        u.lens.add(e.list_index)
    elif t is ir.Load:
        u.loads.add(e.list_index)
        _expr(e.index, u)
    elif t is ir.Unary or t is ir.Cast:
        _expr(e.operand, u)
    elif t is ir.Binary or t is ir.Compare:
        _expr(e.lhs, u)
        _expr(e.rhs, u)
    elif t is ir.Select:
        _expr(e.cond, u)
        _expr(e.if_true, u)
        _expr(e.if_false, u)
    elif t is ir.Call:
        for a in e.args:
            _expr(a, u)
