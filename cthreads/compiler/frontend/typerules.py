"""Type rules of the kernel language: promotion, conversions, truthiness, literal ranges.

Python's meaning on device types: bool takes part in arithmetic as int, int meets float as
float, ints are int32 (literals must fit; arithmetic wraps), floats are float32.

The explicit types of `cthreads.gpu` (f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64) add
these rules (docs/language-extensions.md, "More scalar types"): a mix promotes to the wider type
of the same kind (i32 + i64 -> i64, f32 + f64 -> f64); an int type meeting a float type gives the
float type; an unsigned type meeting a strictly wider signed type gives the signed type (u8 + i32
-> i32, u32 + i64 -> i64); other signed/unsigned mixes are an error asking for an explicit cast;
a literal (or other compile-time constant) takes the type of the other operand (an int literal
only where it fits that type's range).

The narrow types (f16, i8, i16, u8, u16) are computed in 32 bits and converted back after every
operation (`widen_narrow` in passes.py): a same-type result wraps (ints, as numpy) or rounds to
float16 (f16), which is what a native narrow operation gives.
"""

from __future__ import annotations

import math

from .. import ir
from .. import semantics as S
from ..ir import BOOL, F16, F32, I32, Scalar

# The value rules (wrapping, rounding to float32 / float16, int ranges) are the operation
# table's (compiler/semantics.py), read here under the names the frontend has always used.
INT_MIN, INT_MAX = S.INT_MIN, S.INT_MAX
_F32_MAX = S.F32_MAX
wrap_i32 = S.wrap_i32
to_f32 = S.to_f32
to_f16 = S.to_f16


def fits_f32(value: float) -> bool:
    """False for finite values that float32 cannot hold (they would become inf)."""
    return not math.isfinite(value) or abs(value) <= _F32_MAX * (1 + 2**-25)


def is_narrow(t: Scalar) -> bool:
    """f16, i8, i16, u8, u16: types computed in 32 bits (`wide`) and converted back."""
    return t.bits < 32 and not t.is_bool


def wide(t: Scalar) -> Scalar:
    """The 32-bit type a narrow type is computed in (f16 -> f32, narrow ints -> i32)."""
    if not is_narrow(t):
        return t
    return F32 if t.is_float else I32


def int_range(t: Scalar) -> tuple[int, int]:
    return S.int_range(t.bits, t.kind == "int")


def wrap_int(value: int, t: Scalar) -> int:
    """`value` wrapped to int type `t` (two's complement for 'int', modulo 2**bits for 'uint')."""
    return S.wrap(value, t.bits, t.kind == "int")


def const(value: float | bool, t: Scalar | None = None) -> ir.Const:
    """A `Const` of Python value `value`, normalized to the device type."""
    if isinstance(value, bool) and (t is None or t.is_bool):
        return ir.Const(BOOL, value)
    exact = None
    if t is None:
        t = F32 if isinstance(value, float) else I32
        exact = value
    if t.is_bool:
        return ir.Const(BOOL, bool(value))
    if t.is_float:
        if t.bits == 64:
            return ir.Const(t, float(value))
        if t.bits == 16:
            return ir.Const(F16, to_f16(float(value)))
        return ir.Const(F32, to_f32(float(value)), exact)
    if t == I32:
        return ir.Const(t, wrap_i32(int(value)), exact)
    return ir.Const(t, wrap_int(int(value), t))


class TypeMixError(Exception):
    """Operands whose types have no common type without an explicit cast (signed and unsigned);
    the expression lowerer reports it at the expression."""

    def __init__(self, message: str, allowed: str):
        super().__init__(message)
        self.message, self.allowed = message, allowed


def is_legacy(t: Scalar) -> bool:
    """int32, float32 and bool: the types of plain `int`, `float` and `bool`."""
    return t in (I32, F32, BOOL)


def adapt(a: ir.Expr, b: ir.Expr) -> tuple[ir.Expr, ir.Expr]:
    """A literal (or constant) operand takes the explicit type of the other operand:
    `h * 16777619` with `h: u32` is u32 arithmetic, `x * 0.1` with `x: f64` uses the double 0.1."""
    a = _adapt_one(a, b.type)
    b = _adapt_one(b, a.type)
    return a, b


def _adapt_one(c: ir.Expr, other: Scalar) -> ir.Expr:
    if not isinstance(c, ir.Const) or is_legacy(other) or c.type == other or c.type.is_bool:
        return c
    value = c.exact if c.exact is not None else c.value
    if other.is_int and c.type.is_int:
        if other.bits < 32 and not (int_range(other)[0] <= int(value) <= int_range(other)[1]):
            return c  # a literal outside the narrow type's range keeps its int type
        return const(int(value), other)
    if other.is_float and other.bits != 32 and c.type.is_float:
        return const(float(value), other)
    return c


def adapt_all(values: list[ir.Expr]) -> list[ir.Expr]:
    """`adapt` over several operands (min/max, `or`/`and`): constants take the first explicit
    non-constant operand's type."""
    ref = next(
        (v.type for v in values if not isinstance(v, ir.Const) and not is_legacy(v.type)), None
    )
    return values if ref is None else [_adapt_one(v, ref) for v in values]


def arith_type(t: Scalar) -> Scalar:
    """The type a value takes part in arithmetic as (bool counts as int)."""
    return I32 if t.is_bool else t


def join(a: Scalar, b: Scalar) -> Scalar:
    """The common type of two numeric operands: the float type if either is a float (the wider
    one), else the wider int type; raises `TypeMixError` for signed with unsigned."""
    a, b = arith_type(a), arith_type(b)
    if a == b:
        return a
    if a.is_float or b.is_float:
        return max((t for t in (a, b) if t.is_float), key=lambda t: t.bits)
    if a.kind != b.kind:
        signed, unsigned = (a, b) if a.kind == "int" else (b, a)
        if unsigned.bits < signed.bits:
            return signed  # every unsigned value fits the wider signed type
        raise TypeMixError(
            f"cannot mix {type_name(a)} and {type_name(b)} (signed and unsigned) without a cast",
            "an explicit cast, e.g. u32(x) or i64(x)",
        )
    return a if a.bits >= b.bits else b


def cast(expr: ir.Expr, t: Scalar) -> ir.Expr:
    """Convert `expr` to `t` (constants are converted right away)."""
    if expr.type == t:
        return expr
    if isinstance(expr, ir.Const):
        if t.is_int and isinstance(expr.value, float):
            if not math.isfinite(expr.value):
                return ir.Cast(t, expr)  # left to the device (it saturates; NaN gives 0)
            # float -> int truncates and saturates (the device's rule), it does not wrap
            return const(S.float_to_int(expr.value, t.bits, t.kind == "int"), t)
        if t.is_float and t.bits != 32 and isinstance(expr.exact, float):
            return const(expr.exact, t)
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
    if not is_legacy(t):
        return str(t)
    return {"int": "int", "float": "float", "bool": "bool"}.get(t.kind, str(t))


def a_type(t: Scalar) -> str:
    """'an int', 'a float', 'a bool' (for messages)."""
    name = type_name(t)
    return ("an " if name[0] in "aeiouf" and name != "float" else "a ") + name
