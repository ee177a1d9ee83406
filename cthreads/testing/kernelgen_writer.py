"""The expression and statement writer of generated kernels (kernelgen.py): `Writer` turns
hypothesis draws into kernel source lines: typed int/float/bool expression trees (every operator,
math function, cast and conditional expression, with guards that keep each result defined), list
reads at `i`, `i +- k` and computed indices, and statements: assignments, if/elif/else, bounded
while loops, for-range loops with varied and runtime steps, break / continue / early return.
kernelgen.kernel_cases lays out the kernel around it (locals, barrier phases, outputs, arguments);
the feature sections (kernelgen_features.py, kernelgen_types.py) add to its name lists.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .kernelgen_avoid import AVOID
from .kernelgen_avoid import constant as _constant
from .kernelgen_avoid import not_zero_constant as _not_zero_literal

FLOAT_LITS = [
    "0.0",
    "1.0",
    "-1.0",
    "0.5",
    "2.0",
    "-2.5",
    "3.0",
    "0.25",
    "10.0",
    "-0.75",
    "100.0",
    "1e-3",
    "1.5",
]
UNARY_MATH = {  # name -> guard template for its argument (keeps the result defined, see docs)
    "sqrt": "abs({})",
    "exp": "G20",
    "exp2": "G20",
    "log": "abs({}) + 1.0",
    "log2": "abs({}) + 0.5",
    "log10": "abs({}) + 1.0",
    "sin": "G3",
    "cos": "G3",
    "tan": "G1",
    "asin": "G1",
    "acos": "G1",
    "atan": "{}",
    "sinh": "G8",
    "cosh": "G8",
    "tanh": "G8",
    "asinh": "{}",
    "acosh": "abs({}) + 1.0",
    "atanh": "G0.9",
    "degrees": "{}",
    "radians": "{}",
    "fabs": "{}",
}


TYPE_NAMES = {"i": "int", "f": "float", "b": "bool"}


class Writer:
    """Builds one kernel from hypothesis draws."""

    def __init__(self, draw, barrier_phase: bool = False):
        self.draw = draw
        self.lines: list[str] = []
        self.ints = ["i", "n", "k", "c0", "c1"]
        self.floats = ["a", "f0", "f1"]
        self.bools = ["b0"]
        self.loop_vars: list[str] = []
        self.counters = 0
        self.loops = 0
        self.in_loop = 0
        self.no_return = barrier_phase  # statements before a barrier must not return
        self.can_write_out_f = True

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    # ----------------------------------------------------------------------- expressions

    def expr(self, t: str, depth: int) -> str:
        if depth <= 0 or self.chance(0.3):
            return self.leaf(t)
        return {"i": self.int_expr, "f": self.float_expr, "b": self.bool_expr}[t](depth - 1)

    def leaf(self, t: str) -> str:
        if t == "i":
            kind = self.draw(st.integers(0, 9))
            if kind <= 3:
                return self.pick(self.ints + self.loop_vars)
            if kind <= 5:
                return str(self.draw(st.integers(-9, 9)))
            if kind == 6:
                return self.pick(["2147483647", "(-2147483647 - 1)", "65535", "1000003", "-7"])
            if kind == 7:
                return f"ks[{self.index()}]"
            return self.pick(["len(xs)", "len(ks)", "GlobalIdx.x"])
        if t == "f":
            kind = self.draw(st.integers(0, 9))
            if kind <= 3:
                return self.pick(self.floats)
            if kind <= 5:
                if "zeromul" in AVOID:  # a local holding a literal 0.0 is folded into products too
                    return self.pick(FLOAT_LITS[1:])
                return self.pick(FLOAT_LITS)
            if kind == 6:
                return "out_f[i]" if self.can_write_out_f else "a"
            return f"xs[{self.index()}]"
        kind = self.draw(st.integers(0, 5))
        if kind <= 1 and self.bools:
            return self.pick(self.bools)
        if kind == 2:
            return self.pick(["True", "False"])
        if kind == 3:
            return "out_b[i]"
        if kind <= 1:
            return self.pick(["True", "False"])
        return f"fs[{self.index()}]"

    def index(self) -> str:
        kind = self.draw(st.integers(0, 5))
        if kind <= 1:
            return "i"
        if kind == 2:
            return f"i {self.pick(['+', '-'])} {self.draw(st.integers(1, 3))}"
        if kind == 3:
            return "n - 1 - i"
        if kind == 4:
            return f"({self.expr('i', 1)}) % len(xs)"
        idx = self.expr("i", 1)  # anything: out of range reads give 0 on the device
        return f"({idx}) & 255" if _constant(idx) else idx  # a negative constant is a compile error

    def int_expr(self, d: int) -> str:
        e = lambda: self.expr("i", d)  # noqa: E731 - a thunk: each call draws a new expression
        kind = self.draw(st.integers(0, 13))
        if kind <= 4:
            op = self.pick(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"])
            return f"({e()} {op} {self.safe_rhs(op, 'i', e())})"
        if kind == 5:
            return f"({self.pick(['-', '~'])}{e()})"
        if kind == 6:
            return f"{self.pick(['abs', 'int'])}({e()})"
        if kind == 7:
            return f"{self.pick(['min', 'max'])}({e()}, {e()})"
        if kind == 8:
            return f"({e()} ** {self.draw(st.integers(0, 3))})"
        if kind == 9:
            f = self.expr("f", d)
            fn = self.pick(["int", "math.floor", "math.ceil", "math.trunc"])
            return f"({fn}({f}) if abs({f}) < 1000000.0 else {self.draw(st.integers(-3, 3))})"
        if kind == 10:
            return f"({e()} if {self.expr('b', d)} else {e()})"
        if kind == 11:
            return f"int({self.expr('b', d)})"
        if kind == 12:
            return f"({e()} {self.pick(['<<', '>>'])} ({e()} & 31))"
        return f"({e()} + {self.expr('b', d)})"  # bool takes part in arithmetic as int

    def safe_rhs(self, op: str, t: str, rhs: str) -> str:
        """The compiler folds constant operands and rejects a negative shift count or a zero
        divisor (as Python would raise): keep constant right operands clear of both."""
        if not _constant(rhs):
            if t == "i" and op == "%" and "intmod0" in AVOID:
                return f"({rhs} if {rhs} != 0 else 3)"
            # zeromul: on lavapipe a zero that reaches a float division as a constant (an
            # out-of-range read: `a / xs[len(xs)]`) is folded too (a / 0.0 gave 0.0, a // 0.0 nan)
            zero_div = "fdiv0" in AVOID or ("zeromul" in AVOID and (t == "f" or op == "/"))
            if op in ("/", "//", "%") and (t == "f" or op == "/") and zero_div:
                return f"({rhs} if {rhs} != 0 else 3)"
            return rhs
        if op in ("<<", ">>"):
            return f"({rhs} & 31)"
        if op in ("//", "%", "/"):
            return f"({rhs} | 1)" if t == "i" else self.pick(["2.0", "-0.75", "3.0"])
        return rhs

    def float_expr(self, d: int) -> str:
        f = lambda: self.expr("f", d)  # noqa: E731 - a thunk: each call draws a new expression
        kind = self.draw(st.integers(0, 15))
        if kind <= 4:
            op = self.pick(["+", "-", "*", "*", "/", "//", "%"])
            lhs, rhs = f(), self.safe_rhs(op, "f", f())
            if op == "*" and "zeromul" in AVOID:
                lhs, rhs = _not_zero_literal(lhs), _not_zero_literal(rhs)
            return f"({lhs} {op} {rhs})"
        if kind == 5:
            op, rhs = self.pick(["+", "-", "*"]), self.expr("i", d)
            if op == "*" and "zeromul" in AVOID:
                rhs = _not_zero_literal(rhs)
            return f"({f()} {op} {rhs})"
        if kind == 6:
            return f"({self.expr('i', d)} / {self.safe_rhs('/', 'i', self.expr('i', d))})"
        if kind == 7:
            return f"float({self.expr('i', d)})"
        if kind == 8:
            return f"{self.pick(['-', 'abs'])}({f()})"
        if kind in (9, 10):
            name = self.pick(sorted(UNARY_MATH))
            return f"math.{name}({self.guard(UNARY_MATH[name], f())})"
        if kind == 11:
            name = self.pick(["copysign", "fmod", "hypot", "atan2", "pow"])
            x = f()
            if name == "pow":
                return f"math.pow(abs({x}) + 0.5, {self.guard('G8', f())})"
            return f"math.{name}({x}, {f()})"
        if kind == 12:
            return f"({f()} ** {self.pick(['2.0', '3.0', '0.5', '-1.0', str(self.draw(st.integers(0, 3)))])})"
        if kind == 13:
            return f"{self.pick(['min', 'max'])}({f()}, {f()})"
        if kind == 14:
            return f"({f()} if {self.expr('b', d)} else {f()})"
        return f"float({self.expr('b', d)})"

    def guard(self, template: str, x: str) -> str:
        if template.startswith("G"):  # |x| <= limit, else a harmless constant
            return f"({x} if abs({x}) <= {template[1:]} else 0.5)"
        return template.format(x)

    def bool_expr(self, d: int) -> str:
        kind = self.draw(st.integers(0, 9))
        if kind <= 3:
            t = self.pick(["i", "f", "i", "f", "mixed"])
            op = self.pick(["<", "<=", ">", ">=", "==", "!="])
            if t == "mixed":
                return f"({self.expr('i', d)} {op} {self.expr('f', d)})"
            if self.chance(0.2):
                return f"({self.expr(t, d)} {op} {self.expr(t, d)} {self.pick(['<', '<='])} {self.expr(t, d)})"
            return f"({self.expr(t, d)} {op} {self.expr(t, d)})"
        if kind == 4:
            return f"(not {self.expr('b', d)})"
        if kind == 5:
            return f"({self.expr('b', d)} {self.pick(['and', 'or', '&', '|', '^', '==', '!='])} {self.expr('b', d)})"
        if kind == 6:
            return f"bool({self.expr(self.pick(['i', 'f']), d)})"
        if kind == 7:
            return f"math.{self.pick(['isnan', 'isinf', 'isfinite'])}({self.expr('f', d)})"
        if kind == 8:
            return f"({self.expr('b', d)} if {self.expr('b', d)} else {self.expr('b', d)})"
        return self.leaf("b")

    # ------------------------------------------------------------------------ statements

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def block(self, indent: int, budget: int, depth: int) -> None:
        count = self.draw(st.integers(1, max(1, budget)))
        for _ in range(count):
            self.statement(indent, depth)

    def statement(self, indent: int, depth: int) -> None:
        kind = self.draw(st.integers(0, 11))
        d = self.draw(st.integers(1, 3))
        if kind <= 2:
            t = self.pick(["f", "i", "b"])
            name = self.pick({"f": ["f0", "f1"], "i": ["c0", "c1"], "b": ["b0"]}[t])
            if t != "b" and self.chance(0.4):
                ops = ["+=", "-=", "*="] + (
                    ["//=", "%=", "^=", "|=", "<<=", ">>="] if t == "i" else ["/="]
                )
                op = self.pick(ops)
                rhs = self.safe_rhs(op[:-1], t, self.expr(t, d))
                if t == "f" and "zeromul" in AVOID:
                    rhs = _not_zero_literal(rhs)
                self.emit(indent, f"{name} {op} {rhs}")
            else:
                rhs = self.expr(t, d)
                if t == "f" and "zeromul" in AVOID:  # a constant-zero local is folded too (#10)
                    rhs = _not_zero_literal(rhs)
                self.emit(indent, f"{name} = {rhs}")
        elif kind <= 4:
            out = self.pick(
                ["out_f", "out_i", "out_b"] if self.can_write_out_f else ["out_i", "out_b"]
            )
            t = {"out_f": "f", "out_i": "i", "out_b": "b"}[out]
            if t != "b" and self.chance(0.3):
                self.emit(indent, f"{out}[i] += {self.expr(t, d)}")
            else:
                self.emit(indent, f"{out}[i] = {self.expr(t, d)}")
        elif kind <= 6 and depth > 0:
            self.emit(indent, f"if {self.expr('b', d)}:")
            self.block(indent + 1, 3, depth - 1)
            while self.chance(0.3):
                self.emit(indent, f"elif {self.expr('b', d)}:")
                self.block(indent + 1, 2, depth - 1)
            if self.chance(0.5):
                self.emit(indent, "else:")
                self.block(indent + 1, 2, depth - 1)
        elif kind == 7 and depth > 0 and self.loops < 3:
            self.for_loop(indent, depth)
        elif kind == 8 and depth > 0 and self.loops < 3:
            self.while_loop(indent, depth)
        elif kind == 9 and self.in_loop:
            self.emit(indent, f"if {self.expr('b', 1)}:")
            self.emit(indent + 1, self.pick(["break", "continue"]))
        elif kind == 10 and not self.no_return:
            self.emit(indent, f"if {self.expr('b', 1)}:")
            self.emit(indent + 1, "return")
        else:
            self.emit(indent, f"c0 = {self.expr('i', d)}")

    def for_loop(self, indent: int, depth: int) -> None:
        self.loops += 1
        var = f"j{len(self.loop_vars)}"
        lo, hi = f"({self.expr('i', 1)}) % 5", f"({self.expr('i', 1)}) % 9"
        form = self.draw(st.integers(0, 4))
        if form == 0:
            rng = f"range({hi})"
        elif form == 1:
            rng = f"range({lo}, {hi})"
        elif form == 2:
            rng = f"range({hi}, {lo} - 3, -{self.draw(st.integers(1, 3))})"
        elif form == 3:
            rng = f"range({lo}, {hi}, ({self.expr('i', 1)}) % 3 + 1)"
        else:
            rng = f"range({hi}, {lo} - 4, -(({self.expr('i', 1)}) % 3 + 1))"
        self.emit(indent, f"for {var} in {rng}:")
        self.loop_vars.append(var)
        self.in_loop += 1
        self.block(indent + 1, 3, depth - 1)
        if self.chance(0.1):  # Python semantics: the next iteration ignores this
            self.emit(indent + 1, f"{var} = {var} + 100")
        self.in_loop -= 1
        self.loop_vars.pop()  # never read after the loop (its value there is Python's detail)

    def while_loop(self, indent: int, depth: int) -> None:
        self.loops += 1
        w = f"w{self.counters}"
        self.counters += 1
        self.emit(indent, f"{w} = 0")
        cond = f"{w} < {self.draw(st.integers(1, 6))}"
        if self.chance(0.5):
            cond += f" and {self.expr('b', 1)}"
        self.emit(indent, f"while {cond}:")
        self.emit(indent + 1, f"{w} += 1")
        self.in_loop += 1
        self.block(indent + 1, 3, depth - 1)
        self.in_loop -= 1
