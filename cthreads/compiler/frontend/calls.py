"""Calls in kernels: the builtins (abs, min, max, int, float, bool, len, pow), the math
intrinsics of `intrinsics.py`, and the barrier forms `__sync_threads()` /
`Barrier.arrive_and_wait()`. Callees are resolved by value (`from math import sin as s` works);
anything else is a located compile error.
"""

from __future__ import annotations

import ast
import builtins
import math

from .. import ir
from ..intrinsics import INTRINSICS
from ..ir import BOOL, F16, F32, F64, I32, BinOp
from . import subgroup as sg
from . import typerules as tr
from .copies import COPY_FORM
from .memory import ATOMIC_OPS, array_form, array_what, atomic_form
from .names import MISSING, builtin_of, chain_root, dotted_path, gpu_tag, intrinsic_of
from .signature import EXPLICIT
from .tiles import TILE_NAMES, tile_in_expression
from .unsupported import FUNCTIONS_ALLOWED

_RESULT = {"f": F32, "i": I32, "b": BOOL}
_BARRIER_ALLOWED = "Barrier.arrive_and_wait() or __sync_threads() (a workgroup barrier)"


class CallLowering:
    """Mixin of exprs.ExprLowerer: a call as a value (`visit_Call` delegates to `call_value`)
    and the resolution of callees, which stmts.StmtLowerer asks too (`x.callee`)."""

    # ---------------------------------------------------------------- resolution

    def callee(self, node: ast.Call) -> tuple[str, str]:
        """(kind, name): kind is 'builtin', 'intrinsic', 'barrier', 'barrier-class', 'shared'
        (an array declaration; name 'shared' or 'local') or 'atomic' (name: 'atomic_add', ...)."""
        func = node.func
        text = ast.unparse(func)
        if isinstance(func, ast.Name) and func.id in self.ctx.py_locals:
            p = self.ctx.param(func.id)
            what = "parameter" if p is not None else "local variable"
            self.fail(
                func,
                f"`{func.id}` is a {what} here, not a function, so it cannot be called",
                FUNCTIONS_ALLOWED,
            )
        if not self.is_static(func):
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                kind, inner = self.callee(func.value)  # `Barrier(4).arrive_and_wait()`
                if kind == "barrier-class":
                    self.reject_barrier_construction(func.value, inner)
            root = chain_root(func)
            p = self.ctx.param(root.id) if isinstance(root, ast.Name) else None
            if isinstance(func, ast.Attribute) and p is not None and p.is_list:
                self.fail(
                    func,
                    f"lists have no methods in kernels (`{text}`): their length is fixed by the caller",
                    f"{root.id}[i] = value, and len({root.id})",
                )
            self.fail(func, f"`{text}` cannot be called in a kernel", FUNCTIONS_ALLOWED)
        if isinstance(func, ast.Attribute):
            base = self.resolve_static(func.value)
            if base is MISSING and text == "Barrier.arrive_and_wait":
                return "barrier", text  # cthreads-gpu compatibility: no import needed
            tag = gpu_tag(base)
            if tag == "Barrier" and func.attr == "arrive_and_wait":
                return "barrier", text
            if tag == "Barrier-instance":
                self.fail(
                    func,
                    f"`{text}` waits on a host thread barrier, which does not exist on the device",
                    "Barrier.arrive_and_wait() on the class (a workgroup barrier)",
                )
            if base is math and func.attr in INTRINSICS:
                return "intrinsic", func.attr
            if base is math and hasattr(math, func.attr):
                self.fail(func, f"`{text}` has no device counterpart", _math_allowed())
            obj = (
                self.ctx.env.attribute(base, func.attr, dotted_path(func) or "")
                if base is not MISSING
                else MISSING
            )
        else:
            obj = self.ctx.env.lookup(func.id)
            if obj is MISSING:
                # As in cthreads-gpu, the bare names work without an import: kernels written for
                # it (`sqrt(x)`, `__sync_threads()`, `Barrier.arrive_and_wait()`) compile as-is.
                if func.id in INTRINSICS:
                    return "intrinsic", func.id
                if func.id == "__sync_threads":
                    return "barrier", text
                if func.id == "Barrier":
                    return "barrier-class", text
                if (
                    func.id in ("shared", "local")
                    or func.id in ATOMIC_OPS
                    or func.id in sg.SUBGROUP_NAMES
                    or func.id in TILE_NAMES
                    or func.id == "copy16"
                ):
                    self.fail(
                        func,
                        f"function `{text}` is not defined",
                        f"from cthreads.gpu import {func.id}",
                    )
                self.fail(func, f"function `{text}` is not defined", FUNCTIONS_ALLOWED)
        name = builtin_of(obj)
        if name is not None:
            return "builtin", name
        name = intrinsic_of(obj)
        if name is not None:
            return "intrinsic", name
        tag = gpu_tag(obj)
        if tag == "sync_threads":
            return "barrier", text
        if tag in ("shared", "local"):
            return "shared", tag  # an array declaration: shared(...) or local(...)
        if tag in ATOMIC_OPS:
            return "atomic", tag
        if tag in sg.SUBGROUP_NAMES:
            return "subgroup", tag
        if tag in TILE_NAMES:
            return "tile", tag
        if tag == "copy16":
            return "copy", tag
        if tag == "scalar-type":
            return "cast", obj.name
        if tag == "Barrier":
            return "barrier-class", text
        if obj is builtins.print:
            self.fail(
                func,
                "print() is not available on the device",
                "write values into a list parameter and read them after join()",
            )
        if obj is builtins.round:
            self.fail(
                func,
                "round() is not supported in kernels",
                "math.floor(x + 0.5), int(x) (truncates) or math.ceil(x)",
            )
        if obj is MISSING:
            self.fail(func, f"function `{text}` is not defined", FUNCTIONS_ALLOWED)
        if hasattr(obj, "__gpu_kernel_meta__"):
            self.fail(
                func,
                f"calling another @Gpu kernel (`{text}`) from a kernel is not supported",
                "write the code inline",
            )
        self.fail(func, f"calls to `{text}` are not supported in kernels", FUNCTIONS_ALLOWED)

    def is_barrier(self, node: ast.Call) -> bool:
        """Whether statement-level call `node` is a barrier (validated)."""
        kind, text = self.callee(node)
        if kind == "barrier-class":
            self.reject_barrier_construction(node, text)
        if kind != "barrier":
            return False
        if node.args or node.keywords:
            self.fail(node, f"{text}() takes no arguments", _BARRIER_ALLOWED)
        return True

    def reject_barrier_construction(self, node: ast.Call, text: str) -> None:
        self.fail(
            node,
            f"`{text}(...)` creates a host thread barrier; it cannot be created inside a kernel",
            _BARRIER_ALLOWED,
        )

    # ------------------------------------------------------------------- values

    def call_value(self, node: ast.Call) -> ir.Expr:
        kind, name = self.callee(node)
        if kind == "barrier":
            self.fail(
                node,
                f"`{name}()` is a statement and has no value",
                f"{name}() on a line of its own",
            )
        if kind == "barrier-class":
            self.reject_barrier_construction(node, name)
        if kind == "shared":
            self.fail(
                node,
                f"{name}() declares {array_what(name)}; it is not a value",
                array_form(name),
            )
        if kind == "atomic":
            self.fail(
                node,
                f"`{name}()` changes memory, so it cannot be part of an expression",
                atomic_form(name),
            )
        if kind == "copy":
            self.fail(node, f"`{name}()` is a statement and has no value", COPY_FORM)
        if kind == "subgroup":
            return self.subgroup_value(node, name)
        if kind == "tile":
            tile_in_expression(self, node, f"{name}()")
        for kw in node.keywords:
            self.fail(
                kw, "keyword arguments are not supported in kernel calls", "positional arguments"
            )
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.fail(
                    arg,
                    "starred arguments (`*x`) are not supported in kernels",
                    "pass each value separately",
                )
        if kind == "builtin":
            return getattr(self, "builtin_" + name)(node)
        if kind == "cast":
            return self.explicit_cast(node, name)
        return self.intrinsic(node, name)

    def explicit_cast(self, node: ast.Call, name: str) -> ir.Expr:
        """`f64(x)`, `i64(v)`, `u32(v)`, ...: conversion to an explicit scalar type. An int
        literal argument may use the whole range of the type (`u32(0x9E3779B9)`); beyond it
        it wraps, as a run-time value does and as the host's `u8(300) == 44` does."""
        self.arity(node, name, 1, 1)
        self._no_strings(node, name)
        t = EXPLICIT[name]
        arg = node.args[0]
        literal = (
            arg.operand if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) else arg
        )
        if isinstance(literal, ast.Constant) and type(literal.value) is int:
            v = -literal.value if literal is not arg else literal.value
            lo, hi = (
                (0, 2**t.bits - 1)
                if t.kind == "uint"
                else (-(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1)
            )
            if t.is_int:  # wraps like the cast of a run-time value, and as on the host
                v = (v - lo) % (hi - lo + 1) + lo
                self.ctx.note_type(t, node)
                return tr.const(v, t)
        return tr.cast(self.expr(arg), t)

    def arity(self, node: ast.Call, name: str, lo: int, hi: int) -> None:
        n = len(node.args)
        if not lo <= n <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}" if hi < 99 else f"at least {lo}"
            self.fail(
                node, f"{name}() takes {want} argument(s) in kernels; got {n}", FUNCTIONS_ALLOWED
            )

    def builtin_abs(self, node: ast.Call) -> ir.Expr:
        self.arity(node, "abs", 1, 1)
        v = self.expr(node.args[0])
        t = tr.arith_type(v.type)
        return ir.Call(t, "abs", (tr.cast(v, t),))

    def _minmax(self, node: ast.Call, name: str, op: BinOp) -> ir.Expr:
        if len(node.args) == 1:
            self.fail(
                node,
                f"{name}() of a list is not supported in kernels",
                f"{name}(a, b, ...) of values, or a for-range loop over the list",
            )
        self.arity(node, name, 2, 99)
        values = tr.adapt_all([self.expr(a) for a in node.args])
        t = values[0].type
        for v in values[1:]:
            t = tr.join(t, v.type)
        result = tr.cast(values[0], t)
        for v in values[1:]:
            result = ir.Binary(t, op, result, tr.cast(v, t))
        return result

    def builtin_min(self, node: ast.Call) -> ir.Expr:
        return self._minmax(node, "min", BinOp.MIN)

    def builtin_max(self, node: ast.Call) -> ir.Expr:
        return self._minmax(node, "max", BinOp.MAX)

    def _no_strings(self, node: ast.Call, name: str, extra: str = "") -> None:
        if (
            node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self.fail(
                node.args[0],
                f"{name}() of a string is not supported in kernels",
                f"a number{extra}",
            )

    def builtin_int(self, node: ast.Call) -> ir.Expr:
        self.arity(node, "int", 0, 1)
        if not node.args:
            return tr.const(0)
        self._no_strings(node, "int")
        return tr.cast(self.expr(node.args[0]), I32)

    def builtin_float(self, node: ast.Call) -> ir.Expr:
        self.arity(node, "float", 0, 1)
        if not node.args:
            return tr.const(0.0)
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if arg.value.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
                return tr.const(float(arg.value))
            self._no_strings(node, "float", " (float('inf') and float('nan') work)")
        return tr.cast(self.expr(arg), F32)

    def builtin_bool(self, node: ast.Call) -> ir.Expr:
        self.arity(node, "bool", 0, 1)
        if not node.args:
            return tr.const(False)
        self._no_strings(node, "bool")
        return tr.truthy(self.expr(node.args[0]))

    def builtin_len(self, node: ast.Call) -> ir.Expr:
        self.arity(node, "len", 1, 1)
        space, i = self.array_ref(node.args[0], "passed to len()", local_ok=True)
        if space == "shared":
            return tr.const(self.ctx.shared_arrays[i].size)
        return ir.ListLen(I32, i)

    def builtin_pow(self, node: ast.Call) -> ir.Expr:
        if len(node.args) == 3:
            self.fail(
                node,
                "pow() with a modulus is not supported in kernels",
                "pow(a, b) % m (or a loop for large exponents)",
            )
        self.arity(node, "pow", 2, 2)
        a, b = node.args
        return self.binary(node, ast.Pow(), self.expr(a), self.expr(b), None, b)

    def builtin_range(self, node: ast.Call) -> ir.Expr:
        self.fail(
            node, "range() can only be used as `for i in range(...)`", "for i in range(a, b, step):"
        )

    # -------------------------------------------------------------- intrinsics

    def intrinsic(self, node: ast.Call, name: str) -> ir.Expr:
        spec = INTRINSICS[name]
        shown = ast.unparse(node.func)
        if name == "log" and len(node.args) == 2:  # math.log(x, base)
            x, base = (tr.cast(self.expr(a), F32) for a in node.args)
            return ir.Binary(
                F32, BinOp.DIV, ir.Call(F32, "log", (x,)), ir.Call(F32, "log", (base,))
            )
        if len(node.args) != spec.arity:
            self.fail(
                node,
                f"{shown}() takes {spec.arity} argument(s); got {len(node.args)}",
                f"{shown}({', '.join('xyz'[: spec.arity])})",
            )
        args = [self.expr(a) for a in node.args]
        if spec.args == "n":
            args = tr.adapt_all(args)
            t = tr.arith_type(args[0].type)
            for a in args[1:]:
                t = tr.join(t, a.type)
            args = [tr.cast(a, t) for a in args]
            result = t
        else:
            if name in ("floor", "ceil", "trunc") and not args[0].type.is_float:
                return tr.cast(args[0], I32)  # exact for ints, as Python's math.floor(int)
            ft = F32
            if any(a.type == F64 for a in args):
                if name not in F64_INTRINSICS:
                    self.fail(
                        node,
                        f"{shown}() is not available for f64: GLSL.std.450 defines it for "
                        "16/32-bit floats only",
                        f"convert explicitly, {shown}(f32(x)), or one of the f64 functions: "
                        + ", ".join(sorted(F64_INTRINSICS)),
                    )
                ft = F64
                args = tr.adapt_all(args)
            elif any(a.type == F16 for a in args) and all(
                a.type == F16 or not a.type.is_float or isinstance(a, ir.Const) for a in args
            ):
                # f16 math: computed in float32 and rounded to f16 (passes.widen_narrow)
                ft = F16
            args = [tr.cast(a, ft) for a in args]
            result = _RESULT[spec.result] if spec.result != "same" else ft
            if result == F32:
                result = ft
        return ir.Call(result, name, tuple(args))


# math functions with an f64 form (GLSL.std.450 Sqrt, FAbs, Floor, Ceil, Trunc, Fma accept
# 64-bit floats; the others, Sin/Exp/Log/Pow/..., are 16/32-bit only)
F64_INTRINSICS = frozenset(
    ("sqrt", "fabs", "floor", "ceil", "trunc", "fma", "isnan", "isinf", "isfinite")
)


def _math_allowed() -> str:
    names = sorted(n for n in INTRINSICS if n != "abs")
    return "math." + ", math.".join(names)
