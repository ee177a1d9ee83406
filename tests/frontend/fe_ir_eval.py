"""A tiny reference interpreter of the IR (int32 wrapping, float32 rounding), for tests only.

It lets the frontend tests check meaning, not just text: a kernel run as plain Python over the
grid and its lowered IR run here must agree.
"""

from __future__ import annotations

import math

from cthreads.compiler import ir
from cthreads.compiler.frontend.typerules import to_f32, wrap_i32
from cthreads.compiler.ir import BinOp, CmpOp, UnOp


class _Return(Exception):
    pass


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _norm(t: ir.Scalar, v):
    if t.is_bool:
        return bool(v)
    if t.is_float:
        return to_f32(float(v))
    return wrap_i32(int(v))


_CALLS = {
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "isnan": math.isnan,
    "isinf": math.isinf,
    "isfinite": math.isfinite,
    "log10": math.log10,
    "exp2": lambda x: 2.0**x,
}


class Interpreter:
    def __init__(self, kernel: ir.Kernel, args: list, ids: dict[str, tuple[int, int, int]]):
        self.k, self.args, self.ids = kernel, args, ids
        self.locals: dict[str, object] = {}

    def run(self) -> None:
        try:
            self.block(self.k.body)
        except _Return:
            pass

    def block(self, body) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Assign):
            self.locals[s.name] = self.expr(s.value)
        elif isinstance(s, ir.Store):
            lst, i = self.args[s.list_index], self.expr(s.index)
            if 0 <= i < len(lst):
                lst[i] = self.expr(s.value)
        elif isinstance(s, ir.If):
            self.block(s.then if self.expr(s.cond) else s.orelse)
        elif isinstance(s, ir.Loop):
            while self.expr(s.cond):
                try:
                    self.block(s.body)
                except _Break:
                    break
                except _Continue:
                    pass
                self.block(s.step)
        elif isinstance(s, ir.Return):
            raise _Return
        elif isinstance(s, ir.Break):
            raise _Break
        elif isinstance(s, ir.Continue):
            raise _Continue
        elif isinstance(s, ir.Barrier):
            pass  # one invocation at a time: nothing to wait for
        else:  # pragma: no cover
            raise NotImplementedError(type(s))

    def expr(self, e: ir.Expr):
        t = e.type
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, ir.LocalRef):
            return self.locals[e.name]
        if isinstance(e, ir.ParamRef):
            return _norm(t, self.args[e.index])
        if isinstance(e, ir.Builtin):
            return self.ids[e.kind.value][e.axis]
        if isinstance(e, ir.ListLen):
            return len(self.args[e.list_index])
        if isinstance(e, ir.Load):
            lst, i = self.args[e.list_index], self.expr(e.index)
            return _norm(t, lst[i]) if 0 <= i < len(lst) else _norm(t, 0)
        if isinstance(e, ir.Cast):
            v = self.expr(e.operand)
            return _norm(t, int(v) if t.is_int else v != 0 if t.is_bool else v)
        if isinstance(e, ir.Unary):
            v = self.expr(e.operand)
            return {
                UnOp.NEG: lambda: _norm(t, -v),
                UnOp.NOT: lambda: not v,
                UnOp.INVERT: lambda: _norm(t, ~v),
            }[e.op]()
        if isinstance(e, ir.Compare):
            a, b = self.expr(e.lhs), self.expr(e.rhs)
            return {
                CmpOp.EQ: a == b,
                CmpOp.NE: a != b,
                CmpOp.LT: a < b,
                CmpOp.LE: a <= b,
                CmpOp.GT: a > b,
                CmpOp.GE: a >= b,
            }[e.op]
        if isinstance(e, ir.Select):
            return self.expr(e.if_true) if self.expr(e.cond) else self.expr(e.if_false)
        if isinstance(e, ir.Binary):
            return _norm(t, self.binary(e.op, t, self.expr(e.lhs), self.expr(e.rhs)))
        if isinstance(e, ir.Call):
            args = [self.expr(a) for a in e.args]
            f = _CALLS.get(e.name) or getattr(math, e.name)
            return _norm(t, f(*args))
        raise NotImplementedError(type(e))  # pragma: no cover

    @staticmethod
    def binary(op: BinOp, t: ir.Scalar, a, b):
        if op is BinOp.ADD:
            return a + b
        if op is BinOp.SUB:
            return a - b
        if op is BinOp.MUL:
            return a * b
        if op is BinOp.DIV:
            return a / b
        if op is BinOp.FLOORDIV:
            return a // b if t.is_int else math.floor(a / b)
        if op is BinOp.MOD:
            return a % b
        if op is BinOp.POW:
            return a**b if t.is_int else math.pow(a, b)
        if op is BinOp.MIN:
            return min(a, b)
        if op is BinOp.MAX:
            return max(a, b)
        if op in (BinOp.BIT_AND, BinOp.AND):
            return a & b if op is BinOp.BIT_AND else a and b
        if op in (BinOp.BIT_OR, BinOp.OR):
            return a | b if op is BinOp.BIT_OR else a or b
        if op is BinOp.BIT_XOR:
            return a ^ b
        if op is BinOp.SHL:
            return a << (b & 31)
        if op is BinOp.SHR:
            return a >> (b & 31)
        raise NotImplementedError(op)  # pragma: no cover


def run_grid(kernel: ir.Kernel, args: list, n: int, group: int = 4) -> None:
    """Run invocations 0..n-1 of `kernel` on `args` (lists are updated in place)."""
    groups = (n + group - 1) // group
    for g in range(groups):
        for t in range(min(group, n - g * group)):
            ids = {
                "GlobalIdx": (g * group + t, 0, 0),
                "ThreadIdx": (t, 0, 0),
                "BlockIdx": (g, 0, 0),
                "BlockDim": (group, 1, 1),
                "GridDim": (groups, 1, 1),
            }
            Interpreter(kernel, args, ids).run()


def run_python_grid(fn, args: list, n: int, group: int = 4) -> None:
    """The same grid, running the Python function itself (the host meaning)."""
    from cthreads.gpu.indices import invocation

    groups = (n + group - 1) // group
    for g in range(groups):
        for t in range(min(group, n - g * group)):  # exactly n invocations (no host IndexError)
            with invocation(group_id=g, local_id=t, group_size=group, num_groups=groups):
                fn(*args)
