"""The error each float operation may have on a Vulkan device, and how results are compared.

Bounds follow the Vulkan specification's "Precision and Operation of SPIR-V Instructions" table
(appendix "Vulkan Environment for SPIR-V"): + - * and conversions are correctly rounded (so
exact here), `/` is 2.5 ULP, exp/exp2 3+2|x| ULP, log/log2 3 ULP (absolute 2^-21 inside
[0.5, 2]), sqrt inherits 1/inversesqrt (2 ULP), pow inherits exp2(y*log2(x)), sin/cos are
absolute 2^-11 inside [-pi, pi] (undefined outside), atan/atan2 4096 ULP, and the rest inherit
the formula they are defined by. `bound()` returns an absolute bound, or UNDEFINED.
docs/reliability.md explains how the differential runner turns these into output tolerances.
"""

from __future__ import annotations

import math
import random
import zlib
from fractions import Fraction

from . import semantics as S

UNDEFINED = math.inf
_LN2 = math.log(2.0)
_SQRT_MAX = 1.8e19  # above this, x*x overflows float32
_PI = 3.14159274101257324  # float32(pi): arguments up to it are "inside [-pi, pi]"
_BIG = 3.0e38  # a float32 value an undefined result may stand for (Perturber._undefined)
PROBE_SCALE = 1024.0  # how far the 'probe' run moves each approximation, in bounds (#27)


def ulp(x: float) -> float:
    """Spacing of float32 values at `x` (2^-149 for subnormals and zero)."""
    if math.isnan(x) or x in (math.inf, -math.inf):
        return math.inf
    if x == 0.0:
        return 2.0**-149
    e = math.frexp(x)[1]  # |x| in [2^(e-1), 2^e)
    return 2.0 ** max(e - 24, -149)


def ulp64(x: float) -> float:
    """Spacing of float64 values at `x` (2^-1074 for subnormals and zero)."""
    if math.isnan(x) or x in (math.inf, -math.inf):
        return math.inf
    if x == 0.0:
        return 2.0**-1074
    return 2.0 ** max(math.frexp(x)[1] - 53, -1074)


def ulp16(x: float) -> float:
    """Spacing of float16 values at `x` (2^-24 for subnormals and zero). f16 arithmetic and
    math are computed in float32 and rounded to f16 (docs/language-extensions.md), so an
    approximate f32 result within its bound (the Perturber moves it there) can round to the
    neighbouring f16 value: the runs then differ by an f16 step, and the device is compared
    against their range with slack in f16 ULPs (differential.compare_float)."""
    if math.isnan(x) or x in (math.inf, -math.inf):
        return math.inf
    if x == 0.0:
        return 2.0**-24
    return 2.0 ** max(math.frexp(x)[1] - 11, -24)


# Float subgroup sums (subgroup_add / inclusive_add / exclusive_add): Vulkan leaves the order of
# the additions to the device, so the device may add the (at most SUBGROUP_TERMS) terms in any
# order. Any order of m - 1 correctly rounded float32 additions is within (m - 1) * u * sum|x_j|
# of the exact sum (u = 2^-24; the classic recursive-summation bound), and the emulator's
# lane-order sum is too: the device may lie 2 * (m - 1) * u * sum|x_j| from the emulator, where
# sum|x_j| is the same operation applied to |x| (the generator writes it next to the sum), with
# a factor (1 + m u) because that magnitude is itself rounded. Infinite magnitudes: unstable.
SUBGROUP_TERMS = 64  # the workgroup size of generated subgroup kernels: a bound on m


def subgroup_sum_bound(abs_sum: float, terms: int = SUBGROUP_TERMS) -> float:
    """Largest difference allowed between two orders of a float32 subgroup sum whose terms'
    magnitudes add up to `abs_sum` (inf: not comparable)."""
    if not math.isfinite(abs_sum):
        return math.inf
    u = 2.0**-24
    return 2 * (terms - 1) * u * abs_sum * (1 + terms * u) + 2.0**-149


