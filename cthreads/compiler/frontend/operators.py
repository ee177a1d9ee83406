"""Operator lowering with Python's meaning: arithmetic (int `/` gives float, `//` and `%` floor,
`**` typing, bool as int), bitwise ops, comparisons (chained, `is`/`in` rejected), `and`/`or`
(their values, not just truth), `not`, unary ops and conditional expressions.
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import BOOL, F32, BinOp, CmpOp, UnOp
from . import typerules as tr
from .source import Position

_BINOPS = {
    "Add": BinOp.ADD,
    "Sub": BinOp.SUB,
    "Mult": BinOp.MUL,
    "Div": BinOp.DIV,
    "FloorDiv": BinOp.FLOORDIV,
    "Mod": BinOp.MOD,
    "Pow": BinOp.POW,
    "BitAnd": BinOp.BIT_AND,
    "BitOr": BinOp.BIT_OR,
    "BitXor": BinOp.BIT_XOR,
    "LShift": BinOp.SHL,
    "RShift": BinOp.SHR,
}
_OP_TEXT = {
    "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**",
    "BitAnd": "&", "BitOr": "|", "BitXor": "^", "LShift": "<<", "RShift": ">>", "MatMult": "@",
}  # fmt: skip
_CMPOPS = {
    "Eq": CmpOp.EQ,
    "NotEq": CmpOp.NE,
    "Lt": CmpOp.LT,
    "LtE": CmpOp.LE,
    "Gt": CmpOp.GT,
    "GtE": CmpOp.GE,
}
_CMP_REJECT = {
    "Is": (
        "is",
        "`is` compares object identity, which kernels do not have",
        "== (or != for `is not`)",
    ),
    "IsNot": ("is not", "`is not` compares object identity, which kernels do not have", "!="),
    "In": (
        "in",
        "`in` (membership) is not supported in kernels",
        "a for-range loop comparing x[i] one by one",
    ),
    "NotIn": (
        "not in",
        "`not in` (membership) is not supported in kernels",
        "a for-range loop comparing x[i] one by one",
    ),
}


INT_RANGE = "a value in [-2**31, 2**31 - 1] (kernel ints are 32-bit)"


class OperatorLowering:
    """Mixin of `ExprLowerer`: expects `expr`, `condition`, `fail` and `source`."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ir.Expr:
        if isinstance(node.op, ast.Not):
            return ir.Unary(BOOL, UnOp.NOT, self.condition(node.operand))
        operand = node.operand
        if (
            isinstance(node.op, ast.USub)
            and isinstance(operand, ast.Constant)
            and type(operand.value) is int
        ):
            # -2147483648 is a literal in spirit: check the range of the negated value.
            if not tr.INT_MIN <= -operand.value <= tr.INT_MAX:
                self.fail(
                    node, f"int literal {-operand.value} does not fit in a 32-bit int", INT_RANGE
                )
            return tr.const(-operand.value)
        if (
            isinstance(node.op, ast.USub)
            and isinstance(operand, ast.Constant)
            and type(operand.value) is float
        ):
            # a negative float literal stays a literal: it takes an f16 / f64 operand's type
            # (`h + -0.75` with `h: f16`) as `h - 0.75` does
            return tr.const(-operand.value)
        value = self.expr(operand)
        t = tr.arith_type(value.type)
        if isinstance(node.op, ast.UAdd):
            return tr.cast(value, t)
        if isinstance(node.op, ast.USub):
            return ir.Unary(t, UnOp.NEG, tr.cast(value, t))
        if t.is_float:  # Invert
            self.fail(
                node, "`~` needs an int operand, but this is a float", "int(...) first, or -x - 1"
            )
        return ir.Unary(t, UnOp.INVERT, tr.cast(value, t))

    def visit_BinOp(self, node: ast.BinOp) -> ir.Expr:
        return self.binary(
            node, node.op, self.expr(node.left), self.expr(node.right), node.left, node.right
        )

    def binary(
        self, node: ast.AST, op: ast.operator, a: ir.Expr, b: ir.Expr, left=None, right=None
    ) -> ir.Expr:
        """`a op b` with Python's typing (`node` locates errors; `left`/`right` the operands)."""
        name = type(op).__name__
        where = self.operator_at(left, right, _OP_TEXT.get(name, "")) if left is not None else node
        if name not in _BINOPS:
            self.fail(
                where,
                f"operator `{_OP_TEXT.get(name, name)}` is not supported in kernels",
                "+ - * / // % ** & | ^ << >>",
            )
        irop = _BINOPS[name]
        sym = _OP_TEXT[name]
        if (
            irop in (BinOp.DIV, BinOp.FLOORDIV, BinOp.MOD)
            and isinstance(b, ir.Const)
            and b.value == 0
        ):
            self.fail(right or node, f"division by zero (`{sym} 0`)", "a non-zero divisor")
        if irop in (BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR, BinOp.SHL, BinOp.SHR):
            if a.type.is_float or b.type.is_float:
                self.fail(
                    where,
                    f"`{sym}` needs int or bool operands, but got {tr.type_name(a.type)} and {tr.type_name(b.type)}",
                    "int(...) to convert first",
                )
            if (
                a.type.is_bool
                and b.type.is_bool
                and irop in (BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR)
            ):
                return ir.Binary(BOOL, irop, a, b)
            if irop in (BinOp.SHL, BinOp.SHR) and isinstance(b, ir.Const) and b.value < 0:
                self.fail(
                    right or node, f"negative shift count {b.value}", "a shift count in 0..31"
                )
            if irop in (BinOp.SHL, BinOp.SHR):
                # the result has the left operand's type; the count only says how far
                t = tr.arith_type(a.type)
                if tr.is_narrow(t):  # shifted in 32 bits (count modulo 32), then wrapped
                    w = tr.wide(t)
                    return tr.cast(ir.Binary(w, irop, tr.cast(a, w), tr.cast(b, w)), t)
                return ir.Binary(t, irop, tr.cast(a, t), tr.cast(b, t))
            a, b = tr.adapt(a, b)
            t = tr.join(a.type, b.type)
            return ir.Binary(t, irop, tr.cast(a, t), tr.cast(b, t))
        a, b = tr.adapt(a, b)
        if irop is BinOp.DIV:
            j = tr.join(a.type, b.type)
            t = j if j.is_float else F32  # int / int is float32, as with plain ints
            return ir.Binary(t, irop, tr.cast(a, t), tr.cast(b, t))
        t = tr.join(a.type, b.type)
        if irop is BinOp.POW and t.is_float and t.bits == 64:
            self.fail(
                where,
                "`**` is not available on f64: GLSL.std.450 Pow is defined for 16/32-bit floats only",
                "multiply explicitly (x * x), or convert: f32(x) ** y",
            )
        if irop is BinOp.POW and t.is_int and not (isinstance(b, ir.Const) and b.value >= 0):
            # int ** (negative or run-time int) is a float in Python whenever it is negative;
            # a device type must be fixed at compile time, so it is always float here.
            t = F32
        return ir.Binary(t, irop, tr.cast(a, t), tr.cast(b, t))

    def operator_at(self, left: ast.expr, right: ast.expr, text: str) -> ast.AST | Position:
        """The position of operator `text` between two operands (for a precise caret)."""
        if text and left.end_lineno == right.lineno:
            line = self.source.lines[left.end_lineno + self.source._shift - self.source.firstlineno]
            raw = line.encode("utf-8")
            found = raw.find(text.encode(), left.end_col_offset, right.col_offset)
            if found >= 0:
                return Position(left.end_lineno, found)
        return right

    def visit_BoolOp(self, node: ast.BoolOp) -> ir.Expr:
        values = tr.adapt_all([self.expr(v) for v in node.values])
        op = BinOp.AND if isinstance(node.op, ast.And) else BinOp.OR
        if all(v.type.is_bool for v in values):
            result = values[0]
            for v in values[1:]:
                result = ir.Binary(BOOL, op, result, v)
            return result
        # Python's `a or b` is `a if a else b` (and `a and b` is `b if a else a`).
        t = values[0].type
        for v in values[1:]:
            t = tr.join(t, v.type)
        result = tr.cast(values[-1], t)
        for v in reversed(values[:-1]):
            cv = tr.cast(v, t)
            test = tr.truthy(v)
            result = (
                ir.Select(t, test, cv, result) if op is BinOp.OR else ir.Select(t, test, result, cv)
            )
        return result

    def visit_Compare(self, node: ast.Compare) -> ir.Expr:
        left_node, left = node.left, self.expr(node.left)
        parts: list[ir.Expr] = []
        for op, right_node in zip(node.ops, node.comparators):
            name = type(op).__name__
            if name in _CMP_REJECT:
                text, message, allowed = _CMP_REJECT[name]
                self.fail(
                    self.operator_at(left_node, right_node, text.split()[0]), message, allowed
                )
            right = self.expr(right_node)
            if left.type.is_bool and right.type.is_bool and name in ("Eq", "NotEq"):
                parts.append(ir.Compare(BOOL, _CMPOPS[name], left, right))
            else:
                lv, rv = tr.adapt(left, right)
                t = tr.join(lv.type, rv.type)
                parts.append(ir.Compare(BOOL, _CMPOPS[name], tr.cast(lv, t), tr.cast(rv, t)))
            # IR expressions are pure, so reusing `right` keeps "evaluated once" semantics.
            left_node, left = right_node, right
        result = parts[0]
        for part in parts[1:]:
            result = ir.Binary(BOOL, BinOp.AND, result, part)
        return result

    def visit_IfExp(self, node: ast.IfExp) -> ir.Expr:
        cond = self.condition(node.test)
        a, b = tr.adapt(self.expr(node.body), self.expr(node.orelse))
        t = a.type if a.type == b.type else tr.join(a.type, b.type)
        return ir.Select(t, cond, tr.cast(a, t), tr.cast(b, t))
