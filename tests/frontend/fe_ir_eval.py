"""A tiny reference interpreter of the IR, for tests only; what each operation computes (int32
wrapping, float32 rounding, `//`, `%`, min/max) comes from the compiler's one table,
cthreads/compiler/semantics.py.

It lets the frontend tests check meaning, not just text: a kernel run as plain Python over the
grid and its lowered IR run here must agree.
"""

from __future__ import annotations

import math

from cthreads.compiler import ir
from cthreads.compiler import semantics as S


class _Return(Exception):
    pass


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _norm(t: ir.Scalar, v):
    return S.to_type(t, float(v) if t.is_float else v)


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
        if isinstance(e, ir.Select):
            return self.expr(e.if_true) if self.expr(e.cond) else self.expr(e.if_false)
        if isinstance(e, ir.Cast):
            return S.cast(e.operand.type, t, self.expr(e.operand))
        if isinstance(e, ir.Unary):
            return S.unary(e.op.value, t, self.expr(e.operand))
        if isinstance(e, ir.Compare):
            return S.compare(e.op.value, self.expr(e.lhs), self.expr(e.rhs))
        if isinstance(e, ir.Binary):
            return S.binary(e.op.value, t, self.expr(e.lhs), self.expr(e.rhs))
        if isinstance(e, ir.Call):
            args = [self.expr(a) for a in e.args]
            f = _CALLS.get(e.name) or getattr(math, e.name)
            return _norm(t, f(*args))
        raise NotImplementedError(type(e))  # pragma: no cover


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
