"""The "narrow" feature section of generated kernels (kernelgen.py): the types f16, u64, i8, u8,
i16 and u16 as scalar parameters, list parameters (numpy arrays of those dtypes), locals,
arithmetic, comparisons, casts, f16 math, subgroup operations and stores. Expressions follow the
promotion rules of docs/language-extensions.md, with explicit casts wherever the rules ask for
one, so every kernel compiles; docs/reliability.md ("Differential fuzzing") lists what is covered.
"""

from __future__ import annotations

import ast
import random

import numpy as np

from .kernelgen_avoid import constant as _constant
from .kernelgen_avoid import not_zero_constant as _not_zero_literal

NARROW_PARAMS = (
    "hp: f16, qp: u64, bp: i8, hs: list[f16], qs: list[u64], b8: list[i8], u8s: list[u8], "
    "s16: list[i16], u16s: list[u16], out_h: list[f16], out_q: list[u64], out_n: list[i8], "
    "out_m: list[u8], out_s: list[i16], out_w: list[u16]"
)
# per type: its local, its input list, its output list, its scalar parameter (if any)
_LOCAL = {"f16": "h0", "u64": "q0", "i8": "e0", "u8": "e1", "i16": "e2", "u16": "e3"}
_LIST = {"f16": "hs", "u64": "qs", "i8": "b8", "u8": "u8s", "i16": "s16", "u16": "u16s"}
_OUT = {
    "f16": "out_h",
    "u64": "out_q",
    "i8": "out_n",
    "u8": "out_m",
    "i16": "out_s",
    "u16": "out_w",
}
_PARAM = {"f16": "hp", "u64": "qp", "i8": "bp"}
_INTS = ("u64", "i8", "u8", "i16", "u16")
# operand types that meet `t` and give `t` without a cast (promotion rules: the same kind and
# narrower, an unsigned type meeting a strictly wider signed one, any int meeting f16)
_PROMOTES_TO = {
    "f16": ("f16", "f16", "f16", "i8", "u8", "i16", "u16", "u64"),
    "u64": ("u64", "u64", "u8", "u16"),
    "i8": ("i8",),
    "u8": ("u8",),
    "i16": ("i16", "i16", "i8", "u8"),
    "u16": ("u16", "u16", "u8"),
}
_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767), "u16": (0, 65535)}
_F16_LITS = ("1.0", "-1.0", "0.5", "2.0", "-2.5", "0.1", "3.0", "100.0", "1000.0", "-0.75")
_F16_MATH = {  # name -> guard template (as kernelgen_writer.UNARY_MATH): computed in float32
    "sqrt": "abs({})",
    "fabs": "{}",
    "exp": "G8",
    "log": "abs({}) + 1.0",
    "sin": "G3",
    "cos": "G3",
    "atan": "{}",
    "tanh": "G8",
}


def _int_literal(expr: str) -> str:
    """The int literal `expr` is (`3`, `(-7)`, `((-2147483647))`), or '' if it is none."""
    node = ast.parse(expr, mode="eval").body
    sign = ""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node, sign = node.operand, "-"
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return f"{sign}{node.value}"
    return ""


