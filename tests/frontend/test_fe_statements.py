"""The kernel language's statements (SPEC §2): locals, list elements, control flow.

One accepting and one rejecting case per construct.
"""

# ruff: noqa: F821, F823, F841, FURB163, PIE790, PLC3002, PLW0120, RET501, UP018 - kernels written to probe the compiler

from __future__ import annotations

import math

from fehelp import ir_text, rejects

from cthreads.gpu.indices import GlobalIdx


# ------------------------------------------------------------------------ locals


def test_annotated_and_inferred_locals():
    def k(x: list[float]) -> None:
        i: int = GlobalIdx.x
        f: float = 1
        b: bool = x[i] > 0.0
        v = x[i]
        x[i] = v * f if b else 0.0

    text = ir_text(k)
    assert "local %i: i32" in text and "local %f: f32" in text and "local %b: bool" in text
    assert "%f = 1.0" in text  # int literal promoted to the float local


def test_annotation_rejects_lists_and_unknown_types():
    def list_local(x: list[float]) -> None:
        y: list[float] = x

    def str_local(x: list[float]) -> None:
        s: str = "a"

    rejects(list_local, "a local cannot be a list", at="list[float]")
    rejects(str_local, "unsupported local type `str`", at="str")


def test_local_keeps_first_type_and_promotes_ints():
    def k(x: list[float]) -> None:
        acc = 0.0
        acc = 3  # int into a float local: promoted
        x[0] = acc

    assert "%acc = 3.0" in ir_text(k)

    def bad(x: list[int]) -> None:
        n = 1
        n = n / 2

    rejects(bad, "cannot assign a float to `n`, an int local", at="n = n / 2", allowed="int(...)")


def test_reannotation_with_another_type():
    def k(x: list[float]) -> None:
        v = 1
        v: float = 2.0

    rejects(k, "already an int local", at="float")


def test_scalar_params_assigned_become_locals():
    def k(n: int, x: list[int]) -> None:
        n = n + 1
        x[0] = n

    text = ir_text(k)
    assert "local %n: i32" in text and "%n = $n" in text and "x[0] = %n" in text

    def untouched(n: int, x: list[int]) -> None:
        x[0] = n

    assert "x[0] = $n" in ir_text(untouched)


def test_assign_float_to_int_param():
    def k(n: int, x: list[int]) -> None:
        n = 2.5

    rejects(k, "cannot assign a float to parameter `n` (int)", at="n = 2.5")


def test_multiple_targets_and_tuple_swap():
    def k(x: list[int]) -> None:
        a = b = x[0] + 1
        a, b = b, a + 1
        x[1] = a
        x[2] = b

    text = ir_text(k)
    assert "%$tmp1 = (add i32 x[0] 1)" in text
    assert "%a = %$tmp1" in text and "%b = %$tmp1" in text


def test_unpacking_non_tuple_rejected():
    def k(x: list[int]) -> None:
        a, b = x

    rejects(k, "unpacking is only supported from a tuple", at="x")


def test_used_before_assignment():
    def k(x: list[int]) -> None:
        x[0] = later
        later = 1

    rejects(k, "local `later` is used before it is assigned", at="later")


# ----------------------------------------------------------- list elements


def test_store_and_augmented_store():
    def k(x: list[float], c: list[int]) -> None:
        i = GlobalIdx.x
        x[i] += 1.0
        x[i] *= 2
        c[i] //= 2
        c[i] = True

    text = ir_text(k)
    assert "x[%i] = (add f32 x[%i] 1.0)" in text
    assert "x[%i] = (mul f32 x[%i] 2.0)" in text
    assert "c[%i] = (floordiv i32 c[%i] 2)" in text
    assert "c[%i] = 1" in text


def test_store_float_into_int_list():
    def k(x: list[int]) -> None:
        x[0] = 1.5

    rejects(
        k, "cannot assign a float to an element of `x` (list[int])", at="x[0]", allowed="int(...)"
    )


def test_store_int_into_bool_list():
    def k(x: list[bool]) -> None:
        x[0] = 1

    rejects(
        k, "cannot assign an int to an element of `x` (list[bool])", at="x[0]", allowed="bool(...)"
    )


def test_augmented_assign_to_list_param_itself():
    def k(x: list[float]) -> None:
        x += 1.0

    rejects(k, "the list itself cannot be assigned", at="x +=")


def test_index_types():
    def k(x: list[float], flag: bool) -> None:
        x[flag] = 1.0

    assert "x[(i32 $flag)] = 1.0" in ir_text(k)

    def bad(x: list[float]) -> None:
        x[1.0] = 2.0

    rejects(bad, "list index must be an int", at="1.0")


def test_multi_dim_index_rejected():
    def k(x: list[float]) -> None:
        x[1, 2] = 0.0

    rejects(k, "multi-dimensional indexing", at="1, 2")


def test_index_scalar_rejected():
    def k(v: int, x: list[float]) -> None:
        x[0] = v[0]

    rejects(k, "`v` is an int; only list parameters can be indexed", at="v[0]")


