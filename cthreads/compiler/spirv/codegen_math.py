"""Math: intrinsic calls (intrinsics.INTRINSICS -> GLSL.std.450 or a '@recipe') and `**`.

Recipes exist where no single instruction has Python's meaning: `pow` (sign rules for negative
bases, 0 ** y, x ** 0), int `**` (exact repeated squaring), `copysign` (sign bit),
`hypot` (scaled so x*x cannot overflow), `fmod` (C remainder), `log10`, `isfinite`, `abs`.
See codegen_expr's docstring for the semantic decisions.
"""

from __future__ import annotations

import math

from .. import ir
from ..intrinsics import INTRINSICS
from .codegen_expr import CodegenError
from .grammar import GLSLstd450 as G
from .grammar import LoopControl, Op

LOG10_2 = math.log10(2.0)
NAN, INF = float("nan"), float("inf")


class MathGen:
    """Mixin over ExprGen: `call()` and the power recipes."""

    def visit_Call(self, e: ir.Call) -> int:
        spec = INTRINSICS.get(e.name)
        if spec is None or len(e.args) != spec.arity:
            raise CodegenError(f"unknown intrinsic {e.name}/{len(e.args)}")
        if spec.args == "f":  # the frontend promotes; stay valid if it did not
            args = [self.expr(a) if a.type.is_float else self._promote(a) for a in e.args]
        else:
            args = [self.expr(a) for a in e.args]
        ft = self.ty(e.args[0].type) if spec.args == "f" and e.args[0].type.is_float else self.t_f32
        if e.name == "pow":
            return self.float_pow_ids(args[0], args[1], e.args[1])
        if spec.glsl.startswith("@"):
            return getattr(self, "_r_" + spec.glsl[1:])(e, args)
        r = self.ext(getattr(G, spec.glsl), ft, *args)
        if spec.result == "i":
            return self.f_to_i(r, e.args[0].type, e.type)
        return r

    def _promote(self, a: ir.Expr) -> int:
        return self.visit_Cast(ir.Cast(ir.F32, a))

    # ------------------------------------------------------------------- recipes
    def _r_abs(self, e: ir.Call, args: list[int]) -> int:
        t = e.args[0].type
        if t.is_float:
            return self.ext(G.FAbs, self.ty(t), args[0])
        if t.kind == "int":
            return self.ext(G.SAbs, self.ty(t), args[0])  # abs(INT_MIN) wraps to INT_MIN
        return args[0]

    def _r_isnan(self, e: ir.Call, args: list[int]) -> int:
        return self.op(Op.IsNan, self.t_bool, args[0])

    def _r_isinf(self, e: ir.Call, args: list[int]) -> int:
        return self.op(Op.IsInf, self.t_bool, args[0])

    def _r_isfinite(self, e: ir.Call, args: list[int]) -> int:
        bt = self.t_bool
        bad = self.op(
            Op.LogicalOr, bt, self.op(Op.IsNan, bt, args[0]), self.op(Op.IsInf, bt, args[0])
        )
        return self.op(Op.LogicalNot, bt, bad)

    def _r_log10(self, e: ir.Call, args: list[int]) -> int:
        return self.op(Op.FMul, self.t_f32, self.ext(G.Log2, self.t_f32, args[0]), self.kf(LOG10_2))

    def _r_copysign(self, e: ir.Call, args: list[int]) -> int:
        i32 = self.t_i32
        xb = self.op(Op.Bitcast, i32, args[0])
        yb = self.op(Op.Bitcast, i32, args[1])
        mag = self.op(Op.BitwiseAnd, i32, xb, self.ki(0x7FFFFFFF))
        sign = self.op(Op.BitwiseAnd, i32, yb, self.ki(-0x80000000))
        return self.op(Op.Bitcast, self.t_f32, self.op(Op.BitwiseOr, i32, mag, sign))

    def _r_fmod(self, e: ir.Call, args: list[int]) -> int:
        f32, bt = self.t_f32, self.t_bool
        r = self.op(Op.FRem, f32, args[0], args[1])  # C fmod: the sign of x
        return self.op(
            Op.Select, f32, self.op(Op.FOrdEqual, bt, args[1], self.kf(0.0)), self.kf(NAN), r
        )

    def _r_hypot(self, e: ir.Call, args: list[int]) -> int:
        f32, bt = self.t_f32, self.t_bool
        ax, ay = self.ext(G.FAbs, f32, args[0]), self.ext(G.FAbs, f32, args[1])
        gt = self.op(Op.FOrdGreaterThan, bt, ax, ay)
        big = self.op(Op.Select, f32, gt, ax, ay)  # a NaN lands in `big` or `small`: result NaN
        small = self.op(Op.Select, f32, gt, ay, ax)
        q = self.op(Op.FDiv, f32, small, big)
        s = self.ext(G.Sqrt, f32, self.op(Op.FAdd, f32, self.kf(1.0), self.op(Op.FMul, f32, q, q)))
        r = self.op(Op.FMul, f32, big, s)
        r = self.op(Op.Select, f32, self.op(Op.FOrdEqual, bt, big, self.kf(0.0)), self.kf(0.0), r)
        inf = self.op(Op.LogicalOr, bt, self.op(Op.IsInf, bt, ax), self.op(Op.IsInf, bt, ay))
        return self.op(Op.Select, f32, inf, self.kf(INF), r)  # hypot(inf, nan) == inf, as Python

    # --------------------------------------------------------------------- powers
    def float_pow(self, lhs: ir.Expr, rhs: ir.Expr) -> int:
        return self.float_pow_ids(self.expr(lhs), self.expr(rhs), rhs)

    def float_pow_ids(self, x: int, y: int, y_expr: ir.Expr) -> int:
        f32, bt = self.t_f32, self.t_bool
        if isinstance(y_expr, ir.Const):
            c = float(y_expr.value)
            if c == 2.0:
                return self.op(Op.FMul, f32, x, x)  # exact, and what Python computes
            if c == 1.0:
                return x
            if c == 0.0:
                return self.kf(1.0)
        p = self.ext(G.Pow, f32, self.ext(G.FAbs, f32, x), y)  # GLSL Pow: defined for x > 0 only
        yint = self.op(Op.FOrdEqual, bt, self.ext(G.Trunc, f32, y), y)
        half = self.op(Op.FMul, f32, y, self.kf(0.5))
        odd = self.op(
            Op.LogicalAnd,
            bt,
            yint,
            self.op(Op.FOrdNotEqual, bt, self.ext(G.Trunc, f32, half), half),
        )
        signed = self.op(Op.Select, f32, odd, self.op(Op.FNegate, f32, p), p)
        # a negative base with a fractional exponent is nan, except -inf: Python (and C) give
        # pow(inf, y) there ((-inf) ** 0.5 == inf, (-inf) ** -0.5 == 0.0)
        frac = self.op(Op.Select, f32, self.op(Op.FOrdEqual, bt, x, self.kf(-INF)), p, self.kf(NAN))
        neg = self.op(Op.Select, f32, yint, signed, frac)
        r = self.op(Op.Select, f32, self.op(Op.FOrdLessThan, bt, x, self.kf(0.0)), neg, p)
        zr = self.op(
            Op.Select,
            f32,
            self.op(Op.FOrdLessThan, bt, y, self.kf(0.0)),
            self.kf(INF),
            self.kf(0.0),
        )
        # an odd integer power of a zero keeps its sign, as in Python ((-0.0) ** 3.0 == -0.0)
        i32 = self.t_i32
        sign = self.op(Op.BitwiseAnd, i32, self.op(Op.Bitcast, i32, x), self.ki(-0x80000000))
        zr = self.op(
            Op.Select, f32, odd,
            self.op(Op.Bitcast, f32, self.op(Op.BitwiseOr, i32, self.op(Op.Bitcast, i32, zr), sign)),
            zr,
        )  # fmt: skip
        r = self.op(Op.Select, f32, self.op(Op.FOrdEqual, bt, x, self.kf(0.0)), zr, r)
        # NaN operands propagate (GLSL Pow leaves them undefined; drivers assuming no NaN
        # fold the selects above), except for the two cases Python defines as 1.0 below.
        nan = self.op(Op.LogicalOr, bt, self.op(Op.IsNan, bt, x), self.op(Op.IsNan, bt, y))
        r = self.op(Op.Select, f32, nan, self.kf(NAN), r)
        one = self.op(Op.LogicalOr, bt, self.op(Op.FOrdEqual, bt, y, self.kf(0.0)),
                      self.op(Op.FOrdEqual, bt, x, self.kf(1.0)))  # fmt: skip
        return self.op(Op.Select, f32, one, self.kf(1.0), r)

    def int_pow(self, lhs: ir.Expr, rhs: ir.Expr, t: int) -> int:
        a = self.expr(lhs)
        one = self.m.const(t, 1)
        if isinstance(rhs, ir.Const):
            n = int(rhs.value)
            if n < 0:
                return self._int_pow_negative(a, self.expr(rhs), t)
            result = None  # square-and-multiply, unrolled: wraps exactly like the loop
            base = a
            while n:
                if n & 1:
                    result = base if result is None else self.op(Op.IMul, t, result, base)
                n >>= 1
                if n:
                    base = self.op(Op.IMul, t, base, base)
            return one if result is None else result
        e = self.expr(rhs)
        bt = self.t_bool
        pre = self.cur_label
        header, body, cont, merge = (self.m.new_id() for _ in range(4))
        r, b, x, r2, b2, x2 = (self.m.new_id() for _ in range(6))
        self.br(header)
        self.begin(header)
        self.ins(Op.Phi, t, r, one, pre, r2, cont)
        self.ins(Op.Phi, t, b, a, pre, b2, cont)
        self.ins(Op.Phi, t, x, e, pre, x2, cont)
        more = self.op(Op.INotEqual, bt, x, self.c0)
        self.ins(Op.LoopMerge, merge, cont, LoopControl.None_)
        self.ins(Op.BranchConditional, more, body, merge)
        self.begin(body)
        odd = self.op(Op.INotEqual, bt, self.op(Op.BitwiseAnd, t, x, one), self.c0)
        self.ins(Op.Select, t, r2, odd, self.op(Op.IMul, t, r, b), r)
        self.ins(Op.IMul, t, b2, b, b)
        self.ins(
            Op.ShiftRightLogical, t, x2, x, one
        )  # logical: ends within 32 rounds even if e < 0
        self.br(cont)
        self.begin(cont)
        self.br(header)
        self.begin(merge)
        neg = self.op(Op.SLessThan, bt, e, self.c0)
        return self.op(Op.Select, t, neg, self._int_pow_negative(a, e, t), r)

    def _int_pow_negative(self, a: int, e: int, t: int) -> int:
        """int(a ** e) for e < 0: 1 if a == 1, (-1) ** e if a == -1, else 0."""
        bt, one = self.t_bool, self.m.const(t, 1)
        odd = self.op(Op.INotEqual, bt, self.op(Op.BitwiseAnd, t, e, one), self.c0)
        m1 = self.op(Op.Select, t, odd, self.m.const(t, -1), one)
        r = self.op(Op.Select, t, self.op(Op.IEqual, bt, a, self.m.const(t, -1)), m1, self.c0)
        return self.op(Op.Select, t, self.op(Op.IEqual, bt, a, one), one, r)