def f64_bound(last_op: str, r: float) -> float:
    """f64 results: + - * and conversions are correctly rounded (exact here, as for float32);
    the generator applies one approximate operation only as the last step, `sqrt` (5 f64 ULP,
    the float32 rule transposed: 1/inversesqrt), so the bound is on the result itself."""
    if last_op == "exact":
        return 0.0
    if last_op == "sqrt":
        return 5 * ulp64(r)
    raise KeyError(f"no f64 bound for {last_op!r}")


def _exp_ulps(x: float) -> float:
    return 3 + 2 * abs(x)


def _log_err(x: float, r: float) -> float:
    return 2.0**-21 if 0.5 <= x <= 2.0 else 3 * ulp(r)


def bound(name: str, args: tuple, r: float) -> float:
    """Largest absolute difference between the device's and the exact result of `name(*args)`
    whose correctly rounded float32 value is `r`; UNDEFINED where Vulkan leaves it undefined."""
    if name == "undefined":
        return UNDEFINED  # a value the spec leaves undefined (unused since #21 got a meaning)
    if any(math.isnan(a) for a in args):
        return 0.0  # nan in, nan out is all we require
    x = args[0]
    if name == "pow" and math.isnan(r):
        return 0.0  # negative base, non-integer exponent: nan is the contract (Python's rule)
    if math.isnan(r):
        return UNDEFINED  # a domain error: the spec leaves the value undefined
    if name == "div":
        b = args[1]
        if b == 0.0:
            return 0.0  # IEEE inf/nan, required by the spec
        if not 2.0**-126 <= abs(b) <= 2.0**126:
            return UNDEFINED
        return 2.5 * ulp(r)
    if name == "sqrt":
        return UNDEFINED if x < 0 else 5 * ulp(r)  # 1/inversesqrt: 2 ULP then 2.5 ULP
    if name in ("exp", "exp2"):
        return _exp_ulps(x) * ulp(r)
    if name in ("log", "log2"):
        return UNDEFINED if x <= 0 else _log_err(x, r)
    if name == "log10":  # recipe: log2(x) * log10(2)
        return UNDEFINED if x <= 0 else 0.302 * _log_err(x, math.log2(x)) + 1.5 * ulp(r)
    if name in ("sin", "cos"):
        return 2.0**-11 if abs(x) <= _PI else UNDEFINED
    if name == "tan":  # sin/cos, each absolute 2^-11
        c = abs(math.cos(x))
        if abs(x) > _PI or c < 2.0**-9:
            return UNDEFINED
        return 2.0**-11 * (1 + abs(r)) / (c - 2.0**-11) + 2.5 * ulp(r)
    if name in ("asin", "acos"):  # atan2(x, sqrt(1 - x*x))
        return UNDEFINED if abs(x) > 1 else 4096 * ulp(r) + 2.0**-20
    if name == "atan":
        return 4096 * ulp(r)
    if name == "atan2":
        return UNDEFINED if x == 0.0 and args[1] == 0.0 else 4096 * ulp(r)
    if name in ("sinh", "cosh", "tanh"):  # (exp(x) +- exp(-x)) [/ (exp(x) + exp(-x))]
        if abs(x) > 80:
            return UNDEFINED if name == "tanh" else _exp_ulps(x) * ulp(r) * 2
        e1, e2 = math.exp(x), math.exp(-x)
        num_err = _exp_ulps(x) * (ulp(e1) + ulp(e2))
        if name == "tanh":
            return num_err * (1 + abs(r)) / (e1 + e2) + 2.5 * ulp(r)
        return num_err / 2 + ulp(r)
    if name in ("asinh", "acosh"):  # log(x + sqrt(x*x +- 1))
        if (name == "acosh" and x < 1) or abs(x) > _SQRT_MAX:
            return UNDEFINED  # x*x overflows float32 in the inherited formula
        s = math.sqrt(x * x + (1 if name == "asinh" else -1))
        t = x + s
        if t <= 0:
            return UNDEFINED
        t_err = 8 * ulp(max(abs(x), s)) + (0 if name == "asinh" else 2.0**-23 / max(s, 2.0**-60))
        return t_err / t + _log_err(t, r) + ulp(r)
    if name == "atanh":  # 0.5 * log((1 + x) / (1 - x))
        if abs(x) >= 1:
            return UNDEFINED
        q = (1 + x) / (1 - x)
        return 0.5 * (4 * ulp(q) / q + _log_err(q, r)) + ulp(r)
    if name == "pow":  # exp2(y * log2(x)), with Python's sign rule for negative bases
        y = args[1]
        if x == 0.0 and y < 0:
            return UNDEFINED  # Python raises; Vulkan leaves pow(0, y <= 0) undefined
        if x == 0.0 or x in (math.inf, -math.inf) or y in (math.inf, -math.inf):
            return 0.0  # special values: the contract is Python's exact result
        lg = math.log2(abs(x))
        z = y * lg
        z_err = abs(y) * _log_err(abs(x), lg) + 0.5 * ulp(z)
        return abs(r) * (math.expm1(_LN2 * z_err) if z_err < 64 else math.inf) + _exp_ulps(z) * ulp(
            r
        )
    if name in ("degrees", "radians"):
        return 1.0 * ulp(r)  # one multiply by a rounded constant
    if name == "hypot":  # sqrt(x*x + y*y): overflows where Python's hypot does not
        return UNDEFINED if max(abs(x), abs(args[1])) > _SQRT_MAX / 2 else 5.5 * ulp(r)
    if name in ("mod", "floordiv", "fmod"):  # x - y * floor(x / y): see Perturber._remainder
        q = x / args[1]
        if not math.isfinite(q) or math.isinf(args[1]):
            return UNDEFINED
        q = math.floor(q) if name != "fmod" else math.trunc(q)
        return 0.0 if name == "floordiv" else ulp(args[1] * q) + ulp(r)
    if name == "copysign":
        return 0.0  # exact (Perturber still flips the sign of a zero y)
    if name == "fma":  # may be an OpFMul followed by an OpFAdd
        return 0.5 * ulp(x * args[1]) + 0.5 * ulp(r)
    raise KeyError(f"no error bound for {name!r}")


