"""A reference evaluator for IR expressions, reading the device meaning of every operation from
the compiler's one table (cthreads/compiler/semantics.py).

Used by the device tests to check every operator's result against the device: int32
wrap-around, Python floor division and modulo (x // 0 == 0, x % 0 == x), shifts modulo 32,
float32 rounding per operation, Python min/max, saturating float -> int. Only what the test
kernels need; statements are not evaluated (the kernels under test are straight-line stores).
"""

from __future__ import annotations

import numpy as np

from cthreads.compiler import ir
from cthreads.compiler import semantics as S

wrap = S.wrap


def f_to_i(x) -> int:
    return S.float_to_int(float(x))


def _value(t: ir.Scalar, v):
    """A numpy element (or Python value) as the table's value of type `t`."""
    if t.is_bool:
        return bool(v)
    return S.to_type(t, float(v) if t.is_float else int(v))


def evaluate(e: ir.Expr, lists: dict[int, np.ndarray], g: int):
    """Value of `e` for invocation `g`; `lists` maps list parameter index -> numpy array."""
    t = type(e)
    if t is ir.Const:
        return e.value
    if t is ir.Builtin:
        return g if e.axis == 0 else 0
    if t is ir.Load:
        i = evaluate(e.index, lists, g)
        arr = lists[e.list_index]
        return _value(e.type, arr[i] if 0 <= i < len(arr) else 0)  # out of range reads zero
    if t is ir.Select:
        c = evaluate(e.cond, lists, g)
        return evaluate(e.if_true, lists, g) if c else evaluate(e.if_false, lists, g)
    args = [evaluate(c, lists, g) for c in ir.children(e)]
    if t is ir.Binary:
        return S.binary(e.op.value, e.type, *args)
    if t is ir.Compare:
        return S.compare(e.op.value, *args)
    if t is ir.Unary:
        return S.unary(e.op.value, e.type, *args)
    if t is ir.Cast:
        return S.cast(e.operand.type, e.type, *args)
    raise NotImplementedError(t.__name__)
