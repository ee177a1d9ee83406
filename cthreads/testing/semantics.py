"""The kernel language's arithmetic contract (SPEC §2), as plain Python: the emulator's runtime.

Ints are int32 and wrap after every operation; floats are IEEE float32 held in Python floats and
rounded after every operation (computed in float64, where + - * / sqrt of float32 inputs round
correctly); bools are Python bools.

The exactly defined rules (wrapping, `//` and `%` of ints, shifts, int `**`, Python min/max,
float -> int saturation of the explicit types, rounding to float32 / float16) are read from the
compiler's one table of operation meaning, `cthreads.compiler.semantics`, which imports nothing
else of cthreads: the emulator still shares no code with the frontend or codegen, whose output
it checks, and the table itself is checked against the device (tests/compiler/test_device.py).
What stays here is the emulator's own: float results computed exactly and then perturbed
within their Vulkan bounds (`approx`), subnormal flushing, and undefined behaviour raised as
`KernelUndefined` (an `int()` of NaN, inf or out of range; the device saturates, see
docs/language.md, but a kernel relying on that is reported).
"""

from __future__ import annotations

import math
import struct

from cthreads.compiler import semantics as T

INF = math.inf
NAN = math.nan
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

_F32 = struct.Struct("<f")
_pack = _F32.pack


class EmulationError(Exception):
    """The kernel did something the emulator cannot give a defined result for (undefined
    behaviour on the device, or a construct outside the language)."""


class KernelUndefined(EmulationError):
    """Undefined behaviour at run time (float->int of nan/inf/out of range, divergent barrier)."""


wrap = T.wrap_i32  # Python int -> int32 two's complement


def f32(x: float) -> float:
    """Round a Python float to the nearest float32 (ties to even); overflow gives +-inf.
    A subnormal result is noted, and flushed to zero (sign kept) while `set_flush` is on."""
    r = T.to_f32(x)
    if -1.1754943508222875e-38 < r < 1.1754943508222875e-38 and r != 0.0:  # |r| < 2^-126
        return _subnormal(r)
    return r


# Vulkan lets a device flush float32 denormals to zero unless it reports shaderDenormPreserve
# (and the module asks for it), so any float32 operation's subnormal result may be +-0 there,
# wherever it then flows: into a `!= 0` guard, a product that scales it back up, an f64 cast
# (mismatch #31: pow(6714645.5, -6.0) is 1.09e-41; lavapipe's is 0). The differential runner
# reruns a kernel whose exact run produced one with flushing on (differential.emulator_runs).
_flush = False
subnormal_seen = False  # set by every subnormal float32 result (the runner resets it)


def _subnormal(r: float) -> float:
    global subnormal_seen
    subnormal_seen = True
    return math.copysign(0.0, r) if _flush else r


def set_flush(on: bool) -> None:
    """Flush float32 subnormal results to zero (sign kept) while on (process-global)."""
    global _flush
    _flush = on


# --------------------------------------------------------------------------- approximations
# Operations that Vulkan does not require to be correctly rounded go through `approx`, so the
# differential runner can perturb them within their stated bound (see tolerance.py). `None`
# (the default) means: return the correctly rounded result.

_perturb = None


def set_perturbation(hook) -> None:
    """Install `hook(name, args, result) -> result` for approximate ops (None to remove).
    Process-global: the emulator is single-threaded by design."""
    global _perturb
    _perturb = hook


def approx(name: str, args: tuple, r: float) -> float:
    if _perturb is None:
        return r
    return _perturb(name, args, r)


# ----------------------------------------------------------------------------------- ints


def idiv(a: int, b: int) -> int:
    """int // int: floor division; division by zero gives 0 (the documented contract)."""
    return wrap(T.int_floordiv(a, b))  # only INT32_MIN // -1 overflows, and it wraps


def imod(a: int, b: int) -> int:
    """int % int: result has the sign of the divisor; modulo zero gives the dividend, so that
    `a == (a // b) * b + a % b` holds for every b (with `a // 0 == 0`)."""
    return T.int_mod(a, b)


def shl(a: int, s: int) -> int:
    return wrap(T.shl(a, s))