_ZERO_SIGN = {"div", "atan2", "copysign", "pow"}


def _reference(name: str, args: tuple) -> float:
    """The emulator's own result for `name(*args)`, with no perturbation."""
    hook = S._perturb
    S.set_perturbation(None)
    try:
        if name == "div":
            return S.fdiv(*args)
        return S.MATH[name][2](*args)
    finally:
        S.set_perturbation(hook)


def _recipe(name: str, x: float, y: float) -> float:
    """x - y * floor(x / y) (trunc for fmod) rounded to float32 at every step, as a device
    computes `%`, `//` and fmod: where the quotient is beyond 2^63 this is 0 or a multiple of
    ULP(x) (3e38 % 3.0 gives 0, not Python's 2.0); a run uses it so a device that does the same
    is covered. Where the float32 quotient overflows (3e38 % 0.5: 6e38), floor keeps the
    infinity and x - y * inf is an infinity of the other sign than x (lavapipe gives -inf, a
    comparison `r < c` then True); only an infinite dividend gives nan (inf - inf). Fuzz
    seed 777, docs/reliability.md."""
    q = S.f32(x / y)
    if not math.isfinite(q):
        return q if name == "floordiv" else S.f32(x - y * q)
    fq = float(math.floor(q) if name != "fmod" else math.trunc(q))
    if fq == 0.0:
        fq = math.copysign(0.0, q)  # floor(-0.0) is -0.0 (x // inf with x < 0: Python -1.0)
    if name == "floordiv":
        return fq
    return S.f32(x - S.f32(y * fq))


