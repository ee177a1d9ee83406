"""Shared memory and atomics at scale: a float sum (shared-memory tree + one atomic per
workgroup) and a 16x16-tiled matrix multiply, each next to torch in the same run when torch
and CUDA are there (x.sum(); x @ y in float32 with TF32 disabled).

    python bench/language.py [--sum-log2 24,28] [--mm 1000,2048,4096] [--json out.json]

Ours: inputs bound in a GpuArena, K launches queued, one join(download=False); device time
per launch from timestamp queries (gpu(..., timed=True)) and wall time per launch. On lavapipe
use small sizes (--mm 1000 takes seconds there).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from cthreads.gpu import (
    BlockDim,
    BlockIdx,
    GlobalIdx,
    Gpu,
    GpuArena,
    ThreadIdx,
    atomic_add,
    device_name,
    gpu,
    shared,
)
from cthreads.sync import __sync_threads

TILE = 16
WG = 256


@Gpu(workgroup_size=WG)
def block_sum(n: int, x: list[float], total: list[float]) -> None:
    partial = shared(float, BlockDim.x)
    t: int = ThreadIdx.x
    acc: float = 0.0
    for j in range(GlobalIdx.x, len(x), n):
        acc += x[j]
    partial[t] = acc
    __sync_threads()
    s: int = WG // 2
    while s > 0:
        if t < s:
            partial[t] += partial[t + s]
        __sync_threads()
        s //= 2
    if t == 0:
        atomic_add(total, 0, partial[0])


@Gpu(workgroup_size=TILE * TILE)
def matmul(n: int, m: int, k: int, p: int, a: list[float], b: list[float], c: list[float]) -> None:
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
    groups = (-(-s // TILE)) ** 2
    args = (groups * TILE * TILE, s, s, s, a, b, c)
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