def test_len_of_list():
    def k(x: list[float], out: list[int]) -> None:
        out[0] = len(x)

    assert "out[0] = len(x)" in ir_text(k)

    def bad(v: int, out: list[int]) -> None:
        out[0] = len(v)

    rejects(bad, "only list parameters can be passed to len()", at="v")


def test_list_attributes_rejected():
    def k(x: list[float], out: list[int]) -> None:
        out[0] = x.size

    rejects(k, "lists have no attributes or methods", at="x.size")


# ---------------------------------------------------------------- control flow


def test_if_elif_else():
    def k(x: list[int]) -> None:
        i = GlobalIdx.x
        if x[i] < 0:
            x[i] = -1
        elif x[i] == 0:
            pass
        else:
            x[i] = 1

    text = ir_text(k)
    assert "if (lt i32 x[%i] 0):" in text and "else:" in text


def test_if_on_list_rejected():
    def k(x: list[int]) -> None:
        if x:
            x[0] = 1

    rejects(k, "`x` is a list[int] parameter", at="x:")


def test_truthiness_of_numbers():
    def k(x: list[float], c: list[int]) -> None:
        if x[0]:
            c[0] = 1
        while c[1]:
            c[1] -= 1

    text = ir_text(k)
    assert "if (ne f32 x[0] 0.0):" in text and "loop while (ne i32 c[1] 0):" in text


def test_while_break_continue():
    def k(x: list[int]) -> None:
        i = 0
        while True:
            i += 1
            if i > 10:
                break
            if i % 2:
                continue
            x[i] = i

    text = ir_text(k)
    assert "loop while true:" in text and "break" in text and "continue" in text


def test_for_range_forms():
    def k(n: int, x: list[int]) -> None:
        for i in range(n):
            x[i] = 1
        for j in range(2, n):
            x[j] = 2
        for k in range(n, 0, -2):
            x[k] = 3

    text = ir_text(k)
    assert "loop while (lt i32 %i $n):" in text and "%i = (add i32 %i 1)" in text
    assert "%j = 2" in text
    assert "loop while (gt i32 %k 0):" in text and "%k = (add i32 %k -2)" in text


def test_for_range_runtime_step():
    def k(a: int, b: int, s: int, x: list[int]) -> None:
        for i in range(a, b, s):
            x[i] = 1

    text = ir_text(k)
    expected = "loop while (or bool (and bool (gt i32 $s 0) (lt i32 %i $b)) (and bool (lt i32 $s 0) (gt i32 %i $b))):"
    assert expected in text


def test_for_range_step_zero_runs_zero_times():
    def k(x: list[int]) -> None:
        for i in range(0, 10, 0):
            x[i] = 1
        x[0] = 2

    text = ir_text(k)
    assert "loop" not in text and "x[0] = 2" in text


def test_for_range_evaluated_once_and_loop_var_assignment():
    def k(n: int, x: list[int]) -> None:
        m = n
        for i in range(m):
            m = m - 1
            i = i * 2
            x[i] = m
        x[0] = i

    text = ir_text(k)
    # the stop value is copied before the loop; a hidden counter drives it
    assert "%$stop1 = %m" in text
    assert "%$i2 = 0" in text
    assert "loop while (lt i32 %$i2 %$stop1):" in text
    assert "%i = %$i2" in text and "%$i2 = (add i32 %$i2 1)" in text


def test_for_rejects():
    def over_call(x: list[int]) -> None:
        for i in enumerate(x):
            pass

    def float_arg(x: list[int]) -> None:
        for i in range(2.5):
            pass

    def tuple_target(x: list[int]) -> None:
        for i, j in range(3):
            pass

    def for_else(x: list[int]) -> None:
        for i in range(3):
            x[i] = 1
        else:
            x[0] = 0

    def too_many(x: list[int]) -> None:
        for i in range(1, 2, 3, 4):
            pass

    def float_loop_var(x: list[int]) -> None:
        i = 0.5
        for i in range(3):
            pass

    rejects(over_call, "only `for ... in range(...)` loops", at="enumerate")
    rejects(float_arg, "range() arguments must be ints", at="2.5")
    rejects(tuple_target, "a for loop must assign a single name", at="i, j")
    rejects(for_else, "`for ... else` is not supported", at="else:")
    rejects(too_many, "range() takes 1 to 3 arguments", at="range(")
    rejects(float_loop_var, "loop variable `i` is a float local", at="i in")


def test_return_anywhere():
    def k(x: list[int]) -> None:
        for i in range(4):
            if x[i] == 0:
                return
            x[i] = 1
        return None

    text = ir_text(k)
    assert text.count("return") == 2


def test_dead_code_after_return_is_still_checked():
    def k(x: list[int]) -> None:
        return
        x[0] = 1.5

    rejects(k, "cannot assign a float", at="x[0]")


def test_pass_docstring_ellipsis():
    def k(x: list[int]) -> None:
        """Docstring."""
        pass
        ...
        x[0] = 1

    assert "x[0] = 1" in ir_text(k)


def test_expression_statement_rejected():
    def k(x: list[float]) -> None:
        math.sin(x[0])

    rejects(k, "this expression statement has no effect", at="math.sin")