class Perturber:
    """`semantics.approx` hook for one emulator run: moves each approximate result by its whole
    bound, in the direction `mode` says: +1, -1, or 'random' (a fresh sign per operation), or
    'alt+'/'alt-' (successive operations in opposite directions, starting up or down), or
    'name0'/'name1' (every operation of one name the same way, names apart by a bit of their
    CRC-32: where two operations move one output in opposite senses, the patterns above can
    all cancel; fuzz seed 28, atan2 and degrees), or
    'probe': alternating like 'alt+' but PROBE_SCALE times the bound, no value a device may
    give: it only shows which float outputs the approximations reach at all (#27: a move
    within the bound can round away at the output in every run, while a device's value inside
    the bound, where the intermediate roundings fall differently, lands 1 ULP off). It leaves
    undefined results at Python's value (unmoved): the other runs already disagree there, and a
    nan from one (`math.trunc(3e38 % 3.0)`, in any thread) ended the whole probe run in
    KernelUndefined, so no output got the slack (fuzz seed 1, kernel 118, lavapipe).
    UNDEFINED results become nan (moved up) or +-3e38 (see _undefined), so the
    differential runner sees them disagree between runs and leaves the outputs they reach alone.
    Mode None is the exact run: it moves nothing and records the arguments of every `%` and
    fmod in `remainders`, which the perturbed runs get as `exact` (see _aliased), and in
    `recipe_differs` whether the unfused recipe gives any `%`, `//` or fmod another value.
    Mode 'recipe' moves nothing but computes those three as that recipe (see _device_recipe)."""

    def __init__(self, mode, seed: int = 0, exact: list | None = None):
        self.mode = mode
        self.rng = random.Random(seed)
        self.calls = 0
        self.exact = exact  # the exact run's `remainders`
        self.remainders: list[tuple] = []
        self.recipe_differs = False

    def _sign(self, name: str) -> float:
        self.calls += 1
        if self.mode in ("name0", "name1"):
            bit = (zlib.crc32(name.encode()) >> int(self.mode[-1])) & 1
            return 1.0 if bit else -1.0
        if self.mode == "random":
            # a fresh sign per operation, or none (0: exact): errors that cancel when every
            # operation moves the same way (f0 + f1*f1 with f1 = a % f0) show up there
            return self.rng.choice((-1.0, 0.0, 1.0))
        if self.mode in ("alt+", "alt-", "probe"):
            # successive approximate operations move in opposite directions: where a result
            # feeds the next operation with a negative slope (hypot(x, y ** -1.0)), moving both
            # the same way cancels (mismatch #13), moving them apart reaches the extremes
            first = -1.0 if self.mode == "alt-" else 1.0
            return first if self.calls % 2 else -first
        return float(self.mode)

    def __call__(self, name: str, args: tuple, r: float) -> float:
        if name in ("mod", "fmod"):
            self.remainders.append(args)
        if self.mode in (None, "recipe") and name in ("mod", "floordiv", "fmod"):
            d = _device_recipe(name, args, r)
            if self.mode == "recipe":
                return d
            both_nan = math.isnan(d) and math.isnan(r)  # inf % 3.0: nan either way
            self.recipe_differs = self.recipe_differs or not (both_nan or S.same_f32_bits(d, r))
        if self.mode in (None, "recipe"):
            return r
        sign = self._sign(name)
        if sign == 0.0 and name not in ("mod", "floordiv", "fmod"):
            return r
        if (
            sign < 0
            and name in _ZERO_SIGN
            and any(a == 0.0 for a in args)
            and not (name == "pow" and args[1] < 0)
            and not (name == "atan2" and args[0] == 0.0 == args[1])  # undefined: below (#34)
        ):
            # Without float controls a driver need not keep the sign of zero: results that
            # depend on it (1/-0, atan2(-0, -1), copysign(x, -0), (-0)**-1) are unspecified.
            flipped = tuple(-a if a == 0.0 else a for a in args)
            return _reference(name, flipped)
        if name == "pow" and args[0] == 0.0 and args[1] < 0:
            # undefined (see bound), though r is infinite
            return math.nan if sign > 0 and self.mode != "probe" else r
        if name in ("mod", "floordiv", "fmod"):
            # before the overflow rule: Python gives x % -inf = -inf, the recipe nan (#5)
            # the quotient and the rounding of y*q and x - y*q move independently on a device:
            # opposite directions in the +1/-1 runs, fresh draws in the random ones
            rsign = self.rng.choice((-1.0, 0.0, 1.0)) if self.mode == "random" else -sign
            return self._remainder(name, args, r, sign, rsign)
        if r in (math.inf, -math.inf) and not any(math.isnan(a) for a in args):
            return r  # overflow: the device overflows too (near the edge it may not: rare)
        b = bound(name, args, r)
        if b == 0.0:
            return r
        if b == UNDEFINED:
            return r if self.mode == "probe" else self._undefined(sign)
        moved = S.f32(r + sign * b * (PROBE_SCALE if self.mode == "probe" else 1.0))
        if self.mode in (1, -1) and r != 0.0 and (moved > 0.0) != (r > 0.0):
            # the bound reaches zero: a device may give exactly 0 (asinh(1e-30): #18), which a
            # `y if y != 0 else 3` guard tells apart; the all-up/all-down runs stop there, the
            # alternating and random ones cross it
            return 0.0
        if self.mode == -1 and name == "hypot" and moved < max(map(abs, args)) <= r:
            # likewise the larger operand: sqrt(x*x + y*y) may give exactly |x| where y*y is
            # lost in the sum or the sqrt rounds down, which `hypot(a, y) != a` tells apart
            # (hypot(3.25, 0.001) is 3.2500002, lavapipe's 3.25: #33); the all-down run stops there
            return max(map(abs, args))
        return moved

    def _undefined(self, sign: float) -> float:
        """An undefined result: nan when moved up; else the largest float32 magnitudes, +big in
        the all-down run, -big in the alternating ones, so an operation that drops nan
        (`subgroup_max`, `min`/`max`) still sees the runs disagree (mismatch #15)."""
        if sign > 0:
            return math.nan
        return _BIG if self.mode == -1 else -_BIG

    def _aliased(self, args: tuple) -> bool:
        """Whether the operands of this run's latest `%`/fmod moved so far from the exact run's
        (the same call, by order) that x/y shifted by a quarter or more: approximate operations
        feeding the remainder then err by about a period or more on a device (`(x ** 3.0) % y`
        with x ** 3.0 near 1e9 is thousands off: #20), so any remainder is possible, and the
        runs would only sample it (two runs a period apart agree)."""
        j = len(self.remainders) - 1
        if self.exact is None or j >= len(self.exact) or 0.0 in (args[1], self.exact[j][1]):
            return False
        (x, y), (x0, y0) = args, self.exact[j]
        return abs(x / y - x0 / y0) >= 0.25  # nan (an infinite operand) compares False

    def _anywhere(self, name: str, y: float) -> float:
        """A remainder anywhere between 0 and the divisor (fmod: of either sign): 0 in the
        all-down run (what a device gives where y*q rounds to x), near the divisor in the
        alternating ones, a random value in the random ones — so a comparison of the remainder
        against any threshold in between differs between runs (#24: the runs only sampled it,
        all on one side of `2r < d1`, while the device gave 0)."""
        hi = abs(y) if name == "fmod" else y
        if self.mode == -1:
            return 0.0
        if self.mode == "alt-":
            return S.f32(hi * 0.999)
        if self.mode == "alt+":
            return S.f32((-hi if name == "fmod" else 0.5 * hi) * 0.999)
        return S.f32(self.rng.uniform(-hi if name == "fmod" else 0.0, hi))

    def _remainder(self, name: str, args: tuple, r: float, sign: float, rsign: float) -> float:
        """The inherited recipe with the quotient moved by its 2.5 ULP (so floor may flip,
        as it may on the device), the product and difference rounded away by 1 ULP each.
        Operands that approximations moved by a quarter period or more (_aliased): nan moved
        up, else any remainder (a float output it reaches is then left unchecked)."""
        x, y = args
        if self.mode == "probe" and (
            not (math.isfinite(x) and math.isfinite(y) and math.isfinite(x / y))
            or abs(x / y) > 2.0**63
        ):
            return r  # undefined: Python's value (see the class docstring)
        if y in (math.inf, -math.inf):  # the recipe gives nan or -0.0 where Python gives x, y, -1
            return math.nan if sign > 0 else r
        if x in (math.inf, -math.inf) and not math.isnan(y) and name == "floordiv":
            return math.nan if sign > 0 else S.f32(x / y)  # Python nan, recipe floor(inf) (#14)
        if math.isnan(r):
            return r
        q = x / y
        if not math.isfinite(q) or abs(q) > 2.0**63:  # floor(q) = q: the recipe gives nan or 0
            return math.nan if sign > 0 else _recipe(name, x, y)
        if name != "floordiv" and self._aliased(args):
            return math.nan if sign > 0 else self._anywhere(name, y)
        q += sign * 2.5 * ulp(S.f32(q))
        fq = float(math.floor(q) if name != "fmod" else math.trunc(q))
        if name == "floordiv":
            return S.f32(fq)
        prod = y * fq
        rem = x - prod
        return S.f32(rem + rsign * _recipe_rounding(x, y, fq, prod, rem))


