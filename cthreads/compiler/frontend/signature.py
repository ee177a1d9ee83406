"""Kernel signatures: parameter annotations -> IR types, checked at decoration (SPEC §2).

Works from the code object and `__annotations__` only (no source, no body), so decoration stays
cheap. String annotations (`from __future__ import annotations`) are read syntactically,
never evaluated.
"""

from __future__ import annotations

import ast
import inspect
import typing

from ..ir_types import BOOL, EXPLICIT, F32, I32, ListType, Param, Scalar

ALLOWED_PARAM_TYPES = "int, float, bool, list[int], list[float] or list[bool]"
ALLOWED_LOCAL_TYPES = "int, float or bool"

_SCALARS: dict[str, Scalar] = {"int": I32, "float": F32, "bool": BOOL, **EXPLICIT}
_SCALAR_TYPES: dict[type, Scalar] = {int: I32, float: F32, bool: BOOL}
_PY_NAMES = {I32: "int", F32: "float", BOOL: "bool"}
_PY_NAMES.update({t: n for n, t in EXPLICIT.items() if t not in _PY_NAMES})


def explicit_type(obj: object) -> Scalar | None:
    """The IR type of a `cthreads.gpu` scalar type object (`f64`, ...), else None."""
    from ...gpu.types import ScalarType

    if isinstance(obj, ScalarType):
        return EXPLICIT[obj.name]
    return None


_LIST_NAMES = ("list", "List")  # `list[...]`, `typing.List[...]`, `List[...]`


def python_type_name(t: Scalar | ListType) -> str:
    """The Python spelling of an IR type (`list[float]`)."""
    if isinstance(t, ListType):
        return f"list[{_PY_NAMES[t.elem]}]"
    return _PY_NAMES.get(t, str(t))


