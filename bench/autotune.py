"""The tiled matrix multiply of bench/language.py with its tile and workgroup sizes as
`@autotune` choices (issue 16): the tuned kernel against every hand-pinned variant, and the
one-time tuning cost.

    python bench/autotune.py [--mm 1024,2048,4096] [--quick] [--json out.json] [--cache DIR]

Choices: BM (the block of c per workgroup: 64 or 32), BK (the k-slice staged in shared memory:
16, 8 or 32) and workgroup_size (256, 128 or 64): 18 variants, all correct (an invocation
computes 4x4 register tiles of the block, in as many passes as the block has tiles per
invocation). Inputs are DeviceArrays (nothing moves per launch). Per size: the first tuned
launch in a fresh cache (the tuning cost: compiling every variant, timing each, then the run
itself; `tuning_ms` is the tuner's own account, `first_launch_ms` the wall time of that
launch to its join), then device time per launch (timestamps, min of --reps) of the tuned
kernel and of each variant pinned by hand. `tuned_over_best_pinned` >= 1.0 means the tuner
picked (one of) the fastest. `--quick`: one small size and fewer reps, for lavapipe.

The cache is a fresh temporary directory unless --cache names one (then a second run shows
the recorded choice reused: tuning_ms null, tunings 0).
"""

# ruff: noqa: F821 - BM and BK are the autotune choices the kernel reads (no module names)

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def _cache_arg() -> None:
    """Point the cache at a fresh directory before cthreads reads the setting."""
    if "--cache" in sys.argv:
        os.environ["CTHREADS_CACHE_DIR"] = sys.argv[sys.argv.index("--cache") + 1]
    else:
        os.environ["CTHREADS_CACHE_DIR"] = tempfile.mkdtemp(prefix="cthreads-autotune-bench-")


_cache_arg()

import math  # noqa: E402

import numpy as np  # noqa: E402
from _common import package_label  # noqa: E402

from cthreads.gpu import (  # noqa: E402
    BlockDim,
    BlockIdx,
    DeviceArray,
    Gpu,
    ThreadIdx,
    autotune,
    device_name,
    shared,
    tuning,
)
from cthreads.sync import __sync_threads  # noqa: E402