def _device_recipe(name: str, args: tuple, r: float) -> float:
    """`%`, `//` or fmod as a device computes them with every step correctly rounded and
    nothing fused: floor(x / y) and x - y * floor(x / y) in float32 (_recipe), a zero remainder
    with Python's sign (the divisor's; fmod: the dividend's), as codegen selects it (#19).
    Where y*q rounds to x it gives exactly 0 for Python's tiny remainder (-9.75 % float32(0.001)
    is 4.6e-7, lavapipe's 0), which a `r if r != 0 else 3` guard tells apart and no moved run
    reaches exactly (#32). Infinite operands too (#36): `inf // 3.0` is floor(inf / 3) = inf
    there, Python's nan; `x // inf` is floor(+-0) = +-0 (Python: -1.0 for x < 0) and `x % inf`
    is x - inf * 0 = nan (Python: x or inf). Those are undefined (see bound): the moved runs give
    nan or the recipe's value by the draw of their signs, so only this run reaches the device's
    value in every seed. A nan operand: Python's nan."""
    x, y = args
    if math.isnan(x) or math.isnan(y) or y == 0.0:
        return r
    d = _recipe(name, x, y)
    if d == 0.0 and name != "floordiv":
        return math.copysign(0.0, x if name == "fmod" else y)
    return d


