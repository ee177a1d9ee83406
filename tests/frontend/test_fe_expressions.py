"""The kernel language's expressions (SPEC §2): operators, literals, module constants.

One accepting and one rejecting case per construct.
"""

# ruff: noqa: F821, F823, F841, FURB163, PIE790, PLC3002, PLW0120, RET501, UP018 - kernels written to probe the compiler

from __future__ import annotations


from fehelp import ir_text, rejects


N = 16
RATE = 0.5
ON = True


# ------------------------------------------------------------------ operators


def test_arithmetic_typing():
    def k(a: int, b: int, f: float, out: list[float], o: list[int]) -> None:
        out[0] = a / b
        out[1] = a + f
        o[0] = a // b
        o[1] = a % b
        o[2] = a**2
        out[2] = a**b
        out[3] = a**-1
        out[4] = f**2
        o[3] = True + True
        out[5] = f // 2
        out[6] = f % 2.0

    text = ir_text(k)
    assert "out[0] = (div f32 (f32 $a) (f32 $b))" in text
    assert "out[1] = (add f32 (f32 $a) $f)" in text
    assert "o[0] = (floordiv i32 $a $b)" in text and "o[1] = (mod i32 $a $b)" in text
    assert "o[2] = (pow i32 $a 2)" in text
    assert "out[2] = (pow f32 (f32 $a) (f32 $b))" in text
    assert "out[3] = (pow f32 (f32 $a) -1.0)" in text
    assert "out[4] = (pow f32 $f 2.0)" in text
    assert "o[3] = 2" in text
    assert "out[5] = (floordiv f32 $f 2.0)" in text and "out[6] = (mod f32 $f 2.0)" in text


def test_division_by_constant_zero_rejected():
    def k(x: list[int]) -> None:
        x[0] = x[1] // 0

    rejects(k, "division by zero", at="0")


def test_matmul_rejected():
    def k(x: list[int]) -> None:
        x[0] = x[1] @ x[2]

    rejects(k, "operator `@` is not supported", at="@")


def test_bitwise_and_shifts():
    def k(a: int, p: bool, q: bool, o: list[int], b: list[bool]) -> None:
        o[0] = (a & 3) | (a ^ 5)
        o[1] = (a << 2) >> 1
        o[2] = ~a
        b[0] = p & q

    text = ir_text(k)
    assert "(bit_or i32 (bit_and i32 $a 3) (bit_xor i32 $a 5))" in text
    assert "(shr i32 (shl i32 $a 2) 1)" in text and "(invert i32 $a)" in text
    assert "b[0] = (bit_and bool $p $q)" in text


def test_bitwise_on_float_rejected():
    def k(f: float, o: list[int]) -> None:
        o[0] = ~f

    rejects(k, "`~` needs an int operand", at="~f")

    def shift(a: int, o: list[int]) -> None:
        o[0] = a << -1

    rejects(shift, "negative shift count", at="-1")


def test_unary():
    def k(a: int, f: float, p: bool, o: list[int], g: list[float]) -> None:
        o[0] = -a
        o[1] = +p
        g[0] = -f
        o[2] = not a

    text = ir_text(k)
    assert "o[0] = (neg i32 $a)" in text and "o[1] = (i32 $p)" in text
    assert "g[0] = (neg f32 $f)" in text and "o[2] = (i32 (not bool (ne i32 $a 0)))" in text


def test_chained_comparison():
    def k(a: int, f: float, o: list[bool]) -> None:
        o[0] = 0 <= a < 10
        o[1] = a < f
        o[2] = a != 3

    text = ir_text(k)
    assert "o[0] = (and bool (le i32 0 $a) (lt i32 $a 10))" in text
    assert "o[1] = (lt f32 (f32 $a) $f)" in text


def test_is_and_in_rejected():
    def k(a: int, o: list[bool]) -> None:
        o[0] = a is not None

    rejects(k, "`is not` compares object identity", at="is not")

    def k2(a: int, o: list[bool]) -> None:
        o[0] = a not in o

    rejects(k2, "`not in` (membership)", at="not in")


def test_boolean_operators():
    def k(a: int, b: int, p: bool, o: list[bool], v: list[int]) -> None:
        o[0] = p and a < b
        o[1] = not p or a > 0
        v[0] = a or b  # Python: a if a else b
        v[1] = a and b
        if a and b:
            v[2] = 1

    text = ir_text(k)
    assert "o[0] = (and bool $p (lt i32 $a $b))" in text
    assert "v[0] = (select i32 (ne i32 $a 0) $a $b)" in text
    assert "v[1] = (select i32 (ne i32 $a 0) $b $a)" in text
    assert "if (and bool (ne i32 $a 0) (ne i32 $b 0)):" in text


def test_conditional_expression():
    def k(a: int, f: float, o: list[float]) -> None:
        o[0] = f if a > 0 else a

    assert "o[0] = (select f32 (gt i32 $a 0) $f (f32 $a))" in ir_text(k)


def test_conditional_expression_bad_arm():
    def k(a: int, x: list[float], o: list[float]) -> None:
        o[0] = x if a > 0 else 1.0

    rejects(k, "`x` is a list[float] parameter", at="x if")


# ------------------------------------------------------------------- literals


def test_int_literal_range():
    def k(o: list[int]) -> None:
        o[0] = -2147483648
        o[1] = 2147483647

    text = ir_text(k)
    assert "o[0] = -2147483648" in text and "o[1] = 2147483647" in text

    def too_small(o: list[int]) -> None:
        o[0] = -2147483649

    rejects(too_small, "int literal -2147483649 does not fit", at="-2147483649")


def test_int_arithmetic_wraps_when_folded():
    def k(o: list[int]) -> None:
        o[0] = 2147483647 + 1
        o[1] = 1 << 31

    text = ir_text(k)
    assert "o[0] = -2147483648" in text and "o[1] = -2147483648" in text


def test_float_literals():
    def k(o: list[float]) -> None:
        o[0] = 0.1
        o[1] = 1e30 * 1e30

    text = ir_text(k)
    assert "o[0] = 0.1" in text and "o[1] = inf" in text

    def too_big(o: list[float]) -> None:
        o[0] = 1e39

    rejects(too_big, "outside the float32 range", at="1e39")


def test_strings_and_none_rejected():
    def k(o: list[float]) -> None:
        o[0] = None

    rejects(k, "None is not a value in kernels", at="None")


# -------------------------------------------------------------- module constants


def test_module_constants_become_consts():
    scale = 3

    def k(x: list[float]) -> None:
        if ON:
            x[0] = RATE * N * scale

    text = ir_text(k)
    assert "x[0] = 24.0" in text and "if" not in text.split("body:")[1]


def test_module_constant_shadowed_by_local():
    def k(x: list[int]) -> None:
        x[0] = N  # N is a local here (assigned below), as in Python
        N = 3

    rejects(k, "local `N` is used before it is assigned", at="N  #")


def test_closure_function_and_object_rejected():
    obj = object()

    def k(x: list[int]) -> None:
        x[0] = obj

    rejects(k, "`obj` is a object object", at="obj")