def type_from_node(node: ast.expr) -> Scalar | ListType | None:
    """The type an annotation expression names, read syntactically; None if unsupported."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return type_from_text(node.value)
    if isinstance(node, ast.Name):
        return _SCALARS.get(node.id)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "builtins"
    ):
        return _SCALARS.get(node.attr)
    if isinstance(node, ast.Attribute) and node.attr in EXPLICIT:  # `gpu.f64`
        return EXPLICIT[node.attr]
    if isinstance(node, ast.Subscript):
        base = node.value
        is_list = (isinstance(base, ast.Name) and base.id in _LIST_NAMES) or (
            isinstance(base, ast.Attribute)
            and base.attr == "List"
            and isinstance(base.value, ast.Name)
        )
        if is_list:
            elem = type_from_node(node.slice)
            if isinstance(elem, Scalar):
                return ListType(elem)
    return None


def type_from_text(text: str) -> Scalar | ListType | None:
    from .depth import parse  # never while another thread changes the recursion limit

    try:
        node = parse(text.strip(), mode="eval").body
    except (SyntaxError, RecursionError):
        return None
    return type_from_node(node)


def type_from_annotation(annotation: object) -> Scalar | ListType | None:
    """The type a runtime annotation object (or string) names; None if unsupported."""
    if isinstance(annotation, str):
        return type_from_text(annotation)
    if isinstance(annotation, type) and annotation in _SCALAR_TYPES:
        return _SCALAR_TYPES[annotation]
    explicit = explicit_type(annotation)
    if explicit is not None:
        return explicit
    if typing.get_origin(annotation) is list:
        args = typing.get_args(annotation)
        if len(args) == 1 and isinstance(args[0], type) and args[0] in _SCALAR_TYPES:
            return ListType(_SCALAR_TYPES[args[0]])
        if len(args) == 1 and explicit_type(args[0]) is not None:
            return ListType(explicit_type(args[0]))
    return None


def is_none_annotation(annotation: object) -> bool:
    if annotation is None or annotation is type(None):
        return True
    return isinstance(annotation, str) and annotation.strip() in ("None", "'None'", '"None"')


def describe_annotation(annotation: object) -> str:
    if isinstance(annotation, str):
        text = annotation.strip()
        while len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[
                1:-1
            ].strip()  # a quoted annotation under `from __future__ import annotations`
        return text
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__qualname__
    if explicit_type(annotation) is not None:
        return repr(annotation)
    return repr(annotation).replace("typing.", "")


class SignatureError(Exception):
    """A signature problem: `param` names the culprit (None for the function or return)."""

    def __init__(self, message: str, allowed: str, param: str | None = None, what: str = "param"):
        super().__init__(message)
        self.message, self.allowed, self.param, self.what = message, allowed, param, what


def check_signature(fn) -> tuple[Param, ...]:
    """The parameters of kernel function `fn` as IR params (reads/writes still unknown).

    Raises `SignatureError`; the caller turns it into a located `GpuCompileError`.
    """
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        raise SignatureError(
            f"@Gpu needs a function defined with `def`; got {type(fn).__name__}",
            "decorate a plain `def` function",
            what="function",
        )
    if fn.__name__ == "<lambda>":
        raise SignatureError(
            "@Gpu cannot compile a lambda",
            "a `def` function with annotated parameters",
            what="function",
        )
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_GENERATOR):
        kind = "a generator" if code.co_flags & inspect.CO_GENERATOR else "an async function"
        raise SignatureError(
            f"a kernel cannot be {kind}",
            "a plain `def` function without `yield`/`async`",
            what="function",
        )
    nargs = code.co_argcount
    names = code.co_varnames[:nargs]
    if code.co_flags & inspect.CO_VARARGS:
        raise _star_error(code, nargs, 0, "a kernel takes a fixed number of arguments")
    if code.co_kwonlyargcount:
        kw = code.co_varnames[nargs]
        raise SignatureError(
            f"keyword-only parameter `{kw}` is not supported (gpu() passes arguments by position)",
            "ordinary positional parameters",
            kw,
        )
    if code.co_flags & inspect.CO_VARKEYWORDS:
        raise _star_error(code, nargs, 1, "gpu() passes arguments by position")
    if fn.__defaults__:
        first = names[nargs - len(fn.__defaults__)]
        raise SignatureError(
            f"parameter `{first}` has a default value; kernel parameters cannot have defaults "
            "(gpu() passes every argument)",
            "parameters without default values",
            first,
        )
    annotations = getattr(fn, "__annotations__", None) or {}
    params = []
    for name in names:
        if name not in annotations:
            raise SignatureError(
                f"parameter `{name}` has no type annotation",
                f"annotate it as {ALLOWED_PARAM_TYPES}",
                name,
            )
        t = type_from_annotation(annotations[name])
        if t is None:
            raise SignatureError(
                f"parameter `{name}` has unsupported type `{describe_annotation(annotations[name])}`",
                ALLOWED_PARAM_TYPES,
                name,
            )
        params.append(Param(name, t))
    if "return" in annotations and not is_none_annotation(annotations["return"]):
        raise SignatureError(
            f"a kernel returns nothing, but its return annotation is "
            f"`{describe_annotation(annotations['return'])}`",
            "`-> None` (or no return annotation); write results into a list parameter",
            what="return",
        )
    return tuple(params)


def _star_error(code, nargs: int, which: int, why: str) -> SignatureError:
    """A `*args` (`which` 0) or `**kwargs` (1) parameter, refused: `why` says what instead."""
    # Code objects list *args then **kwargs right after the positional and keyword-only names.
    index = nargs + code.co_kwonlyargcount + which
    if which == 1 and not code.co_flags & inspect.CO_VARARGS:
        index -= 1
    star = code.co_varnames[index]
    return SignatureError(
        f"`{'*' * (which + 1)}{star}` is not supported ({why})",
        "one named, annotated parameter per argument",
        star,
    )


def signature_text(name: str, params: tuple[Param, ...]) -> str:
    inner = ", ".join(f"{p.name}: {python_type_name(p.type)}" for p in params)
    return f"{name}({inner}) -> None"


def signature_node(fn_node: ast.FunctionDef, err: SignatureError) -> ast.AST:
    """The AST node a signature error should point at (the parameter, else the `def`)."""
    a = fn_node.args
    if err.what == "return" and fn_node.returns is not None:
        return fn_node.returns
    if err.param is not None:
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None and arg.arg == err.param:
                if "default" in err.message:
                    positional = [*a.posonlyargs, *a.args]
                    index = positional.index(arg) - (len(positional) - len(a.defaults))
                    return a.defaults[index] if 0 <= index < len(a.defaults) else arg
                if "unsupported type" in err.message and arg.annotation is not None:
                    return arg.annotation
                return arg
    return fn_node
