"""One accepting and one rejecting case per construct of the kernel language (SPEC §2)."""

# ruff: noqa: F821, F823, F841, FURB163, PIE790, PLC3002, PLW0120, RET501, UP018 - kernels written to probe the compiler

from __future__ import annotations

import math
import math as m
from math import floor, sin
from math import sqrt as root

import pytest
from fehelp import compile_error, ir_text, kernel, rejects

import cthreads.gpu.indices as gpu_indices
from cthreads.gpu.indices import BlockDim, BlockIdx, GlobalIdx, GridDim, ThreadIdx
from cthreads.sync import Barrier, __sync_threads

N = 16
RATE = 0.5
ON = True


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


# ------------------------------------------------------------------ builtins


def test_builtin_functions():
    def k(a: int, f: float, p: bool, o: list[int], g: list[float], b: list[bool]) -> None:
        o[0] = abs(a)
        g[0] = abs(f)
        o[1] = min(a, 3, p)
        g[1] = max(a, f)
        o[2] = int(f)
        g[2] = float(a)
        b[0] = bool(f)
        o[3] = int(p)
        g[3] = float("inf")
        g[4] = pow(f, 2)
        o[4] = int()

    text = ir_text(k)
    assert "o[0] = (call abs i32 $a)" in text and "g[0] = (call abs f32 $f)" in text
    assert "o[1] = (min i32 (min i32 $a 3) (i32 $p))" in text
    assert "g[1] = (max f32 (f32 $a) $f)" in text
    assert "o[2] = (i32 $f)" in text and "g[2] = (f32 $a)" in text
    assert "b[0] = (ne f32 $f 0.0)" in text and "o[3] = (i32 $p)" in text
    assert "g[3] = inf" in text and "g[4] = (pow f32 $f 2.0)" in text and "o[4] = 0" in text


def test_builtin_misuse():
    def min_of_list(x: list[int]) -> None:
        x[0] = min(x)

    def int_base(x: list[int]) -> None:
        x[0] = int(x[1], 2)

    def keyword(x: list[int]) -> None:
        x[0] = max(x[1], x[2], key=abs)

    def str_float(x: list[float]) -> None:
        x[0] = float("1.5")

    def round_call(x: list[float]) -> None:
        x[0] = round(x[1])

    def range_value(x: list[int]) -> None:
        r = range(3)

    rejects(min_of_list, "min() of a list is not supported", at="min(")
    rejects(int_base, "int() takes 0 to 1 argument(s)", at="int(")
    rejects(keyword, "keyword arguments are not supported", at="key=")
    rejects(str_float, "float() of a string is not supported", at='"1.5"')
    rejects(round_call, "round() is not supported", at="round", allowed="math.floor(x + 0.5)")
    rejects(range_value, "range() can only be used as", at="range(")


def test_math_functions_every_spelling():
    def k(f: float, a: int, g: list[float], o: list[int], b: list[bool]) -> None:
        g[0] = math.sin(f) + m.cos(f) + sin(a) + root(f)
        o[0] = floor(f)
        o[1] = math.ceil(a)
        g[1] = math.atan2(f, 1) + math.log(f, 2) + math.pi
        b[0] = math.isnan(f)

    text = ir_text(k)
    assert "(call sin f32 $f)" in text and "(call cos f32 $f)" in text
    assert "(call sin f32 (f32 $a))" in text and "(call sqrt f32 $f)" in text
    assert "o[0] = (call floor i32 $f)" in text and "o[1] = $a" in text
    assert (
        "(call atan2 f32 $f 1.0)" in text
        and "(div f32 (call log f32 $f) (call log f32 2.0))" in text
    )
    assert "3.1415927" in text and "b[0] = (call isnan bool $f)" in text


def test_cthreads_gpu_compat_bare_names():
    # cthreads-gpu kernels call sqrt/floor/__sync_threads without importing them
    def k(x: list[float]) -> None:
        x[0] = sqrt(x[1]) + floor(x[2])

    assert "(call sqrt f32 x[1])" in ir_text(k)


def test_math_misuse():
    def arity(x: list[float]) -> None:
        x[0] = math.sqrt(x[1], x[2])

    def no_counterpart(x: list[float]) -> None:
        x[0] = math.factorial(3)

    def module_value(x: list[float]) -> None:
        x[0] = math

    rejects(arity, "math.sqrt() takes 1 argument(s); got 2", at="math.sqrt(")
    rejects(no_counterpart, "`math.factorial` has no device counterpart", at="math.factorial")
    rejects(module_value, "module `math` cannot be used as a value", at="math")


def test_unknown_and_local_calls():
    def user_function(x: list[float]) -> None:
        x[0] = test_math_misuse(x[1])

    def call_local(x: list[float]) -> None:
        f = 1.0
        x[0] = f(2)

    def call_expression(x: list[float]) -> None:
        x[0] = (lambda: 1.0)()

    rejects(user_function, "calls to `test_math_misuse` are not supported", at="test_math_misuse")
    rejects(call_local, "`f` is a local variable here, not a function", at="f(2)")
    rejects(call_expression, "cannot be called in a kernel", at="lambda")


