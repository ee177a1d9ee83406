"""The frontend entry: one kernel function -> a typed `ir.Kernel` (then the default passes).

Sets up the lowering context (parameters, Python's local names, the free-name environment),
lowers the body, zero-initializes locals first assigned inside a block, and checks the
workgroup size against the target.
"""

from __future__ import annotations

import ast
import math

from .. import ir, passes
from ..target import DEFAULT_TARGET, Target
from . import typerules as tr
from .context import Context
from .depth import SHALLOW, check_depth, deep_recursion, too_deep
from .exprs import ExprLowerer
from .names import Env, walk_body
from .signature import SignatureError, check_signature, signature_node
from .source import KernelSource, source_unavailable
from .stmts import StmtLowerer


def lower_kernel(
    fn,
    *,
    name: str | None = None,
    params: tuple[ir.Param, ...] | None = None,
    source: KernelSource | None = None,
    workgroup_size: tuple[int, int, int] = (64, 1, 1),
    target: Target | None = None,
    frozen: dict[str, object] | None = None,
    optimize: bool = True,
) -> ir.Kernel:
    """Lower Python function `fn` to IR. Raises `GpuCompileError` (a `TypeError`).

    `params`, `source` and `frozen` (module constants captured earlier) default to reading
    them from `fn` now; `optimize=False` skips folding and dead-code removal (usage facts are
    always filled in).
    """
    name = name or fn.__name__
    if source is None:
        source = KernelSource.of(fn)
        if source is None:
            raise source_unavailable(name, fn)
    fn_node = source.function_node()
    depth = check_depth(source, name, fn_node)
    try:
        with deep_recursion(depth >= SHALLOW):
            return _lower(
                fn, name, params, source, fn_node, workgroup_size, target, frozen, optimize
            )
    except RecursionError:
        raise too_deep(name, source.filename, source.firstlineno, source, fn_node) from None


def _lower(fn, name, params, source, fn_node, workgroup_size, target, frozen, optimize):
    if params is None:
        try:
            params = check_signature(fn)
        except SignatureError as err:
            raise source.error(
                name, signature_node(fn_node, err), err.message, err.allowed
            ) from None
    _check_source_matches(source, fn_node, fn, name, params)

    bound = {
        n.id
        for n in walk_body(fn_node.body)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    bound |= {
        n.target.id
        for n in walk_body(fn_node.body)
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    # Without a target (inspection) the shared-memory limit is checked when compiling for one.
    limit = target.max_shared_memory if target is not None else None
    target = target or DEFAULT_TARGET
    ctx = Context(name, source, Env(fn, frozen), params, fn_node, bound | {p.name for p in params})
    ctx.workgroup_size = tuple(workgroup_size)  # type: ignore[assignment]
    ctx.max_shared_memory = limit
    prologue: list[ir.Stmt] = []
    for i, p in enumerate(params):
        if not p.is_list and p.name in bound:
            # A scalar parameter the body assigns becomes a local initialized from it.
            ctx.declare(p.name, p.type, fn_node)  # type: ignore[arg-type]
            prologue.append(ir.Assign(p.name, ir.ParamRef(p.type, i)))  # type: ignore[arg-type]
    body = StmtLowerer(ctx, ExprLowerer(ctx)).block(fn_node.body)
    for local, info in ctx.locals.items():
        if not info.top_level:
            # First assigned inside a block: give it Python's "unset" a defined device value.
            prologue.append(ir.Assign(local, tr.const(0, info.type)))
    _check_workgroup(source, fn_node, name, workgroup_size, target)
    for arg, p in zip(fn_node.args.args, params):
        t = p.type.elem if isinstance(p.type, ir.ListType) else p.type
        if not tr.is_legacy(t):
            ctx.note_type(t, arg)
    for info in ctx.locals.values():
        if not tr.is_legacy(info.type):
            ctx.note_type(info.type, info.line)
    kernel = ir.Kernel(
        name=name,
        params=params,
        locals={n: info.type for n, info in ctx.locals.items()},
        body=tuple(prologue + body),
        workgroup_size=workgroup_size,
        filename=source.filename,
        firstlineno=source.firstlineno,
        shared=tuple(ctx.shared_arrays),
        type_lines=tuple(sorted(ctx.type_lines.items())),
        tiles=dict(ctx.tiles),
    )
    kernel = passes.widen_narrow(kernel)
    return passes.optimize(kernel) if optimize else passes.annotate_usage(kernel)


def _check_source_matches(
    source: KernelSource, fn_node: ast.FunctionDef, fn, name: str, params
) -> None:
    """The source Python found must be this function's (a file edited after import is not)."""
    names = [a.arg for a in [*fn_node.args.posonlyargs, *fn_node.args.args]]
    if fn_node.name != fn.__name__ or names != [p.name for p in params]:
        raise source.error(
            name,
            fn_node,
            f"the source file no longer matches the loaded kernel `{name}` (edited after import?)",
            "re-import the module (or restart) after editing kernels",
        ) from None


def _check_workgroup(source, fn_node, name, size: tuple[int, int, int], target: Target) -> None:
    too_big = any(s > m for s, m in zip(size, target.max_workgroup_size))
    if not too_big and math.prod(size) <= target.max_workgroup_invocations:
        return
    node: ast.AST = fn_node
    for deco in fn_node.decorator_list:
        for kw in getattr(deco, "keywords", ()):
            if kw.arg == "workgroup_size":
                node = kw.value
    raise source.error(
        name,
        node,
        f"workgroup size {size} exceeds this device's limits (at most {target.max_workgroup_invocations} "
        f"invocations per group, {target.max_workgroup_size} per axis)",
        "a smaller workgroup_size (the default 64 always works)",
    ) from None
