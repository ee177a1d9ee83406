"""IR passes (folding exactly as the device computes, dead code, locals, usage) and the printer."""

from __future__ import annotations

import math

import pytest

from cthreads.compiler import ir, passes
from cthreads.compiler.frontend.typerules import const, to_f32
from cthreads.compiler.ir import BOOL, F32, I32, BinOp, CmpOp, UnOp
from cthreads.compiler.printer import format_expr, format_float, format_kernel

X = ir.Param("x", ir.ListType(F32))
C = ir.Param("c", ir.ListType(I32))


def K(*body, params=(X, C), locals=None) -> ir.Kernel:
    return ir.Kernel("k", params, locals or {}, tuple(body))


def fold(e: ir.Expr) -> ir.Expr:
    return passes.map_expr(e, passes._fold)


def b(op, t, x, y):
    return ir.Binary(t, op, x, y)


@pytest.mark.parametrize(
    "op, x, y, want",
    [
        (BinOp.ADD, 2**31 - 1, 1, -(2**31)),
        (BinOp.MUL, 65536, 65536, 0),
        (BinOp.SUB, -(2**31), 1, 2**31 - 1),
        (BinOp.FLOORDIV, -7, 2, -4),
        (BinOp.MOD, -7, 2, 1),
        (BinOp.MOD, 7, -2, -1),
        (BinOp.POW, 3, 21, 3**21 % 2**32 - 2**32),
        (BinOp.SHL, 1, 33, 2),
        (BinOp.SHR, -8, 1, -4),
        (BinOp.BIT_XOR, 6, 3, 5),
        (BinOp.MIN, -1, 2, -1),
    ],
)
def test_int_folding_wraps_like_int32(op, x, y, want):
    assert fold(b(op, I32, const(x), const(y))) == const(want)


def test_float_folding_rounds_to_float32():
    got = fold(b(BinOp.ADD, F32, const(0.1), const(0.2)))
    assert got == ir.Const(F32, to_f32(to_f32(0.1) + to_f32(0.2)))
    assert fold(b(BinOp.MUL, F32, const(1e30), const(1e30))) == ir.Const(F32, math.inf)


@pytest.mark.parametrize(
    "e",
    [
        b(BinOp.FLOORDIV, I32, const(1), const(0)),  # left to the device
        b(BinOp.DIV, F32, const(1.0), const(0.0)),
        b(BinOp.POW, F32, const(2.0), const(0.5)),  # device pow precision differs
        b(BinOp.MOD, F32, const(5.5), const(2.0)),
        ir.Call(F32, "sin", (const(1.0),)),
        ir.Cast(I32, const(3e9)),  # out of int32: undefined on the device
    ],
)
def test_not_folded(e):
    assert fold(e) == e


def test_casts_compares_selects_and_logic():
    assert fold(ir.Cast(F32, const(3))) == const(3.0)
    assert fold(ir.Cast(I32, const(-2.7))) == const(-2)
    assert fold(ir.Cast(BOOL, const(0.0))) == const(False)
    assert fold(ir.Compare(BOOL, CmpOp.LT, const(1), const(2))) == const(True)
    nan = ir.Const(F32, math.nan)
    assert fold(ir.Compare(BOOL, CmpOp.EQ, nan, nan)) == const(False)
    assert fold(ir.Compare(BOOL, CmpOp.NE, nan, nan)) == const(True)
    v = ir.LocalRef(BOOL, "v")
    assert fold(ir.Select(I32, const(True), const(1), const(2))) == const(1)
    assert fold(b(BinOp.AND, BOOL, const(True), v)) == v
    assert fold(b(BinOp.AND, BOOL, v, const(False))) == const(False)
    assert fold(b(BinOp.OR, BOOL, const(True), v)) == const(True)
    assert fold(ir.Unary(BOOL, UnOp.NOT, ir.Unary(BOOL, UnOp.NOT, v))) == v
    assert fold(ir.Unary(I32, UnOp.NEG, const(-(2**31)))) == const(-(2**31))
    assert fold(ir.Unary(I32, UnOp.INVERT, const(5))) == const(-6)


