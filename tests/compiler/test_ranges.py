"""The interval analysis that drops provably dead shared-array guards (compiler/ranges.py):
what it proves, what it must refuse to prove, and that kernels still compute the same."""

from __future__ import annotations

import numpy as np

from cthreads.compiler import ir
from cthreads.compiler.ranges import shared_accesses_in_range
from cthreads.compiler.target import DEFAULT_TARGET
from cthreads.record import Record
from cthreads.gpu import Gpu, ThreadIdx, gpu, shared
from cthreads.sync import __sync_threads
from cthreads.testing import emulate

WG = 64


@Gpu(workgroup_size=WG)
def tiled(n: int, src: list[float], out: list[float]) -> None:
    tile = shared(float, WG * 4)
    t: int = ThreadIdx.x
    for r in range(4):
        tile[t + WG * r] = src[t + WG * r]
    __sync_threads()
    acc: float = 0.0
    for kk in range(4):
        acc += tile[(t // 8) * 8 + kk] + tile[t % 16 + 16 * kk]
    s: int = WG // 2
    while s > 0:
        acc += tile[s + t % s]
        s //= 2
    out[t] = acc


@Gpu(workgroup_size=WG)
def unprovable(n: int, m: int, src: list[int], out: list[int]) -> None:
    tile = shared(int, WG)
    t: int = ThreadIdx.x
    tile[t] = t * 10
    __sync_threads()
    a: int = tile[t + 1]  # one past the end for the last invocation
    b: int = tile[src[t]]  # data-dependent
    c: int = 0
    for k in range(m):  # bound is a parameter
        c += tile[k]
    j: int = 0
    for k in range(8):
        j = k
        if src[t] > 100:
            j = 70  # assigned inside a branch: may leave the range
    d: int = tile[j]
    w: int = t * 1073741824  # wraps on the device
    e: int = tile[w % 64 + w]
    i: int = 0
    while i < 10:
        if src[t] == i:
            break
        i += 1
    f: int = tile[i * 7]  # after the loop, i may be 10: 70 is out of range
    out[t] = a + b + c + d + e + f


def _accesses(kernel) -> tuple[int, list]:
    lowered = kernel.lower(DEFAULT_TARGET)
    proven = shared_accesses_in_range(lowered)
    found: list = []

    def walk(node):
        if isinstance(node, ir.SharedLoad | ir.SharedStore):
            found.append(node)
        if isinstance(node, tuple):
            for item in node:
                walk(item)
        elif isinstance(node, Record):
            for name in node._fields:
                walk(getattr(node, name))

    walk(lowered.body)
    return sum(proven.get(id(n)) is n for n in found), found


def test_tiled_indexes_are_all_proven():
    proven, found = _accesses(tiled)
    assert len(found) == 4
    assert proven == len(found)


def test_doubtful_indexes_keep_their_guard():
    proven, found = _accesses(unprovable)
    # only `tile[t] = ...` is certain; every read is one of the doubtful kinds above
    assert proven == 1, [type(n).__name__ for n in found]


def test_proven_kernel_has_no_shared_guards_left():
    guards = tiled.disassemble().count("OpULessThan")
    # the bound checks of src/out remain; none for the 4 shared accesses
    assert guards <= 3, guards


def _unprovable_reference(m: int, src: np.ndarray) -> np.ndarray:
    """`unprovable` by hand, with the device's rules: a shared read out of range gives 0,
    int32 arithmetic wraps."""

    def tile(i: int) -> int:
        return i * 10 if 0 <= i < WG else 0

    def wrap(v: int) -> int:
        return (v + (1 << 31)) % (1 << 32) - (1 << 31)

    out = np.zeros(WG, np.int32)
    for t in range(WG):
        j = 70 if src[t] > 100 else 7
        w = wrap(t * 1073741824)
        i = next((i for i in range(10) if src[t] == i), 10)
        total = tile(t + 1) + tile(int(src[t])) + sum(tile(k) for k in range(m)) + tile(j)
        out[t] = wrap(total + tile(wrap(w % 64 + w)) + tile(i * 7))
    return out


def test_tiled_kernel_agrees_with_the_emulator():
    src = np.random.default_rng(5).standard_normal(WG * 4).astype(np.float32)
    out, ref = np.zeros(WG, np.float32), np.zeros(WG, np.float32)
    gpu(tiled, WG, src, out).join()
    emulate(tiled, WG, src, ref)
    np.testing.assert_array_equal(out, ref)


def test_guarded_reads_out_of_range_still_give_zero():
    src = np.random.default_rng(6).integers(-3, 120, WG).astype(np.int32)
    src[:8] = [0, 63, 64, -1, 200, 5, 9, 10]
    out = np.zeros(WG, np.int32)
    gpu(unprovable, WG, 5, src, out).join()
    np.testing.assert_array_equal(out, _unprovable_reference(5, src))


# -- the value domain (interval + residue) is sound: every concrete result is inside -----------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cthreads.compiler import ranges as R  # noqa: E402


@st.composite
def _values(draw):
    """A Value and the concrete set it stands for (small, so the set can be listed)."""
    if draw(st.booleans()):
        c = draw(st.integers(-40, 40))
        return R._exact(c), {c}
    m = draw(st.integers(1, 12))
    r = draw(st.integers(0, m - 1))
    lo = draw(st.integers(-60, 60))
    hi = lo + draw(st.integers(0, 60))
    members = {v for v in range(lo, hi + 1) if v % m == r}
    if not members:
        return R._exact(lo), {lo}
    return R._make(lo, hi, m, r), members


def _holds(value, v) -> bool:
    lo, hi, m, r = value
    return lo <= v <= hi and (v == r if m == 0 else v % m == r)


_OPS = {
    ir.BinOp.ADD: lambda a, b: a + b,
    ir.BinOp.SUB: lambda a, b: a - b,
    ir.BinOp.MUL: lambda a, b: a * b,
    ir.BinOp.FLOORDIV: lambda a, b: a // b if b > 0 else None,
    ir.BinOp.MOD: lambda a, b: a % b if b > 0 else None,
    ir.BinOp.MIN: min,
    ir.BinOp.MAX: max,
}


@settings(max_examples=400, deadline=None)
@given(_values(), _values(), st.sampled_from(sorted(_OPS, key=lambda o: o.name)))
def test_binary_results_contain_every_concrete_result(a, b, op):
    (va, sa), (vb, sb) = a, b
    out = R._Analysis.binary(op, va, vb)
    for x in sa:
        for y in sb:
            want = _OPS[op](x, y)
            if want is not None and (op not in (ir.BinOp.FLOORDIV, ir.BinOp.MOD) or vb[0] > 0):
                assert _holds(out, want), (op, va, vb, x, y, want, out)


@settings(max_examples=300, deadline=None)
@given(_values(), _values())
def test_join_contains_both_sides(a, b):
    (va, sa), (vb, sb) = a, b
    joined = R._join(va, vb)
    assert all(_holds(joined, v) for v in sa | sb)
    assert R._within(va, joined) and R._within(vb, joined)


def test_a_wrapping_product_keeps_only_its_power_of_two_residue():
    unknown = R._UNKNOWN
    by_64 = R._Analysis.binary(ir.BinOp.MUL, unknown, R._exact(64))
    assert by_64 == (R.INT_MIN, R.INT_MAX, 64, 0)  # n * 64 wraps mod 2**32: still a multiple
    by_6 = R._Analysis.binary(ir.BinOp.MUL, unknown, R._exact(6))
    assert by_6 == (R.INT_MIN, R.INT_MAX, 2, 0)  # 3 does not survive a wrap
    assert R._Analysis.binary(ir.BinOp.ADD, unknown, R._exact(1)) == R._UNKNOWN


def test_min_and_max_keep_their_tight_bounds():
    small, big = R._make(0, 10, 1, 0), R._make(5, 100, 1, 0)
    assert R._Analysis.binary(ir.BinOp.MIN, small, big)[:2] == (0, 10)
    assert R._Analysis.binary(ir.BinOp.MAX, small, big)[:2] == (5, 100)
