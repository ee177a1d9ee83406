"""Type rules of the kernel language: promotion, conversions, truthiness, literal ranges.

Python's meaning on device types: bool takes part in arithmetic as int, int meets float as
float, ints are int32 (literals must fit; arithmetic wraps), floats are float32.
"""

from __future__ import annotations

import math
import struct

from .. import ir
from ..ir import BOOL, F32, I32, Scalar

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_F32_MAX = 3.4028234663852886e38


def wrap_i32(value: int) -> int:
    return ((value - INT_MIN) & 0xFFFFFFFF) + INT_MIN


def to_f32(value: float) -> float:
    """`value` rounded to the nearest float32 (overflow gives +-inf, like the device)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def fits_f32(value: float) -> bool:
    """False for finite values that float32 cannot hold (they would become inf)."""
    return not math.isfinite(value) or abs(value) <= _F32_MAX * (1 + 2**-25)


def const(value: float | bool, t: Scalar | None = None) -> ir.Const:
    """A `Const` of Python value `value`, normalized to the device type."""
    if isinstance(value, bool) and (t is None or t.is_bool):
        return ir.Const(BOOL, value)
    if t is None:
        t = F32 if isinstance(value, float) else I32
    if t.is_bool:
        return ir.Const(BOOL, bool(value))
    if t.is_float:
        return ir.Const(F32, to_f32(float(value)))
    return ir.Const(t, wrap_i32(int(value)))


def arith_type(t: Scalar) -> Scalar:
    """The type a value takes part in arithmetic as (bool counts as int)."""
    return I32 if t.is_bool else t


def join(a: Scalar, b: Scalar) -> Scalar:
    """The common type of two numeric operands: float if either is float, else int."""
    a, b = arith_type(a), arith_type(b)
    return F32 if a.is_float or b.is_float else I32


def cast(expr: ir.Expr, t: Scalar) -> ir.Expr:
    """Convert `expr` to `t` (constants are converted right away)."""
    if expr.type == t:
        return expr
    if isinstance(expr, ir.Const):
        if t.is_int and isinstance(expr.value, float):
            if not math.isfinite(expr.value):
                return ir.Cast(t, expr)  # left to the device (undefined there, as in C)
            return const(int(expr.value), t)
        return const(expr.value, t)
    return ir.Cast(t, expr)


def truthy(expr: ir.Expr) -> ir.Expr:
    """`bool(expr)` as Python defines it for scalars (x != 0; NaN is true)."""
    if expr.type.is_bool:
        return expr
    zero = const(0.0 if expr.type.is_float else 0, expr.type)
    if isinstance(expr, ir.Const):
        return const(bool(expr.value))
    return ir.Compare(BOOL, ir.CmpOp.NE, expr, zero)


def type_name(t: Scalar) -> str:
    return {"int": "int", "float": "float", "bool": "bool"}.get(t.kind, str(t))


def a_type(t: Scalar) -> str:
    """'an int', 'a float', 'a bool' (for messages)."""
    name = type_name(t)
    return ("an " if name[0] in "aeiou" else "a ") + name