class _Narrow:
    """Typed expressions over the narrow locals, lists and parameters."""

    def __init__(self, w, draw, st, avoid):
        self.w, self.draw, self.st, self.avoid = w, draw, st, avoid

    def idx(self) -> str:
        w = self.w
        return w.pick(["i", "i", "n - 1 - i", "i + 1", f"({w.expr('i', 1)}) % len(hs)"])

    def literal(self, t: str) -> str:
        if t == "f16":
            return self.w.pick(list(_F16_LITS))
        if t == "u64":
            return self.w.pick(["3", "1", "65537", "u64(0x9E3779B97F4A7C15)", "u64(1 << 40)"])
        lo, hi = _RANGE[t]
        return str(self.draw(self.st.integers(max(lo, -100), min(hi, 300))))

    def cast(self, t: str) -> str:
        """`t(<an int or float expression>)`: int -> narrow wraps, float -> int saturates."""
        w = self.w
        src = w.pick(["i", "f"] if t != "u64" else ["i", "i", "f"])
        e = w.expr(src, 1)
        if src == "i" and t != "f16" and _int_literal(e):
            # the compiler checks a literal argument against the type's range (`u8(300)` is a
            # compile error, though the emulator wraps it: reported); keep literals in range
            e = self.literal(t) if t != "u64" else str(abs(int(_int_literal(e))))
        if t == "f16" and "zeromul" in self.avoid:
            e = _not_zero_literal(e)
        return f"{t}({e})"

    def leaf(self, t: str, lit: bool = True) -> str:
        kind = self.draw(self.st.integers(0, 9 if lit else 6))
        if kind <= 3:
            return _LOCAL[t]
        if kind <= 5:
            return f"{_LIST[t]}[{self.idx()}]"
        if kind == 6:
            return _PARAM[t] if t in _PARAM else self.cast(t)
        if kind <= 7:
            return self.literal(t)
        return self.cast(t)

    def operand(self, t: str, d: int) -> str:
        """An expression of a type that promotes to `t` (a right operand: it may be a literal,
        which takes the other operand's type)."""
        return self.expr(self.w.pick(list(_PROMOTES_TO[t])), d, lit=True)

    def expr(self, t: str, d: int, lit: bool = False) -> str:
        """An expression of type `t`; a literal only at the top (`lit`): an expression made of
        literals alone (`(3 + 5)`, `0.1 * u16s[i]`) would be int32 / float32."""
        if d <= 0 or self.w.chance(0.35):
            return self.leaf(t, lit)
        return (self.f16_expr if t == "f16" else self.int_expr)(t, d - 1)

    def int_expr(self, t: str, d: int) -> str:
        w, e = self.w, lambda: self.expr(t, d)
        kind = self.draw(self.st.integers(0, 9))
        bits = 63 if t == "u64" else 15
        if kind <= 3:
            op = w.pick(["+", "-", "*", "*", "//", "%", "&", "|", "^"])
            lhs, rhs = e(), self.operand(t, d)  # one side of type t, the other promotes
            if op in ("//", "%"):  # never zero; a literal stays one (it takes the type of lhs)
                rhs = str(int(rhs) | 1) if rhs.lstrip("-").isdigit() else f"({rhs} | 1)"
            elif w.chance(0.3):
                lhs, rhs = rhs, lhs
            return f"({lhs} {op} {rhs})"
        if kind == 4:  # shifts keep the left operand's type; narrow ones shift 32 bits, wrap
            count = w.pick([str(self.draw(self.st.integers(0, bits))), f"({e()} & {bits})"])
            return f"({e()} {w.pick(['<<', '>>'])} {count})"
        if kind == 5:  # negation wraps (-i8(-128) == -128; -u8 wraps too); ~ is bitwise
            if t[0] == "i" and w.chance(0.3):
                return f"abs({e()})"
            return f"({w.pick(['-', '~'])}{e()})"
        if kind == 6:
            return f"{w.pick(['min', 'max'])}({e()}, {self.operand(t, d)})"
        if kind == 7:
            return f"({e()} ** {self.draw(self.st.integers(0, 3))})"
        if kind == 8:
            return f"({e()} if {self.bool_expr(d)} else {self.operand(t, d)})"
        return self.cast(t)

    def f16_expr(self, t: str, d: int) -> str:
        w, e = self.w, lambda: self.expr("f16", d)
        kind = self.draw(self.st.integers(0, 10))
        if kind <= 3:
            op = w.pick(["+", "-", "*", "*", "/"])
            lhs, rhs = e(), self.operand("f16", d)
            if op == "/" and not _constant(rhs):  # the f16 literals are not zero
                rhs = f"({rhs} if {rhs} != 0 else 3)"
            if op == "*" and "zeromul" in self.avoid:
                lhs, rhs = _not_zero_literal(lhs), _not_zero_literal(rhs)
            return f"({lhs} {op} {rhs})"
        if kind in (4, 10):  # sqrt half the time (the common f16 math), else another
            name = "sqrt" if w.chance(0.5) else w.pick(sorted(_F16_MATH))
            return f"math.{name}({w.guard(_F16_MATH[name], e())})"
        if kind == 5:
            return f"{w.pick(['min', 'max'])}({e()}, {e()})"
        if kind == 6:
            return f"{w.pick(['-', 'abs'])}({e()})"
        if kind == 7:
            return f"({e()} ** {w.pick(['2.0', '2'])})"
        if kind == 8:
            return f"({e()} if {self.bool_expr(d)} else {e()})"
        return self.cast("f16")

    def bool_expr(self, d: int) -> str:
        w = self.w
        t = w.pick(["f16", *_INTS])
        op = w.pick(["<", "<=", ">", ">=", "==", "!="])
        if t == "f16" and w.chance(0.3):  # f16 meets float32: compared as float32
            return f"({self.expr('f16', d)} {op} {w.expr('f', 1)})"
        return f"({self.expr(t, d)} {op} {self.operand(t, d)})"


