"""Deep kernels: how deep a statement may nest, and the recursion guard the compiler runs under.

The frontend, the passes, the IR printer and codegen walk expressions and statements
recursively, two or three Python frames per level: a 600-term `x[i] + x[i] + ...` (a
left-leaning tree 600 levels deep) or a 500-branch `elif` chain (each `elif` sits in the
previous `else`) passes Python's default limit of 1000 frames. So:

- `check_depth` measures the kernel's syntax tree without recursing and refuses a statement
  nested deeper than MAX_AST_DEPTH with an error at that statement (Python's own compiler
  gives up near there: a module with a 3000-term sum does not import);
- `deep_recursion(deep)` raises the interpreter's recursion limit to RECURSION_LIMIT while one
  or more deep kernels (SHALLOW levels or more) compile, reference counted (prepare() compiles
  on several threads, and the limit belongs to the process), then puts the previous limit
  back. Kernels of ordinary depth never touch the limit: CPython 3.11's `ast.parse` fails
  ("AST constructor recursion depth mismatch") when another thread changes the limit while
  it parses, so `parse` holds the same lock as every change. A MAX_AST_DEPTH-deep kernel needs
  far less C stack than a 1 MiB thread stack has (measured: 2500 levels compile on one);
- `too_deep` turns a RecursionError that still happens into a `GpuCompileError` for that kernel
  only, at its deepest statement, so prepare()/compile() go on with the others (SPEC §2, §14).
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ...errors import GpuCompileError
from .. import ir
from ...record import Record

MAX_AST_DEPTH = 2500  # syntax-tree levels under one statement of the kernel body
SHALLOW = 150  # levels below which the default limit (1000 frames) is ample
RECURSION_LIMIT = 20_000  # frames; about 3 per level of nesting, with room for the callers

_lock = threading.Lock()
_active = 0
_saved = 0

_SPLIT = (
    "split the expression into partial results in locals (`s = a + b` then `s = s + c`, or a "
    "`for` loop), and a long `elif` chain into several `if` blocks or a lookup in a list"
)


@contextmanager
def deep_recursion(deep: bool = True) -> Iterator[None]:
    """Run the block with the recursion limit at least RECURSION_LIMIT (restored afterwards)
    when `deep`; unchanged otherwise."""
    global _active, _saved
    if not deep:
        yield
        return
    with _lock:
        if _active == 0:
            _saved = sys.getrecursionlimit()
            if _saved < RECURSION_LIMIT:
                sys.setrecursionlimit(RECURSION_LIMIT)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and sys.getrecursionlimit() == max(_saved, RECURSION_LIMIT):
                sys.setrecursionlimit(_saved)  # unless someone else changed it meanwhile


def parse(text: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse` with no recursion-limit change under way (see the module docstring); a
    source too deep for the current limit is parsed again under RECURSION_LIMIT."""
    with _lock:
        try:
            return ast.parse(text, filename=filename, mode=mode)
        except RecursionError:
            saved = sys.getrecursionlimit()
            if _active or saved >= RECURSION_LIMIT:
                raise
            sys.setrecursionlimit(RECURSION_LIMIT)  # the parser counts frames too
            try:
                return ast.parse(text, filename=filename, mode=mode)
            finally:
                sys.setrecursionlimit(saved)


def ir_depth(kernel) -> int:
    """How deep the IR of `kernel` nests (statements and expressions), without recursing."""
    deepest = 0
    stack = [(s, 1) for s in kernel.body]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        for value in vars(node).values():
            if isinstance(value, tuple):
                stack.extend((v, d + 1) for v in value if isinstance(v, Record))
            elif isinstance(value, (ir.Expr, ir.Stmt)):  # (types are leaves)
                stack.append((value, d + 1))
    return deepest


def deepest_statement(body: list[ast.stmt]) -> tuple[int, ast.stmt | None]:
    """(levels, statement): the statement of `body` (top level) whose syntax tree is deepest,
    measured with an explicit stack (no recursion)."""
    best, where = 0, None
    for stmt in body:
        stack: list[tuple[ast.AST, int]] = [(stmt, 1)]
        deepest = 0
        while stack:
            node, d = stack.pop()
            deepest = max(deepest, d)
            stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
        if deepest > best:
            best, where = deepest, stmt
    return best, where


def check_depth(source, kernel: str, fn_node: ast.FunctionDef) -> int:
    """The depth of the kernel's deepest statement; a located error beyond MAX_AST_DEPTH."""
    depth, stmt = deepest_statement(fn_node.body)
    if stmt is not None and depth > MAX_AST_DEPTH:
        raise source.error(
            kernel,
            stmt,
            f"this statement nests {depth} levels deep, more than the {MAX_AST_DEPTH} the "
            "kernel compiler handles",
            _SPLIT,
        ) from None
    return depth


def too_deep(kernel: str, filename: str, lineno: int, source=None, fn_node=None) -> GpuCompileError:
    """The error for a kernel whose compilation ran out of recursion depth anyway."""
    if source is not None and fn_node is not None:
        depth, stmt = deepest_statement(fn_node.body)
        if stmt is not None:
            return source.error(
                kernel,
                stmt,
                f"this statement nests too deeply for the kernel compiler ({depth} levels)",
                _SPLIT,
            )
    return GpuCompileError(
        "the kernel nests too deeply for the kernel compiler (expressions or `elif` chains)",
        kernel=kernel,
        filename=filename,
        lineno=lineno,
        col=1,
        allowed=_SPLIT,
    )