def test_calling_a_kernel_rejected():
    from fe_kernels import saxpy

    def k(x: list[float]) -> None:
        saxpy(1, 2.0, x, x)

    rejects(k, "calling another @Gpu kernel", at="saxpy")


# --------------------------------------------------------------- index builtins


def test_index_builtins_all_axes():
    def k(o: list[int]) -> None:
        o[0] = GlobalIdx.x + GlobalIdx.y + GlobalIdx.z
        o[1] = ThreadIdx.x + BlockIdx.y + BlockDim.z + GridDim.x

    text = ir_text(k)
    assert "GlobalIdx.z" in text and "ThreadIdx.x" in text and "GridDim.x" in text
    assert "observes_workgroup=true" in text


def test_global_index_alone_does_not_observe_workgroup():
    def k(o: list[int]) -> None:
        o[GlobalIdx.x] = 1

    assert "observes_workgroup=false" in ir_text(k)


def test_index_builtins_through_module_attribute():
    import cthreads.gpu as gpu_pkg

    def k(o: list[int]) -> None:
        o[0] = gpu_indices.GlobalIdx.x + gpu_pkg.ThreadIdx.y

    text = ir_text(k)
    assert "GlobalIdx.x" in text and "ThreadIdx.y" in text


def test_index_builtin_misuse():
    def bad_axis(o: list[int]) -> None:
        o[0] = GlobalIdx.w

    def whole(o: list[int]) -> None:
        o[0] = GlobalIdx

    rejects(bad_axis, "index builtins have components .x, .y and .z", at="GlobalIdx.w")
    rejects(whole, "`GlobalIdx` is an index builtin; read one component", at="GlobalIdx")


def test_missing_index_import_hint():
    def k(o: list[int]) -> None:
        o[0] = BlockIdx2.x

    err = compile_error(k)
    assert "name `BlockIdx2` is not defined" in err.reason


# -------------------------------------------------------------------- barriers


def test_barriers():
    def k(x: list[float]) -> None:
        __sync_threads()
        Barrier.arrive_and_wait()

    text = ir_text(k)
    assert text.count("barrier") == 2 and "observes_workgroup=true" in text


def test_barrier_misuse():
    def construct(x: list[float]) -> None:
        Barrier(4).arrive_and_wait()

    def as_value(x: list[float]) -> None:
        v = __sync_threads()

    def with_args(x: list[float]) -> None:
        __sync_threads(1)

    host = Barrier(2)

    def instance(x: list[float]) -> None:
        host.arrive_and_wait()

    rejects(construct, "creates a host thread barrier", at="Barrier(4)")
    rejects(as_value, "is a statement and has no value", at="__sync_threads()")
    rejects(with_args, "takes no arguments", at="__sync_threads(1)")
    rejects(instance, "waits on a host thread barrier", at="host.arrive_and_wait")


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


# ----------------------------------------------------------- rejected statements


@pytest.mark.parametrize(
    "source_fn, reason, at",
    [
        ("assert_", "`assert` cannot be checked", "assert"),
        ("try_", "`try` is not supported", "try"),
        ("raise_", "kernels cannot raise", "raise"),
        ("with_", "`with` blocks", "with"),
        ("import_", "`import` inside a kernel", "import"),
        ("nonlocal_", "`nonlocal` is not supported", "nonlocal"),
        ("class_", "class definitions", "class"),
        ("setcomp", "set comprehensions", "{v for"),
        ("genexp", "generator expressions", "(v for"),
        ("dict_", "dicts are not supported", "{1: 2}"),
        ("tuple_value", "tuples are not supported", "(1, 2)"),
        ("list_display", "list displays", "[1, 2]"),
        ("attr_assign", "attribute assignment", "x.attr"),
        ("match_", "`match` is not supported", "match"),
    ],
)
def test_rejected_statements(source_fn, reason, at):
    rejects(REJECTS[source_fn], reason, at=at)


def _rejects_table():
    def assert_(x: list[int]) -> None:
        assert x[0]

    def try_(x: list[int]) -> None:
        try:
            pass
        finally:
            pass

    def raise_(x: list[int]) -> None:
        raise RuntimeError

    def with_(x: list[int]) -> None:
        with x:
            pass

    def import_(x: list[int]) -> None:
        import os  # noqa: F401

    v = 0

    def nonlocal_(x: list[int]) -> None:
        nonlocal v

    def class_(x: list[int]) -> None:
        class C:
            pass

    def yield_(x: list[int]) -> None:
        x[0] = 1
        if x[1]:
            x[2] = yield

    def setcomp(x: list[int]) -> None:
        s = {v for v in range(3)}

    def genexp(x: list[int]) -> None:
        g = (v for v in range(3))

    def dict_(x: list[int]) -> None:
        d = {1: 2}

    def tuple_value(x: list[int]) -> None:
        t = (1, 2)

    def list_display(x: list[int]) -> None:
        t = [1, 2]

    def attr_assign(x: list[int]) -> None:
        x.attr = 1

    def match_(x: list[int]) -> None:
        match x[0]:
            case 1:
                pass

    return {f.__name__: f for f in locals().values() if callable(f)}


REJECTS = _rejects_table()


def test_generator_kernel_rejected_at_decoration():
    with pytest.raises(TypeError, match="a kernel cannot be a generator"):
        kernel(REJECTS["yield_"])
