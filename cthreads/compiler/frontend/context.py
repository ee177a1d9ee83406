"""Per-kernel lowering state: parameters, locals and their types, loop depth, hidden names.

Shared by the expression and statement lowerers. Locals follow Python's rule (a name bound
anywhere in the function is local) and keep the type of their first assignment.
"""

from __future__ import annotations

import ast

from ..ir import Param, Scalar, SharedArray, TileType
from .names import Env
from .source import KernelSource


class LocalInfo:
    """What the frontend knows of one local variable (plain classes, not dataclasses: their
    code generation cost ~1 ms each at the compiler's import, issue 19)."""

    __slots__ = ("type", "line", "top_level")

    def __init__(self, type: Scalar, line: int, top_level: bool) -> None:  # noqa: A002
        self.type = type
        self.line = line  # file line of the first assignment (for messages)
        self.top_level = top_level  # first assigned at the top level of the body (else zeroed)


class Context:
    """The frontend's state while it lowers one kernel."""

    def __init__(
        self,
        kernel_name: str,
        source: KernelSource,
        env: Env,
        params: tuple[Param, ...],
        fn_node: ast.FunctionDef,
        py_locals: set[str],
    ) -> None:
        self.kernel_name = kernel_name
        self.source = source
        self.env = env
        self.params = params
        self.fn_node = fn_node
        self.py_locals = py_locals  # every name Python treats as local (params included)
        self.param_index: dict[str, int] = {p.name: i for i, p in enumerate(params)}
        self.locals: dict[str, LocalInfo] = {}
        self.loop_depth = 0
        self.block_depth = 0  # 0 = top level of the kernel body
        self.nesting = 0  # structured levels codegen will emit here (ir.MAX_NESTING)
        self.hidden_counter = 0
        self.load_counts: dict[str, int] | None = None  # reads per name (computed on demand)
        self.workgroup_size: tuple[int, int, int] = (64, 1, 1)
        # bytes (Target.max_shared_memory); None: unchecked
        self.max_shared_memory: int | None = None
        self.shared: dict[str, int] = {}  # shared array name -> index
        self.shared_arrays: list[SharedArray] = []
        self.type_lines: dict[str, int] = {}  # explicit type -> first line
        self.tiles: dict[str, TileType] = {}  # tile local -> its type (tiles.py)

    def note_type(self, t: Scalar, node: ast.AST | int) -> None:
        """Remember the first line using explicit type `t` (f64, i64, u32) for feature errors."""
        line = node if isinstance(node, int) else self.source.position(node)[0]
        key = str(t)
        if key not in self.type_lines or line < self.type_lines[key]:
            self.type_lines[key] = line

    def param(self, name: str) -> Param | None:
        i = self.param_index.get(name)
        return None if i is None else self.params[i]

    def hidden(self, what: str) -> str:
        """A fresh local name no Python identifier can clash with (`$` is not valid in one)."""
        self.hidden_counter += 1
        return f"${what}{self.hidden_counter}"

    def declare(self, name: str, t: Scalar, node: ast.AST) -> None:
        line = self.source.position(node)[0]
        self.locals[name] = LocalInfo(t, line, self.block_depth == 0 or name.startswith("$"))
