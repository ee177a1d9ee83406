"""Issue 3's example kernels, compiled by our compiler and run on the device (lavapipe in CI),
each against a numpy float32/int32 reference."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cthreads.gpu import BlockDim, BlockIdx, GlobalIdx, Gpu, GridDim, ThreadIdx, gpu
from cthreads.sync import __sync_threads

f32 = np.float32


@Gpu
def fill(n: int, value: float, out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = value


@Gpu
def scale(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] *= k


@Gpu
def add_scaled(
    n: int, a: float, x: list[float], b: float, y: list[float], out: list[float]
) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = a * x[i] + b * y[i]


@Gpu
def cell_of(n: int, size: float, pos: list[float], cell: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        cell[i] = int(floor(pos[i] / size))  # noqa: F821 - bare floor, as in cthreads-gpu


@Gpu
def horner(n: int, coeffs: list[float], x: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        acc: float = 0.0
        for k in range(len(coeffs) - 1, -1, -1):
            acc = acc * x[i] + coeffs[k]
        out[i] = acc


@Gpu
def int_mix(
    a: list[int], b: list[int], mod: list[int], band: list[int], shr: list[int], fdiv: list[int]
) -> None:
    i: int = GlobalIdx.x
    mod[i] = a[i] % b[i]
    band[i] = a[i] & b[i]
    shr[i] = a[i] >> 3
    fdiv[i] = a[i] // b[i]


@Gpu
def bool_ops(
    p: list[bool], q: list[bool], both: list[bool], either: list[bool], neither: list[bool]
) -> None:
    i: int = GlobalIdx.x
    both[i] = p[i] and q[i]
    either[i] = p[i] or q[i]
    neither[i] = not (p[i] or q[i])


@Gpu
def collatz(start: list[int], steps: list[int]) -> None:
    i: int = GlobalIdx.x
    v: int = start[i]
    count: int = 0
    while True:
        if v == 1:
            break
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        count += 1
    steps[i] = count


@Gpu
def clamp(lo: float, hi: float, x: list[float], where: list[int]) -> None:
    i: int = GlobalIdx.x
    if x[i] < lo:
        x[i] = lo
        where[i] = -1
    elif x[i] > hi:
        x[i] = hi
        where[i] = 1
    else:
        where[i] = 0


@Gpu
def stencil(n: int, src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    if i > 0 and i < n - 1:
        dst[i] = 0.25 * src[i - 1] + 0.5 * src[i] + 0.25 * src[i + 1]


@Gpu
def relations(
    n: int, g: list[int], t: list[int], b: list[int], d: list[int], grid: list[int]
) -> None:
    i: int = GlobalIdx.x
    if i < n:
        g[i] = i
        t[i] = ThreadIdx.x
        b[i] = BlockIdx.x
        d[i] = BlockDim.x
        grid[i] = GridDim.x


@Gpu
def rotate_in_group(x: list[float], tmp: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    tmp[i] = x[i] * 2.0
    __sync_threads()
    base: int = BlockIdx.x * BlockDim.x
    out[i] = tmp[base + (ThreadIdx.x + 1) % BlockDim.x]


def test_fill_scale_add_scaled():
    n = 1000
    out = [0.0] * n
    gpu(fill, n, 0.1, out).join()
    assert out == [float(f32(0.1))] * n
    x = np.arange(n, dtype=f32)
    gpu(scale, n, 1.5, x).join()
    assert np.array_equal(x, np.arange(n, dtype=f32) * f32(1.5))
    y = np.linspace(0, 1, n, dtype=f32)
    res = np.zeros(n, f32)
    gpu(add_scaled, n, 2.0, x, -3.0, y, res).join()
    # a*x + b*y may be contracted into a fused multiply-add on GPUs
    np.testing.assert_allclose(res, f32(2.0) * x + f32(-3.0) * y, rtol=2**-21, atol=1e-3)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(-1e4, 1e4, width=32), min_size=1, max_size=200),
    st.floats(0.125, 50, width=32),
)
def test_cell_of(pos, size):
    cells = [0] * len(pos)
    gpu(cell_of, len(pos), size, pos, cells).join()
    lo, hi = _cells_within_division_error(pos, size)
    bad = [(p, c, a, b) for p, c, a, b in zip(pos, cells, lo, hi) if not a <= c <= b]
    assert not bad, bad


def _cells_within_division_error(pos, size, ulps: int = 3):
    """The least and greatest `floor(p / size)` a device may give: Vulkan lets OpFDiv be 2.5
    ULP off (docs/language.md), so the floor of any float32 within `ulps` ULP of the correctly
    rounded quotient counts (a quotient just below a whole number may floor one lower)."""
    q = np.asarray(pos, f32) / f32(size)  # numpy: correctly rounded
    lo, hi = q.copy(), q.copy()
    for _ in range(ulps):
        lo, hi = np.nextafter(lo, f32(-np.inf)), np.nextafter(hi, f32(np.inf))
    lo = np.where(q == 0, 0, np.floor(lo))  # 0 / size is +-0 however a device divides
    hi = np.floor(hi)
    # a subnormal quotient may be flushed to +-0 (Vulkan allows it; the H200 does): floor 0
    flushed = np.abs(q) < np.finfo(f32).tiny
    lo, hi = np.where(flushed, np.minimum(lo, 0), lo), np.where(flushed, np.maximum(hi, 0), hi)
    return lo.astype(np.int64).tolist(), hi.astype(np.int64).tolist()


def test_cell_of_tolerance_accepts_only_the_division_error():
    # 3.0 / 3.0 is exactly 1.0: a quotient 1 ULP low floors to 0, which a device may give
    lo_hi = _cells_within_division_error([3.0, 7.5, -7.5, 0.0], 3.0)
    assert lo_hi == ([0, 2, -3, 0], [1, 2, -3, 0])
    assert _cells_within_division_error([7.5, 1e4], 1.0) == ([7, 9999], [7, 10000])
    assert _cells_within_division_error([7.25], 0.125) == ([57], [58])
    # -2^-126 / 2 is subnormal: Python's floor is -1, a flushing device's 0
    assert _cells_within_division_error([-1.1754943508222875e-38], 2.0) == ([-1], [0])


def test_horner():
    coeffs = [1.0, -2.0, 0.5, 3.0]
    x = np.linspace(-2, 2, 301, dtype=f32)
    out = np.zeros_like(x)
    gpu(horner, x.size, coeffs, x, out).join()
    acc = np.zeros_like(x)
    for c in reversed(coeffs):
        acc = (acc * x + f32(c)).astype(f32)
    np.testing.assert_allclose(out, acc, rtol=1e-6, atol=1e-6)  # FMA contraction allowed


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(-1000, 1000).filter(bool)),
        min_size=1,
        max_size=100,
    )
)
def test_int_mix_with_negatives(pairs):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    outs = [[0] * len(a) for _ in range(4)]
    gpu(int_mix, a, b, *outs).join()
    A, B = np.asarray(a, np.int64), np.asarray(b, np.int64)
    assert outs[0] == (A % B).tolist()  # numpy % and // floor like Python
    assert outs[1] == (A & B).tolist()
    assert outs[2] == (A >> 3).tolist()
    wrapped = ((A // B + 2**31) % 2**32 - 2**31).tolist()  # -2**31 // -1 wraps
    assert outs[3] == wrapped


def test_bool_lists_and_or():
    p = [True, True, False, False] * 10
    q = [True, False, True, False] * 10
    both, either, neither = [False] * 40, [False] * 40, [True] * 40
    gpu(bool_ops, p, q, both, either, neither).join()
    assert both == [a and b for a, b in zip(p, q)]
    assert either == [a or b for a, b in zip(p, q)]
    assert neither == [not (a or b) for a, b in zip(p, q)]


def test_collatz():
    start = list(range(1, 500))
    steps = [0] * len(start)
    gpu(collatz, start, steps).join()

    def ref(v):
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        return c

    assert steps == [ref(v) for v in start]


def test_clamp():
    x = [-5.0, 0.5, 7.0, -0.0, 1.0, math.inf, -math.inf]
    where = [9] * len(x)
    gpu(clamp, 0.0, 1.0, x, where).join()
    assert x == [0.0, 0.5, 1.0, -0.0, 1.0, 1.0, 0.0]
    assert where == [-1, 0, 1, 0, 0, 1, -1]


def test_stencil():
    n = 777
    src = np.random.default_rng(3).random(n, dtype=f32)
    dst = np.zeros(n, f32)
    gpu(stencil, n, src, dst).join()
    ref = np.zeros(n, f32)
    ref[1:-1] = f32(0.25) * src[:-2] + f32(0.5) * src[1:-1] + f32(0.25) * src[2:]
    np.testing.assert_allclose(dst, ref, rtol=2e-7, atol=1e-7)
    assert dst[0] == 0 and dst[-1] == 0


def test_thread_block_relations():
    n = 300
    lists = [[-1] * n for _ in range(5)]
    gpu(relations, n, *lists).join()
    g, t, b, d, grid = lists
    assert g == list(range(n))
    assert d == [64] * n and grid == [math.ceil(n / 64)] * n
    assert all(gi == bi * di + ti for gi, bi, di, ti in zip(g, b, d, t))
    assert t == [i % 64 for i in range(n)] and b == [i // 64 for i in range(n)]


def test_barrier_kernel_rotates_within_each_group():
    n = 64 * 5
    x = np.arange(n, dtype=f32)
    tmp = np.zeros(n, f32)
    out = np.zeros(n, f32)
    gpu(rotate_in_group, x, tmp, out).join()
    expected = (x.reshape(5, 64) * 2).astype(f32)
    assert np.array_equal(out.reshape(5, 64), np.roll(expected, -1, axis=1))
