"""IR -> stable text, for goldens, `--dump-ir` style inspection and error reports.

Expressions print as typed s-expressions (`(add f32 (mul f32 $a x[%i]) y[%i])`): `%name` is a
local, `$name` a scalar parameter, `x[...]` a list element; statements print one per line with
indented blocks; `@name[...]` is an element of a workgroup shared array or a local array. The format
only changes deliberately (goldens depend on it).
"""

from __future__ import annotations

import math
import struct

from . import ir


# Leaf expressions other than constants (they have no children): node class -> its text, given
# the printer `p` (for parameter names).
_LEAVES = {
    ir.LocalRef: lambda p, e: f"%{e.name}",
    ir.ParamRef: lambda p, e: f"${p.param_name(e.index)}",
    ir.Builtin: lambda p, e: f"{e.kind.value}.{'xyz'[e.axis]}",
    ir.ListLen: lambda p, e: f"len({p.param_name(e.list_index)})",
    ir.SubgroupValue: lambda p, e: f"subgroup.{e.what}",
    ir.ListShape: lambda p, e: f"{p.param_name(e.list_index)}.shape[{e.axis}]",
}


def format_float(v: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    if math.isnan(v):
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    for digits in range(1, 10):
        text = f"{v:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == v:
            break
    if "e" not in text and "." not in text and "n" not in text:
        text += ".0"
    return text


class _Printer:
    def __init__(self, kernel: ir.Kernel | None):
        self.params = kernel.params if kernel is not None else ()
        self.shared = kernel.shared if kernel is not None else ()

    def shared_name(self, index: int) -> str:
        return "@" + (self.shared[index].name if index < len(self.shared) else f"#{index}")

    def param_name(self, index: int) -> str:
        return self.params[index].name if index < len(self.params) else f"#{index}"

    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            if e.type.is_bool:
                return "true" if e.value else "false"
            if e.type.is_float:
                return format_float(e.value)
            return str(e.value)
        leaf = _LEAVES.get(type(e))
        if leaf is not None:
            return leaf(self, e)
        args = []
        for c in ir.children(e):  # (a loop, not a comprehension: one frame per tree level)
            args.append(self.expr(c))
        if isinstance(e, ir.Load):
            return f"{self.param_name(e.list_index)}[{args[0]}]"
        if isinstance(e, ir.SharedLoad):
            return f"{self.shared_name(e.array)}[{args[0]}]"
        head = _head(e)
        if head is not None:
            return f"({head} {' '.join(args)})"
        return f"<{type(e).__name__}>"

    def stmts(self, body: tuple[ir.Stmt, ...], indent: str, out: list[str]) -> None:
        if not body:
            out.append(f"{indent}pass")
        for s in body:
            # the expressions a statement evaluates, in field order (ir.children)
            x = [self.expr(c) for c in ir.children(s)]
            if isinstance(s, ir.Assign):
                out.append(f"{indent}%{s.name} = {x[0]}")
            elif isinstance(s, ir.Store | ir.SharedStore):
                where = (
                    self.param_name(s.list_index)
                    if isinstance(s, ir.Store)
                    else self.shared_name(s.array)
                )
                out.append(f"{indent}{where}[{x[0]}] = {x[1]}")
            elif isinstance(s, ir.Atomic):
                where = self.shared_name(s.array) if s.shared else self.param_name(s.array)
                lhs = f"%{s.result} = " if s.result is not None else ""
                out.append(
                    f"{indent}{lhs}atomic_{s.op.value} {s.value.type} {where}[{x[0]}] {' '.join(x[1:])}"
                )
            elif isinstance(s, ir.Subgroup):
                out.append(f"{indent}%{s.result} = subgroup_{s.op.value} {s.type}({', '.join(x)})")
            elif isinstance(s, ir.If | ir.Loop):
                head = (
                    "if"
                    if isinstance(s, ir.If)
                    else "loop unroll while"
                    if s.unroll
                    else "loop while"
                )
                out.append(f"{indent}{head} {x[0]}:")
                # the first block always prints; a later one only when it has statements
                for i, block in enumerate(ir.blocks(s)):
                    if i:
                        if not block:
                            continue
                        out.append(f"{indent}{'else' if isinstance(s, ir.If) else 'step'}:")
                    self.stmts(block, indent + "  ", out)
            elif isinstance(s, ir.Copy16):
                where = f"{self.shared_name(s.dst)}[{x[0]}]"
                out.append(f"{indent}copy16 {where} <- {self.param_name(s.src)}[{x[1]}]:")
                self.stmts(s.body, indent + "  ", out)
            elif isinstance(s, ir.TILE_STMTS):
                out.append(f"{indent}{self.tile(s, x)}")
            else:
                out.append(f"{indent}{type(s).__name__.lower()}")

    def tile(self, s: ir.Stmt, x: list[str]) -> str:
        """One tile statement (its tiles as `#name`)."""
        if isinstance(s, ir.TileFill):
            return f"#{s.tile} = tile_fill({x[0]})"
        if isinstance(s, ir.TileLoad | ir.TileStore):
            where = self.shared_name(s.array) if s.shared else self.param_name(s.array)
            order = " col_major" if s.col_major else ""
            if isinstance(s, ir.TileLoad):
                return f"#{s.tile} = tile_load {where}[{x[0]}] stride {x[1]}{order}"
            return f"tile_store {where}[{x[0]}] stride {x[1]}{order} = #{s.tile}"
        if isinstance(s, ir.TileMma):
            return f"#{s.result} = tile_mma(#{s.a}, #{s.b}, #{s.c})"
        if isinstance(s, ir.TileScale):
            return f"#{s.result} = #{s.src} * {x[0]}"
        return f"#{s.result} = #{s.lhs} {'-' if s.subtract else '+'} #{s.rhs}"


def _head(e: ir.Expr) -> str | None:
    """The s-expression head of an operation node (its operands follow it), None otherwise."""
    if isinstance(e, ir.Unary | ir.Binary):
        return f"{e.op.value} {e.type}"
    if isinstance(e, ir.Compare):
        return f"{e.op.value} {e.lhs.type}"  # the operands' type: the result is always bool
    if isinstance(e, ir.Select):
        return f"select {e.type}"
    if isinstance(e, ir.Cast):
        return str(e.type)
    if isinstance(e, ir.Call):
        return f"call {e.name} {e.type}"
    return None


def format_expr(e: ir.Expr, kernel: ir.Kernel | None = None) -> str:
    return _Printer(kernel).expr(e)


def format_kernel(k: ir.Kernel) -> str:
    """The whole kernel: header, parameters with their usage, locals, body."""
    p = _Printer(k)
    wg = ", ".join(map(str, k.workgroup_size))
    out = [
        f"kernel {k.name} workgroup=({wg}) observes_workgroup={str(k.observes_workgroup).lower()}"
    ]
    for i, param in enumerate(k.params):
        usage = ""
        if param.is_list:
            usage = " " + (
                " ".join(w for w, on in (("reads", param.reads), ("writes", param.writes)) if on)
                or "unused"
            )
        out.append(f"  param {i} {param.name}: {param.type}{usage}")
    for name, t in k.locals.items():
        out.append(f"  local %{name}: {t}")
    for arr in k.shared:
        out.append(f"  {'local' if arr.private else 'shared'} @{arr.name}: {arr}")
    for name, t in k.tiles.items():
        out.append(f"  tile #{name}: {t}")
    out.append("body:")
    p.stmts(k.body, "  ", out)
    return "\n".join(out) + "\n"