def test_dead_code_after_terminators():
    store = ir.Store(1, const(0), const(1))
    k = K(ir.Loop(const(True), (ir.Break(), store)), ir.Return(), store)
    out = passes.remove_dead_code(k).body
    assert out == (ir.Loop(const(True), (ir.Break(),)), ir.Return())


def test_dead_code_constant_branches_and_loops():
    s1, s2 = ir.Store(1, const(0), const(1)), ir.Store(1, const(1), const(2))
    cond = ir.Compare(BOOL, CmpOp.LT, ir.Load(I32, 1, const(0)), const(3))
    k = K(
        ir.If(const(False), (s1,), (s2,)),
        ir.Loop(const(False), (s1,)),
        ir.If(cond, (), (s1,)),
        ir.If(cond, (), ()),
        ir.If(cond, (ir.Return(),), (ir.Return(),)),
        s2,
    )
    out = passes.remove_dead_code(k).body
    assert out[0] == s2
    assert out[1] == ir.If(ir.Unary(BOOL, UnOp.NOT, cond), (s1,))
    assert out[2] == ir.If(cond, (ir.Return(),), (ir.Return(),)) and len(out) == 3


def test_prune_locals_and_usage():
    k = K(
        ir.Assign("a", ir.Load(F32, 0, ir.Builtin(I32, ir.BuiltinKind.GLOBAL_ID, 0))),
        ir.Store(1, const(0), const(1)),
        locals={"a": F32, "unused": I32},
    )
    k = passes.optimize(k)
    assert k.locals == {"a": F32}
    assert [(p.reads, p.writes) for p in k.params] == [(True, False), (False, True)]
    assert not k.observes_workgroup
    assert passes.annotate_usage(K(ir.Barrier())).observes_workgroup
    local = ir.Builtin(I32, ir.BuiltinKind.LOCAL_ID, 0)
    assert passes.annotate_usage(K(ir.Store(1, local, const(0)))).observes_workgroup


@pytest.mark.parametrize(
    "v, text",
    [
        (0.1, "0.1"),
        (1.0, "1.0"),
        (-2.5, "-2.5"),
        (1e30, "1e+30"),
        (math.pi, "3.1415927"),
        (math.inf, "inf"),
        (math.nan, "nan"),
    ],
)
def test_format_float_shortest_float32(v, text):
    assert format_float(to_f32(v)) == text


def test_printer_covers_every_node():
    e = ir.Select(
        F32,
        ir.Compare(BOOL, CmpOp.GE, ir.ListLen(I32, 0), ir.ParamRef(I32, 2)),
        ir.Call(F32, "sqrt", (ir.Cast(F32, ir.Unary(I32, UnOp.NEG, ir.LocalRef(I32, "i"))),)),
        ir.Load(F32, 0, ir.Builtin(I32, ir.BuiltinKind.WORKGROUP_ID, 1)),
    )
    n = ir.Param("n", I32)
    k = ir.Kernel(
        "k",
        (X, C, n),
        {"i": I32},
        (
            ir.Assign("i", const(1)),
            ir.Store(0, const(0), e),
            ir.Barrier(),
            ir.Loop(const(True), (ir.Continue(),), (ir.Break(),)),
        ),
    )
    assert (
        format_expr(e, k)
        == "(select f32 (ge i32 len(x) $n) (call sqrt f32 (f32 (neg i32 %i))) x[BlockIdx.y])"
    )
    text = format_kernel(k)
    assert (
        "param 2 n: i32" in text
        and "param 0 x: list[f32] unused" in text
        and "local %i: i32" in text
    )
    assert "  barrier\n  loop while true:\n    continue\n  step:\n    break\n" in text