def shr(a: int, s: int) -> int:
    return T.shr(a, s)  # arithmetic: Python's >> on negative ints already is


def ipow(a: int, e: int) -> int:
    """int ** int, wrapping; a negative exponent gives the device's `int(a ** e)`."""
    return wrap(T.int_pow(a, e))


def iabs(a: int) -> int:
    return wrap(abs(a))


def f2i(x: float) -> int:
    """int(float): truncate toward zero; nan, inf and values outside int32 are undefined."""
    if math.isnan(x) or x in (INF, -INF) or not (-2147483649.0 < x < 2147483648.0):
        raise KernelUndefined(f"int() of {x!r}: outside the int32 range (undefined on the device)")
    return int(x)


def floor_i(x: float) -> int:
    return f2i(float(math.floor(x)) if math.isfinite(x) else x)


def ceil_i(x: float) -> int:
    return f2i(float(math.ceil(x)) if math.isfinite(x) else x)


# --------------------------------------------------------------------------------- floats


def fdiv(a: float, b: float) -> float:
    """float / float with IEEE results for zero divisors (no ZeroDivisionError)."""
    q = T.float_div(a, b)
    if b == 0.0:
        return q if math.isnan(q) else approx("div", (a, b), q)
    return approx("div", (a, b), f32(q))


def _flushed_quotient(a: float, b: float) -> float | None:
    """The device computes `a // b` as floor(a / b) and `a % b` as a - b * floor(a / b): when
    that float32 quotient is subnormal (1.0 / -3e38 is -3.3e-39) it is noted, as every
    subnormal result is, and in the flushed run it is +-0, so floor gives +-0 where Python
    gives -1.0 (the H200: `int(1.0 // -3e38)` was 0, Python's -1). Returns that signed zero in
    the flushed run, else None (Python's exact `//` and `%` never see the quotient)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    q = a / b
    if -1.1754943508222875e-38 < q < 1.1754943508222875e-38 and q != 0.0:  # |q| < 2^-126
        zero = f32(q)  # notes the subnormal; +-0 (the sign kept) only while flushing
        return zero if zero == 0.0 else None
    return None


def ffloordiv(a: float, b: float) -> float:
    """Python float `//` (floor of the exact quotient); by zero: IEEE floor(a / 0)."""
    if b == 0.0:
        return fdiv(a, b)  # +-inf or nan; floor keeps them
    flushed = _flushed_quotient(a, b)
    if flushed is not None:
        return flushed  # floor(+-0) = +-0
    return approx("floordiv", (a, b), f32(a // b))


def fmod_py(a: float, b: float) -> float:
    """Python float `%` (the sign of the divisor, exact); `x % 0.0` gives nan."""
    if b == 0.0:
        return NAN
    if _flushed_quotient(a, b) is not None:
        return a  # a - b * floor(+-0) = a - b * 0 (never zero: the quotient was not)
    return approx("mod", (a, b), f32(a % b))


def c_fmod(a: float, b: float) -> float:
    """math.fmod: the sign of the dividend; exact. nan where Python raises."""
    if b == 0.0 or math.isnan(a) or math.isnan(b) or a in (INF, -INF):
        return NAN
    return approx("fmod", (a, b), math.fmod(a, b))


def fpow(a: float, b: float, name: str = "pow") -> float:
    """IEEE pow with Python's values: negative base with non-integer exponent gives nan,
    0 ** negative gives inf (Python raises for both)."""
    try:
        r = math.pow(a, b)
    except ValueError:
        if a == 0.0:
            odd = b.is_integer() and int(b) % 2 == 1
            r = math.copysign(INF, a) if odd else INF
        else:
            r = NAN
    except OverflowError:
        odd = b.is_integer() and int(b) % 2 == 1
        r = -INF if (a < 0 and odd) else INF
    return approx(name, (a, b), f32(r))


def same_f32_bits(a: float, b: float) -> bool:
    """Whether two float32 values have the same bit pattern (compare-exchange on the device
    compares bits: -0.0 differs from 0.0, a NaN matches the identical NaN)."""
    return _pack(a) == _pack(b)


def fmin(*xs):
    """Python `min`: keeps the earlier value unless a later one is strictly smaller (so nan
    in the first place sticks, nan later is skipped)."""
    best = xs[0]
    for x in xs[1:]:
        best = T.py_min(best, x)
    return best


def fmax(*xs):
    best = xs[0]
    for x in xs[1:]:
        best = T.py_max(best, x)
    return best


def _math1(fn, name: str, domain=None):
    """A one-argument float function: float64 libm, then float32; nan outside the domain."""

    def call(x: float) -> float:
        if domain is not None and not domain(x):
            r = NAN
        else:
            try:
                r = fn(x)
            except (ValueError, ZeroDivisionError):
                r = NAN
            except OverflowError:
                r = INF
        return approx(name, (x,), f32(r))

    call.__name__ = name
    return call


def _log(fn):
    def call(x: float) -> float:
        if x == 0.0:
            return -INF
        if math.isnan(x) or x < 0:
            return NAN
        return fn(x)

    return call


def _inf_on_overflow(fn, signed: bool = False):
    """`fn` with an overflow read as the infinity the device gives (of x's sign: sinh)."""

    def call(x: float) -> float:
        try:
            return fn(x)
        except OverflowError:
            return math.copysign(INF, x) if signed else INF

    return call


def _atanh(x: float) -> float:
    if x == 1.0:
        return INF
    if x == -1.0:
        return -INF
    return math.atanh(x)


def _acosh(x: float) -> float:
    return INF if x == INF else math.acosh(x)


def _trig(fn):
    def call(x: float) -> float:
        return NAN if x in (INF, -INF) else fn(x)

    return call


def _math2(fn, name: str):
    def call(x: float, y: float) -> float:
        try:
            r = fn(x, y)
        except (ValueError, ZeroDivisionError):
            r = NAN
        except OverflowError:
            r = INF
        return approx(name, (x, y), f32(r))

    call.__name__ = name
    return call


def _fma(x: float, y: float, z: float) -> float:
    # x*y of two float32 values is exact in float64; one more rounding (double rounding to
    # float32 is harmless here because fma is compared with its own tolerance anyway).
    return approx("fma", (x, y, z), f32(x * y + z))


# float -> int roundings and float -> bool tests: exact, so one function serves float32 and
# float64 arguments alike (MATH and MATH64 differ only in how they name the result type)
_ROUNDINGS = {"floor": floor_i, "ceil": ceil_i, "trunc": f2i}
_TESTS = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}


