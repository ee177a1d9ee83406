"""The module constants a kernel reads (free names and module attributes that are numbers).

A kernel reads them once, when first needed: `GpuKernel` captures this snapshot and lowers
with it, and its `source_key` includes the values, so a changed constant never reuses a cached
binary compiled for the old value.
"""

from __future__ import annotations

import ast
import numbers

from .names import MISSING, Env, chain_root, dotted_path, walk_body
from .source import KernelSource


def collect_constants(
    fn, source: KernelSource, param_names: set[str], given: dict[str, object] | None = None
) -> dict[str, object]:
    """`{name or dotted path: value}` for every int/float/bool the kernel body reads from
    outside (closure cells, globals, attributes of modules). `given` (the kernel's own
    `@Gpu(constants=...)` and autotune choices) wins over what the module holds."""
    env = Env(fn, given)
    out: dict[str, object] = {}
    for path in free_reads(source, param_names):
        value = _resolve(env, path)
        if isinstance(value, numbers.Real) and not isinstance(value, type):
            out[path] = value
    return out


def free_reads(source: KernelSource, param_names: set[str]) -> list[str]:
    """The names and dotted paths (`cfg.N`) the body reads from outside, in source order:
    roots that are neither parameters nor assigned in the body."""
    fn_node = source.function_node()
    nodes = list(walk_body(fn_node.body))
    local = set(param_names) | {
        n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    out: list[str] = []
    for node in nodes:
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        path = dotted_path(node)
        root = chain_root(node)
        if path is None or not isinstance(root, ast.Name) or root.id in local:
            continue
        out.append(path)
    return out


def _resolve(env: Env, path: str) -> object:
    head, *rest = path.split(".")
    value = env.lookup(head)
    done = head
    for attr in rest:
        if value is MISSING:
            return MISSING
        done = f"{done}.{attr}"
        value = env.attribute(value, attr, done)
    return value
