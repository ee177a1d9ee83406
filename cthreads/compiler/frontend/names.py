"""Name resolution for kernel bodies: what a free name (closure cell, global, builtin) means.

Python's own scoping decides: names assigned anywhere in the function are locals; other names
are read from closure cells, then module globals, then builtins, by value, without running user
code (attribute chains are followed only through modules).
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from collections.abc import Iterator

from ..intrinsics import INTRINSICS

MISSING = object()  # an unbound name


class Env:
    """The free-name environment of one kernel function.

    `frozen` maps names or dotted paths (`cfg.N`) to values captured earlier (a kernel reads its
    module constants once, see `constants.py`); it wins over the live module state.
    """

    def __init__(self, fn, frozen: dict[str, object] | None = None):
        self.globals: dict = fn.__globals__
        self.cells: dict[str, object] = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                self.cells[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled: unbound
                self.cells[name] = MISSING
        b = self.globals.get("__builtins__", builtins)
        self.builtins: dict = b if isinstance(b, dict) else vars(b)
        self.frozen = frozen or {}

    def lookup(self, name: str) -> object:
        if name in self.frozen:
            return self.frozen[name]
        if name in self.cells:
            return self.cells[name]
        if name in self.globals:
            return self.globals[name]
        return self.builtins.get(name, MISSING)

    def attribute(self, obj: object, attr: str, path: str) -> object:
        """`obj.attr` when `obj` is a module (the only objects whose attributes a kernel reads
        statically); MISSING otherwise."""
        if path in self.frozen:
            return self.frozen[path]
        if isinstance(obj, types.ModuleType):
            return getattr(obj, attr, MISSING)
        return MISSING


def gpu_tag(obj: object) -> str | None:
    """The `__gpu_builtin__` tag of cthreads' kernel-language objects (index builtins,
    `__sync_threads`, `Barrier`); 'Barrier-instance' for a host barrier object."""
    if isinstance(obj, types.FunctionType):
        tag = obj.__dict__.get("__gpu_builtin__")
    else:
        cls = obj if isinstance(obj, type) else type(obj)
        tag = next(
            (c.__dict__["__gpu_builtin__"] for c in cls.__mro__ if "__gpu_builtin__" in c.__dict__),
            None,
        )
        if tag == "Barrier" and not isinstance(obj, type):
            tag = "Barrier-instance"
    return tag if isinstance(tag, str) else None


_INTRINSIC_OBJECTS: dict[int, str] = {}


def intrinsic_of(obj: object) -> str | None:
    """The intrinsic name of a `math` function object (`math.sqrt` -> 'sqrt'), else None."""
    if not _INTRINSIC_OBJECTS:
        for name in INTRINSICS:
            f = getattr(math, name, None)
            if f is not None:
                _INTRINSIC_OBJECTS[id(f)] = name
    name = _INTRINSIC_OBJECTS.get(id(obj))
    return name if name is not None and getattr(math, name, None) is obj else None


BUILTIN_FUNCS = ("abs", "min", "max", "int", "float", "bool", "len", "pow", "range")


def builtin_of(obj: object) -> str | None:
    """'abs', 'min', ... when `obj` is that Python builtin."""
    for name in BUILTIN_FUNCS:
        if obj is getattr(builtins, name):
            return name
    return None


def dotted_path(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def chain_root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def assigned_names(fn_node: ast.FunctionDef) -> set[str]:
    """Names Python treats as locals of the function: parameters and every name bound in it."""
    names = {a.arg for a in [*fn_node.args.posonlyargs, *fn_node.args.args]}
    for node in walk_body(fn_node.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def walk_body(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of `body`, not descending into nested function or class scopes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
