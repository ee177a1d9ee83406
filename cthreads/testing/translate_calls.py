"""Calls inside kernel expressions: builtins (abs, min, max, int, float, bool, len) and the math
functions of `semantics.MATH`, spelled `math.f(x)` or imported by name. `shared(...)` and the
atomics are statements (translate_memory.py)."""

from __future__ import annotations

import ast
import builtins
import math

from . import semantics as S
from .translate import _MISSING, EXPLICIT, XTYPES, ExprTranslator, Lit, _adapts, _is_float
from .translate_subgroup import SUBGROUP_TAGS, SUBGROUP_VALUES

_BUILTINS = {"abs", "min", "max", "int", "float", "bool", "len"}


def callee(tr: ExprTranslator, func: ast.expr) -> str | None:
    """What a call's function names: a builtin, 'math.<f>', 'barrier', or None (unknown)."""
    if isinstance(func, ast.Name):
        if func.id == "__sync_threads":
            return "barrier"
        obj = tr.resolver.lookup(func.id)
    elif isinstance(func, ast.Attribute):
        base = tr.resolver.dotted(func.value)
        if base is math:
            return f"math.{func.attr}"
        if func.attr == "arrive_and_wait" and (
            getattr(base, "__gpu_builtin__", None) == "Barrier" or _final(func.value) == "Barrier"
        ):
            return "barrier"
        obj = tr.resolver.dotted(func)
    else:
        return None
    if obj is _MISSING:
        return None
    tag = getattr(obj, "__gpu_builtin__", None)
    if tag == "scalar-type":
        return "cast:" + obj.name
    if tag == "sync_threads":
        return "barrier"
    if tag in ("shared", "local") or (isinstance(tag, str) and tag.startswith("atomic_")):
        return tag
    if tag in SUBGROUP_TAGS or tag == "copy16":
        return tag
    if isinstance(tag, str) and tag.startswith("tile_"):
        return tag
    for name in _BUILTINS:
        if obj is getattr(builtins, name):
            return name
    name = getattr(obj, "__name__", None)
    if name in S.MATH and getattr(math, name, None) is obj:
        return f"math.{name}"
    return None


def _final(node: ast.expr) -> str | None:
    return (
        node.id
        if isinstance(node, ast.Name)
        else node.attr
        if isinstance(node, ast.Attribute)
        else None
    )


def call(tr: ExprTranslator, node: ast.Call) -> tuple[str, str]:
    what = callee(tr, node.func)
    if node.keywords:
        raise tr.error(node, "keyword arguments are not supported in kernel calls")
    if what == "barrier":
        raise tr.error(
            node, "a barrier is a statement of its own (`__sync_threads()` on its own line)"
        )
    if what is None:
        raise tr.error(node, f"`{ast.unparse(node.func)}` is not a function kernels can call")
    if what in ("shared", "local"):
        raise tr.error(node, f"{what}(...) declares an array: `name = {what}(float, 64)`")
    if what.startswith("atomic_"):
        raise tr.error(
            node, f"{what}() is a statement or the value of an assignment (`old = {what}(...)`)"
        )
    if what in SUBGROUP_VALUES:
        return tr.subgroup_value(node, what)
    if what in SUBGROUP_TAGS:
        raise tr.error(
            node, f"{what}() is the value of an assignment of its own (`s = {what}(...)`)"
        )
    if what.startswith("tile_"):
        raise tr.error(node, f"{what}() is a statement: `t = {what}(...)` or a line of its own")
    args = node.args
    if what == "len":
        arr = tr.array(args[0]) if len(args) == 1 else None
        if arr is None:
            raise tr.error(node, "len() takes one list parameter or shared array")
        return arr[2], "int"
    if what.startswith("math."):
        return _math(tr, node, what[5:])
    if what.startswith("cast:"):
        return _cast(tr, node, what[5:])
    vals = [tr.expr(a) for a in args]
    if what in ("int", "float", "bool"):
        if len(vals) != 1:
            raise tr.error(node, f"{what}() takes exactly one argument in kernels")
        code, t = vals[0]
        if what == "int":
            return (
                f"_ct_f2i({code})" if t in ("float", "f64", "f16") else tr.coerce(code, t, "int")
            ), "int"
        if what == "float":
            return tr.coerce(code, t, "float"), "float"
        return (code if t == "bool" else f"_ct_bool({code})"), "bool"
    if what == "abs":
        if len(vals) != 1:
            raise tr.error(node, "abs() takes one argument")
        code, t = vals[0]
        if t in ("f64", "f16"):
            return f"_ct_abs({code})", t
        if t in XTYPES:
            return f"_ct_w(_ct_abs({code}), {t!r})", t
        return (f"_ct_abs({code})" if t == "float" else f"_ct_iabs({tr.coerce(code, t, 'int')})"), (
            "float" if t == "float" else "int"
        )
    # min / max
    if len(vals) < 2:
        raise tr.error(node, f"{what}() takes two or more numbers in kernels (no iterables)")
    ref = next((ti for c, ti in vals if ti in XTYPES and not isinstance(c, Lit)), None)
    if ref is not None:
        vals = [
            (tr.coerce(c, ti, ref), ref) if isinstance(c, Lit) and _adapts(c, ti, ref) else (c, ti)
            for c, ti in vals
        ]
    t = vals[0][1]
    for _, ti in vals[1:]:
        try:
            t = tr.join(t, ti)
        except S.EmulationError as exc:
            raise tr.error(node, str(exc)) from None
    codes = ", ".join(tr.coerce(c, ti, t) for c, ti in vals)
    return f"_ct_f{what}({codes})", t


