"""Per-kernel lowering state: parameters, locals and their types, loop depth, hidden names.

Shared by the expression and statement lowerers. Locals follow Python's rule (a name bound
anywhere in the function is local) and keep the type of their first assignment.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..ir import Param, Scalar, SharedArray, TileType
from .names import Env
from .source import KernelSource


@dataclass
class LocalInfo:
    type: Scalar
    line: int  # file line of the first assignment (for messages)
    top_level: bool  # first assigned at the top level of the body (else zero-initialized)


@dataclass
class Context:
    kernel_name: str
    source: KernelSource
    env: Env
    params: tuple[Param, ...]
    fn_node: ast.FunctionDef
    py_locals: set[str]  # every name Python treats as local (params included)
    param_index: dict[str, int] = field(default_factory=dict)
    locals: dict[str, LocalInfo] = field(default_factory=dict)
    loop_depth: int = 0
    block_depth: int = 0  # 0 = top level of the kernel body
    nesting: int = 0  # structured levels codegen will emit here (ir.MAX_NESTING)
    hidden_counter: int = 0
    load_counts: dict[str, int] | None = None  # reads per name (computed on demand)
    workgroup_size: tuple[int, int, int] = (64, 1, 1)
    max_shared_memory: int | None = None  # bytes (Target.max_shared_memory); None: unchecked
    shared: dict[str, int] = field(default_factory=dict)  # shared array name -> index
    shared_arrays: list[SharedArray] = field(default_factory=list)
    type_lines: dict[str, int] = field(default_factory=dict)  # explicit type -> first line
    tiles: dict[str, TileType] = field(default_factory=dict)  # tile local -> its type (tiles.py)

    def note_type(self, t: Scalar, node: ast.AST | int) -> None:
        """Remember the first line using explicit type `t` (f64, i64, u32) for feature errors."""
        line = node if isinstance(node, int) else self.source.position(node)[0]
        key = str(t)
        if key not in self.type_lines or line < self.type_lines[key]:
            self.type_lines[key] = line

    def __post_init__(self) -> None:
        self.param_index = {p.name: i for i, p in enumerate(self.params)}

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
