"""The emulator's type system: the kernel language's scalar types as the translator names them,
their promotion (`join`), implicit widening, conversions as generated code (`coerce`,
`convert_explicit`), and literals that take the explicit type of the other operand (`Lit`,
`adapts`). translate.py and its statement/call/memory/subgroup parts use these.
"""

from __future__ import annotations

import math
import re

from . import semantics as S
from .semantics import EmulationError

# explicit types of cthreads.gpu: f32/i32 are float/int; f64, i64, u32 are types of their own
EXPLICIT = {
    "f32": "float", "i32": "int", "f64": "f64", "i64": "i64", "u32": "u32", "u64": "u64",
    "f16": "f16", "i8": "i8", "u8": "u8", "i16": "i16", "u16": "u16",
}  # fmt: skip
WIDE_INTS = ("i64", "u32", "u64")
NARROW_INTS = ("i8", "u8", "i16", "u16")  # computed as int32, wrapped after every operation
NARROW = ("f16",) + NARROW_INTS
XTYPES = ("f64", "f16") + WIDE_INTS + NARROW_INTS  # the explicit types beyond int/float/bool
_ZERO = {"int": "0", "float": "0.0", "bool": "False", "f64": "0.0", "f16": "0.0"}
_ZERO.update({t: "0" for t in WIDE_INTS + NARROW_INTS})
# (kind, bits) of every type, for promotion
TYPE_INFO = {
    "int": ("int", 32), "float": ("float", 32), "f64": ("float", 64), "f16": ("float", 16),
    "i64": ("int", 64), "u32": ("uint", 32), "u64": ("uint", 64), "i8": ("int", 8),
    "u8": ("uint", 8), "i16": ("int", 16), "u16": ("uint", 16),
}  # fmt: skip


def narrow_wrap(code: str, t: str) -> str:
    """The 32-bit result `code` converted back to narrow type `t`."""
    return f"_ct_h({code})" if t == "f16" else f"_ct_w({code}, {t!r})"


def widening(src: str, dst: str) -> bool:
    """Implicit conversions (assignments): int/bool to any float, a wider type of one kind,
    unsigned into a wider signed type."""
    if src == "bool":
        return dst != "bool"
    (ks, bs), (kd, bd) = TYPE_INFO[src], TYPE_INFO[dst]
    if kd == "float":
        return ks != "float" or bs < bd
    return bs < bd and (ks == kd or (ks == "uint" and kd == "int"))


class Lit(str):
    """Generated code of a literal, with its exact Python value: next to an f64 / i64 / u32
    operand a literal takes that type (the compiler's rule)."""

    exact: int | float


def _lit(code: str, exact) -> Lit:
    out = Lit(code)
    out.exact = exact
    return out


def _is_float(t: str) -> bool:
    return t in ("float", "f64", "f16")


def _is_int(t: str) -> bool:
    return t == "int" or t in WIDE_INTS or t in NARROW_INTS


_INT_LITERAL = re.compile(r"-?[0-9]+")


def wrapped(code: str) -> str:
    """Inline int32 wrap of a Python int expression (cheaper than a call)."""
    return f"((({code}) + 0x80000000 & 0xFFFFFFFF) - 0x80000000)"


def coerce(code: str, src: str, dst: str) -> str:
    if src == dst:
        return code
    if src in XTYPES or dst in XTYPES:
        return convert_explicit(code, src, dst)
    if dst == "float":
        if _INT_LITERAL.fullmatch(code):  # fold constants: they are common in kernels
            return _float_literal(S.f32(float(int(code))))
        return f"_ct_i2f({code})"
    if dst == "int":
        return f"_ct_int({code})"  # from bool
    if dst == "bool":
        return f"_ct_bool({code})"
    raise AssertionError((src, dst))


def convert_explicit(code: str, src: str, dst: str) -> str:
    """Conversions involving f64 / i64 / u32 (any pair, as the explicit casts)."""
    if isinstance(code, Lit):
        if dst in ("f64", "f16") or (dst == "float" and src in ("f64", "f16")):
            v = float(code.exact)
            r = v if dst == "f64" else S.f16(v) if dst == "f16" else S.f32(v)
            return _lit(_float_literal(r), r if dst == "f16" else v)
        if _is_int(dst) and not isinstance(code.exact, float):
            w = S.wrap_to(int(code.exact), dst)
            return _lit(repr(w), w if dst in NARROW_INTS else int(code.exact))
    if dst == "bool":
        return f"_ct_bool({code})"
    if dst == "f64":
        return f"_ct_dbl({code})"
    if dst == "f16":
        return f"_ct_h({code})"
    if dst == "float":
        return f"_ct_f({code})" if _is_float(src) else f"_ct_i2f({code})"
    # an int type
    if _is_float(src):
        return f"_ct_f2w({code}, {dst!r})"
    if src == "bool":
        return f"_ct_int({code})"
    return f"_ct_w({code}, {dst!r})"


def join(a: str, b: str) -> str:
    """The common type of two operands (Python promotion: bool < int < float; explicit
    types: the wider of one kind, the float type over an int type, no signed/unsigned mix)."""
    if a in XTYPES or b in XTYPES:
        a, b = ("int" if a == "bool" else a), ("int" if b == "bool" else b)
        if a == b:
            return a
        (ka, ba), (kb, bb) = TYPE_INFO[a], TYPE_INFO[b]
        if ka == "float" or kb == "float":
            floats = [(TYPE_INFO[t][1], t) for t in (a, b) if TYPE_INFO[t][0] == "float"]
            return max(floats)[1]
        if ka != kb:
            (bs, s_), (bu, _) = ((ba, a), (bb, b)) if ka == "int" else ((bb, b), (ba, a))
            if bu < bs:
                return s_  # unsigned into a wider signed type
            raise EmulationError(f"cannot mix {a} and {b} (signed and unsigned) without a cast")
        return a if ba >= bb else b
    if "float" in (a, b):
        return "float"
    if "int" in (a, b):
        return "int"
    return "bool"


def _adapts(lit: Lit, t: str, other: str) -> bool:
    """A literal takes the explicit type of the other operand: floats only a float type (not
    float32), ints an int type whose range holds them (narrow ints) or any int type."""
    if other not in XTYPES:
        return False
    if other in ("f64", "f16"):
        return _is_float(t) or t == "int"
    if t != "int":
        return False
    if other in NARROW_INTS:
        lo, hi = S._RANGES[other]
        return lo <= int(lit.exact) <= hi
    return True


def _float_literal(x: float) -> str:
    if math.isnan(x):
        return "_ct_nan"
    if x in (math.inf, -math.inf):
        return "_ct_inf" if x > 0 else "(-_ct_inf)"
    return repr(x)
