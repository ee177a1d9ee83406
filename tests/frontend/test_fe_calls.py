"""Calls in the kernel language (SPEC §2): builtins, math, index builtins, barriers.

One accepting and one rejecting case per construct.
"""

# ruff: noqa: F821, F823, F841, FURB163, PIE790, PLC3002, PLW0120, RET501, UP018 - kernels written to probe the compiler

from __future__ import annotations

import math
import math as m
from math import floor, sin
from math import sqrt as root

from fehelp import compile_error, ir_text, rejects

import cthreads.gpu.indices as gpu_indices
from cthreads.gpu.indices import BlockDim, BlockIdx, GlobalIdx, GridDim, ThreadIdx
from cthreads.sync import Barrier, __sync_threads


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
