"""Expressions: typed IR expressions -> SPIR-V instructions with Python's meaning (ir.py).

Semantic decisions where Python raises or C is undefined (no instruction here ever traps or
reads out of bounds; the emulator follows the same rules):

- int `x // 0 == 0` and `x % 0 == x` (keeps `x == (x // y) * y + x % y` true for y == 0);
  `INT_MIN // -1 == INT_MIN` (wraps), `x % -1 == 0`. `//` floors toward -inf, `%` takes the
  divisor's sign. Float `a // b == floor(a / b)`, `a % b == a - b * floor(a / b)` (NaN for b == 0).
- shifts take their count modulo 32 (`x << 33 == x << 1`); `>>` is arithmetic on int.
- `min`/`max` on floats are Python's: `min(a, b) == (b if b < a else a)`, so a NaN first
  argument is kept and a NaN second one is ignored; `-0.0`/`0.0` ties keep the first argument.
- int `**`: exact by repeated squaring (wrapping); a negative exponent gives `int(a ** e)`
  rounded toward zero: 1 for a == 1, +-1 for a == -1, else 0 (also for a == 0).
  float `**` and `math.pow`: `x ** 0 == 1`, `0 ** y` is 0 (y > 0) or inf (y < 0), a negative
  base with an integral exponent gets the sign Python gives, with a non-integral one NaN.
- float -> int (`int()`, floor/ceil/trunc) truncates and saturates: NaN -> 0, values beyond the
  int32 range -> INT_MIN / INT_MAX. `bool(float)` is `x != 0` unordered, so `bool(nan)` is True.
"""

from __future__ import annotations

import math
from typing import ClassVar

from .. import ir
from .grammar import Decoration, Op
from .grammar import GLSLstd450 as G

# Float arithmetic keeps IEEE float32 meaning per operation, as Python and numpy have it:
# NoContraction forbids fusing (a*b+c -> fma) and reassociation, which drivers otherwise do
# (lavapipe rewrote (x*o)*3.0 as (x*3.0)*o, turning a finite result into inf).
_EXACT_FLOAT_OPS = frozenset((Op.FAdd, Op.FSub, Op.FMul, Op.FDiv, Op.FRem, Op.FMod, Op.FNegate))

I, F, B = "int", "float", "bool"  # noqa: E741 - the type kinds as one-letter table keys
INT_MIN_F = -2147483648.0
INT_MAX_F = 2147483520.0  # the largest float32 below 2**31

_INT_BIN = {
    ir.BinOp.ADD: Op.IAdd, ir.BinOp.SUB: Op.ISub, ir.BinOp.MUL: Op.IMul,
    ir.BinOp.BIT_AND: Op.BitwiseAnd, ir.BinOp.BIT_OR: Op.BitwiseOr, ir.BinOp.BIT_XOR: Op.BitwiseXor,
}  # fmt: skip
_FLOAT_BIN = {
    ir.BinOp.ADD: Op.FAdd,
    ir.BinOp.SUB: Op.FSub,
    ir.BinOp.MUL: Op.FMul,
    ir.BinOp.DIV: Op.FDiv,
}
_BOOL_BIN = {
    ir.BinOp.AND: Op.LogicalAnd, ir.BinOp.OR: Op.LogicalOr, ir.BinOp.BIT_AND: Op.LogicalAnd,
    ir.BinOp.BIT_OR: Op.LogicalOr, ir.BinOp.BIT_XOR: Op.LogicalNotEqual,
    ir.BinOp.MIN: Op.LogicalAnd, ir.BinOp.MAX: Op.LogicalOr,
}  # fmt: skip
_CMP = {
    I: {ir.CmpOp.EQ: Op.IEqual, ir.CmpOp.NE: Op.INotEqual, ir.CmpOp.LT: Op.SLessThan,
        ir.CmpOp.LE: Op.SLessThanEqual, ir.CmpOp.GT: Op.SGreaterThan, ir.CmpOp.GE: Op.SGreaterThanEqual},
    "uint": {ir.CmpOp.EQ: Op.IEqual, ir.CmpOp.NE: Op.INotEqual, ir.CmpOp.LT: Op.ULessThan,
             ir.CmpOp.LE: Op.ULessThanEqual, ir.CmpOp.GT: Op.UGreaterThan, ir.CmpOp.GE: Op.UGreaterThanEqual},
    # ordered, except != which is true when either side is NaN (Python's nan != nan is True)
    F: {ir.CmpOp.EQ: Op.FOrdEqual, ir.CmpOp.NE: Op.FUnordNotEqual, ir.CmpOp.LT: Op.FOrdLessThan,
        ir.CmpOp.LE: Op.FOrdLessThanEqual, ir.CmpOp.GT: Op.FOrdGreaterThan, ir.CmpOp.GE: Op.FOrdGreaterThanEqual},
    B: {ir.CmpOp.EQ: Op.LogicalEqual, ir.CmpOp.NE: Op.LogicalNotEqual},
}  # fmt: skip


