"""What each IR operation computes on the device, as plain Python: the one table of meaning.

The device behaviour codegen implements (spirv/codegen_expr.py, codegen_math.py; written down in
docs/language.md) is the truth here: ints wrap to their width after every operation, `//` floors
and `x // 0 == 0`, `%` takes the divisor's sign and `x % 0 == x`, shift counts are taken modulo
the width, int `**` with a negative exponent is `int(a ** e)`; float `//` is `floor(a / b)` and
`%` is `a - b * floor(a / b)` (each step rounded to the type, a zero remainder with the
divisor's sign), `min`/`max` are Python's (`b if b < a else a`: a NaN first argument sticks, a
NaN second one is skipped), comparisons are ordered except `!=`, float -> int truncates and
saturates (NaN -> 0). Float values are Python floats already rounded to their type (f32, f16,
or f64 itself); results are rounded with `to_type` by the caller, once per operation.

Imports nothing from cthreads: constant folding (passes.py), the type rules' value helpers
(frontend/typerules.py), the emulator (cthreads.testing) and the test evaluators all read it
without an import cycle. Operations are keyed by the IR enums' values (`ir.BinOp.ADD.value` is
"add"), and types are read duck-typed (`.kind`, `.bits` of `ir.Scalar`).

`folds(op, kind, a, b)` says where a compile-time result is the device's on every device (the
rest, e.g. float `//` whose quotient rounds per driver, is left to the device's instructions).
"""

from __future__ import annotations

import math
import struct

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
F32_MAX = 3.4028234663852886e38

_F32 = struct.Struct("<f")
_F16 = struct.Struct("<e")


# ----------------------------------------------------------------------------- values


def wrap_i32(value: int) -> int:
    """Python int -> int32 two's complement."""
    return ((value - INT_MIN) & 0xFFFFFFFF) + INT_MIN


def wrap(value: int, bits: int = 32, signed: bool = True) -> int:
    """`value` wrapped to an int of `bits` (two's complement when signed, else modulo)."""
    v = int(value) & ((1 << bits) - 1)
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_range(bits: int, signed: bool) -> tuple[int, int]:
    if not signed:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def to_f32(value: float) -> float:
    """`value` rounded to the nearest float32 (ties to even; overflow gives +-inf)."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def to_f16(value: float) -> float:
    """`value` rounded to the nearest float16 (ties to even; overflow gives +-inf)."""
    try:
        return _F16.unpack(_F16.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def to_type(t, value):
    """`value` as a value of scalar type `t` (wrapped, rounded, or made a bool)."""
    if t.kind == "bool":
        return bool(value)
    if t.kind == "float":
        if t.bits == 32:
            return to_f32(float(value))
        return to_f16(float(value)) if t.bits == 16 else float(value)
    return wrap(int(value), t.bits, t.kind == "int")


def float_to_int(x: float, bits: int = 32, signed: bool = True) -> int:
    """float -> int as the device converts: truncate toward zero, saturate, NaN -> 0."""
    if math.isnan(x):
        return 0
    lo, hi = int_range(bits, signed)
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def cast(src, dst, v):
    """Conversion of value `v` of type `src` to type `dst` (ir.Cast)."""
    if dst.kind == "bool":
        return v != 0  # floats: unordered, bool(nan) is True
    if src.kind == "bool":
        return to_type(dst, 1 if v else 0)
    if dst.kind == "float":
        if dst.bits == 16 and src.kind == "float" and src.bits == 64:
            v = to_f32(v)  # f64 -> f16 goes through f32 on the device (rounded twice)
        return to_type(dst, float(v) if src.kind == "float" else v)
    if src.kind == "float":
        return float_to_int(v, dst.bits, dst.kind == "int")
    return wrap(v, dst.bits, dst.kind == "int")


# ------------------------------------------------------------------------------- ints


def int_floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else a // b  # (INT_MIN // -1 overflows: the caller's wrap)


def int_mod(a: int, b: int) -> int:
    return a if b == 0 else a % b  # keeps a == (a // b) * b + a % b for b == 0


def int_pow(a: int, e: int) -> int:
    """Exact and wrapping (modulo 2**64 here, wrapped to the type by the caller); a negative
    exponent gives `int(a ** e)`: 1 for a == 1, +-1 for a == -1, else 0 (also a == 0)."""
    if e < 0:
        if a == 1:
            return 1
        if a == -1:
            return -1 if e & 1 else 1
        return 0
    return pow(a, e, 1 << 64)


def py_min(a, b):
    """Python's `min(a, b)`: `b` only when it is strictly smaller."""
    return b if b < a else a


def py_max(a, b):
    return b if b > a else a


def shl(a: int, s: int, bits: int = 32) -> int:
    """`a << s` with the count modulo the width (unwrapped: the caller wraps)."""
    return a << (s & (bits - 1))


def shr(a: int, s: int, bits: int = 32) -> int:
    return a >> (s & (bits - 1))  # arithmetic for signed values, logical for unsigned


# The operations whose exact value is the same Python expression for ints and floats (the
# caller wraps or rounds it to the type).
_EXACT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "min": py_min,
    "max": py_max,
}

INT_BINARY = {
    **_EXACT_BINARY,
    "floordiv": int_floordiv,
    "mod": int_mod,
    "pow": int_pow,
    "bit_and": lambda a, b: a & b,
    "bit_or": lambda a, b: a | b,
    "bit_xor": lambda a, b: a ^ b,
}


# ----------------------------------------------------------------------------- floats