def _cast(tr: ExprTranslator, node: ast.Call, name: str) -> tuple[str, str]:
    """`f64(x)`, `i64(v)`, `u32(v)`, `f32(x)`, `i32(x)`: explicit conversions."""
    if len(node.args) != 1:
        raise tr.error(node, f"{name}() takes exactly one argument in kernels")
    dst = EXPLICIT[name]
    arg = node.args[0]
    neg = isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub)
    lit = arg.operand if neg else arg
    if (
        isinstance(lit, ast.Constant)
        and type(lit.value) is int
        and dst not in ("f64", "f16", "float")
    ):
        v = -lit.value if neg else lit.value
        return repr(S.wrap_to(v, dst)), dst
    code, t = tr.expr(arg)
    if dst == "int" and t in ("float", "f64", "f16"):
        return f"_ct_f2i({code})", "int"  # as int(x)
    return tr.coerce(code, t, dst), dst


def _math(tr: ExprTranslator, node: ast.Call, name: str) -> tuple[str, str]:
    args64 = [tr.expr(a) for a in node.args]
    if any(t == "f64" for _, t in args64):
        entry64 = S.MATH64.get(name)
        if entry64 is None:
            raise tr.error(node, f"math.{name}() is not available for f64")
        arity, result, _ = entry64
        if len(node.args) != arity:
            raise tr.error(node, f"math.{name}() takes {arity} argument(s)")
        codes = ", ".join(tr.coerce(c, t, "f64") for c, t in args64)
        return f"_ct_d_{name}({codes})", result
    entry = S.MATH.get(name)
    if entry is None:
        raise tr.error(
            node, f"math.{name} has no device counterpart (see the kernel language in SPEC §2)"
        )
    arity, result, _ = entry
    if len(node.args) != arity:
        raise tr.error(node, f"math.{name}() takes {arity} argument(s)")
    codes = []
    for code, t in args64:
        codes.append(tr.coerce(code, t, "float"))
    if name in S.APPROXIMATE:
        tr.uses_approx = True
    kind = {"f": "float", "i": "int", "b": "bool"}[result]
    half = any(t == "f16" for _, t in args64) and all(
        t == "f16" or not _is_float(t) or isinstance(c, Lit) for c, t in args64
    )
    if half and kind == "float":  # f16 math: computed in float32, rounded to f16
        return f"_ct_h(_ct_m_{name}({', '.join(codes)}))", "f16"
    return f"_ct_m_{name}({', '.join(codes)})", kind
