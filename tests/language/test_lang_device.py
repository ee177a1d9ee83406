"""Shared memory, barriers and atomics on the device (lavapipe in CI), against numpy references.

Tolerances are stated where float results depend on the order of additions (atomics and tree
reductions reorder them): the bound is the worst case of recursive float32 summation,
`(number of roundings along the longest chain) * 2**-24 * sum(|x|)`.
"""

from __future__ import annotations

import functools
import operator

import lang_kernels as L
import numpy as np
import pytest

from cthreads.gpu import available, gpu

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")
U = 2.0**-24  # float32 unit roundoff


def test_sum_of_ten_million_floats():
    n = 10**7
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    threads = L.WG * 64  # 64 workgroups; each invocation adds every 16384th element
    total = np.zeros(1, np.float32)
    gpu(L.block_sum, threads, x, total).join()
    ref = x.astype(np.float64).sum()
    # chain: ceil(n / threads) sequential adds, log2(WG) tree levels, 64 atomic adds
    chain = -(-n // threads) + 8 + 64
    assert abs(float(total[0]) - ref) <= chain * U * ref, (total[0], ref)


def test_sum_small_and_ragged():
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    total = np.zeros(1, np.float32)
    gpu(L.block_sum, L.WG * 2, x, total).join()  # 512 invocations, two groups
    ref = x.astype(np.float64).sum()
    bound = (4 + 8 + 2) * U * np.abs(x.astype(np.float64)).sum()
    assert abs(float(total[0]) - ref) <= bound


@pytest.mark.parametrize("kernel", [L.histogram, L.histogram_shared], ids=lambda k: k.name)
def test_histogram_256_bins(kernel):
    x = np.random.default_rng(3).integers(-(10**6), 10**6, 10**6, dtype=np.int32)
    hist = np.zeros(L.BINS, np.int32)
    gpu(kernel, len(x), x, hist).join()
    np.testing.assert_array_equal(hist, np.bincount(x & 255, minlength=256))


def _matmul(m, k, p, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, p)).astype(np.float32)
    c = np.full((m, p), np.nan, np.float32)
    groups = -(-m // L.TILE) * -(-p // L.TILE)
    gpu(L.matmul, groups * L.TILE * L.TILE, m, k, p, a, b, c).join()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # k products and k additions in sequence, each rounded (no fused multiply-add)
    bound = (k + 1) * U * (np.abs(a64) @ np.abs(b64))
    np.testing.assert_array_less(np.abs(c - a64 @ b64), bound + 1e-30)


@pytest.mark.parametrize("shape", [(200, 200, 200), (67, 45, 53), (1, 1, 1), (17, 33, 5)])
def test_tiled_matmul(shape):
    _matmul(*shape)


def test_cas_lock_free_max():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(20000).astype(np.float32)
    best = np.full(1, -np.inf, np.float32)
    gpu(L.cas_max, len(x), x, best).join()
    assert best[0] == x.max()
    xi = rng.integers(-(2**31), 2**31 - 1, 20000, dtype=np.int32)
    besti = np.full(1, -(2**31), np.int32)
    gpu(L.cas_max_int, len(xi), xi, besti).join()
    assert besti[0] == xi.max()


def test_int_atomics_all_ops():
    x = np.random.default_rng(5).integers(-(2**31), 2**31 - 1, 10000, dtype=np.int32)
    acc = np.array([0, 2**31 - 1, -(2**31), -1, 0, 0], np.int32)
    gpu(L.int_atomics, len(x), x, acc).join()
    v = x.tolist()
    ref = [
        (sum(v) + 2**31) % 2**32 - 2**31,  # wraps like int32
        min(v),
        max(v),
        functools.reduce(operator.and_, v, -1),
        functools.reduce(operator.or_, v, 0),
        functools.reduce(operator.xor, v, 0),
    ]
    assert acc.tolist() == ref


@pytest.mark.parametrize("kernel", [L.float_atomics, L.float_atomics_cas], ids=lambda k: k.name)
def test_float_atomics(kernel, monkeypatch):
    x = np.random.default_rng(6).random(20000, dtype=np.float32)
    acc = np.array([0.0, np.inf, -np.inf], np.float32)
    if kernel is L.float_atomics_cas:  # the compare-exchange loop, as on devices without it
        from cthreads.launch import session

        gpu(L.histogram, 1, np.zeros(1, np.int32), np.zeros(256, np.int32)).join()
        target = session.state.target.replace(atomic_float32_add=False)
        monkeypatch.setattr(session.state, "target", target)
        assert "AtomicFAddEXT" not in kernel.disassemble()
    gpu(kernel, len(x), x, acc).join()
    ref = x.astype(np.float64).sum()
    assert abs(float(acc[0]) - ref) <= len(x) * U * ref
    assert acc[1] == x.min() and acc[2] == x.max()


def test_compare_exchange_tickets_are_unique():
    n = 5000
    counter = np.zeros(1, np.int32)
    got = np.full(n, -1, np.int32)
    gpu(L.tickets, n, counter, got).join()
    assert counter[0] == n
    assert sorted(got.tolist()) == list(range(n))


def test_exchange_hands_every_value_on_once():
    x = np.arange(1000, dtype=np.float32)
    cell = np.array([-1.0], np.float32)
    olds = np.zeros(1000, np.float32)
    gpu(L.exchange_chain, 1000, x, cell, olds).join()
    assert sorted([*olds.tolist(), float(cell[0])]) == [-1.0, *x.tolist()]


def test_float_atomics_on_shared_arrays():
    x = np.random.default_rng(7).random(256, dtype=np.float32)
    out = np.zeros(12, np.float32)
    gpu(L.shared_float_atomics, 256, x, out).join()
    for g in range(4):
        chunk = x[g * 64 : (g + 1) * 64]
        s = x[g * 64]
        for _ in range(64):  # 64 additions of 1.0 round the same in any order
            s = np.float32(s + np.float32(1.0))
        assert out[3 * g] == s
        assert out[3 * g + 1] == min(chunk.min(), x[g * 64])
        assert out[3 * g + 2] == max(chunk.max(), x[g * 64])


def test_shared_out_of_range_reads_zero_writes_dropped():
    out = np.zeros(64, np.int32)
    gpu(L.shared_bounds, 32, np.array([32, 64], np.int32), out).join()
    assert out[:32].tolist() == list(range(1, 33))  # the stray writes and atomics did nothing
    assert out[32:].tolist() == [32 + t % 2 if t < 8 else 32 for t in range(32)]


def test_list_atomics_out_of_range_do_nothing():
    h = np.zeros(10, np.int32)
    f = np.zeros(3, np.float32)
    olds = np.full(10, 7, np.int32)
    gpu(L.list_atomic_bounds, 10, h, f, olds).join()
    assert not h.any() and not f.any() and not olds.any()


def test_host_call_runs_as_python():
    """A kernel called directly runs as plain Python: shared() gives a list, atomics update."""
    hist = [0] * 256
    L.histogram(1, [258], hist)  # GlobalIdx.x is 0 on the host
    assert hist[2] == 1 and sum(hist) == 1


def test_list_writes_before_a_barrier_are_seen_after_it():
    # each invocation writes its own element, then reads its neighbour's after the barrier:
    # the barrier must order list memory here (UniformMemory, usage.barriers_ordering_lists)
    from cthreads.gpu import Gpu, GlobalIdx
    from cthreads.sync import __sync_threads

    @Gpu(workgroup_size=64)
    def neighbours(x: list[int], y: list[int]) -> None:
        i = GlobalIdx.x
        x[i] = i * 3 + 1
        __sync_threads()
        y[i] = x[i ^ 1]

    n = 64 * 16
    x, y = [0] * n, [0] * n
    gpu(neighbours, x, y, grid=n).join()
    assert y == [(i ^ 1) * 3 + 1 for i in range(n)]