def float_div(a: float, b: float) -> float:
    """IEEE `a / b` in double (correctly rounded to the type by the caller); by zero: +-inf,
    NaN for 0 / 0 and NaN / 0."""
    if b == 0.0:
        if math.isnan(a) or a == 0.0:
            return math.nan
        return -math.inf if (a < 0) != (math.copysign(1.0, b) < 0) else math.inf
    return a / b


def _floor(x: float) -> float:
    return x if not math.isfinite(x) or x == 0.0 else float(math.floor(x))


def float_floordiv(a: float, b: float, rnd=to_f32) -> float:
    """`floor(a / b)` of the quotient rounded to the type (`rnd`)."""
    return _floor(rnd(float_div(a, b)))


def float_mod(a: float, b: float, rnd=to_f32) -> float:
    """`a - b * floor(a / b)`, each step rounded to the type; a zero remainder takes the
    divisor's sign (Python's `-8.0 % -2.0 == -0.0`); NaN for b == 0."""
    r = rnd(a - rnd(b * float_floordiv(a, b, rnd)))
    if r == 0.0:
        return -0.0 if b < 0 else 0.0
    return r


def float_pow(x: float, y: float) -> float:
    """float `**` with Python's values where GLSL Pow is undefined: x ** 0 == 1 == 1 ** y,
    0 ** y is 0 (y > 0) or inf (y < 0) with an odd integral y keeping the zero's sign, a
    negative base takes the sign of an integral exponent's parity and gives NaN with a
    fractional one (except -inf), NaN operands propagate."""
    if y == 0.0 or x == 1.0:
        return 1.0
    if math.isnan(x) or math.isnan(y):
        return math.nan
    odd = math.isfinite(y) and y == math.trunc(y) and math.trunc(y * 0.5) != y * 0.5
    if x == 0.0:
        r = math.inf if y < 0 else 0.0
        return math.copysign(r, x) if odd else r
    try:
        p = math.pow(abs(x), y)
    except OverflowError:
        p = math.inf
    if x < 0:
        if not math.isfinite(y) or y == math.trunc(y):
            return -p if odd else p
        return p if math.isinf(x) else math.nan  # (-inf) ** 0.5 == inf, as in Python
    return p


FLOAT_BINARY = {
    **_EXACT_BINARY,
    "div": float_div,
    "floordiv": float_floordiv,
    "mod": float_mod,
    "pow": float_pow,
}

BOOL_BINARY = {
    "and": lambda a, b: a and b,
    "or": lambda a, b: a or b,
    "bit_and": lambda a, b: a and b,
    "bit_or": lambda a, b: a or b,
    "bit_xor": lambda a, b: a != b,
    "min": lambda a, b: a and b,
    "max": lambda a, b: a or b,
}

# Ordered comparisons; `!=` is true when either side is NaN (Python's nan != nan); bools order
# as ints (False < True), which Python's bools already do.
COMPARE = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}

UNARY = {
    "neg": lambda a: -a,  # ints wrap (the caller's to_type): -INT_MIN == INT_MIN
    "not": lambda a: not a,
    "invert": lambda a: ~a,
}


def binary(op: str, t, a, b):
    """The device result of binary op `op` (an `ir.BinOp` value) on operands of type `t`."""
    if t.kind == "bool":
        return BOOL_BINARY[op](bool(a), bool(b))
    if t.kind == "float":
        if op in ("floordiv", "mod"):
            rnd = lambda v: to_type(t, v)  # noqa: E731 (the quotient rounds to the type)
            return to_type(t, FLOAT_BINARY[op](a, b, rnd))
        return to_type(t, FLOAT_BINARY[op](a, b))
    if op in ("shl", "shr"):
        return to_type(t, (shl if op == "shl" else shr)(a, b, t.bits))
    return to_type(t, INT_BINARY[op](a, b))


def unary(op: str, t, a):
    return to_type(t, UNARY[op](a))


def compare(op: str, a, b) -> bool:
    return bool(COMPARE[op](a, b))


# ------------------------------------------------------------------ compile-time folding
# Where a constant operation's result is the device's on every device. Ints: all but `//` and
# `%` by zero and `**` with a negative exponent (defined above, but left to the device's own
# instructions, as they always were). Floats: only the operations whose float32 result is the
# correctly rounded double result (+ - * /, min/max without NaN): `//`, `%` and `**` go through
# the driver's division and pow.

_INT_FOLDS = {
    "floordiv": lambda a, b: b != 0,
    "mod": lambda a, b: b != 0,
    "pow": lambda a, b: b >= 0,
}
_INT_FOLDABLE = frozenset((*INT_BINARY, "shl", "shr"))
_FLOAT_FOLDS = {
    "add": lambda a, b: True,
    "sub": lambda a, b: True,
    "mul": lambda a, b: True,
    "div": lambda a, b: b != 0,
    "min": lambda a, b: not (math.isnan(a) or math.isnan(b)),
    "max": lambda a, b: not (math.isnan(a) or math.isnan(b)),
}
_BOOL_FOLDABLE = frozenset(("bit_and", "bit_or", "bit_xor"))


def folds(op: str, kind: str, a, b) -> bool:
    """Whether binary `op` on constants `a`, `b` of type kind `kind` may be folded."""
    if kind == "bool":
        return op in _BOOL_FOLDABLE
    if kind == "float":
        test = _FLOAT_FOLDS.get(op)
        return test is not None and test(a, b)
    return op in _INT_FOLDABLE and _INT_FOLDS.get(op, lambda a, b: True)(a, b)