class CodegenError(Exception):
    """IR that breaks the ir.py contract (a frontend/pass bug); compile wraps it."""


class UnsupportedFeature(Exception):
    """The kernel needs a device feature the `Target` lacks; compile reports it to the user."""


class ExprGen:
    """Mixin: expression lowering. Needs `m`, `code`, `ty()`, `glsl()` and the function state.

    The codegen is one visitor over the IR: IR class `ir.X` is emitted by method `visit_X`,
    wherever among the mixins of codegen.Codegen it is defined (docs/internals.md)."""

    VISITORS: ClassVar[dict] = {}  # IR class -> visit_<class> function, filled on first use

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.VISITORS = {}  # each class its own: a subclass may override a visit method

    # --------------------------------------------------------------- emission helpers
    def op(self, opcode: int, t: int, *ops: int) -> int:
        m = self.m
        rid = m.bound
        m.bound = rid + 1
        code = self.code
        code.append(((len(ops) + 3) << 16) | opcode)
        code.append(t)
        code.append(rid)
        code.extend(ops)
        if opcode in _EXACT_FLOAT_OPS:
            m.decorate(rid, Decoration.NoContraction)
        return rid

    def ins(self, opcode: int, *ops: int) -> None:
        self.code.append(((len(ops) + 1) << 16) | opcode)
        self.code.extend(ops)

    def begin(self, label: int) -> None:
        """Start basic block `label`."""
        self.code += ((2 << 16) | Op.Label, label)
        self.cur_label = label
        self.terminated = False

    def br(self, target: int) -> None:
        self.code += ((2 << 16) | Op.Branch, target)
        self.terminated = True

    def ext(self, inst: int, t: int, *args: int) -> int:
        return self.op(Op.ExtInst, t, self.glsl(), inst, *args)

    def ki(self, v: int) -> int:
        return self.m.const(self.t_i32, v)

    def kf(self, v: float) -> int:
        return self.m.const(self.t_f32, v)

    def kb(self, v: bool) -> int:
        return self.m.const(self.t_bool, v)

    def zero(self, t: ir.Scalar) -> int:
        return self.m.const(self.ty(t), False if t.is_bool else 0)

    # ------------------------------------------------------------------- dispatch
    def expr(self, e: ir.Expr) -> int:
        visit = self.VISITORS.get(type(e)) or self.visitor(type(e), ir.Expr, "expression")
        return visit(self, e)

    @classmethod
    def visitor(cls, node_type: type, base: type, what: str):
        """`visit_<node_type>` of this class, remembered; a node outside `base` or without a
        visit method is IR the codegen does not know (a frontend or pass bug)."""
        fn = getattr(cls, "visit_" + node_type.__name__, None)
        if fn is None or not issubclass(node_type, base):
            raise CodegenError(f"unknown {what} node {node_type.__name__}")
        cls.VISITORS[node_type] = fn
        return fn

    def visit_Const(self, e: ir.Const) -> int:
        return self.m.const(self.ty(e.type), e.value)

    def visit_LocalRef(self, e: ir.LocalRef) -> int:
        var = self.local_vars.get(e.name)
        if var is None:
            raise CodegenError(f"local `{e.name}` is not declared in Kernel.locals")
        return self.op(Op.Load, self.ty(e.type), var)

    def visit_ParamRef(self, e: ir.ParamRef) -> int:
        return self.args[("scalar", e.index)]

    def visit_Builtin(self, e: ir.Builtin) -> int:
        return self.builtin_vals[(e.kind, e.axis)]

    def visit_ListLen(self, e: ir.ListLen) -> int:
        return self.lists[e.list_index].len

    def visit_ListShape(self, e: ir.ListShape) -> int:
        return self.args[(f"shape{e.axis}", e.list_index)]

    def visit_Select(self, e: ir.Select) -> int:
        c = self.expr(e.cond)
        return self.op(Op.Select, self.ty(e.type), c, self.expr(e.if_true), self.expr(e.if_false))

    def visit_Unary(self, e: ir.Unary) -> int:
        x = self.expr(e.operand)
        t, kind = self.ty(e.type), e.type.kind
        if e.op is ir.UnOp.NEG and kind != B:
            return self.op(Op.FNegate if kind == F else Op.SNegate, t, x)
        if e.op is ir.UnOp.NOT and kind == B:
            return self.op(Op.LogicalNot, t, x)
        if e.op is ir.UnOp.INVERT and e.type.is_int:
            return self.op(Op.Not, t, x)
        raise CodegenError(f"unary {e.op.value} on {e.type}")

    def visit_Compare(self, e: ir.Compare) -> int:
        lt = e.lhs.type
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        table = _CMP[lt.kind]
        opc = table.get(e.op)
        if opc is None:  # bool ordering (False < True): compare as ints
            a, b = self.bool_to(a, ir.I32), self.bool_to(b, ir.I32)
            opc = _CMP[I][e.op]
        return self.op(opc, self.t_bool, a, b)

    # ---------------------------------------------------------------------- casts
    def bool_to(self, x: int, t: ir.Scalar) -> int:
        one = self.m.const(self.ty(t), 1)
        return self.op(Op.Select, self.ty(t), x, one, self.zero(t))

    def f_to_i(self, x: int, src: ir.Scalar = ir.F32, dst: ir.Scalar = ir.I32) -> int:
        """Truncating, saturating float -> int (NaN -> 0): never an out-of-range conversion.
        `dst` int32/int64 saturate to their range, uint32 to [0, 2**32 - 1]."""
        if src == ir.F32 and dst == ir.I32:
            i32, bt = self.t_i32, self.t_bool
            clamped = self.ext(G.FClamp, self.t_f32, x, self.kf(INT_MIN_F), self.kf(INT_MAX_F))
            v = self.op(Op.ConvertFToS, i32, clamped)
            big = self.op(Op.FOrdGreaterThanEqual, bt, x, self.kf(2147483648.0))
            v = self.op(Op.Select, i32, big, self.ki(0x7FFFFFFF), v)
            return self.op(Op.Select, i32, self.op(Op.IsNan, bt, x), self.c0, v)
        ft, it, bt, m = self.ty(src), self.ty(dst), self.t_bool, self.m
        signed = dst.kind == "int"
        k = dst.bits - 1 if signed else dst.bits  # range [-2**k, 2**k) or [0, 2**k)
        p = 24 if src.bits == 32 else 53
        lo = -float(2**k) if signed else 0.0
        hi = float(2**k - 2 ** max(k - p, 0))  # the largest float below 2**k (then truncated)
        clamped = self.ext(G.FClamp, ft, x, m.const(ft, lo), m.const(ft, hi))
        v = self.op(Op.ConvertFToS if signed else Op.ConvertFToU, it, clamped)
        big = self.op(Op.FOrdGreaterThanEqual, bt, x, m.const(ft, float(2**k)))
        v = self.op(Op.Select, it, big, m.const(it, 2**k - 1), v)
        return self.op(Op.Select, it, self.op(Op.IsNan, bt, x), self.zero(dst), v)

    def visit_Cast(self, e: ir.Cast) -> int:
        src, dst = e.operand.type, e.type
        x = self.expr(e.operand)
        if src == dst:
            return x
        if dst.is_bool:
            if src.is_float:
                return self.op(Op.FUnordNotEqual, self.t_bool, x, self.zero(src))
            return self.op(Op.INotEqual, self.t_bool, x, self.zero(src))
        if src.is_bool:
            return self.bool_to(x, dst)
        if dst.is_float:
            if src.is_float:
                if dst.bits == 16:  # (an f64 source goes through f32: rounded twice)
                    if src.bits == 64:
                        x = self.op(Op.FConvert, self.t_f32, x)
                    x = self.round_to_f16(x)
                return self.op(Op.FConvert, self.ty(dst), x)  # f32 <-> f64 (rounds to nearest)
            return self.op(Op.ConvertSToF if src.kind == I else Op.ConvertUToF, self.ty(dst), x)
        if src.is_float:
            if src.bits == 16:  # f16 -> f32 is exact; the saturating conversion runs in f32
                src, x = ir.F32, self.op(Op.FConvert, self.t_f32, x)
            return self.f_to_i(x, src, dst)
        if src.bits == dst.bits:
            return self.op(Op.Bitcast, self.ty(dst), x)  # int <-> uint, same width
        # width change: sign-extend signed sources, zero-extend unsigned ones; narrowing truncates
        mid = ir.Scalar(src.kind, dst.bits)
        v = self.op(Op.SConvert if src.kind == I else Op.UConvert, self.ty(mid), x)
        return v if mid == dst else self.op(Op.Bitcast, self.ty(dst), v)

    def round_to_f16(self, x: int) -> int:
        """`x` (f32) rounded to the nearest-even float16 value, still an f32: the conversion
        after it is then exact. Done with integer steps because drivers may skip the
        rounding of an f32 -> f16 -> f32 round trip (NVIDIA's kept f32 precision between f16
        operations): normal range: round the mantissa to 10 bits on the bit pattern (a carry
        moves into the exponent, as it should); below 2^-14: whole multiples of 2^-24
        (RoundEven of an exact scaling); beyond 65504: inf. NaN and inf pass through."""
        i32, f32, bt = self.t_i32, self.t_f32, self.t_bool
        b = self.op(Op.Bitcast, i32, x)
        lsb = self.op(Op.BitwiseAnd, i32, self.op(Op.ShiftRightLogical, i32, b, self.ki(13)),
                      self.ki(1))  # fmt: skip
        up = self.op(Op.IAdd, i32, b, self.op(Op.IAdd, i32, self.ki(0x0FFF), lsb))
        normal = self.op(Op.Bitcast, f32, self.op(Op.BitwiseAnd, i32, up, self.ki(-0x2000)))
        scaled = self.ext(G.RoundEven, f32, self.op(Op.FMul, f32, x, self.kf(2.0**24)))
        small = self.op(Op.FMul, f32, scaled, self.kf(2.0**-24))
        # The range tests read the bits: NVIDIA, allowed to assume no NaN, sent NaN down the
        # subnormal path (f16(nan) became 0.0)
        mag = self.op(Op.BitwiseAnd, i32, b, self.ki(0x7FFFFFFF))
        tiny = self.op(Op.SLessThan, bt, mag, self.ki(0x38800000))  # |x| < 2^-14
        r = self.op(Op.Select, f32, tiny, small, normal)
        rmag = self.op(Op.BitwiseAnd, i32, self.op(Op.Bitcast, i32, r), self.ki(0x7FFFFFFF))
        big = self.op(Op.SGreaterThan, bt, rmag, self.ki(0x477FE000))  # beyond 65504
        inf = self.op(Op.Select, f32, self.op(Op.SLessThan, bt, b, self.ki(0)),
                      self.kf(-math.inf), self.kf(math.inf))  # fmt: skip
        nan = self.op(Op.SGreaterThan, bt, mag, self.ki(0x7F800000))
        return self.op(Op.Select, f32, nan, x, self.op(Op.Select, f32, big, inf, r))

    # --------------------------------------------------------------------- binary
    def visit_Binary(self, e: ir.Binary) -> int:
        kind, op = e.type.kind, e.op
        if kind == B:
            opc = _BOOL_BIN.get(op)
            if opc is None:
                raise CodegenError(f"binary {op.value} on bool")
            return self.op(opc, self.t_bool, self.expr(e.lhs), self.expr(e.rhs))
        t = self.ty(e.type)
        if kind == F:
            if op is ir.BinOp.DIV:
                return self.fdiv(self.expr(e.lhs), self.expr(e.rhs), t)
            opc = _FLOAT_BIN.get(op)
            if opc is not None:
                return self.op(opc, t, self.expr(e.lhs), self.expr(e.rhs))
            return self.float_binary(e, t)
        opc = _INT_BIN.get(op)
        if opc is not None:
            return self.op(opc, t, self.expr(e.lhs), self.expr(e.rhs))
        return self.int_binary(e, t)

    def float_binary(self, e: ir.Binary, t: int) -> int:
        op = e.op
        if op is ir.BinOp.POW:
            return self.float_pow(e.lhs, e.rhs)
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        if op is ir.BinOp.FLOORDIV:
            return self.ext(G.Floor, t, self.fdiv(a, b, t))
        if op is ir.BinOp.MOD:
            q = self.ext(G.Floor, t, self.fdiv(a, b, t))
            r = self.op(Op.FSub, t, a, self.op(Op.FMul, t, b, q))
            # Python gives a zero remainder the divisor's sign (-8.0 % -2.0 == -0.0), the
            # recipe always +0.0; the sign matters downstream (atan2(-0.0, -1.0) == -pi)
            bt, zero = self.t_bool, self.zero(e.type)
            signed_zero = self.op(
                Op.Select, t, self.op(Op.FOrdLessThan, bt, b, zero),
                self.op(Op.FNegate, t, zero), zero,
            )  # fmt: skip
            return self.op(Op.Select, t, self.op(Op.FOrdEqual, bt, r, zero), signed_zero, r)
        if op is ir.BinOp.MIN or op is ir.BinOp.MAX:
            return self.float_min_max(op is ir.BinOp.MIN, a, b, t)
        raise CodegenError(f"binary {op.value} on float")

    def fdiv(self, a: int, b: int, t: int) -> int:
        """`a / b` of SPIR-V float type `t`: correctly rounded float32 on targets with a fused
        fma (float32_div), the driver's OpFDiv otherwise. `//` and `%` divide through it too."""
        if t == self.t_f32 and self.target.fused_fma:
            return self.float32_div(a, b)
        return self.op(Op.FDiv, t, a, b)

    def float32_div(self, a: int, b: int) -> int:
        """`a / b` in float32 rounded as IEEE (and Python and numpy) round it, where Vulkan lets
        OpFDiv be 2.5 ULP off: NVIDIA (driver 580) gave 31.21289 / 31.21289 == 0.99999994, and
        0 for any divisor beyond 2^126 (its reciprocal is subnormal and flushed: 4 / -3e38 gave
        -0.0, so `4 // -3e38` was 0, Python's -1). Both operands are first scaled by 1/4 where
        |b| > 2^126 (exact: a quotient that small would underflow anyway). Then one correction
        step, on targets whose Fma is fused (GPUs; lavapipe divides exactly and does not fuse):
        the residual r = a - q*b is exact by fma, and q + r/b lands within 2^-20 ULP of the
        true quotient before its rounding, so the result is the correctly rounded one except
        within that distance of a halfway point. A quotient that is 0, inf or NaN (then the
        residual means nothing) is kept as the driver gave it; f16 division, computed in
        float32 and rounded to f16, is then exact too (24 >= 2·11+2 bits: double rounding is
        innocuous for division)."""
        f32, i32, bt = self.t_f32, self.t_i32, self.t_bool
        u32 = self.m.t_int(32, False)
        bmag = self.op(Op.BitwiseAnd, i32, self.op(Op.Bitcast, i32, b), self.ki(0x7FFFFFFF))
        huge = self.op(Op.SGreaterThan, bt, bmag, self.ki(0x7E800000))  # |b| > 2^126
        scale = self.op(Op.Select, f32, huge, self.kf(0.25), self.kf(1.0))
        a = self.op(Op.FMul, f32, a, scale)
        b = self.op(Op.FMul, f32, b, scale)
        q = self.op(Op.FDiv, f32, a, b)
        r = self.ext(G.Fma, f32, self.op(Op.FNegate, f32, q), b, a)
        fixed = self.op(Op.FAdd, f32, q, self.op(Op.FDiv, f32, r, b))
        mag = self.op(Op.BitwiseAnd, i32, self.op(Op.Bitcast, i32, q), self.ki(0x7FFFFFFF))
        # 0 < |q| < inf, read from the bits (a driver may fold float tests that assume no inf)
        finite_nonzero = self.op(
            Op.ULessThan, bt, self.op(Op.Bitcast, u32, self.op(Op.ISub, i32, mag, self.ki(1))),
            self.m.const(u32, 0x7F7FFFFF),
        )  # fmt: skip
        return self.op(Op.Select, f32, finite_nonzero, fixed, q)

    def float_min_max(self, is_min: bool, a: int, b: int, t: int) -> int:
        """Python's `min(a, b)` (`b if b < a else a`), `max(a, b)` (`b if b > a else a`).

        Not the plain `select(b < a, b, a)`: NVIDIA (driver 580) turns that pattern into its
        hardware min, which returns the non-NaN operand (min(nan, 1.0) gave 1.0). Here the
        first argument is taken outright when it is NaN or equal to the second (signed zeros
        included); in every other case the two are distinct and `a` is a number, where
        GLSL.std.450 NMin/NMax (NaN operand -> the other one) is exactly Python's answer,
        whatever a driver does with ties or NaN inside it."""
        bt = self.t_bool
        keep = self.op(Op.LogicalOr, bt, self.is_nan_bits(a, t), self.op(Op.FOrdEqual, bt, a, b))
        other = self.ext(G.NMin if is_min else G.NMax, t, a, b)
        return self.op(Op.Select, t, keep, a, other)

    def is_nan_bits(self, x: int, t: int) -> int:
        """Whether float `x` (of SPIR-V type `t`) is NaN, read from its bit pattern: a driver
        that assumes no NaN (Vulkan allows it without SignedZeroInfNanPreserve) may fold
        OpIsNan to false, never integer tests. f16 goes through f32 (exact, NaN kept)."""
        i32, bt = self.t_i32, self.t_bool
        width = self.m.type_key[t][1]
        if width == 16:
            x, width = self.op(Op.FConvert, self.t_f32, x), 32
        if width == 32:
            mag = self.op(Op.BitwiseAnd, i32, self.op(Op.Bitcast, i32, x), self.ki(0x7FFFFFFF))
            return self.op(Op.SGreaterThan, bt, mag, self.ki(0x7F800000))
        pair = self.op(Op.Bitcast, self.m.t_vector(i32, 2), x)  # low word first
        lo = self.op(Op.CompositeExtract, i32, pair, 0)
        hi = self.op(Op.BitwiseAnd, i32, self.op(Op.CompositeExtract, i32, pair, 1),
                     self.ki(0x7FFFFFFF))  # fmt: skip
        big = self.op(Op.SGreaterThan, bt, hi, self.ki(0x7FF00000))
        inf_hi = self.op(Op.IEqual, bt, hi, self.ki(0x7FF00000))
        frac = self.op(Op.INotEqual, bt, lo, self.ki(0))
        return self.op(Op.LogicalOr, bt, big, self.op(Op.LogicalAnd, bt, inf_hi, frac))

    def int_binary(self, e: ir.Binary, t: int) -> int:
        op, signed = e.op, e.type.kind == I
        if op is ir.BinOp.POW:
            return self.int_pow(e.lhs, e.rhs, t)
        if op is ir.BinOp.FLOORDIV or op is ir.BinOp.MOD:
            return self.int_divmod(e, t, signed)
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        if op is ir.BinOp.SHL or op is ir.BinOp.SHR:
            b = self.op(Op.BitwiseAnd, t, b, self.m.const(t, e.type.bits - 1))
            if op is ir.BinOp.SHL:
                return self.op(Op.ShiftLeftLogical, t, a, b)
            return self.op(Op.ShiftRightArithmetic if signed else Op.ShiftRightLogical, t, a, b)
        if op is ir.BinOp.MIN:
            return self.ext(G.SMin if signed else G.UMin, t, a, b)
        if op is ir.BinOp.MAX:
            return self.ext(G.SMax if signed else G.UMax, t, a, b)
        raise CodegenError(f"binary {op.value} on {e.type}")

    def int_divmod(self, e: ir.Binary, t: int, signed: bool) -> int:
        """Python `//` and `%` on int32 (see the module docstring for y == 0 and y == -1)."""
        is_div = e.op is ir.BinOp.FLOORDIV
        a = self.expr(e.lhs)
        bt = self.t_bool
        if isinstance(e.rhs, ir.Const) and e.rhs.value not in (0, -1):
            c = int(e.rhs.value)
            if (
                c > 0 and c & (c - 1) == 0
            ):  # power of two: a shift / mask is exactly floor semantics
                if is_div:
                    shr = Op.ShiftRightArithmetic if signed else Op.ShiftRightLogical
                    return self.op(shr, t, a, self.m.const(t, c.bit_length() - 1))
                return self.op(Op.BitwiseAnd, t, a, self.m.const(t, c - 1))
            b = bs = self.m.const(t, c)
            bz = bm1 = None
        else:
            b = self.expr(e.rhs)
            bz = self.op(Op.IEqual, bt, b, self.zero(e.type))
            if signed:
                bm1 = self.op(Op.IEqual, bt, b, self.m.const(t, -1))
                bad = self.op(Op.LogicalOr, bt, bz, bm1)
            else:
                bm1, bad = None, bz
            bs = self.op(Op.Select, t, bad, self.m.const(t, 1), b)  # never divide by 0 or -1
        if not signed:
            r = self.op(Op.UDiv if is_div else Op.UMod, t, a, bs)
            if bz is not None:
                r = self.op(Op.Select, t, bz, self.zero(e.type) if is_div else a, r)
            return r
        q = self.op(Op.SDiv, t, a, bs)  # truncates toward zero
        rem = self.op(Op.ISub, t, a, self.op(Op.IMul, t, q, bs))
        # floor adjustment: a nonzero remainder whose sign differs from the divisor's
        nz = self.op(Op.INotEqual, bt, rem, self.zero(e.type))
        diff = self.op(Op.SLessThan, bt, self.op(Op.BitwiseXor, t, rem, bs), self.zero(e.type))
        adj = self.op(Op.LogicalAnd, bt, nz, diff)
        if is_div:
            r = self.op(Op.Select, t, adj, self.op(Op.ISub, t, q, self.m.const(t, 1)), q)
            if bm1 is not None:
                r = self.op(Op.Select, t, bm1, self.op(Op.SNegate, t, a), r)
                r = self.op(Op.Select, t, bz, self.zero(e.type), r)
        else:
            r = self.op(Op.Select, t, adj, self.op(Op.IAdd, t, rem, bs), rem)
            if bz is not None:
                r = self.op(Op.Select, t, bz, a, r)  # x % 0 == x; x % -1 == 0 already (bs == 1)
        return r
