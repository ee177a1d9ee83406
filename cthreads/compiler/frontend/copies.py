"""`copy16(dst, dst_offset, src, src_offset)`: 16 bytes of a list parameter into a shared array.

The statement copies `16 // itemsize` elements of the list's element type (2-, 4- or 8-byte
types), element j as `dst[dst_offset + j] = src[src_offset + j]` with the out-of-range rule of
element accesses (a read past the list gives 0, a write past the array is dropped). Both
offsets are evaluated once (into locals), left to right as Python evaluates arguments. It
lowers to `ir.Copy16`, which carries those element copies as its body: what the statement
means, and what codegen falls back to when one 16-byte load cannot do the copy.
"""

from __future__ import annotations

import ast

from .. import ir
from . import typerules as tr
from .signature import python_type_name

COPY_SIGNATURE = "copy16(dst_shared, dst_offset, src_list, src_offset)"
COPY_FORM = COPY_SIGNATURE + " on a line of its own"
COPY_BYTES = 16
_ITEM_SIZES = (2, 4, 8)


class CopyLowering:
    """Mixin of stmts.StmtLowerer: the `copy16(...)` statement."""

    def copy_statement(self, call: ast.Call) -> list[ir.Stmt]:
        x = self.x
        if call.keywords:
            self.fail(call.keywords[0], "copy16() takes positional arguments", COPY_FORM)
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                self.fail(arg, "starred arguments (`*x`) are not supported in kernels", COPY_FORM)
        if len(call.args) != 4:
            self.fail(call, f"copy16() takes 4 arguments; got {len(call.args)}", COPY_FORM)
        dst_node, dst_off_node, src_node, src_off_node = call.args
        dst = self._copy_destination(dst_node)
        src = self._copy_source(src_node)
        arr, p = self.ctx.shared_arrays[dst], self.ctx.params[src]
        elem = p.type.elem  # type: ignore[union-attr]
        shown = f"`{p.name}` ({python_type_name(p.type)})"
        if elem.is_bool or elem.bits // 8 not in _ITEM_SIZES:
            self.fail(
                src_node,
                f"copy16() moves elements of 2, 4 or 8 bytes; {shown} holds {tr.type_name(elem)}",
                "a list of f16, bf16, i16, u16, float, int, u32, f64, i64 or u64 elements "
                "(for 1-byte elements, pack them in u64 words)",
            )
        if arr.elem != elem:
            self.fail(
                dst_node,
                f"copy16() copies bytes between arrays of one element type; shared array "
                f"`{arr.name}` holds {tr.type_name(arr.elem)}, {shown} holds {tr.type_name(elem)}",
                f"`{arr.name} = shared({tr.type_name(elem)}, {arr.size})`",
            )
        out: list[ir.Stmt] = []
        offsets = []
        for node in (dst_off_node, src_off_node):
            value = x.index(node)
            if not isinstance(value, ir.Const):
                value, stmts = self.temporary(value, node)
                out.extend(stmts)
            offsets.append(value)
        dst_off, src_off = offsets
        count = COPY_BYTES // (elem.bits // 8)
        body = tuple(
            ir.SharedStore(dst, _plus(dst_off, j), ir.Load(elem, src, _plus(src_off, j)))
            for j in range(count)
        )
        return [*out, ir.Copy16(dst, dst_off, src, src_off, count, body)]

    def _copy_destination(self, node: ast.expr) -> int:
        arr = self.ctx.shared.get(node.id) if isinstance(node, ast.Name) else None
        if arr is None or self.ctx.shared_arrays[arr].private:
            what = (
                "a local array"
                if arr is not None
                else f"a {python_type_name(p.type)} parameter"
                if isinstance(node, ast.Name) and (p := self.ctx.param(node.id)) is not None
                else "not a shared array"
            )
            self.fail(
                node,
                f"copy16() writes into a workgroup shared array; `{ast.unparse(node)}` is {what}",
                "a destination declared as `tile = shared(f16, 256)` in the kernel",
            )
        return arr

    def _copy_source(self, node: ast.expr) -> int:
        if isinstance(node, ast.Name) and node.id in self.ctx.shared:
            self.fail(
                node,
                f"copy16() reads a list parameter; `{node.id}` is a shared or local array",
                "copy between shared arrays element by element: `dst[i] = src[j]`",
            )
        return self.x.list_param(node, "read by copy16()", "list parameters")


def _plus(base: ir.Expr, j: int) -> ir.Expr:
    if j == 0:
        return base
    if isinstance(base, ir.Const):
        return tr.const(base.value + j)
    return ir.Binary(base.type, ir.BinOp.ADD, base, tr.const(j))
