"""Meaning, not text: each kernel run as plain Python over the grid and its lowered IR run by
`ir_eval` agree (ints exactly; floats to float32 precision), on inputs from hypothesis."""

from __future__ import annotations

import copy
import functools
import math

import fe_kernels as K
import pytest
from fe_ir_eval import run_grid, run_python_grid
from fehelp import kernel
from hypothesis import given, settings
from hypothesis import strategies as st

from cthreads.gpu.indices import GlobalIdx

small_ints = st.integers(-1000, 1000)
# no subnormal inputs: a device may flush them to 0 (docs/language.md), and `f // 2.5` of a
# flushed -1.4e-45 is -0.0 where Python says -1.0
floats = st.floats(-100, 100, allow_nan=False, allow_subnormal=False, width=32)


@functools.cache
def _lowered(fn):
    return kernel(fn).lower()


def agree(fn, args: list, n: int, *, rel: float = 1e-5, lowered=None) -> None:
    py_args, ir_args = copy.deepcopy(args), copy.deepcopy(args)
    fn = getattr(fn, "__wrapped__", fn)
    run_python_grid(fn, py_args, n)
    run_grid(lowered or _lowered(fn), ir_args, n)
    for a, b in zip(py_args, ir_args):
        if isinstance(a, list):
            for x, y in zip(a, b):
                if isinstance(x, float) or isinstance(y, float):
                    assert math.isclose(x, y, rel_tol=rel, abs_tol=1e-4), (a, b)
                else:
                    assert x == y, (a, b)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(small_ints, small_ints.filter(bool)), min_size=1, max_size=12))
def test_int_mix(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    agree(K.int_mix, [a, b, [0] * len(a)], len(a))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=8))
def test_collatz(start):
    agree(K.collatz, [start, [0] * len(start)], len(start))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=8))
def test_bool_logic(pairs):
    p, q = [x[0] for x in pairs], [x[1] for x in pairs]
    agree(K.bool_logic, [p, q, [False] * len(p), [False] * len(p)], len(p))


@settings(max_examples=30, deadline=None)
@given(st.lists(floats, min_size=3, max_size=10), floats, floats)
def test_float_kernels(xs, lo, hi):
    n = len(xs)
    agree(K.saxpy, [n, 2.5, xs, list(reversed(xs))], n)
    agree(K.horner, [n, [1.0, -0.5, 0.25], [x / 100 for x in xs], [0.0] * n], n)
    lo, hi = sorted((abs(lo), abs(hi)))  # sqrt of a negative is an error in Python, NaN on a GPU
    agree(K.clamp, [lo, hi, xs], n)
    agree(K.stencil, [n, xs, [0.0] * n], n)


def test_block_sum():
    # a barrier kernel needs invocations in lock-step; run the IR and check the known answer
    x = [float(i) for i in range(128)]
    args = [x, [0.0, 0.0], [0] * 128]
    run_grid(K.block_sum.lower(), args, 128, group=64)
    assert args[1] == [sum(range(64)), sum(range(64, 128))] and args[2] == list(range(128))


def ranges(a: int, b: int, s: int, out: list[int], last: list[int]) -> None:
    count = 0
    total = 0
    for i in range(a, b, s):
        count += 1
        total += i
    out[0] = count
    out[1] = total
    k = 0
    for k in range(b, a, -1):
        if k % 3 == 0:
            continue
        if k == a + 5:
            break
        out[2] += k
    last[0] = k


@settings(max_examples=60, deadline=None)
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(-4, 4).filter(bool))
def test_range_semantics(a, b, s):
    agree(ranges, [a, b, s, [0, 0, 0], [0]], 1)


def test_range_with_zero_step_runs_zero_times():
    out, last = [0, 0, 0], [0]
    run_grid(kernel(ranges).lower(), [0, 5, 0, out, last], 1)
    assert out[:2] == [0, 0]


def loopvar(n: int, out: list[int]) -> None:
    j = 0
    for i in range(n):
        i = i * 10  # does not change the iteration
        j += i
    out[0] = j
    out[1] = i


@pytest.mark.parametrize("n", [1, 2, 5])
def test_assigning_loop_variable(n):
    agree(loopvar, [n, [0, 0]], 1)


def semantics(a: int, b: int, f: float, out: list[int], g: list[float], flags: list[bool]) -> None:
    out[0] = a // b
    out[1] = a % b
    out[2] = -a // b
    out[3] = a**2
    out[4] = (a or b) + (a and b)
    out[5] = min(a, b, 7) + max(a, b)
    out[6] = abs(a) + int(f) + math.floor(f) + math.ceil(f)
    out[7] = (a > 0) + (b < 0) * 2
    g[0] = a / b
    g[1] = f // 2.5
    g[2] = f % 2.5
    g[3] = math.sqrt(abs(f)) + math.sin(f)
    g[4] = f if a < b < 100 else -f
    flags[0] = 0 <= a < b
    flags[1] = not (a == b) and f != 0.0  # noqa: SIM201 - `not` of a comparison


@settings(max_examples=80, deadline=None)
@given(small_ints, small_ints.filter(bool), floats)
def test_python_semantics(a, b, f):
    agree(semantics, [a, b, f, [0] * 8, [0.0] * 5, [False] * 2], 1, rel=1e-4)


def indexes(out: list[int]) -> None:
    i = GlobalIdx.x
    if i < len(out):
        out[i] = i * 2


def test_guarded_grid():
    agree(indexes, [[0] * 10], 12)
