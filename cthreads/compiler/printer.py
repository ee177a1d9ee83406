"""IR -> stable text, for goldens, `--dump-ir` style inspection and error reports.

Expressions print as typed s-expressions (`(add f32 (mul f32 $a x[%i]) y[%i])`): `%name` is a
local, `$name` a scalar parameter, `x[...]` a list element; statements print one per line with
indented blocks; `@name[...]` is an element of a workgroup shared array. The format only changes deliberately (goldens depend on it).
"""

from __future__ import annotations

import math
import struct

from . import ir


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
        if isinstance(e, ir.LocalRef):
            return f"%{e.name}"
        if isinstance(e, ir.ParamRef):
            return f"${self.param_name(e.index)}"
        if isinstance(e, ir.Builtin):
            return f"{e.kind.value}.{'xyz'[e.axis]}"
        if isinstance(e, ir.ListLen):
            return f"len({self.param_name(e.list_index)})"
        if isinstance(e, ir.SubgroupValue):
            return f"subgroup.{e.what}"
        if isinstance(e, ir.ListShape):
            return f"{self.param_name(e.list_index)}.shape[{e.axis}]"
        if isinstance(e, ir.Load):
            return f"{self.param_name(e.list_index)}[{self.expr(e.index)}]"
        if isinstance(e, ir.SharedLoad):
            return f"{self.shared_name(e.array)}[{self.expr(e.index)}]"
        if isinstance(e, ir.Unary):
            return f"({e.op.value} {e.type} {self.expr(e.operand)})"
        if isinstance(e, ir.Binary):
            return f"({e.op.value} {e.type} {self.expr(e.lhs)} {self.expr(e.rhs)})"
        if isinstance(e, ir.Compare):
            return f"({e.op.value} {e.lhs.type} {self.expr(e.lhs)} {self.expr(e.rhs)})"
        if isinstance(e, ir.Select):
            return f"(select {e.type} {self.expr(e.cond)} {self.expr(e.if_true)} {self.expr(e.if_false)})"
        if isinstance(e, ir.Cast):
            return f"({e.type} {self.expr(e.operand)})"
        if isinstance(e, ir.Call):
            args = " ".join(self.expr(a) for a in e.args)
            return f"(call {e.name} {e.type} {args})"
        return f"<{type(e).__name__}>"

    def stmts(self, body: tuple[ir.Stmt, ...], indent: str, out: list[str]) -> None:
        if not body:
            out.append(f"{indent}pass")
        for s in body:
            if isinstance(s, ir.Assign):
                out.append(f"{indent}%{s.name} = {self.expr(s.value)}")
            elif isinstance(s, ir.Store):
                out.append(
                    f"{indent}{self.param_name(s.list_index)}[{self.expr(s.index)}] = {self.expr(s.value)}"
                )
            elif isinstance(s, ir.SharedStore):
                out.append(
                    f"{indent}{self.shared_name(s.array)}[{self.expr(s.index)}] = {self.expr(s.value)}"
                )
            elif isinstance(s, ir.Atomic):
                where = self.shared_name(s.array) if s.shared else self.param_name(s.array)
                args = " ".join(self.expr(a) for a in (s.value, s.comparator) if a is not None)
                lhs = f"%{s.result} = " if s.result is not None else ""
                out.append(
                    f"{indent}{lhs}atomic_{s.op.value} {s.value.type} {where}[{self.expr(s.index)}] {args}"
                )
            elif isinstance(s, ir.Subgroup):
                args = ", ".join(self.expr(a) for a in (s.value, s.lane) if a is not None)
                out.append(f"{indent}%{s.result} = subgroup_{s.op.value} {s.type}({args})")
            elif isinstance(s, ir.If):
                out.append(f"{indent}if {self.expr(s.cond)}:")
                self.stmts(s.then, indent + "  ", out)
                if s.orelse:
                    out.append(f"{indent}else:")
                    self.stmts(s.orelse, indent + "  ", out)
            elif isinstance(s, ir.Loop):
                out.append(f"{indent}loop while {self.expr(s.cond)}:")
                self.stmts(s.body, indent + "  ", out)
                if s.step:
                    out.append(f"{indent}step:")
                    self.stmts(s.step, indent + "  ", out)
            else:
                out.append(f"{indent}{type(s).__name__.lower()}")


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
        out.append(f"  shared @{arr.name}: {arr}")
    out.append("body:")
    p.stmts(k.body, "  ", out)
    return "\n".join(out) + "\n"
