"""f16 (and, once the language has it, bf16) matmul on the matrix units, next to torch.matmul.

    python bench/matmul_tiles.py [--sizes 4096,8192] [--launches 10] [--json out.json]

The kernel is written in the kernel language with matrix tiles (docs/language-extensions.md):
a workgroup of 4 subgroups (128 invocations) computes a 64 x 128 block of C; each subgroup
holds a 32 x 64 part of it as 2 x 4 accumulator tiles of 16 x 16 (float32) and, per 16-wide
step of K, loads 2 tiles of A and 4 of B straight from the lists (L1/L2 serve the reuse
between subgroups) and issues 8 `tile_mma`. M, N, K must be multiples of 64, 128 and 16.

Each row of the output: our device time (timestamps) and wall time per launch, TFLOP/s, torch's
time for `torch.matmul` of the same f16 (bf16) CUDA tensors in the same run (skipped without
torch or CUDA), the ratio, and the check against torch (or numpy at small sizes): the largest
|ours - reference| against the tolerance K * 2**-23 * max(|A| @ |B|) (float32 accumulation of
exact f16 products may differ by one rounding per addition), plus half an f16 step of the
largest result when the reference is torch's (its f16 output is rounded to f16).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from cthreads.gpu import (
    BlockIdx,
    Gpu,
    GpuArena,
    device_name,
    f16,
    f32,
    gpu,
    matrix_shapes,
    subgroup_id,
    tile_fill,
    tile_load,
    tile_mma,
    tile_store,
)

BM, BN = 64, 128  # C block per workgroup
WG = 128  # 4 subgroups of 32 (NVIDIA)


@Gpu(workgroup_size=WG)
def mm_tiles(a: list[f16], b: list[f16], c: list[f32], m: int, n: int, k: int):
    sg = subgroup_id()  # 0..3: a 2 x 2 arrangement of 32 x 64 parts
    blocks_n = n // BN
    r0 = (BlockIdx.x // blocks_n) * BM + (sg // 2) * 32
    c0 = (BlockIdx.x % blocks_n) * BN + (sg % 2) * 64
    acc00 = tile_fill(f32, 16, 16, 0.0)
    acc01 = tile_fill(f32, 16, 16, 0.0)
    acc02 = tile_fill(f32, 16, 16, 0.0)
    acc03 = tile_fill(f32, 16, 16, 0.0)
    acc10 = tile_fill(f32, 16, 16, 0.0)
    acc11 = tile_fill(f32, 16, 16, 0.0)
    acc12 = tile_fill(f32, 16, 16, 0.0)
    acc13 = tile_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, 16):
        a0 = tile_load(a, r0 * k + kk, k, 16, 16, use="a")
        a1 = tile_load(a, (r0 + 16) * k + kk, k, 16, 16, use="a")
        b0 = tile_load(b, kk * n + c0, n, 16, 16, use="b")
        b1 = tile_load(b, kk * n + c0 + 16, n, 16, 16, use="b")
        b2 = tile_load(b, kk * n + c0 + 32, n, 16, 16, use="b")
        b3 = tile_load(b, kk * n + c0 + 48, n, 16, 16, use="b")
        acc00 = tile_mma(a0, b0, acc00)
        acc01 = tile_mma(a0, b1, acc01)
        acc02 = tile_mma(a0, b2, acc02)
        acc03 = tile_mma(a0, b3, acc03)
        acc10 = tile_mma(a1, b0, acc10)
        acc11 = tile_mma(a1, b1, acc11)
        acc12 = tile_mma(a1, b2, acc12)
        acc13 = tile_mma(a1, b3, acc13)
    tile_store(c, r0 * n + c0, n, acc00)
    tile_store(c, r0 * n + c0 + 16, n, acc01)
    tile_store(c, r0 * n + c0 + 32, n, acc02)
    tile_store(c, r0 * n + c0 + 48, n, acc03)
    tile_store(c, (r0 + 16) * n + c0, n, acc10)
    tile_store(c, (r0 + 16) * n + c0 + 16, n, acc11)
    tile_store(c, (r0 + 16) * n + c0 + 32, n, acc12)
    tile_store(c, (r0 + 16) * n + c0 + 48, n, acc13)


def grid(m: int, n: int) -> int:
    """Invocations for an m x n C (one workgroup per BM x BN block)."""
    return (m // BM) * (n // BN) * WG


def _ours(args, launches: int) -> tuple[float, float | None]:
    """(wall ms per launch, device ms per launch or None)."""
    g = grid(args[3], args[4])
    gpu(mm_tiles, *args, grid=g).join(download=False)  # warm: pipeline built, buffers resident
    t0 = time.perf_counter()
    for _ in range(launches - 1):
        gpu(mm_tiles, *args, grid=g)
    gpu(mm_tiles, *args, grid=g, timed=True).join(download=False)
    wall = (time.perf_counter() - t0) / launches * 1e3
    dev = []
    for _ in range(3):
        j = gpu(mm_tiles, *args, grid=g, timed=True)
        j.join(download=False)
        if j.elapsed_ms:
            dev.append(j.elapsed_ms)
    return wall, (min(dev) if dev else None)


def _torch_matmul(a: np.ndarray, b: np.ndarray, dtype: str, launches: int):
    """(ms per torch.matmul, its float32 result as numpy) or (None, None)."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    tdt = getattr(torch, {"f16": "float16", "bf16": "bfloat16"}[dtype])
    ta, tb = torch.from_numpy(a).cuda().to(tdt), torch.from_numpy(b).cuda().to(tdt)
    out = torch.matmul(ta, tb)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        torch.matmul(ta, tb)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / launches, out.float().cpu().numpy()


