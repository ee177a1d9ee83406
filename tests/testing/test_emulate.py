"""The emulator (cthreads.testing.emulate) against plain-Python / numpy expectations of SPEC §2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cthreads import sync
from cthreads.gpu import BlockDim, BlockIdx, GlobalIdx, Gpu, GridDim, ThreadIdx
from cthreads.sync import Barrier, __sync_threads
from cthreads.testing import EmulationError, KernelUndefined, emulate

f32 = np.float32
SCALE = 3  # a module constant kernels may read


@Gpu
def int_ops(xs: list[int], out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        x: int = xs[i]
        out[8 * i + 0] = x + 2147483647
        out[8 * i + 1] = x * 65537 * 65537
        out[8 * i + 2] = -x
        out[8 * i + 3] = abs(x)
        out[8 * i + 4] = x**3
        out[8 * i + 5] = x // -7
        out[8 * i + 6] = x % -7
        out[8 * i + 7] = ~x


def _wrap(v: int) -> int:
    return ((v + 2**31) % 2**32) - 2**31


def test_int32_wraps_after_every_operation():
    xs = [0, 1, -1, 5, -2147483648, 2147483647, 123456789, -99]
    out = [0] * (8 * len(xs))
    emulate(int_ops, xs, out)
    for i, x in enumerate(xs):
        expect = [x + 2147483647, x * 65537 * 65537, -x, abs(x), x**3, x // -7, x % -7, ~x]
        assert out[8 * i : 8 * i + 8] == [_wrap(e) for e in expect], x


@Gpu
def float_ops(n: int, a: float, xs: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        t: float = 0.0
        for j in range(i + 1):
            t = t + xs[j] * a
        out[i] = t


def test_float32_rounds_after_every_operation():
    n = 50
    xs = [0.1 * k for k in range(n)]
    out = [0.0] * n
    emulate(float_ops, n, 0.3, xs, out)
    x32 = np.asarray(xs, f32)
    for i in range(n):
        t = f32(0.0)
        for j in range(i + 1):
            t = f32(t + f32(x32[j] * f32(0.3)))
        assert out[i] == float(t)
    assert type(out[0]) is float


@Gpu
def float_edges(xs: list[float], out: list[float], flags: list[bool]) -> None:
    i: int = GlobalIdx.x
    if i == 0:
        out[0] = xs[0] * 10.0  # 3e38 * 10 overflows float32
        out[1] = 1.0 / xs[1]  # by zero: inf, no ZeroDivisionError
        out[2] = xs[1] / xs[1]  # 0 / 0: nan
        out[3] = float(16777217)  # int -> float32 rounds
        out[4] = -7.5 // 2.0
        out[5] = -7.5 % 2.0
        out[6] = 7 / 2  # int / int -> float
        out[7] = 2.0**0.5
        out[8] = (-8.0) ** 0.5  # negative base, non-integer exponent: nan (not complex)
        out[9] = 0.0**-1.0  # inf (Python raises)
        out[10] = min(xs[2], 1.0)  # nan first: Python keeps it
        out[11] = min(1.0, xs[2])  # nan later: Python skips it
        flags[0] = 16777217 == 16777216.0  # noqa: PLR0133 - the int is converted to float32 first
        flags[1] = xs[2] != xs[2]
        flags[2] = 1 < 2 < 3 > 2  # noqa: PLR0133 - chained, evaluated once each
        flags[3] = math.isinf(out[0])


def test_float_edges_follow_ieee_and_python():
    out = [0.0] * 12
    flags = [False] * 4
    emulate(float_edges, [3e38, 0.0, math.nan], out, flags)
    assert out[0] == math.inf and out[1] == math.inf and math.isnan(out[2])
    assert out[3] == 16777216.0
    assert out[4] == -4.0 and out[5] == 0.5 and out[6] == 3.5
    assert out[7] == float(f32(math.sqrt(2.0)))
    assert math.isnan(out[8]) and out[9] == math.inf
    assert math.isnan(out[10]) and out[11] == 1.0
    assert flags == [True, True, True, True]


@Gpu
def div_mod(
    xs: list[int], ys: list[int], q: list[int], r: list[int], fq: list[float], fr: list[float]
) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        q[i] = xs[i] // ys[i]
        r[i] = xs[i] % ys[i]
        fq[i] = float(xs[i]) // float(ys[i])
        fr[i] = float(xs[i]) % float(ys[i])


def test_floor_division_and_modulo_with_negatives_and_zero():
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (5, 0), (-5, 0), (-2147483648, -1)]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    q, r, fq, fr = [0] * 8, [0] * 8, [0.0] * 8, [0.0] * 8
    emulate(div_mod, xs, ys, q, r, fq, fr)
    for k, (x, y) in enumerate(pairs):
        if y == 0:  # the documented contract: x // 0 == 0 and x % 0 == x
            assert q[k] == 0 and r[k] == x
            assert fq[k] == math.copysign(math.inf, x) and math.isnan(fr[k])
        else:
            assert q[k] == _wrap(x // y) and r[k] == x % y
            assert fq[k] == float(f32(x) // f32(y)) and fr[k] == float(f32(x) % f32(y))


@Gpu
def shifts(xs: list[int], ss: list[int], left: list[int], right: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        left[i] = xs[i] << ss[i]
        right[i] = xs[i] >> ss[i]


def test_shift_count_is_taken_modulo_32_and_right_shift_is_arithmetic():
    xs = [1, 1, 1, -8, -8, 5, 3]
    ss = [31, 32, 33, 1, 35, -1, 0]
    left, right = [0] * 7, [0] * 7
    emulate(shifts, xs, ss, left, right)
    assert left == [_wrap(x << (s & 31)) for x, s in zip(xs, ss)]
    assert left[0] == -2147483648 and left[1] == 1 and left[2] == 2
    assert right == [x >> (s & 31) for x, s in zip(xs, ss)]
    assert right[3] == -4 and right[4] == -1


@Gpu
def unguarded(x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    y[i] = x[i] * 2.0


def test_out_of_bounds_names_list_index_and_invocation():
    x, y = [1.0] * 64, [0.0] * 70
    with pytest.raises(
        IndexError, match=r"^x\[64\] out of range \(len 64\) in invocation GlobalIdx\.x=64 "
    ):
        emulate(unguarded, x, y)
    with pytest.raises(
        IndexError, match=r"write to y\[70\] out of range \(len 70\) in invocation GlobalIdx\.x=70"
    ):
        emulate(unguarded, [1.0] * 80, [0.0] * 70)


def test_out_of_bounds_device_mode_reads_zero_and_drops_writes():
    x, y = [1.5] * 10, [7.0] * 100
    emulate(unguarded, x, y, oob="device")  # 128 invocations (longest list 100)
    assert y[:10] == [3.0] * 10 and y[10:] == [0.0] * 90
    x, y = [1.5] * 100, [7.0] * 3
    emulate(unguarded, x, y, oob="device")
    assert y == [3.0] * 3


@Gpu(workgroup_size=16)
def reverse_blocks(x: list[float], tmp: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    t: int = ThreadIdx.x
    tmp[i] = x[i]
    __sync_threads()
    out[i] = tmp[BlockIdx.x * BlockDim.x + BlockDim.x - 1 - t]
    Barrier.arrive_and_wait()
    tmp[i] = 0.0


def test_barrier_lets_a_workgroup_exchange_data_through_a_list():
    x = [float(k) for k in range(64)]
    tmp, out = [0.0] * 64, [0.0] * 64
    emulate(reverse_blocks, x, tmp, out)
    assert out == [float(v) for v in np.arange(64).reshape(4, 16)[:, ::-1].reshape(-1)]
    assert tmp == [0.0] * 64


@Gpu(workgroup_size=8)
def divergent_barrier(x: list[float]) -> None:
    if ThreadIdx.x < 3:
        return
    sync.__sync_threads()
    x[GlobalIdx.x] = 1.0


def test_barrier_not_reached_by_every_invocation_is_reported():
    with pytest.raises(
        KernelUndefined,
        match=r"barrier at line \d+ is reached by 5 invocation\(s\) while 3 returned",
    ):
        emulate(divergent_barrier, [0.0] * 8)


@Gpu
def shape(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(out):
        out[i] = GridDim.x * 1000 + BlockDim.x


@Gpu(workgroup_size=32)
def shape32(xs: list[float], out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(out):
        out[i] = GridDim.x * 1000 + BlockDim.x + ThreadIdx.x * 0


def test_default_grid_uses_n_then_longest_list_and_workgroup_option():
    out = [0] * 4
    emulate(shape, 200, out)  # n = 200 -> 4 groups of 64
    assert out == [4064] * 4
    emulate(shape, 0, out)  # n = 0: one workgroup (the kernel observes it), as on the device
    assert out == [1064] * 4
    out = [0] * 4
    emulate(shape32, [0.0] * 65, out)  # longest list 65 -> 3 groups of 32
    assert out == [3032] * 4
    emulate(shape32, [0.0], out, grid=(40,), workgroup=8)  # invocations per axis, as gpu()
    assert out == [5008] * 4
    emulate(shape32, [0.0], out, grid=100)  # a problem size, rounded up to whole groups
    assert out == [4032] * 4


@Gpu
def copy_scaled(x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < len(x):
        y[i] = x[i] * SCALE


def test_writes_back_only_written_lists_into_the_same_objects():
    x = [0.1, 0.2, 0.3]
    y = [0.0, 0.0, 0.0]
    y_id = id(y)
    emulate(copy_scaled, x, y)
    assert x == [0.1, 0.2, 0.3]  # untouched: not float32-rounded
    assert id(y) == y_id and y == [float(f32(f32(v) * f32(3))) for v in x]
    xa = np.array([1.0, 2.0], np.float32)
    ya = np.zeros((1, 2), np.float32)
    emulate(copy_scaled, xa, ya)
    assert ya.tolist() == [[3.0, 6.0]]


@Gpu
def loops(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i >= n:
        return
    s: int = 0
    for j in range(10, -3, -(i % 3 + 1)):  # negative runtime step
        s = s * 3 + j
        j = j + 100  # Python: the next iteration ignores this
    w: int = 0
    while True:
        w += 1
        if w % 2 == 0:
            continue
        if w > 7:
            break
        s += w
    out[i] = s


def _loops_ref(i: int) -> int:
    s = 0
    for j in range(10, -3, -(i % 3 + 1)):
        s = _wrap(s * 3 + j)
    return s + 1 + 3 + 5 + 7


def test_loops_break_continue_and_early_return():
    out = [-1] * 6
    emulate(loops, 4, out)
    assert out == [_loops_ref(i) for i in range(4)] + [-1, -1]


@Gpu
def math_fns(x: list[float], out: list[float], ints: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(x):
        out[i] = math.sqrt(abs(x[i])) + math.sin(x[i]) * math.pi
        ints[i] = math.floor(x[i]) + math.ceil(x[i]) * 100 + int(x[i]) * 10000


def test_math_functions_round_once_and_floor_returns_int():
    x = [0.5, -1.25, 2.75]
    out, ints = [0.0] * 3, [0] * 3
    emulate(math_fns, x, out, ints)
    for k, v in enumerate(x):
        s = f32(math.sqrt(abs(v)))
        expect = f32(s + f32(f32(math.sin(v)) * f32(math.pi)))
        assert out[k] == float(expect)
        assert ints[k] == math.floor(v) + math.ceil(v) * 100 + int(v) * 10000


@Gpu
def bad_cast(x: list[float], out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(x):
        out[i] = int(x[i])


def test_undefined_float_to_int_is_reported_with_the_invocation():
    with pytest.raises(KernelUndefined, match=r"int\(\) of nan.*GlobalIdx\.x=2"):
        emulate(bad_cast, [1.0, 2.0, math.nan], [0, 0, 0])


@Gpu
def uses_print(x: list[float]) -> None:
    i: int = GlobalIdx.x
    print(i)


def test_unsupported_construct_is_a_clear_error():
    with pytest.raises(
        EmulationError,
        match=r"test_emulate\.py:\d+:\d+: in kernel `uses_print`: `print` is not a function",
    ):
        emulate(uses_print, [1.0])


def plain_kernel(n: int, out: list[int]) -> None:
    if GlobalIdx.x < n:
        out[GlobalIdx.x] = GlobalIdx.x * 2


def test_plain_functions_are_accepted():
    out = [0] * 5
    emulate(plain_kernel, 5, out)
    assert out == [0, 2, 4, 6, 8]


def test_wrong_arity_and_bad_values_raise():
    with pytest.raises(TypeError, match="takes 2 argument"):
        emulate(plain_kernel, 5)
    with pytest.raises(ValueError, match="`n` expects int"):
        emulate(plain_kernel, 2**40, [0])