def _recipe_rounding(x: float, y: float, fq: float, prod: float, rem: float) -> float:
    """How far the float32 rounding of y*fq and of x - y*fq (fused into one rounding or not)
    may move the recipe's remainder: 1 ULP for each step, none for a step that is exact, as
    both are for `7.25 % -0.75` (7.5 and -0.25). A move there is no error a device can make,
    and it cancelled the real one of the operation after it: `(x % -0.75) + math.exp2(0.5)`
    moved the remainder down 4.25 ULP(1.4) where exp2 moved up 4 (and the reverse), in the
    all-up, all-down and alternating runs alike (#25)."""
    p = Fraction(y) * int(fq)
    p32 = S.f32(float(p))
    if not math.isfinite(p32) or Fraction(p32) != p:
        return ulp(prod) + ulp(rem)  # y*q rounds (mismatch #11: to x, giving 0)
    d = Fraction(x) - p
    d32 = S.f32(float(d))
    return 0.0 if math.isfinite(d32) and Fraction(d32) == d else ulp(rem)


__all__ = [
    "PROBE_SCALE",
    "SUBGROUP_TERMS",
    "UNDEFINED",
    "Perturber",
    "bound",
    "f64_bound",
    "subgroup_sum_bound",
    "ulp",
    "ulp16",
    "ulp64",
]