@autotune(BM=[64, 32], BK=[16, 8, 32], workgroup_size=[256, 128, 64], key=["m", "k", "p"])
@Gpu
def matmul(m: int, k: int, p: int, a: list[float], b: list[float], c: list[float]) -> None:
    # A BM x BM block of c per workgroup; each invocation accumulates 4x4 register tiles
    # (rows ty + ts*i, columns tx + ts*j with ts = BM / 4), the block's (BM / 4)**2 tiles
    # shared out over the workgroup in passes (one pass when the workgroup has as many
    # invocations as tiles: bench/language.py's kernel at BM=64, BK=16, 256); the k axis goes
    # through shared memory BK at a time.
    As = shared(float, BM * BK)
    Bs = shared(float, BK * BM)
    t: int = ThreadIdx.x
    wg: int = BlockDim.x
    ts: int = BM // 4
    tiles: int = ts * ts
    blocks_n: int = (p + BM - 1) // BM
    bm: int = (BlockIdx.x // blocks_n) * BM
    bn: int = (BlockIdx.x % blocks_n) * BM
    for s0 in range(0, tiles, wg):
        s: int = s0 + t
        here: int = min(s, tiles - 1)  # idle invocations read tile 0's operands, store nothing
        ty: int = here // ts
        tx: int = here % ts
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
            for e in range(t, BM * BK, wg):
                ar: int = bm + e // BK
                ac: int = k0 + e % BK
                As[e] = a[ar * k + ac] if ar < m and ac < k else 0.0
                br: int = k0 + e // BM
                bc: int = bn + e % BM
                Bs[e] = b[br * p + bc] if br < k and bc < p else 0.0
            __sync_threads()
            for kk in range(BK):
                a0: float = As[ty * BK + kk]
                a1: float = As[(ty + ts) * BK + kk]
                a2: float = As[(ty + 2 * ts) * BK + kk]
                a3: float = As[(ty + 3 * ts) * BK + kk]
                b0: float = Bs[kk * BM + tx]
                b1: float = Bs[kk * BM + tx + ts]
                b2: float = Bs[kk * BM + tx + 2 * ts]
                b3: float = Bs[kk * BM + tx + 3 * ts]
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
        r0: int = bm + ty + 0 * ts
        r1: int = bm + ty + ts
        r2: int = bm + ty + 2 * ts
        r3: int = bm + ty + 3 * ts
        q0: int = bn + tx + 0 * ts
        q1: int = bn + tx + ts
        q2: int = bn + tx + 2 * ts
        q3: int = bn + tx + 3 * ts
        if s < tiles:
            if r0 < m and q0 < p:
                c[r0 * p + q0] = c00
            if r0 < m and q1 < p:
                c[r0 * p + q1] = c01
            if r0 < m and q2 < p:
                c[r0 * p + q2] = c02
            if r0 < m and q3 < p:
                c[r0 * p + q3] = c03
            if r1 < m and q0 < p:
                c[r1 * p + q0] = c10
            if r1 < m and q1 < p:
                c[r1 * p + q1] = c11
            if r1 < m and q2 < p:
                c[r1 * p + q2] = c12
            if r1 < m and q3 < p:
                c[r1 * p + q3] = c13
            if r2 < m and q0 < p:
                c[r2 * p + q0] = c20
            if r2 < m and q1 < p:
                c[r2 * p + q1] = c21
            if r2 < m and q2 < p:
                c[r2 * p + q2] = c22
            if r2 < m and q3 < p:
                c[r2 * p + q3] = c23
            if r3 < m and q0 < p:
                c[r3 * p + q0] = c30
            if r3 < m and q1 < p:
                c[r3 * p + q1] = c31
            if r3 < m and q2 < p:
                c[r3 * p + q2] = c32
            if r3 < m and q3 < p:
                c[r3 * p + q3] = c33


def _grid(meta: dict) -> int:
    """Workgroups: one per BM x BM block of c."""
    bm = meta["BM"]
    return (-(-meta["m"] // bm)) * (-(-meta["p"] // bm))


def _device_ms(args: tuple, reps: int, pins: dict | None) -> float:
    """Min device ms per launch (wall where the device has no timestamps)."""
    extra = {} if pins is None else {"pins": pins}
    matmul[_grid](*args, **extra).join(download=False)  # warm: pipeline built
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        job = matmul[_grid](*args, timed=True, **extra)
        job.join(download=False)
        ms = job.elapsed_ms
        best = min(best, ms if ms is not None else (time.perf_counter() - t0) * 1e3)
    return best


def bench(s: int, reps: int) -> dict:
    rng = np.random.default_rng(1)
    a_h = rng.standard_normal((s, s)).astype(np.float32)
    b_h = rng.standard_normal((s, s)).astype(np.float32)
    a, b = DeviceArray.from_numpy(a_h), DeviceArray.from_numpy(b_h)
    c = DeviceArray((s, s), "f32")
    args = (s, s, s, a, b, c)
    key = f"m={tuning.bucket(s)},k={tuning.bucket(s)},p={tuning.bucket(s)}"
    tunings = tuning.stats["tunings"]
    t0 = time.perf_counter()
    matmul[_grid](*args).join()  # tunes (a fresh cache), then runs the winner
    first_ms = (time.perf_counter() - t0) * 1e3
    err = float(np.abs(c.numpy() - a_h.astype(np.float64) @ b_h.astype(np.float64)).max())
    record = _record(key)
    tuned_ms = _device_ms(args, reps, None)
    pinned = {}
    for point in matmul._tuner.space.points():
        label = ",".join(f"{n}={v}" for n, v in point.items())
        pinned[label] = _device_ms(args, reps, point)
    best_label = min(pinned, key=pinned.get)
    # the tuned kernel and the best pinned variant again, alternating, so that a change in
    # machine load between the two measurements does not decide the ratio
    points = {",".join(f"{n}={v}" for n, v in p.items()): p for p in matmul._tuner.space.points()}
    for _ in range(3):
        tuned_ms = min(tuned_ms, _device_ms(args, reps, None))
        pinned[best_label] = min(pinned[best_label], _device_ms(args, reps, points[best_label]))
    flop = 2.0 * s**3
    for x in (a, b, c):
        x.release()
    return {
        "bench": "autotune_matmul",
        "n": s,
        "tuned_choice": matmul.tuned().get(key),
        "tunings": tuning.stats["tunings"] - tunings,
        "tuning_ms": record.get("tuning_ms"),
        "tuning_clock": record.get("clock"),
        "first_launch_ms": round(first_ms, 3),
        "tuned_ms": tuned_ms,
        "tuned_TFLOPs": flop / tuned_ms / 1e9,
        "best_pinned": best_label,
        "best_pinned_ms": pinned[best_label],
        "tuned_over_best_pinned": pinned[best_label] / tuned_ms,
        "pinned_ms": pinned,
        "max_abs_error": err,
    }


def _record(key: str) -> dict:
    """This process's tuning entry for `key` (empty when the choice came from the disk)."""
    rec = matmul._tuner.load_record(matmul)
    return rec.get("choices", {}).get(key, {}) if tuning.stats["tunings"] else {}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mm", default="1024,2048,4096")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="one small size, 2 reps (lavapipe)")
    ap.add_argument("--json")
    ap.add_argument("--cache", help="cache directory (default: a fresh temporary one)")
    opts = ap.parse_args()
    sizes = [128] if opts.quick else [int(v) for v in opts.mm.split(",") if v]
    reps = 2 if opts.quick else opts.reps
    print(f"# {device_name()} / {package_label()} / cache {os.environ['CTHREADS_CACHE_DIR']}")
    rows = []
    for s in sizes:
        rows.append(bench(s, reps))
        print(json.dumps(rows[-1]), flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"device": device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
