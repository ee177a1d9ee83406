"""Translate a kernel's Python source into an instrumented Python function, one call per invocation.

Types are inferred statically (parameters from annotations, locals from their annotation or first
assignment), so every operator becomes the device operation for its types: int32 wrap, float32
rounding, floor division, masked shifts, bounds-checked list access. Kernels with barriers become
generators that `yield` at each barrier. Statement translation lives in `translate_stmt.py`.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
import types
from dataclasses import dataclass, field

from . import semantics as S
from .names import _MISSING, Resolver, final_name, kernel_function  # noqa: F401 - re-exported
from .semantics import EmulationError
from .translate_types import (  # noqa: F401 - re-exported for the translator's other parts
    _INT_LITERAL,
    _ZERO,
    EXPLICIT,
    NARROW,
    NARROW_INTS,
    TYPE_INFO,
    WIDE_INTS,
    XTYPES,
    Lit,
    _adapts,
    _float_literal,
    _is_float,
    _is_int,
    _lit,
    coerce,
    convert_explicit,
    join,
    narrow_wrap,
    widening,
    wrapped,
)

INDEX_NAMES = ("GlobalIdx", "ThreadIdx", "BlockIdx", "BlockDim", "GridDim")
_AXES = {"x": 0, "y": 1, "z": 2}
_INDEX_VARS = {
    "GlobalIdx": ("_ct_gx", "_ct_gy", "_ct_gz"),
    "ThreadIdx": ("_ct_tx", "_ct_ty", "_ct_tz"),
    "BlockIdx": ("_ct_bx", "_ct_by", "_ct_bz"),
    "BlockDim": ("_ct_bdx", "_ct_bdy", "_ct_bdz"),
    "GridDim": ("_ct_gdx", "_ct_gdy", "_ct_gdz"),
}
SCALARS = ("int", "float", "bool")


@dataclass
class Translation:
    """A kernel turned into Python: `factory(**launch_values)` returns the per-invocation function."""

    name: str
    params: list[tuple[str, str]]  # (name, 'int'|'float'|'bool'|'list[int]'|...)
    written: set[str]
    read: set[str]
    has_barrier: bool
    observes_workgroup: bool
    uses_approx: bool
    source: str  # the generated Python, for debugging
    factory: object = None
    line_map: dict[int, int] = field(default_factory=dict)  # generated line -> kernel line
    filename: str = "<kernel>"
    shared: dict[str, str] = field(default_factory=dict)  # shared array -> element type
    shapes: dict[str, int] = field(default_factory=dict)  # list -> highest axis of x.shape[k] read
    has_subgroup: bool = False  # subgroup operations: runs as generators (translate_subgroup.py)


class ExprTranslator:
    """Expressions: `expr(node) -> (python_code, type)`."""

    def __init__(
        self,
        func: types.FunctionType,
        tree: ast.FunctionDef,
        filename: str,
        line0: int,
        given: dict | None = None,
    ):
        self.func = func
        self.tree = tree
        self.filename = filename
        self.line0 = line0  # add to ast line numbers to get file line numbers
        self.resolver = Resolver(func, given)
        self.scalars: dict[str, str] = {}  # params and locals -> type
        self.lists: dict[str, str] = {}  # list params -> element type
        self.shared: dict[str, str] = {}  # workgroup shared arrays -> element type
        self.locals: dict[str, str] = {}
        self.read: set[str] = set()
        self.written: set[str] = set()
        self.uses_approx = False
        self.observes_workgroup = False
        self.shapes: dict[str, int] = {}  # list -> highest axis of `x.shape[axis]` read
        self._tmp = 0

    # ---------------------------------------------------------------------------- helpers

    def error(self, node: ast.AST, message: str) -> EmulationError:
        line = getattr(node, "lineno", 1) + self.line0
        col = getattr(node, "col_offset", 0) + 1
        return EmulationError(
            f"{self.filename}:{line}:{col}: in kernel `{self.tree.name}`: {message}"
        )

    def tmp(self) -> str:
        self._tmp += 1
        return f"_ct_t{self._tmp}"

    coerce = staticmethod(coerce)
    convert_explicit = staticmethod(convert_explicit)
    join = staticmethod(join)

    def adapt(self, a: str, ta: str, b: str, tb: str) -> tuple[str, str, str, str]:
        """A literal operand takes the explicit type (f64, i64, u32) of the other operand."""
        if isinstance(a, Lit) and _adapts(a, ta, tb):
            a, ta = self.coerce(a, ta, tb), tb
        if isinstance(b, Lit) and _adapts(b, tb, ta):
            b, tb = self.coerce(b, tb, ta), ta
        return a, ta, b, tb

    def truth(self, node: ast.expr) -> str:
        code, t = self.expr(node)
        return code if t == "bool" else f"_ct_bool({code})"

    def const(self, value, node: ast.AST) -> tuple[str, str]:
        if isinstance(value, bool):
            return ("True" if value else "False"), "bool"
        if isinstance(value, int):
            return _lit(repr(S.wrap(value)), value), "int"
        if isinstance(value, float):
            return _lit(_float_literal(S.f32(value)), value), "float"
        raise self.error(
            node, f"constant {value!r} of type {type(value).__name__} is not a kernel value"
        )

    # ------------------------------------------------------------------------- expressions

    def expr(self, node: ast.expr) -> tuple[str, str]:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise self.error(
                node, f"`{type(node).__name__}` expressions are not supported in kernels"
            )
        return method(node)

    def e_Constant(self, node: ast.Constant):
        return self.const(node.value, node)

    def e_Name(self, node: ast.Name):
        name = node.id
        if name in self.scalars:
            return name, self.scalars[name]
        if name in self.lists or name in self.shared:
            what = "list" if name in self.lists else "shared array"
            raise self.error(
                node, f"{what} `{name}` can only be indexed (`{name}[i]`) or passed to len()"
            )
        value = self.resolver.lookup(name)
        if value is _MISSING:
            raise self.error(node, f"name `{name}` is not defined (assign it before use)")
        return self.const(value, node)

    def e_Attribute(self, node: ast.Attribute):
        base = final_name(node.value)
        if base in INDEX_NAMES and node.attr in _AXES:
            if base != "GlobalIdx":
                self.observes_workgroup = True
            return _INDEX_VARS[base][_AXES[node.attr]], "int"
        obj = self.resolver.dotted(node.value)
        if obj is math and node.attr in S.MATH_CONSTANTS:
            return self.const(S.MATH_CONSTANTS[node.attr], node)
        value = self.resolver.dotted(node)
        if value is _MISSING:
            raise self.error(node, f"`{ast.unparse(node)}` is not a kernel value")
        return self.const(value, node)

    def array(self, node: ast.expr) -> tuple[str, str, str, str] | None:
        """(name, storage variable, length variable, element type) of a list parameter or
        shared array named by `node`; None for anything else."""
        name = node.id if isinstance(node, ast.Name) else None
        if name in self.lists:
            return name, f"_ct_L_{name}", f"_ct_n_{name}", self.lists[name]
        if name in self.shared:
            return name, f"_ct_S_{name}", f"_ct_Z_{name}", self.shared[name]
        return None

    def e_Subscript(self, node: ast.Subscript):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            name = node.value.value.id if isinstance(node.value.value, ast.Name) else None
            if name not in self.lists:
                raise self.error(node, "only list parameters have a shape (`x.shape[k]`)")
            axis = node.slice.value if isinstance(node.slice, ast.Constant) else None
            root = node.slice
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id not in self.scalars:  # a module constant
                axis = self.resolver.dotted(node.slice)
            if type(axis) is not int or not 0 <= axis <= 2:
                raise self.error(node, "`.shape[k]` needs a constant axis k of 0, 1 or 2")
            self.shapes[name] = max(self.shapes.get(name, 0), axis)
            return f"_ct_h_{name}[{axis}]", "int"
        arr = self.array(node.value)
        if arr is None:
            raise self.error(node, "only list parameters and shared arrays can be indexed")
        if arr[0] in self.lists:
            self.read.add(arr[0])
        idx = self.index(node.slice)
        return self.load(arr, idx), arr[3]

    def index(self, node: ast.expr) -> str:
        code, t = self.expr(node)
        if _is_float(t):
            raise self.error(node, "list index must be an int (use int(...))")
        if t in WIDE_INTS:
            return wrapped(code)  # converted to int32, as the compiler does
        if t in NARROW_INTS:
            return code
        return code if t == "int" else f"_ct_int({code})"

    def load(self, arr: tuple[str, str, str, str], idx: str) -> str:
        name, data, length, elem = arr
        t = self.tmp()
        return f"({data}[{t}] if 0 <= ({t} := {idx}) < {length} else _ct_oob_r({name!r}, {t}, {_ZERO[elem]}))"

    def e_UnaryOp(self, node: ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return f"(not {self.truth(node.operand)})", "bool"
        operand = node.operand
        if (
            isinstance(node.op, ast.USub)
            and isinstance(operand, ast.Constant)
            and type(operand.value) in (int, float)
        ):
            return self.const(-operand.value, node)
        code, t = self.expr(operand)
        if isinstance(node.op, ast.UAdd):
            return (code, t) if t != "bool" else (f"_ct_int({code})", "int")
        if t in XTYPES:
            if isinstance(node.op, ast.USub):
                return (f"(-{code})", t) if _is_float(t) else (f"_ct_w(-{code}, {t!r})", t)
            if isinstance(node.op, ast.Invert) and not _is_float(t):
                return f"_ct_w(~{code}, {t!r})", t
            raise self.error(node, f"unsupported unary operator on {t}")
        if isinstance(node.op, ast.USub):
            if t == "float":
                return f"(-{code})", "float"
            return wrapped(f"-{self.coerce(code, t, 'int')}"), "int"
        if isinstance(node.op, ast.Invert):
            return f"(~{self.coerce(code, t, 'int')})", "int"
        raise self.error(node, "unsupported unary operator")

    def e_BinOp(self, node: ast.BinOp):
        a, ta = self.expr(node.left)
        b, tb = self.expr(node.right)
        op = type(node.op).__name__
        if ta in XTYPES or tb in XTYPES:
            return self.binop_explicit(node, op, a, ta, b, tb)
        return self.binop_legacy(node, op, a, ta, b, tb)

    def binop_legacy(self, node, op: str, a: str, ta: str, b: str, tb: str):
        """Operators on int / float / bool operands."""
        if op == "Pow":
            lit = node.right
            if (
                ta != "float"
                and tb != "float"
                and isinstance(lit, ast.Constant)
                and type(lit.value) is int
                and lit.value >= 0
            ):
                return f"_ct_ipow({self.coerce(a, ta, 'int')}, {lit.value})", "int"
            self.uses_approx = True
            return (
                f"_ct_fpow({self.coerce(a, ta, 'float')}, {self.coerce(b, tb, 'float')})",
                "float",
            )
        if op in ("BitAnd", "BitOr", "BitXor"):
            if ta == "float" or tb == "float":
                raise self.error(node, "bitwise operators need int or bool operands")
            sym = {"BitAnd": "&", "BitOr": "|", "BitXor": "^"}[op]
            t = self.join(ta, tb)
            return f"({self.coerce(a, ta, t)} {sym} {self.coerce(b, tb, t)})", t
        if op in ("LShift", "RShift"):
            if ta == "float" or tb == "float":
                raise self.error(node, "shifts need int operands")
            a, b = self.coerce(a, ta, "int"), self.coerce(b, tb, "int")
            return (f"_ct_shl({a}, {b})" if op == "LShift" else f"({a} >> ({b} & 31))"), "int"
        if op == "Div":
            self.uses_approx = True
            return (
                f"_ct_fdiv({self.coerce(a, ta, 'float')}, {self.coerce(b, tb, 'float')})",
                "float",
            )
        if op not in ("Add", "Sub", "Mult", "FloorDiv", "Mod"):
            raise self.error(node, f"operator `{op}` is not supported in kernels")
        t = self.join(self.join(ta, tb), "int")
        a, b = self.coerce(a, ta, t), self.coerce(b, tb, t)
        sym = {"Add": "+", "Sub": "-", "Mult": "*"}.get(op)
        if t == "int":
            if sym:
                return wrapped(f"{a} {sym} {b}"), "int"
            return (f"_ct_idiv({a}, {b})" if op == "FloorDiv" else f"_ct_imod({a}, {b})"), "int"
        if sym:
            return f"_ct_f({a} {sym} {b})", "float"
        self.uses_approx = True  # Vulkan: inherited from x - y * floor(x / y)
        return (
            f"_ct_ffloordiv({a}, {b})" if op == "FloorDiv" else f"_ct_fmodpy({a}, {b})"
        ), "float"

    def binop_explicit(self, node, op: str, a: str, ta: str, b: str, tb: str):
        """Operators with an f64 / i64 / u32 operand (the compiler's rules)."""
        if op in ("LShift", "RShift"):
            t = "int" if ta == "bool" else ta
            if _is_float(t) or _is_float(tb):
                raise self.error(node, "shifts need int operands")
            bits = 64 if t in ("i64", "u64") else 32
            a = self.coerce(a, ta, t)
            if t in NARROW_INTS:  # shifted as int32 (count modulo 32), then wrapped
                if op == "LShift":
                    return f"_ct_w({a} << ({b} & 31), {t!r})", t
                return f"({a} >> ({b} & 31))", t
            if op == "LShift":
                return f"_ct_w({a} << ({b} & {bits - 1}), {t!r})", t
            return f"({a} >> ({b} & {bits - 1}))", t
        a, ta, b, tb = self.adapt(a, ta, b, tb)
        try:
            t = self.join(ta, tb)
        except EmulationError as exc:
            raise self.error(node, str(exc)) from None
        a, b = self.coerce(a, ta, t), self.coerce(b, tb, t)
        if t in NARROW:  # computed in 32 bits, converted back (the compiler's widen_narrow)
            w = "float" if t == "f16" else "int"
            code, rt = self.binop_legacy(node, op, self.coerce(a, t, w), w, self.coerce(b, t, w), w)
            return (narrow_wrap(code, t), t) if rt == w else (code, rt)
        if op in ("BitAnd", "BitOr", "BitXor"):
            if _is_float(t):
                raise self.error(node, "bitwise operators need int or bool operands")
            sym = {"BitAnd": "&", "BitOr": "|", "BitXor": "^"}[op]
            return f"({a} {sym} {b})", t
        if op == "Div":
            if t == "f64":
                return f"_ct_fdiv64({a}, {b})", "f64"
            self.uses_approx = True
            return f"_ct_fdiv({self.coerce(a, t, 'float')}, {self.coerce(b, t, 'float')})", "float"
        if op == "Pow":
            lit = node.right
            if (
                t in WIDE_INTS
                and isinstance(lit, ast.Constant)
                and type(lit.value) is int
                and lit.value >= 0
            ):
                return f"_ct_wpow({a}, {lit.value}, {t!r})", t
            if t == "f64":
                raise self.error(node, "`**` is not available on f64")
            self.uses_approx = True
            return f"_ct_fpow({self.coerce(a, t, 'float')}, {self.coerce(b, t, 'float')})", "float"
        sym = {"Add": "+", "Sub": "-", "Mult": "*"}.get(op)
        if op not in ("Add", "Sub", "Mult", "FloorDiv", "Mod"):
            raise self.error(node, f"operator `{op}` is not supported in kernels")
        if t == "f64":
            if sym:
                return f"({a} {sym} {b})", t
            return (
                f"_ct_ffloordiv64({a}, {b})" if op == "FloorDiv" else f"_ct_fmodpy64({a}, {b})"
            ), t
        if t == "float":
            if sym:
                return f"_ct_f({a} {sym} {b})", t
            self.uses_approx = True
            return (f"_ct_ffloordiv({a}, {b})" if op == "FloorDiv" else f"_ct_fmodpy({a}, {b})"), t
        if sym:
            return f"_ct_w({a} {sym} {b}, {t!r})", t
        return (
            f"_ct_wdiv({a}, {b}, {t!r})" if op == "FloorDiv" else f"_ct_wmod({a}, {b}, {t!r})"
        ), t

    def e_BoolOp(self, node: ast.BoolOp):
        sym = " and " if isinstance(node.op, ast.And) else " or "
        return "(" + sym.join(self.truth(v) for v in node.values) + ")", "bool"

    def e_Compare(self, node: ast.Compare):
        syms = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}
        parts = []
        left, tl = self.expr(node.left)
        for i, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            sym = syms.get(type(op).__name__)
            if sym is None:
                raise self.error(
                    node, f"comparison `{type(op).__name__}` is not supported (use == != < <= > >=)"
                )
            right, tr = self.expr(right_node)
            left, tl, right, tr = self.adapt(left, tl, right, tr)
            try:
                t = self.join(tl, tr)
            except EmulationError as exc:
                raise self.error(node, str(exc)) from None
            if i + 1 < len(node.ops):  # evaluated once, reused by the next comparison
                name = self.tmp()
                parts.append(
                    f"{self.coerce(left, tl, t)} {sym} {self.coerce(f'({name} := {right})', tr, t)}"
                )
                left, tl = name, tr
            else:
                parts.append(f"{self.coerce(left, tl, t)} {sym} {self.coerce(right, tr, t)}")
        return "(" + " and ".join(f"({p})" for p in parts) + ")", "bool"

    def e_IfExp(self, node: ast.IfExp):
        cond = self.truth(node.test)
        a, ta = self.expr(node.body)
        b, tb = self.expr(node.orelse)
        a, ta, b, tb = self.adapt(a, ta, b, tb)
        try:
            t = self.join(ta, tb)
        except EmulationError as exc:
            raise self.error(node, str(exc)) from None
        return f"({self.coerce(a, ta, t)} if {cond} else {self.coerce(b, tb, t)})", t

    def e_Call(self, node: ast.Call):
        from .translate_calls import call

        return call(self, node)


def parse_kernel(func: types.FunctionType) -> tuple[ast.FunctionDef, str, int]:
    """The kernel's `FunctionDef`, its file name, and the offset to file line numbers."""
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as exc:
        raise EmulationError(f"cannot read the source of `{func.__name__}`: {exc}") from None
    tree = ast.parse(textwrap.dedent(source))
    fdef = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
    )
    if not isinstance(fdef, ast.FunctionDef):
        raise EmulationError(f"`{func.__name__}` is not a plain function definition")
    filename = inspect.getsourcefile(func) or "<unknown>"
    return fdef, filename, func.__code__.co_firstlineno - 1
