"""Kernels of the language-extension tests: shared memory, barriers and atomics (issue 8)."""

from __future__ import annotations

from cthreads.gpu import (
    BlockDim,
    BlockIdx,
    GlobalIdx,
    Gpu,
    GridDim,
    ThreadIdx,
    atomic_add,
    atomic_and,
    atomic_compare_exchange,
    atomic_exchange,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xor,
    shared,
)
from cthreads.sync import __sync_threads

TILE = 16  # matmul tile edge: TILE * TILE invocations per workgroup
WG = 256  # reduction workgroup width
BINS = 256


@Gpu(workgroup_size=WG)
def block_sum(n: int, x: list[float], total: list[float]) -> None:
    """Each invocation adds a strided slice of `x` (n invocations in all), the workgroup adds
    those in a shared-memory tree, and one atomic_add per workgroup adds the partial."""
    partial = shared(float, BlockDim.x)
    t: int = ThreadIdx.x
    acc: float = 0.0
    for j in range(GlobalIdx.x, len(x), n):
        acc += x[j]
    partial[t] = acc
    __sync_threads()
    s: int = len(partial) // 2
    while s > 0:
        if t < s:
            partial[t] += partial[t + s]
        __sync_threads()
        s //= 2
    if t == 0:
        atomic_add(total, 0, partial[0])


@Gpu
def histogram(n: int, x: list[int], hist: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        atomic_add(hist, x[i] & 255, 1)


@Gpu(workgroup_size=BINS)
def histogram_shared(n: int, x: list[int], hist: list[int]) -> None:
    """A private histogram per workgroup in shared memory, merged with one atomic per bin."""
    local = shared(int, BINS)
    t: int = ThreadIdx.x
    for j in range(GlobalIdx.x, n, BlockDim.x * GridDim.x):
        atomic_add(local, x[j] & 255, 1)
    __sync_threads()
    if local[t] != 0:
        atomic_add(hist, t, local[t])


@Gpu(workgroup_size=TILE * TILE)
def matmul(n: int, m: int, k: int, p: int, a: list[float], b: list[float], c: list[float]) -> None:
    """c (m x p) = a (m x k) @ b (k x p), row-major; one workgroup per TILE x TILE block of c,
    tiles of a and b staged through shared memory. Launch with n = groups * TILE * TILE."""
    As = shared(float, TILE * TILE)
    Bs = shared(float, TILE * TILE)
    t: int = ThreadIdx.x
    tx: int = t % TILE
    ty: int = t // TILE
    tiles_n: int = (p + TILE - 1) // TILE
    row: int = (BlockIdx.x // tiles_n) * TILE + ty
    col: int = (BlockIdx.x % tiles_n) * TILE + tx
    acc: float = 0.0
    for k0 in range(0, k, TILE):
        As[t] = a[row * k + k0 + tx] if row < m and k0 + tx < k else 0.0
        Bs[t] = b[(k0 + ty) * p + col] if k0 + ty < k and col < p else 0.0
        __sync_threads()
        for kk in range(TILE):
            acc += As[ty * TILE + kk] * Bs[kk * TILE + tx]
        __sync_threads()
    if row < m and col < p:
        c[row * p + col] = acc


@Gpu
def cas_max(n: int, x: list[float], best: list[float]) -> None:
    """A lock-free float maximum built from atomic_compare_exchange."""
    i: int = GlobalIdx.x
    if i < n:
        v: float = x[i]
        cur: float = best[0]
        while v > cur:
            old = atomic_compare_exchange(best, 0, cur, v)
            if old == cur:
                break
            cur = old


@Gpu
def cas_max_int(n: int, x: list[int], best: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        v: int = x[i]
        cur: int = best[0]
        while v > cur:
            old: int = atomic_compare_exchange(best, 0, cur, v)
            if old == cur:
                break
            cur = old


@Gpu
def int_atomics(n: int, x: list[int], acc: list[int]) -> None:
    """Every associative int atomic, all invocations on the same few elements."""
    i: int = GlobalIdx.x
    if i < n:
        v: int = x[i]
        atomic_add(acc, 0, v)
        atomic_min(acc, 1, v)
        atomic_max(acc, 2, v)
        atomic_and(acc, 3, v)
        atomic_or(acc, 4, v)
        atomic_xor(acc, 5, v)


@Gpu
def float_atomics(n: int, x: list[float], acc: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        atomic_add(acc, 0, x[i])
        atomic_min(acc, 1, x[i])
        atomic_max(acc, 2, x[i])


@Gpu
def tickets(n: int, counter: list[int], got: list[int]) -> None:
    """A counter incremented with a compare-exchange retry loop: every ticket handed out once."""
    i: int = GlobalIdx.x
    if i < n:
        cur: int = counter[0]
        while True:
            old = atomic_compare_exchange(counter, 0, cur, cur + 1)
            if old == cur:
                got[i] = old
                break
            cur = old


@Gpu
def exchange_chain(n: int, x: list[float], cell: list[float], olds: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        olds[i] = atomic_exchange(cell, 0, x[i])


@Gpu(workgroup_size=64)
def shared_float_atomics(n: int, x: list[float], out: list[float]) -> None:
    """Float atomics on a shared array (a compare-exchange loop on every device)."""
    acc = shared(float, 3)
    t: int = ThreadIdx.x
    i: int = GlobalIdx.x
    if t < 3:
        acc[t] = x[BlockIdx.x * BlockDim.x]
    __sync_threads()
    if i < n:
        atomic_add(acc, 0, 1.0)
        atomic_min(acc, 1, x[i])
        atomic_max(acc, 2, x[i])
    __sync_threads()
    if t < 3:
        out[BlockIdx.x * 3 + t] = acc[t]


@Gpu(workgroup_size=32)
def shared_bounds(n: int, probe: list[int], out: list[int]) -> None:
    """Out-of-range shared indexes: reads give 0, writes and atomics do nothing."""
    buf = shared(int, 32)
    flags = shared(bool, 8)
    t: int = ThreadIdx.x
    buf[t] = t + 1
    buf[t + probe[0]] = 99  # probe[0] = 32: every write lands outside
    if t < 8:
        flags[t] = t % 2 == 1
    __sync_threads()
    old: int = atomic_add(buf, t - probe[1], 1000)  # probe[1] = 64: outside, old = 0
    out[t] = buf[t] + buf[t + probe[0]] + old
    out[32 + t] = len(buf) + int(flags[t])


@Gpu
def list_atomic_bounds(n: int, h: list[int], f: list[float], olds: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        a: int = atomic_add(h, i + len(h), 5)
        b: float = atomic_max(f, -1 - i, 5.0)
        olds[i] = a + int(b)


@Gpu
def float_atomics_cas(n: int, x: list[float], acc: list[float]) -> None:
    """float_atomics, launched with a target that lacks native float atomic add."""
    i: int = GlobalIdx.x
    if i < n:
        atomic_add(acc, 0, x[i])
        atomic_min(acc, 1, x[i])
        atomic_max(acc, 2, x[i])


ALL = [
    block_sum,
    histogram,
    histogram_shared,
    matmul,
    cas_max,
    cas_max_int,
    int_atomics,
    float_atomics,
    tickets,
    exchange_chain,
    shared_float_atomics,
    shared_bounds,
    list_atomic_bounds,
    float_atomics_cas,
]
