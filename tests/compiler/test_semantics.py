"""The one table of operation meaning (cthreads/compiler/semantics.py): the device rules codegen
implements, and constant folding reading them (a folded constant is the device's value)."""

from __future__ import annotations

import math

import pytest

from cthreads.compiler import ir, passes
from cthreads.compiler import semantics as S
from cthreads.compiler.ir import BOOL, F32, I32

B = ir.BinOp


def _bits(x: float) -> tuple[float, float]:
    return (x, math.copysign(1.0, x))


@pytest.mark.parametrize(
    ("op", "a", "b", "want"),
    [
        ("floordiv", 7, 0, 0),
        ("mod", 7, 0, 7),
        ("floordiv", -(2**31), -1, -(2**31)),  # wraps
        ("mod", -7, 2, 1),
        ("floordiv", -7, 2, -4),
        ("shl", 1, 33, 2),  # count modulo 32
        ("shr", -8, 1, -4),  # arithmetic
        ("pow", 3, 21, 3**21 - 2**32 * 2),  # wraps: 10460353203 mod 2**32, as int32
        ("pow", 2, -1, 0),
        ("pow", -1, -3, -1),
        ("add", 2**31 - 1, 1, -(2**31)),
    ],
)
def test_int32_rules(op, a, b, want):
    assert S.binary(op, I32, a, b) == S.wrap(want)


def test_float_rules():
    assert S.binary("div", F32, 1.0, 0.0) == math.inf
    assert math.isnan(S.binary("div", F32, 0.0, 0.0))
    assert _bits(S.binary("mod", F32, -8.0, -2.0)) == _bits(-0.0)  # the divisor's sign
    assert S.binary("mod", F32, -1.0, 3.0) == S.to_f32(2.0)
    assert math.isnan(S.binary("mod", F32, 1.0, 0.0))
    assert S.binary("floordiv", F32, -1.0, 3.0) == -1.0
    # min/max are Python's: a NaN first argument sticks, a NaN second one is skipped
    assert math.isnan(S.binary("min", F32, math.nan, 1.0))
    assert S.binary("min", F32, 1.0, math.nan) == 1.0
    assert _bits(S.binary("min", F32, 0.0, -0.0)) == _bits(0.0)  # ties keep the first
    assert S.binary("add", F32, 1.0, 2.0**-30) == 1.0  # float32 rounding
    assert _bits(S.binary("pow", F32, -0.0, 3.0)) == _bits(-0.0)
    assert S.binary("pow", F32, 0.0, -1.0) == math.inf
    assert math.isnan(S.binary("pow", F32, -2.0, 0.5))
    assert S.binary("pow", F32, -math.inf, 0.5) == math.inf
    assert S.binary("pow", F32, math.nan, 0.0) == 1.0


def test_conversions_saturate():
    assert S.cast(F32, I32, math.nan) == 0
    assert S.cast(F32, I32, 3e9) == 2**31 - 1
    assert S.cast(F32, I32, -3e9) == -(2**31)
    assert S.cast(F32, I32, -2.7) == -2
    assert S.cast(F32, BOOL, math.nan) is True
    assert S.cast(BOOL, F32, True) == 1.0
    assert S.cast(ir.I64, ir.U32, -1) == 2**32 - 1


def test_compare_and_unary():
    assert S.compare("ne", math.nan, math.nan) is True
    assert S.compare("lt", math.nan, 1.0) is False
    assert S.unary("neg", I32, -(2**31)) == -(2**31)
    assert S.unary("invert", ir.U32, 0) == 2**32 - 1


def _fold(op: ir.BinOp, t: ir.Scalar, a, b) -> ir.Expr:
    e = ir.Binary(t, op, ir.Const(t, a), ir.Const(t, b))
    return passes.fold_expr(e)


@pytest.mark.parametrize(
    ("op", "t", "a", "b"),
    [
        (B.ADD, I32, 2**31 - 1, 5),
        (B.MUL, I32, 65537, 65537),
        (B.FLOORDIV, I32, -7, 2),
        (B.MOD, I32, -7, -2),
        (B.POW, I32, 7, 13),
        (B.SHL, I32, 3, 35),
        (B.MIN, I32, 4, -4),
        (B.DIV, F32, 1.0, 3.0),
        (B.MUL, F32, 3e38, 10.0),
        (B.MAX, F32, -0.0, 0.0),
        (B.BIT_XOR, BOOL, True, True),
    ],
)
def test_folding_gives_the_table_value(op, t, a, b):
    folded = _fold(op, t, a, b)
    assert isinstance(folded, ir.Const)
    assert _bits(float(folded.value)) == _bits(float(S.binary(op.value, t, a, b)))


@pytest.mark.parametrize(
    ("op", "t", "a", "b"),
    [
        (B.FLOORDIV, I32, 1, 0),  # defined (0), but left to the device's instructions
        (B.POW, I32, 2, -1),
        (B.DIV, F32, 1.0, 0.0),
        (B.FLOORDIV, F32, 1.0, 3.0),  # the quotient rounds per driver
        (B.MOD, F32, 1.0, 3.0),
        (B.POW, F32, 2.0, 0.5),
        (B.MIN, F32, math.nan, 1.0),
        (B.MIN, BOOL, True, False),
    ],
)
def test_folding_leaves_what_may_differ_to_the_device(op, t, a, b):
    assert not S.folds(op.value, t.kind, a, b)
    assert isinstance(_fold(op, t, a, b), ir.Binary)
