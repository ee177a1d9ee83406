"""Statement lowering: Python `ast` statements -> structured IR statements.

One `visit_<Node>` per supported statement. Locals keep the type of their first assignment
(int values are promoted into float locals; a float into an int local is an error naming
`int(...)`); stores into list elements convert the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager

from .. import ir
from ..ir import Scalar
from . import subgroup as sg
from . import typerules as tr
from .context import Context
from .copies import CopyLowering
from .exprs import ExprLowerer
from .loops import LoopLowering
from .memory import MemoryLowering
from .signature import ALLOWED_LOCAL_TYPES, python_type_name, type_from_node
from .source import Located, keyword_position
from .subgroup import SubgroupLowering
from .tiles import TileLowering
from .unsupported import describe, describe_target

_WHY_LOCAL_TYPES = "a local keeps the type of its first assignment"


class StmtLowerer(
    CopyLowering, LoopLowering, MemoryLowering, SubgroupLowering, TileLowering, Located
):
    def __init__(self, ctx: Context, exprs: ExprLowerer):
        self.ctx, self.x = ctx, exprs
        self.source, self.kernel_name = ctx.source, ctx.kernel_name

    def special_call(self, node: ast.expr) -> tuple[str, str] | None:
        """(kind, name) when `node` is a call of `shared` or an atomic; None otherwise."""
        if not isinstance(node, ast.Call):
            return None
        kind, name = self.x.callee(node)
        if kind == "subgroup" and name in sg.SUBGROUP_OPS:
            return kind, name
        return (kind, name) if kind in ("shared", "atomic") else None

    def value_call(
        self, call: ast.Call, special: tuple[str, str]
    ) -> tuple[list[ir.Stmt], ir.Expr | None]:
        """An atomic or subgroup operation as the value of an assignment: its statements and a
        local holding the result."""
        if special[0] == "subgroup":
            return self.subgroup_call(call, special[1], want_result=True)
        return self.atomic(call, special[1], want_result=True)

    def block(self, body: list[ast.stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for node in body:
            visit = getattr(self, "visit_" + type(node).__name__, None)
            if visit is None:
                message, allowed = describe(node)
                self.fail(node, message, allowed)
            try:
                out.extend(visit(node))
            except tr.TypeMixError as exc:
                self.fail(node, exc.message, exc.allowed)
        return out

    def nested(self, body: list[ast.stmt]) -> tuple[ir.Stmt, ...]:
        self.ctx.block_depth += 1
        try:
            return tuple(self.block(body))
        finally:
            self.ctx.block_depth -= 1

    # ------------------------------------------------------------------ simple

    def visit_Pass(self, node: ast.Pass) -> list[ir.Stmt]:
        return []

    def visit_Expr(self, node: ast.Expr) -> list[ir.Stmt]:
        v = node.value
        if isinstance(v, ast.Constant) and (isinstance(v.value, str) or v.value is Ellipsis):
            return []  # docstrings, string "comments" and `...` do nothing in Python either
        if isinstance(v, ast.Call) and self.x.is_barrier(v):
            return [ir.Barrier()]
        special = self.special_call(v)
        if special is not None and special[0] == "atomic":
            return self.atomic(v, special[1], want_result=False)[0]
        if special is not None and special[0] == "subgroup":
            return self.subgroup_call(v, special[1], want_result=False)[0]
        if isinstance(v, ast.Call) and self.x.callee(v)[0] == "tile":
            return self.tile_statement(v)
        if isinstance(v, ast.Call) and self.x.callee(v)[0] == "copy":
            return self.copy_statement(v)
        self.x.expr(v)  # reports errors inside the expression first
        if isinstance(v, ast.Compare) and len(v.ops) == 1 and isinstance(v.ops[0], ast.Eq):
            self.fail(v, "this comparison has no effect", "did you mean `=` (assignment)?")
        self.fail(
            v,
            "this expression statement has no effect",
            "assign its value to a local or a list element",
        )

    def visit_Return(self, node: ast.Return) -> list[ir.Stmt]:
        if node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None
        ):
            self.fail(
                node.value,
                "a kernel cannot return a value",
                "write results into a list parameter (y[i] = value), then a bare `return`",
            )
        return [ir.Return()]

    def visit_Break(self, node: ast.Break) -> list[ir.Stmt]:
        if self.ctx.loop_depth == 0:
            self.fail(
                node, "`break` outside a loop", "break inside `while` or `for ... in range(...)`"
            )
        return [ir.Break()]

    def visit_Continue(self, node: ast.Continue) -> list[ir.Stmt]:
        if self.ctx.loop_depth == 0:
            self.fail(
                node,
                "`continue` outside a loop",
                "continue inside `while` or `for ... in range(...)`",
            )
        return [ir.Continue()]

    # ------------------------------------------------------------- control flow

    def visit_If(self, node: ast.If) -> list[ir.Stmt]:
        # The whole if/elif chain at once, without recursing per `elif` (a chain may be
        # hundreds long): each elif is an If in the previous link's else, as Python's own AST.
        links = [node]
        while len(links[-1].orelse) == 1 and isinstance(links[-1].orelse[0], ast.If):
            links.append(links[-1].orelse[0])
        flat = len(links) >= ir.ELIF_FLATTEN  # codegen emits it two levels deep (ir.py)
        base = self.ctx.nesting
        parts = []
        try:
            for n, link in enumerate(links):
                self.ctx.nesting = base + (2 if flat else n + 1)
                self.check_nesting(link)
                try:
                    cond = self.x.condition(link.test)
                except tr.TypeMixError as exc:
                    self.fail(link.test, exc.message, exc.allowed)
                parts.append((cond, self.nested(link.body)))
            orelse = self.nested(links[-1].orelse)
        finally:
            self.ctx.nesting = base
        for cond, then in reversed(parts):
            orelse = (ir.If(cond, then, orelse),)
        return list(orelse)

    def check_nesting(self, node: ast.stmt) -> None:
        """Refuse a block nested deeper than ir.MAX_NESTING (drivers mis-run deeper ones)."""
        if self.ctx.nesting > ir.MAX_NESTING:
            what = {ast.If: "`if`", ast.While: "`while` loop", ast.For: "`for` loop"}
            self.fail(
                node,
                f"this {what.get(type(node), 'block')} is nested {self.ctx.nesting} levels deep "
                f"(if/elif/while/for blocks); kernels allow at most {ir.MAX_NESTING}, because "
                "GPU drivers mis-run deeper control flow (Mesa's lavapipe silently ignores "
                "conditions nested more than about 80 deep)",
                "fewer levels: combine conditions with `and`, leave early with "
                "`if not cond: return`/`continue`, or test in one if/elif chain (a chain of "
                f"{ir.ELIF_FLATTEN} or more conditions counts as two levels)",
            )

    @contextmanager
    def deeper(self, node: ast.stmt) -> Iterator[None]:
        """One more structured level (a loop) around lowering `node`."""
        self.ctx.nesting += 1
        self.check_nesting(node)
        try:
            yield
        finally:
            self.ctx.nesting -= 1

    def visit_While(self, node: ast.While) -> list[ir.Stmt]:
        if node.orelse:
            self.fail(
                keyword_position(self.source, node.body[-1], node.orelse[0], "else"),
                "`while ... else` is not supported in kernels",
                "a flag local set before `break`, tested after the loop",
            )
        cond = self.x.condition(node.test)
        self.ctx.loop_depth += 1
        try:
            with self.deeper(node):
                body = self.nested(node.body)
        finally:
            self.ctx.loop_depth -= 1
        return [ir.Loop(cond, body)]

    def visit_For(self, node: ast.For) -> list[ir.Stmt]:
        with self.deeper(node):
            return self.for_range(node)

    # --------------------------------------------------------------- assignment

    def visit_Assign(self, node: ast.Assign) -> list[ir.Stmt]:
        targets = node.targets
        for target in targets:
            for t in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
                p = self.ctx.param(t.id) if isinstance(t, ast.Name) else None
                if p is not None and p.is_list:  # say so before judging the value
                    self.assign_local(t, t.id, tr.const(0))
        if self.tile_value(node.value):
            return self.tile_assign(node)
        special = self.special_call(node.value)
        if special is not None and special[0] == "shared":
            return self.declare_shared(node, node.value, special[1])  # type: ignore[arg-type]
        if special is not None:  # old = atomic_add(xs, i, v), s = subgroup_add(x)
            out, old = self.value_call(node.value, special)  # type: ignore[arg-type]
            for target in targets:
                if isinstance(target, (ast.Tuple, ast.List)):
                    what = "an atomic" if special[0] == "atomic" else "a subgroup operation"
                    self.fail(target, f"{what} returns one value", "old = " + special[1] + "(...)")
                out.extend(self.assign_to(target, old))  # type: ignore[arg-type]
            return out
        if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
            return self.unpack(targets[0], node.value)
        value = self.x.expr(node.value)
        out = []
        if len(targets) > 1 and not isinstance(value, ir.Const):
            # `a = b = expr`: evaluate once, before any target changes.
            value, out = self.temporary(value, node)
        for target in targets:
            out.extend(self.assign_to(target, value))
        return out

    def temporary(self, value: ir.Expr, node: ast.AST) -> tuple[ir.Expr, list[ir.Stmt]]:
        name = self.ctx.hidden("tmp")
        self.ctx.declare(name, value.type, node)
        return ir.LocalRef(value.type, name), [ir.Assign(name, value)]

    def unpack(self, target: ast.Tuple | ast.List, value_node: ast.expr) -> list[ir.Stmt]:
        if not isinstance(value_node, ast.Tuple) or len(value_node.elts) != len(target.elts):
            self.fail(
                value_node,
                "unpacking is only supported from a tuple of the same length",
                "a, b = b, a",
            )
        values = [self.x.expr(v) for v in value_node.elts]
        out: list[ir.Stmt] = []
        held = []
        for v in values:  # Python evaluates the whole right side first
            if isinstance(v, ir.Const):
                held.append(v)
            else:
                ref, stmts = self.temporary(v, value_node)
                held.append(ref)
                out.extend(stmts)
        for t, v in zip(target.elts, held):
            out.extend(self.assign_to(t, v))
        return out

    def assign_to(self, target: ast.expr, value: ir.Expr) -> list[ir.Stmt]:
        if isinstance(target, ast.Name):
            return self.assign_local(target, target.id, value)
        if isinstance(target, ast.Subscript):
            space, li = self.x.array_ref(target.value, "assigned by index", local_ok=True)
            index = self.x.element_index(target.slice, space, li)
            if space == "shared":
                return [ir.SharedStore(li, index, self.shared_value(target, li, value))]
            return [ir.Store(li, index, self.store_value(target, li, value))]
        self.fail(target, *describe_target(target))

    def store_value(self, target: ast.AST, li: int, value: ir.Expr) -> ir.Expr:
        p = self.ctx.params[li]
        elem = p.type.elem  # type: ignore[union-attr]
        return self.coerce(
            target, value, elem, f"an element of `{p.name}` ({python_type_name(p.type)})"
        )

    def shared_value(self, target: ast.AST, index: int, value: ir.Expr) -> ir.Expr:
        arr = self.ctx.shared_arrays[index]
        return self.coerce(
            target,
            value,
            arr.elem,
            f"an element of {arr.kind} `{arr.name}` ({tr.type_name(arr.elem)})",
        )

    def assign_local(
        self, node: ast.AST, name: str, value: ir.Expr, annotated: Scalar | None = None
    ) -> list[ir.Stmt]:
        ctx = self.ctx
        if name in ctx.shared:
            arr = ctx.shared_arrays[ctx.shared[name]]
            self.fail(
                node,
                f"`{name}` is a {arr.kind} (declared on line {arr.line}); it cannot be assigned again",
                f"assign its elements: {name}[i] = value",
            )
        p = ctx.param(name)
        self.x.refuse_whole_list(
            node,
            name,
            "; the list itself cannot be assigned",
            f"assign its elements: {name}[i] = value",
        )
        info = ctx.locals.get(name)
        if info is None:
            t = annotated or value.type
            ctx.declare(name, t, node)
            return [ir.Assign(name, self.coerce(node, value, t, f"`{name}`"))]
        what = (
            f"parameter `{name}` ({tr.type_name(info.type)})"
            if p is not None
            else (
                f"`{name}`, {tr.a_type(info.type)} local (first assigned on line {info.line}; {_WHY_LOCAL_TYPES})"
            )
        )
        return [ir.Assign(name, self.coerce(node, value, info.type, what, name))]

    def coerce(
        self, node: ast.AST, value: ir.Expr, t: Scalar, what: str, local: str | None = None
    ) -> ir.Expr:
        """`value` converted to `t` where Python's numbers allow it without loss of meaning."""
        vt = value.type
        if vt == t or (t.is_int and vt.is_bool):
            return tr.cast(value, t)
        if tr.is_legacy(vt) and tr.is_legacy(t) and t.is_float and not vt.is_float:
            return tr.cast(value, t)
        if not (tr.is_legacy(vt) and tr.is_legacy(t)):
            value = tr.adapt(value, ir.Const(t, 0))[0]  # a literal takes the target's type
            vt = value.type
            if vt == t:
                return value
            if (
                (t.is_float and (vt.is_int or (vt.is_float and vt.bits < t.bits)))
                or (t.kind == vt.kind and vt.bits < t.bits)
                or (t.kind == "int" and vt.kind == "uint" and vt.bits < t.bits)
            ):
                return tr.cast(value, t)  # widening: no loss of meaning
            if not t.is_bool:
                self.fail(
                    node,
                    f"cannot assign {tr.a_type(vt)} to {what} without an explicit cast",
                    f"{t}(...) to convert (narrowing and signed/unsigned changes are explicit)",
                )
        got = tr.a_type(vt)
        if t.is_int:
            hint = "int(...) to convert (it truncates toward zero)"
            if local is not None and not local.startswith("$"):
                hint += f", or make `{local}` a float from its first assignment (e.g. `{local}: float = 0`)"
            self.fail(node, f"cannot assign {got} to {what}", hint)
        if t.is_bool:
            self.fail(
                node, f"cannot assign {got} to {what}", "bool(...) or a comparison (e.g. x != 0)"
            )
        self.fail(node, f"cannot assign {got} to {what}", "a value of the same type")

    def visit_AugAssign(self, node: ast.AugAssign) -> list[ir.Stmt]:
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.ctx.tiles:  # acc += t, acc *= s
            value = ast.BinOp(ast.Name(target.id, ast.Load(), **_pos(target)), node.op, node.value)
            assign = ast.Assign([target], ast.copy_location(value, node.value))
            return self.tile_assign(ast.copy_location(assign, node))
        if isinstance(target, ast.Name):
            p = self.ctx.param(target.id)
            if p is not None and p.is_list:
                self.assign_local(target, target.id, tr.const(0))  # reports the list error
            current = self.x.visit_Name(ast.Name(target.id, ast.Load(), **_pos(target)))
            result = self.x.binary(
                node, node.op, current, self.x.expr(node.value), target, node.value
            )
            return self.assign_local(target, target.id, result)
        if isinstance(target, ast.Subscript):
            space, li = self.x.array_ref(target.value, "assigned by index", local_ok=True)
            index = self.x.element_index(target.slice, space, li)
            if space == "shared":
                elem = self.ctx.shared_arrays[li].elem
                current: ir.Expr = ir.SharedLoad(elem, li, index)
            else:
                elem = self.ctx.params[li].type.elem  # type: ignore[union-attr]
                current = ir.Load(elem, li, index)
            result = self.x.binary(
                node, node.op, current, self.x.expr(node.value), target, node.value
            )
            if space == "shared":
                return [ir.SharedStore(li, index, self.shared_value(target, li, result))]
            return [ir.Store(li, index, self.store_value(target, li, result))]
        return self.assign_to(target, tr.const(0))  # reports the unsupported target

    def visit_AnnAssign(self, node: ast.AnnAssign) -> list[ir.Stmt]:
        target = node.target
        if not isinstance(target, ast.Name):
            self.fail(
                target,
                "annotations are only allowed on local names",
                f"name: {ALLOWED_LOCAL_TYPES} = value",
            )
        name = target.id
        t = type_from_node(node.annotation)
        if isinstance(t, ir.ListType):
            self.fail(
                node.annotation,
                "a local cannot be a list (lists exist only as parameters)",
                f"a local of type {ALLOWED_LOCAL_TYPES}",
            )
        if t is None:
            self.fail(
                node.annotation,
                f"unsupported local type `{ast.unparse(node.annotation)}`",
                ALLOWED_LOCAL_TYPES,
            )
        p = self.ctx.param(name)
        info = self.ctx.locals.get(name)
        if p is not None and p.type != t:
            self.fail(
                node.annotation,
                f"parameter `{name}` is a {python_type_name(p.type)}; it cannot be re-declared as {tr.type_name(t)}",
                f"{name}: {python_type_name(p.type)}",
            )
        if p is None and info is not None and info.type != t:
            self.fail(
                node.annotation,
                f"`{name}` is already {tr.a_type(info.type)} local (first assigned on line {info.line}); it cannot become {tr.type_name(t)}",
                f"a new name for the {tr.type_name(t)} value",
            )
        if node.value is None:
            if info is None:
                self.ctx.declare(name, t, node)
                self.ctx.locals[name].top_level = False  # declared, not assigned: zero it
            return []
        special = self.special_call(node.value)
        if special is not None and special[0] == "shared":
            what = special[1]
            self.fail(
                node.annotation,
                f"a {what} array takes no annotation",
                f"{name} = {what}(float, {64 if what == 'local' else 256})",
            )
        if special is not None:
            out, old = self.value_call(node.value, special)  # type: ignore[arg-type]
            return out + self.assign_local(target, name, old, annotated=t)  # type: ignore[arg-type]
        return self.assign_local(target, name, self.x.expr(node.value), annotated=t)


def _pos(node: ast.AST) -> dict:
    return {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
