"""Hypothesis strategies that write random `@Gpu` kernels as source text, with arguments.

Kernels cover the whole language: typed int/float/bool expression trees (every operator, math
function, cast and conditional expression), list reads at `i`, `i +- k` and computed indices,
if/elif/else, bounded while loops, for-range with varied and runtime steps, break / continue /
early return, and (sometimes) a workgroup barrier, then sometimes with a shared float array read
across invocations and order-independent int atomics (add/min/max/and/or/xor) on a shared array.
A fraction of kernels gets a feature section (kernelgen_features.py): subgroup operations in
uniform control flow, a 2-D or 3-D grid over an input of that shape, or f64/i64/u32 locals,
casts, lists and f64 math (fabs, fma, floor/ceil/trunc, isnan/isinf/isfinite, a final sqrt),
or the narrow types f16/u64/i8/u8/i16/u16 (kernelgen_types.py: parameters, lists, wrapping
arithmetic, promotions and casts, f16 math, subgroup operations, stores).
Choices that keep results well defined on
every conformant device are documented in docs/reliability.md ("What the generator avoids").
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from . import kernelgen_features as F
from . import kernelgen_types as NT
from .kernelgen_avoid import AVOID, KNOWN_DEVIATIONS, avoid_known_deviations  # noqa: F401
from .kernelgen_avoid import constant as _constant
from .kernelgen_avoid import not_zero_constant as _not_zero_literal

SIGNATURE = (
    "n: int, a: float, k: int, xs: list[float], ks: list[int], fs: list[bool], "
    "out_f: list[float], out_i: list[int], out_b: list[bool]"
)
OUTPUTS = ("out_f", "out_i", "out_b")
_HEADER = (
    "import math\nfrom cthreads.gpu import GlobalIdx, ThreadIdx, BlockIdx, BlockDim, Gpu\n"
    "from cthreads.gpu import shared, atomic_add, atomic_min, atomic_max, atomic_and, atomic_or, "
    "atomic_xor\nfrom cthreads.gpu import subgroup_add, subgroup_min, subgroup_max, "
    "subgroup_inclusive_add, subgroup_exclusive_add, subgroup_broadcast, subgroup_broadcast_first, "
    "subgroup_ballot, subgroup_elect, subgroup_all, subgroup_any, subgroup_shuffle, "
    "subgroup_shuffle_xor, subgroup_size, subgroup_lane, subgroup_id, f64, i64, u32, "
    "f16, u64, i8, u8, i16, u16\n"
    "from cthreads.sync import __sync_threads\n\n\n"
)
# feature sections (kernelgen_features.py), each in this fraction of kernels
FEATURES = (
    ("base",) * 9
    + ("subgroup",) * 3
    + ("grid",) * 2
    + ("grid3",)
    + ("types",) * 3
    + ("narrow",) * 2
)
# int atomics whose final value does not depend on the order invocations reach them
_ORDER_FREE_ATOMICS = ("add", "min", "max", "and", "or", "xor")
_FLOAT_LITS = [
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
_UNARY_MATH = {  # name -> guard template for its argument (keeps the result defined, see docs)
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


@dataclass
class KernelCase:
    """A generated kernel: its module source and the arguments to launch it with."""

    source: str
    args: tuple
    wg: int = 64
    grid: tuple | None = None  # passed as grid= to gpu() and emulate()
    signature: str = SIGNATURE
    rules: dict = field(default_factory=dict)  # list -> comparison rule (differential.py)

    def fresh_args(self) -> tuple:
        return tuple(
            list(v) if isinstance(v, list) else v.copy() if isinstance(v, np.ndarray) else v
            for v in self.args
        )

    def load(self):
        """Import the source as a module (so inspect.getsource works) and return the kernel."""
        return load_kernel(self.source)

    def __repr__(self) -> str:
        names = [p.split(":")[0].strip() for p in self.signature.split(", ")]
        shown = ",\n    ".join(f"{n}={v!r}" for n, v in zip(names, self.args))
        return f"KernelCase(wg={self.wg}, grid={self.grid}):\n{self.source}\nargs:\n    {shown}\n"


_tmpdir: tempfile.TemporaryDirectory | None = None


def load_kernel(source: str):
    """Write `source` to a temporary module file, import it, return its `kern`."""
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = tempfile.TemporaryDirectory(prefix="cthreads-fuzz-")
    name = "ct_fuzz_" + hashlib.sha1(source.encode()).hexdigest()[:16]
    if name in sys.modules:
        return sys.modules[name].kern
    path = Path(_tmpdir.name) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.kern


_TYPE_NAMES = {"i": "int", "f": "float", "b": "bool"}


class _Writer:
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
                    return self.pick(_FLOAT_LITS[1:])
                return self.pick(_FLOAT_LITS)
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
            name = self.pick(sorted(_UNARY_MATH))
            return f"math.{name}({self.guard(_UNARY_MATH[name], f())})"
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


def _values(rng: random.Random, kind: str, count: int, wide: bool) -> list:
    if kind == "f":
        out = []
        for _ in range(count):
            r = rng.random()
            if r < 0.7:
                out.append(rng.randint(-40, 40) / 4)
            elif r < 0.95 or not wide:  # float32 values: what the device holds
                out.append(float(np.float32(rng.uniform(-1000, 1000))))
            else:
                out.append(
                    float(np.float32(rng.choice([0.0, -0.0, 1e-3, 3e38, -3e38, 1e-30, 65504.0])))
                )
        return out
    if kind == "i":
        return [
            rng.randint(-20, 20)
            if not wide or rng.random() < 0.8
            else rng.randint(-(2**31), 2**31 - 1)
            for _ in range(count)
        ]
    return [rng.random() < 0.5 for _ in range(count)]


@st.composite
def kernel_cases(draw, max_n: int = 130, features: tuple = FEATURES) -> KernelCase:
    """One random kernel plus arguments for SIGNATURE (extended by the feature's parameters);
    `features`: the feature sections to draw from (FEATURES; a test may ask for one)."""
    feature = draw(st.sampled_from(features))
    dims = {"grid": 2, "grid3": 3}.get(feature, 1)
    barrier = feature == "base" and draw(st.integers(0, 99)) < 15
    wg = draw(st.sampled_from([64, 64, 32, 16])) if barrier else 64
    w = _Writer(draw)
    body_lines = []
    # Locals come into scope one by one, so no initializer reads an unassigned name.
    w.ints, w.floats, w.bools = ["i", "n", "k"], ["a"], []
    if dims > 1:  # one invocation per cell of a 2-D or 3-D input xs
        decls, grid_ints, guard = F.grid_decls(dims)
        w.ints += grid_ints
    else:
        decls = ["    i: int = GlobalIdx.x"]
    for name, t, depth in (
        ("c0", "i", 2),
        ("c1", "i", 1),
        ("f0", "f", 2),
        ("f1", "f", 1),
        ("b0", "b", 1),
    ):
        init = w.expr(t, depth)
        if t == "f" and "zeromul" in AVOID:  # a local the compiler knows is 0.0 (#10, #16)
            init = _not_zero_literal(init)
        decls.append(f"    {name}: {_TYPE_NAMES[t]} = {init}")
        {"i": w.ints, "f": w.floats, "b": w.bools}[t].append(name)
    counters_at = len(decls)
    extra = {}
    if feature == "subgroup":
        extra = F.subgroup_section(w, draw, st, AVOID)
        decls[1:1] = extra["decls"]
        counters_at += len(extra["decls"])
    elif feature == "types":
        extra = F.typed_section(w, draw, st, AVOID)
    elif feature == "narrow":
        extra = NT.narrow_section(w, draw, st, AVOID)
    if dims > 1:
        body_lines += [guard, "        return"]
    elif draw(st.booleans()):
        body_lines.append("    if i >= n:")
    use_shared = barrier and draw(st.booleans())
    if use_shared:  # workgroup memory: a float per invocation and 4 int atomic accumulators
        decls.insert(1, "    sh = shared(float, BlockDim.x)")
        decls.insert(2, "    acc = shared(int, 4)")
    prelude, w.lines = w.lines, []
    if barrier:
        w.no_return, w.can_write_out_f = True, True
        w.block(1, 3, 1)
        w.emit(1, f"out_f[i] = {w.expr('f', 2)}")
        if use_shared:
            w.emit(1, f"sh[ThreadIdx.x] = {w.expr('f', 2)}")
            op = w.pick(list(_ORDER_FREE_ATOMICS))
            w.emit(1, f"atomic_{op}(acc, ({w.expr('i', 1)}) & 3, {w.expr('i', 1)})")
        w.emit(1, "__sync_threads()")
        w.no_return, w.can_write_out_f = False, False
        mirror = draw(
            st.sampled_from(["BlockDim.x - 1 - ThreadIdx.x", "(ThreadIdx.x + 1) % BlockDim.x", "0"])
        )
        w.emit(1, f"f1 = out_f[BlockIdx.x * BlockDim.x + {mirror}]")
        if use_shared:
            w.emit(1, f"f0 = sh[{mirror}]")
            w.emit(1, f"c1 = c1 + acc[{w.pick(['0', '1', '2', '3', 'ThreadIdx.x & 3'])}]")
        w.block(1, 4, 2)
        body_lines = []
    else:
        if body_lines and body_lines[-1].endswith(":"):
            body_lines.append("        return")
        w.block(1, 6, 2)
    w.emit(1, f"out_i[i] = c0 + c1 + {w.expr('i', 1)}")
    w.emit(1, f"out_b[i] = b0 {w.pick(['and', 'or', '!='])} {w.expr('b', 1)}")
    if not barrier:
        last = w.expr("f", 1)
        w.emit(1, f"out_f[i] = f0 + f1 * {_not_zero_literal(last) if 'zeromul' in AVOID else last}")
    decls[counters_at:counters_at] = [f"    w{c}: int = 0" for c in range(w.counters)]
    signature = SIGNATURE + {
        "subgroup": ", " + F.SUBGROUP_PARAMS,
        "types": ", " + F.TYPED_PARAMS,
        "narrow": ", " + NT.NARROW_PARAMS,
    }.get(feature, "")
    if barrier:
        deco = f"@Gpu(workgroup_size={wg})"
    elif feature == "subgroup" or extra.get("wg64"):
        deco = "@Gpu(workgroup_size=64)"
    elif dims > 1:
        deco = F.grid_decorator(draw, st, dims)
    else:
        deco = "@Gpu"
    source = (
        _HEADER
        + f"{deco}\ndef kern({signature}) -> None:\n"
        + "\n".join(decls + prelude + body_lines + w.lines)
        + "\n"
    )

    grid = None
    if dims > 1:
        shape, grid = F.grid_shape(draw, st, dims)
        n = int(np.prod(shape))
    else:
        n = draw(st.integers(1, max_n))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    wide = draw(st.booleans())

    def length():
        return max(1, n + draw(st.integers(-3, 3)))

    xs = _values(rng, "f", n if dims > 1 else length(), wide)
    if dims > 1:
        xs = np.array(xs, np.float32).reshape(shape)
    args = (
        n,
        _values(rng, "f", 1, wide)[0],
        _values(rng, "i", 1, wide)[0],
        xs,
        _values(rng, "i", length(), wide),
        _values(rng, "b", length(), wide),
        _values(rng, "f", length(), wide),
        _values(rng, "i", length(), wide),
        _values(rng, "b", length(), wide),
    )
    if feature == "subgroup":
        m = length()  # out_s and out_m alike: out_m[j] bounds the order error of out_s[j]
        args += (_values(rng, "f", m, False), _values(rng, "f", m, False))
    elif feature == "types":
        args += F.typed_values(rng, n, length)
    elif feature == "narrow":
        args += NT.narrow_values(rng, n, length)
    return KernelCase(source, args, wg, grid, signature, extra.get("rules", {}))


__all__ = ["SIGNATURE", "KernelCase", "kernel_cases", "load_kernel"]