def bench(s: int, dtype: str, launches: int) -> dict:
    row: dict = {"bench": f"matmul_{dtype}", "m": s, "n": s, "k": s}
    if dtype != "f16":
        row["skipped"] = "bf16 tiles are not in the kernel language yet (issue 18)"
        return row
    rng = np.random.default_rng(2)
    a = rng.standard_normal((s, s)).astype(np.float16)
    b = rng.standard_normal((s, s)).astype(np.float16)
    c = np.zeros((s, s), np.float32)
    with GpuArena() as arena:
        arena.bind(a=a, b=b, c=c)
        wall, dev = _ours((a, b, c, s, s, s), launches)
        arena.sync("c")
    t_ms, ref = _torch_matmul(a, b, dtype, launches)
    if ref is None and s <= 2048:
        ref = a.astype(np.float64) @ b.astype(np.float64)
    flop = 2.0 * s**3
    best = dev if dev is not None else wall
    row.update(
        ours_wall_ms=wall,
        ours_device_ms=dev,
        ours_TFLOPs=flop / best / 1e9,
        torch_ms=t_ms,
        torch_TFLOPs=flop / t_ms / 1e9 if t_ms else None,
    )
    if t_ms:
        row["ours_over_torch"] = t_ms / best
    if ref is not None:
        bound = np.abs(a).astype(np.float32) @ np.abs(b).astype(np.float32)
        tol = s * 2.0**-23 * float(bound.max())
        if t_ms is not None:  # torch's f16 result is rounded to f16: half an f16 step more
            tol += float(np.abs(ref).max()) * 2.0**-11
        err = float(np.abs(c.astype(np.float64) - ref).max())
        row.update(max_abs_error=err, tolerance=tol, ok=err <= tol)
    else:
        row["check"] = "no reference (no torch and too large for numpy here)"
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--json")
    opts = ap.parse_args()
    print(f"# {device_name()}", flush=True)
    if (16, 16, 16, "f16", "f16", "f32", "f32") not in {tuple(x) for x in matrix_shapes()}:
        print("# no 16x16x16 f16 -> f32 matrix units on this device: nothing to measure")
        return 0
    rows = []
    for s in (int(v) for v in opts.sizes.split(",") if v):
        for dtype in opts.dtypes.split(","):
            rows.append(bench(s, dtype, opts.launches))
            print(json.dumps(rows[-1]), flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"device": device_name(), "rows": rows}, f, indent=1)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