def _hypot(x: float, y: float) -> float:
    return approx("hypot", (x, y), f32(math.hypot(x, y)))


# name -> (arity, result kind 'f'/'i'/'b', implementation taking float32 floats).
# Arguments are promoted to float before the call (int and bool arguments too).
MATH: dict[str, tuple[int, str, object]] = {
    "sqrt": (1, "f", _math1(math.sqrt, "sqrt", lambda x: math.isnan(x) or x >= 0)),
    "exp": (1, "f", _math1(_inf_on_overflow(math.exp), "exp")),
    "exp2": (1, "f", _math1(_inf_on_overflow(lambda x: 2.0**x), "exp2")),
    "log": (1, "f", _math1(_log(math.log), "log")),
    "log2": (1, "f", _math1(_log(math.log2), "log2")),
    "log10": (1, "f", _math1(_log(math.log10), "log10")),
    "sin": (1, "f", _math1(_trig(math.sin), "sin")),
    "cos": (1, "f", _math1(_trig(math.cos), "cos")),
    "tan": (1, "f", _math1(_trig(math.tan), "tan")),
    "asin": (1, "f", _math1(math.asin, "asin")),
    "acos": (1, "f", _math1(math.acos, "acos")),
    "atan": (1, "f", _math1(math.atan, "atan")),
    "atan2": (2, "f", _math2(math.atan2, "atan2")),
    "sinh": (1, "f", _math1(_inf_on_overflow(math.sinh, signed=True), "sinh")),
    "cosh": (1, "f", _math1(_inf_on_overflow(math.cosh), "cosh")),
    "tanh": (1, "f", _math1(math.tanh, "tanh")),
    "asinh": (1, "f", _math1(math.asinh, "asinh")),
    "acosh": (1, "f", _math1(_acosh, "acosh")),
    "atanh": (1, "f", _math1(_atanh, "atanh")),
    "pow": (2, "f", fpow),
    "fabs": (1, "f", abs),
    "copysign": (2, "f", lambda x, y: approx("copysign", (x, y), math.copysign(x, y))),
    "degrees": (1, "f", _math1(math.degrees, "degrees")),
    "radians": (1, "f", _math1(math.radians, "radians")),
    "hypot": (2, "f", _hypot),
    "fmod": (2, "f", c_fmod),
    "fma": (3, "f", _fma),
    **{name: (1, "i", fn) for name, fn in _ROUNDINGS.items()},
    **{name: (1, "b", fn) for name, fn in _TESTS.items()},
}
# `abs` is a builtin handled by type (int wraps, float is fabs).

MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": INF, "nan": NAN}

# Names of operations the differential runner may perturb (they call `approx`).
APPROXIMATE = {
    "div",
    "sqrt",
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "pow",
    "degrees",
    "radians",
    "hypot",
    "fma",
    "fmod",
    "floordiv",
    "mod",
}


# ------------------------------------------------------ explicit types: f64, i64, u32
# (docs/language-extensions.md, "More scalar types"): f64 is a Python float (no rounding),
# i64 wraps modulo 2**64 (two's complement), u32 modulo 2**32; float -> int saturates.

# (f16, i8, i16, u8, u16: the narrow types are computed in 32 bits, float32 / int32, and
# converted back after every operation: ints wrap, f16 rounds to nearest even, overflow +-inf)

_BITS = {"int": 32, "i64": 64, "u32": 32, "u64": 64, "i8": 8, "u8": 8, "i16": 16, "u16": 16}
_RANGES = {t: T.int_range(b, t[0] != "u") for t, b in _BITS.items()}


def f16(x: float) -> float:
    """Round a Python float to the nearest float16 (ties to even); overflow gives +-inf.
    An int (a u64/i64 converted to f16) goes through float first: struct refuses large ints,
    and every int whose double rounding could matter is beyond float16's range anyway."""
    return T.to_f16(float(x))


def wrap_to(x: int, t: str) -> int:
    return T.wrap(x, _BITS[t], t[0] != "u")


def f2w(x: float, t: str) -> int:
    """Explicit float -> int conversion: truncates and saturates to the range of `t`, nan -> 0."""
    return T.float_to_int(x, _BITS[t], t[0] != "u")


def wdiv(a: int, b: int, t: str) -> int:
    return wrap_to(T.int_floordiv(a, b), t)


def wmod(a: int, b: int, t: str) -> int:
    return T.int_mod(a, b)


def wpow(a: int, e: int, t: str) -> int:
    return wrap_to(T.int_pow(a, e), t)


fdiv64 = T.float_div  # IEEE double division (+-inf / nan for a zero divisor)


def ffloordiv64(a: float, b: float) -> float:
    """f64 `//` as the device computes it: floor of the rounded quotient (7.0 // 0.1 is 70.0
    there, where Python's exact floor gives 69.0)."""
    return T.float_floordiv(a, b, float)


def fmodpy64(a: float, b: float) -> float:
    """f64 `%` as the device computes it: a - b * floor(a / b) (nan for b == 0)."""
    return T.float_mod(a, b, float)


def sqrt64(x: float) -> float:
    return NAN if math.isnan(x) or x < 0 else math.sqrt(x)


def fma64(x: float, y: float, z: float) -> float:
    from fractions import Fraction

    if not all(math.isfinite(v) for v in (x, y, z)):
        return x * y + z
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    try:
        return float(exact)  # correctly rounded, as fma is
    except OverflowError:
        return math.copysign(INF, exact)


# f64 math: the functions with an f64 form on the device (GLSL.std.450 16/32-bit-only
# functions are compile errors for f64)
MATH64 = {
    "sqrt": (1, "f64", sqrt64),
    "fabs": (1, "f64", abs),
    "fma": (3, "f64", fma64),
    **{name: (1, "int", fn) for name, fn in _ROUNDINGS.items()},
    **{name: (1, "bool", fn) for name, fn in _TESTS.items()},
}
