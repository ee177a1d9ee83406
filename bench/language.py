"""Shared memory, subgroups and atomics at scale: a float sum (subgroup sums, a shared slot
per subgroup, one atomic per workgroup) and a tiled matrix multiply (64x64 blocks of c, a 4x4
register tile per invocation), each next to torch in the same run when torch and CUDA are there
(x.sum(); x @ y in float32 with TF32 disabled).

    python bench/language.py [--sum-log2 24,28] [--mm 1000,2048,4096] [--json out.json]

Ours: inputs bound in a GpuArena, K launches queued, one join(download=False); device time
per launch from timestamp queries (gpu(..., timed=True)) and wall time per launch. On lavapipe
use small sizes (--mm 1000 takes seconds there).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from cthreads.gpu import (
    BlockIdx,
    GlobalIdx,
    Gpu,
    GpuArena,
    ThreadIdx,
    atomic_add,
    device_name,
    gpu,
    num_subgroups,
    shared,
    subgroup_add,
    subgroup_id,
    subgroup_lane,
)
from cthreads.sync import __sync_threads

WG = 256
BM = 64  # matmul: block of c per workgroup (64x64)
BK = 16  # matmul: k-slice staged in shared memory


@Gpu(workgroup_size=WG)
def block_sum(n: int, x: list[float], total: list[float]) -> None:
    # n invocations stride over x with four independent loads in flight each (one
    # accumulator per load: the adds do not wait on each other); a subgroup sum, one shared
    # slot per subgroup, and one atomic_add per workgroup.
    partial = shared(float, WG)
    size: int = len(x)
    j: int = GlobalIdx.x
    a0: float = 0.0
    a1: float = 0.0
    a2: float = 0.0
    a3: float = 0.0
    while j + 3 * n < size:
        a0 += x[j]
        a1 += x[j + n]
        a2 += x[j + 2 * n]
        a3 += x[j + 3 * n]
        j += 4 * n
    while j < size:
        a0 += x[j]
        j += n
    s = subgroup_add((a0 + a1) + (a2 + a3))
    if subgroup_lane() == 0:
        partial[subgroup_id()] = s
    __sync_threads()
    if ThreadIdx.x == 0:
        acc: float = 0.0
        for k in range(num_subgroups()):
            acc += partial[k]
        atomic_add(total, 0, acc)


@Gpu(workgroup_size=WG)
def matmul(n: int, m: int, k: int, p: int, a: list[float], b: list[float], c: list[float]) -> None:
    # A 64x64 block of c per workgroup of 16x16 invocations, each accumulating a 4x4 register
    # tile (rows ty + 16*i, columns tx + 16*j: conflict-free shared-memory reads); the k axis
    # goes through shared memory 16 at a time. Written out by hand: it predates local arrays
    # and stays as it is so its H200 numbers remain comparable (bench/sgemm.py is the
    # local-array SGEMM); math.fma says where a fused multiply-add is wanted (floats are never
    # contracted implicitly).
    As = shared(float, BM * BK)
    Bs = shared(float, BK * BM)
    t: int = ThreadIdx.x
    tx: int = t % 16
    ty: int = t // 16
    blocks_n: int = (p + BM - 1) // BM
    bm: int = (BlockIdx.x // blocks_n) * BM
    bn: int = (BlockIdx.x % blocks_n) * BM
    c00: float = 0.0
    c01: float = 0.0
    c02: float = 0.0
    c03: float = 0.0
    c10: float = 0.0
    c11: float = 0.0
    c12: float = 0.0
    c13: float = 0.0
    c20: float = 0.0
    c21: float = 0.0
    c22: float = 0.0
    c23: float = 0.0
    c30: float = 0.0
    c31: float = 0.0
    c32: float = 0.0
    c33: float = 0.0
    for k0 in range(0, k, BK):
        for r in range(4):
            e: int = t + WG * r
            ar: int = bm + e // BK
            ac: int = k0 + e % BK
            As[e] = a[ar * k + ac] if ar < m and ac < k else 0.0
            br: int = k0 + e // BM
            bc: int = bn + e % BM
            Bs[e] = b[br * p + bc] if br < k and bc < p else 0.0
        __sync_threads()
        for kk in range(BK):
            a0: float = As[ty * BK + kk]
            a1: float = As[(ty + 16) * BK + kk]
            a2: float = As[(ty + 32) * BK + kk]
            a3: float = As[(ty + 48) * BK + kk]
            b0: float = Bs[kk * BM + tx]
            b1: float = Bs[kk * BM + tx + 16]
            b2: float = Bs[kk * BM + tx + 32]
            b3: float = Bs[kk * BM + tx + 48]
            c00 = math.fma(a0, b0, c00)
            c01 = math.fma(a0, b1, c01)
            c02 = math.fma(a0, b2, c02)
            c03 = math.fma(a0, b3, c03)
            c10 = math.fma(a1, b0, c10)
            c11 = math.fma(a1, b1, c11)
            c12 = math.fma(a1, b2, c12)
            c13 = math.fma(a1, b3, c13)
            c20 = math.fma(a2, b0, c20)
            c21 = math.fma(a2, b1, c21)
            c22 = math.fma(a2, b2, c22)
            c23 = math.fma(a2, b3, c23)
            c30 = math.fma(a3, b0, c30)
            c31 = math.fma(a3, b1, c31)
            c32 = math.fma(a3, b2, c32)
            c33 = math.fma(a3, b3, c33)
        __sync_threads()
    r0: int = bm + ty + 0
    r1: int = bm + ty + 16
    r2: int = bm + ty + 32
    r3: int = bm + ty + 48
    c_0: int = bn + tx + 0
    c_1: int = bn + tx + 16
    c_2: int = bn + tx + 32
    c_3: int = bn + tx + 48
    if r0 < m and c_0 < p:
        c[r0 * p + c_0] = c00
    if r0 < m and c_1 < p:
        c[r0 * p + c_1] = c01
    if r0 < m and c_2 < p:
        c[r0 * p + c_2] = c02
    if r0 < m and c_3 < p:
        c[r0 * p + c_3] = c03
    if r1 < m and c_0 < p:
        c[r1 * p + c_0] = c10
    if r1 < m and c_1 < p:
        c[r1 * p + c_1] = c11
    if r1 < m and c_2 < p:
        c[r1 * p + c_2] = c12
    if r1 < m and c_3 < p:
        c[r1 * p + c_3] = c13
    if r2 < m and c_0 < p:
        c[r2 * p + c_0] = c20
    if r2 < m and c_1 < p:
        c[r2 * p + c_1] = c21
    if r2 < m and c_2 < p:
        c[r2 * p + c_2] = c22
    if r2 < m and c_3 < p:
        c[r2 * p + c_3] = c23
    if r3 < m and c_0 < p:
        c[r3 * p + c_0] = c30
    if r3 < m and c_1 < p:
        c[r3 * p + c_1] = c31
    if r3 < m and c_2 < p:
        c[r3 * p + c_2] = c32
    if r3 < m and c_3 < p:
        c[r3 * p + c_3] = c33


def _ours(fn, args, launches: int) -> tuple[float, float | None]:
    """(wall ms per launch, device ms per launch or None)."""
    gpu(fn, *args).join(download=False)  # warm: pipeline built, buffers resident
    dev = []
    t0 = time.perf_counter()
    for _ in range(launches - 1):
        gpu(fn, *args)
    job = gpu(fn, *args, timed=True)
    job.join(download=False)
    wall = (time.perf_counter() - t0) / launches * 1e3
    for _ in range(3):
        j = gpu(fn, *args, timed=True)
        j.join(download=False)
        if j.elapsed_ms:  # None without timestamps; 0.0 where the device's clock is coarse
            dev.append(j.elapsed_ms)
    return wall, (min(dev) if dev else None)


def _torch(fn, launches: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    fn(torch)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        fn(torch)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / launches


def bench_sum(n: int, launches: int) -> dict:
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    total = np.zeros(1, np.float32)
    threads = min(n, WG * 1024)
    with GpuArena() as arena:
        arena.bind(x=x, total=total)
        wall, dev = _ours(block_sum, (threads, x, total), launches)
    check = np.zeros(1, np.float32)
    gpu(block_sum, threads, x, check).join()
    ref = float(x.astype(np.float64).sum())
    state = {}

    def tsum(torch):
        if "x" not in state:
            state["x"] = torch.from_numpy(x).cuda()
        return state["x"].sum()

    t_ms = _torch(tsum, launches)
    best = dev if dev is not None else wall
    row = {
        "bench": "sum",
        "n": n,
        "ours_wall_ms": wall,
        "ours_device_ms": dev,
        "ours_GBps": 4 * n / best / 1e6,
        "rel_error": abs(float(check[0]) - ref) / ref,
        "torch_ms": t_ms,
        "torch_GBps": 4 * n / t_ms / 1e6 if t_ms else None,
    }
    if t_ms:
        row["ours_over_torch"] = t_ms / best
    return row


def bench_mm(s: int, launches: int) -> dict:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((s, s)).astype(np.float32)
    b = rng.standard_normal((s, s)).astype(np.float32)
    c = np.zeros((s, s), np.float32)
    groups = (-(-s // BM)) ** 2
    args = (groups * WG, s, s, s, a, b, c)
    with GpuArena() as arena:
        arena.bind(a=a, b=b, c=c)
        wall, dev = _ours(matmul, args, launches)
        arena.sync("c")
    err = float(np.abs(c - a.astype(np.float64) @ b.astype(np.float64)).max())
    state = {}

    def tmm(torch):
        if "a" not in state:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            state["a"], state["b"] = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        return state["a"] @ state["b"]

    t_ms = _torch(tmm, launches)
    best = dev if dev is not None else wall
    flop = 2.0 * s**3
    row = {
        "bench": "matmul",
        "n": s,
        "ours_wall_ms": wall,
        "ours_device_ms": dev,
        "ours_TFLOPs": flop / best / 1e9,
        "max_abs_error": err,
        "torch_ms": t_ms,
        "torch_TFLOPs": flop / t_ms / 1e9 if t_ms else None,
    }
    if t_ms:
        row["ours_over_torch"] = t_ms / best
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sum-log2", default="24")
    ap.add_argument("--mm", default="256")
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--json")
    opts = ap.parse_args()
    print(f"# {device_name()}", flush=True)
    rows = []
    for lg in (int(v) for v in opts.sum_log2.split(",") if v):
        rows.append(bench_sum(1 << lg, opts.launches))
        print(json.dumps(rows[-1]), flush=True)
    for s in (int(v) for v in opts.mm.split(",") if v):
        rows.append(bench_mm(s, opts.launches))
        print(json.dumps(rows[-1]), flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"device": device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
