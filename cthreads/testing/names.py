"""The free names an emulated kernel reads, resolved as the compiler frontend resolves them.

A kernel's `@Gpu(constants=...)` (and an autotune variant's choices) come first, then closure
cells, module globals and builtins (compiler/frontend/names.py); `kernel_constants` finds them.
"""

from __future__ import annotations

import ast
import builtins
import types

_MISSING = object()


def kernel_constants(fn) -> dict[str, object]:
    """The constants a @Gpu kernel (or variant) binds for its body: `{}` for a plain function."""
    given = getattr(fn, "_given", None)
    return dict(given) if isinstance(given, dict) else {}


def constants_key(given: dict[str, object]) -> tuple:
    """A hashable key of `given` that tells `True` from `1` and `2.0` from `2`."""
    return tuple(sorted((name, type(value).__name__, value) for name, value in given.items()))


class Resolver:
    """Names a kernel may use from outside: its constants, closure cells, globals, builtins."""

    def __init__(self, func: types.FunctionType, given: dict[str, object] | None = None):
        self.given = given or {}
        self.globals = func.__globals__
        self.closure = {}
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # empty cell
                    pass

    def lookup(self, name: str):
        if name in self.given:  # constants= win over everything, as in the frontend's Env
            return self.given[name]
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    def dotted(self, node: ast.expr):
        """The object an attribute chain like `a.b.c` names, or _MISSING."""
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            if base is _MISSING:
                return _MISSING
            return getattr(base, node.attr, _MISSING)
        return _MISSING


def final_name(node: ast.expr) -> str | None:
    """`a.b.GlobalIdx` -> 'GlobalIdx'; `GlobalIdx` -> 'GlobalIdx'."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def kernel_function(fn) -> types.FunctionType:
    """The plain Python function behind a @Gpu kernel (or the function itself)."""
    seen = 0
    while not isinstance(fn, types.FunctionType) and seen < 5:
        inner = (
            getattr(fn, "__wrapped__", None) or getattr(fn, "fn", None) or getattr(fn, "func", None)
        )
        if inner is None:
            break
        fn, seen = inner, seen + 1
    if not isinstance(fn, types.FunctionType):
        raise TypeError(
            f"emulate() needs a @Gpu kernel or a Python function; got {type(fn).__name__}"
        )
    return fn
