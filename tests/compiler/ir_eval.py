"""A reference evaluator for IR expressions with the device semantics codegen documents.

Used by the device tests to check every operator's result: int32 wrap-around, Python floor
division and modulo (x // 0 == 0, x % 0 == x), shifts modulo 32, float32 rounding per operation,
Python min/max, saturating float -> int. Only what the test kernels need; statements are not
evaluated (the kernels under test are straight-line stores).
"""

from __future__ import annotations

import math

import numpy as np

from cthreads.compiler import ir

B, C, U = ir.BinOp, ir.CmpOp, ir.UnOp
f32 = np.float32


def wrap(x: int) -> int:
    return ((int(x) + 2**31) % 2**32) - 2**31


def f_to_i(x) -> int:
    x = float(x)
    if math.isnan(x):
        return 0
    if x >= 2**31:
        return 2**31 - 1
    if x <= -(2**31):
        return -(2**31)
    return int(x)


def _int_pow(a: int, e: int) -> int:
    if e < 0:
        return 1 if a == 1 else (-1 if e & 1 else 1) if a == -1 else 0
    return wrap(pow(a, e, 2**32))


def _float_pow(x, y):
    x, y = f32(x), f32(y)
    if y == 0 or x == 1:
        return f32(1.0)
    if x == 0:  # an odd integer power keeps the zero's sign
        odd = y == np.trunc(y) and np.trunc(y * f32(0.5)) != y * f32(0.5)
        r = f32(math.inf) if y < 0 else f32(0.0)
        return f32(math.copysign(r, x)) if odd else r
    with np.errstate(all="ignore"):
        p = np.power(np.abs(x), y, dtype=np.float32)
    if x < 0:
        if y != np.trunc(y):
            return p if np.isinf(x) else f32(math.nan)  # (-inf) ** 0.5 == inf, as in Python
        return -p if (np.trunc(y * f32(0.5)) != y * f32(0.5)) else p
    return p


def binary(op: ir.BinOp, kind: str, a, b):
    if kind == "bool":
        return {
            B.AND: a and b,
            B.OR: a or b,
            B.BIT_AND: a and b,
            B.BIT_OR: a or b,
            B.BIT_XOR: a != b,
            B.MIN: a and b,
            B.MAX: a or b,
        }[op]
    if kind == "int":
        a, b = int(a), int(b)
        if op is B.FLOORDIV:
            return 0 if b == 0 else wrap(a // b)
        if op is B.MOD:
            return a if b == 0 else a % b
        if op is B.POW:
            return _int_pow(a, b)
        if op is B.SHL:
            return wrap(a << (b & 31))
        if op is B.SHR:
            return a >> (b & 31)
        return wrap(
            {
                B.ADD: a + b,
                B.SUB: a - b,
                B.MUL: a * b,
                B.MIN: min(a, b),
                B.MAX: max(a, b),
                B.BIT_AND: a & b,
                B.BIT_OR: a | b,
                B.BIT_XOR: a ^ b,
            }[op]
        )
    a, b = f32(a), f32(b)
    with np.errstate(all="ignore"):
        if op is B.ADD:
            return a + b
        if op is B.SUB:
            return a - b
        if op is B.MUL:
            return a * b
        if op is B.DIV:
            return a / b
        if op is B.FLOORDIV:
            return np.floor(a / b)
        if op is B.MOD:
            return a - b * np.floor(a / b)
        if op is B.POW:
            return _float_pow(a, b)
        if op is B.MIN:
            return min(a, b)
        if op is B.MAX:
            return max(a, b)
    raise NotImplementedError(op)


def compare(op: ir.CmpOp, a, b) -> bool:
    if isinstance(a, bool) and op not in (C.EQ, C.NE):
        a, b = int(a), int(b)
    return bool(
        {
            C.EQ: a == b,
            C.NE: a != b,
            C.LT: a < b,
            C.LE: a <= b,
            C.GT: a > b,
            C.GE: a >= b,
        }[op]
    )


def cast(src: ir.Scalar, dst: ir.Scalar, v):
    if dst.is_bool:
        return bool(v != 0)  # for floats: unordered, so NaN is True
    if src.is_bool:
        return f32(1.0 if v else 0.0) if dst.is_float else int(bool(v))
    if dst.is_float:
        return f32(v)
    if src.is_float:
        return f_to_i(v)
    return int(v)


def evaluate(e: ir.Expr, lists: dict[int, np.ndarray], g: int):
    """Value of `e` for invocation `g`; `lists` maps list parameter index -> numpy array."""
    t = type(e)
    if t is ir.Const:
        return f32(e.value) if e.type.is_float else e.value
    if t is ir.Builtin:
        return g if e.axis == 0 else 0
    if t is ir.Load:
        i = evaluate(e.index, lists, g)
        arr = lists[e.list_index]
        if not 0 <= i < len(arr):
            return False if e.type.is_bool else f32(0) if e.type.is_float else 0
        v = arr[i]
        return bool(v) if e.type.is_bool else f32(v) if e.type.is_float else int(v)
    if t is ir.Binary:
        a, b = evaluate(e.lhs, lists, g), evaluate(e.rhs, lists, g)
        return binary(e.op, e.type.kind, a, b)
    if t is ir.Compare:
        return compare(e.op, evaluate(e.lhs, lists, g), evaluate(e.rhs, lists, g))
    if t is ir.Unary:
        v = evaluate(e.operand, lists, g)
        if e.op is U.NOT:
            return not v
        if e.op is U.INVERT:
            return ~v
        return wrap(-v) if e.type.is_int else -v
    if t is ir.Cast:
        return cast(e.operand.type, e.type, evaluate(e.operand, lists, g))
    if t is ir.Select:
        c = evaluate(e.cond, lists, g)
        return evaluate(e.if_true, lists, g) if c else evaluate(e.if_false, lists, g)
    raise NotImplementedError(t.__name__)