def narrow_section(w, draw, st, avoid=frozenset()) -> dict:
    """f16 / u64 / i8 / u8 / i16 / u16 locals at the top level; a few statements over them
    (wrapping arithmetic, f16 math, comparisons, casts, optional subgroup operations); results
    stored to the out_* lists of the same types and mixed back into the int/float/bool locals."""
    g = _Narrow(w, draw, st, avoid)
    w.emit(1, f"h0: f16 = {g.cast('f16')}{w.pick([' + hp', '', ' * hp'])}")
    w.emit(1, f"h1: f16 = hs[{g.idx()}]")
    w.emit(1, f"q0: u64 = {g.cast('u64')} ^ qs[{g.idx()}]")
    w.emit(1, f"e0: i8 = {w.pick(['b8[i] + bp', 'i8(k)', g.cast('i8')])}")
    w.emit(1, f"e1: u8 = u8s[{g.idx()}]")
    w.emit(1, f"e2: i16 = s16[{g.idx()}]")
    w.emit(1, f"e3: u16 = u16s[{g.idx()}]")
    types = list(_LOCAL)
    subgroups = False
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.integers(0, 9))
        t = w.pick(types)
        if kind <= 4:
            w.emit(1, f"{_LOCAL[t]} = {g.expr(t, 2)}")
        elif kind == 5:  # augmented assignment: the result converts back to the local's type
            op = w.pick(["+=", "-=", "*="] + (["^=", "|="] if t != "f16" else []))
            rhs = g.operand(t, 1)
            if t == "f16" and "zeromul" in avoid:
                rhs = _not_zero_literal(rhs)
            w.emit(1, f"{_LOCAL[t]} {op} {rhs}")
        elif kind == 6:
            w.emit(1, f"h1 = {g.expr('f16', 2)}")
        elif kind == 7:  # back into the 32-bit locals
            w.emit(
                1,
                w.pick(
                    [
                        f"c0 = c0 + {w.pick(['e0', 'e1', 'e2', 'e3'])}",  # promotes to int
                        "c1 = c1 ^ int(q0 >> 33)",
                        "c1 = c1 + int(h0) if abs(h0) < 1000 else c1",
                        "f0 = f0 + h0",  # f16 + float -> float
                        "f1 = float(h1) * 0.5",
                        f"b0 = b0 != {g.bool_expr(1)}",
                    ]
                ),
            )
        elif kind == 8:
            subgroups = True
            v = w.pick(["i8", "u8", "i16", "u16", "u64", "f16"])
            op = w.pick(["min", "max", "broadcast_first"] + (["add"] if v != "f16" else []))
            if op == "broadcast_first" and v == "f16" and "bcastfirstf" in avoid:
                op = "max"
            w.emit(1, f"t{_LOCAL[v]} = subgroup_{op}({g.expr(v, 1)})")
            w.emit(1, f"{_LOCAL[v]} = {_LOCAL[v]} {'-' if v == 'f16' else '^'} t{_LOCAL[v]}")
        else:
            lane = w.pick(["ln ^ 1", "(ln + 1) % 64", "0"])
            v = w.pick(["i8", "u16", "f16"])
            w.emit(1, "ln: int = subgroup_lane()" if not subgroups else "ln = subgroup_lane()")
            subgroups = True
            w.emit(1, f"{_LOCAL[v]} = subgroup_shuffle({g.expr(v, 1)}, {lane})")
    for t in types:
        if w.chance(0.25):
            w.emit(1, f"{_OUT[t]}[i] += {g.operand(t, 1)}")
        else:
            w.emit(1, f"{_OUT[t]}[i] = {_LOCAL[t]}")
    return {"wg64": subgroups}


def narrow_values(rng: random.Random, n: int, length) -> tuple:
    """Arguments for NARROW_PARAMS: three scalars (an f16 parameter may need rounding), then
    inputs over each type's whole range (with f16 specials), then the outputs' initial values."""

    def f16_value() -> float:
        r = rng.random()
        if r < 0.6:
            return rng.randint(-40, 40) / 4
        if r < 0.95:
            return rng.uniform(-1000, 1000)
        return rng.choice([0.0, -0.0, 65504.0, -65504.0, float("inf"), 1e-3, 60000.0])

    def ints(lo: int, hi: int, dtype) -> np.ndarray:
        small = (0, 9) if lo == 0 else (-5, 5)
        return np.array(
            [rng.choice([rng.randint(*small), rng.randint(lo, hi)]) for _ in range(length())],
            dtype,
        )

    scalars = (
        rng.choice([rng.randint(-20, 20) / 4, rng.uniform(-100, 100)]),
        rng.choice([rng.randint(0, 9), rng.randint(0, 2**64 - 1)]),
        rng.randint(-128, 127),
    )
    inputs = (
        np.array([f16_value() for _ in range(length())], np.float16),
        np.array(
            [rng.choice([rng.randint(0, 99), rng.randint(0, 2**64 - 1)]) for _ in range(length())],
            np.uint64,
        ),
        ints(-128, 127, np.int8),
        ints(0, 255, np.uint8),
        ints(-32768, 32767, np.int16),
        ints(0, 65535, np.uint16),
    )
    outs = (
        np.array([rng.randint(-40, 40) / 4 for _ in range(length())], np.float16),
        np.array([rng.randint(0, 99) for _ in range(length())], np.uint64),
        np.array([rng.randint(-99, 99) for _ in range(length())], np.int8),
        np.array([rng.randint(0, 99) for _ in range(length())], np.uint8),
        np.array([rng.randint(-99, 99) for _ in range(length())], np.int16),
        np.array([rng.randint(0, 99) for _ in range(length())], np.uint16),
    )
    return scalars + inputs + outs


__all__ = ["NARROW_PARAMS", "narrow_section", "narrow_values"]
