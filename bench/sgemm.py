"""fp32 matmul (SGEMM) on the FMA units, in the kernel language, next to torch.matmul (TF32 off).

    python bench/sgemm.py [--sizes 2048,4096,8192] [--variants all|name,...] [--launches 5]
                          [--json out.json]

One kernel source, `sgemm`, compiled once per *variant* (its tile sizes are compile-time
constants, `@Gpu(constants=...)`): a workgroup of (BM/TM) x (BN/TN) invocations computes a
BM x BN block of C; each invocation holds a TM x TN register tile of accumulators in a local
array (`acc = local(float, TM * TN)`), and per step of BK along K the workgroup stages A
(stored transposed, so an invocation's TM values of one k are adjacent) and B in shared memory.
The register-tile loops have constant trip counts, so the compiler asks the driver to unroll them
and the local arrays stay in registers. The next step's A and B are read into registers while
the current one is multiplied (double buffering through registers: the global-memory latency
hides behind the FMAs). ACONTIG/BCONTIG pick which rows/columns an invocation owns: adjacent
ones (wide shared-memory reads, if the driver merges them) or strided by the thread grid
(conflict-free scalar reads); WARP gives each subgroup of 32 a 4 x 8 patch of register tiles
(fewer distinct shared-memory addresses per read); DB double-buffers the shared tiles too (one
barrier per K step instead of two). APAD pads the transposed A tile so the transposing stores
hit distinct banks. Any M, N, K (not only multiples of the tiles), except with EDGE=0, which
drops the edge checks for sizes that are whole tiles.

Each row: the variant, size, our device time per launch (best of --launches, timestamps), TFLOP/s,
torch's time and TFLOP/s for the same float32 CUDA tensors with
`torch.backends.cuda.matmul.allow_tf32 = False`, the ratio ours/torch (issue 18 asks >= 0.8), and
the check: max |ours - torch| (numpy float64 when there is no torch and the size is at most
2048) against `tolerance(A, B)` = K * 2**-23 * max row sum |A| * max |B| (inputs uniform in
[-1, 1)). A line per size names the best variant. The last entry of `all`, AUTOTUNE, is the
same kernel under `@autotune` (its first launch per size races 8 variants; the row is the
winner's time, `tuned()` says which). Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from cthreads.gpu import (
    BlockIdx,
    Gpu,
    GpuArena,
    ThreadIdx,
    autotune,
    device_name,
    gpu,
    local,
    pipeline_statistics,
    shared,
)
from cthreads.sync import __sync_threads

# Module defaults of the constants (what a plain `@Gpu` kernel would read); every variant binds
# its own through `constants=` (docs/autotune.md).
BM, BN, BK = 128, 128, 8  # block of C per workgroup; K step staged in shared memory
TM, TN = 8, 8  # register tile per invocation
APAD = 4  # floats of padding per k-row of the transposed A tile
ACONTIG, BCONTIG = 1, 0  # an invocation's rows (columns) adjacent (1) or strided (0)
WARP = 1  # subgroups of 32 own 4 x 8 patches of register tiles (0: rows of the thread grid)
DB = 0  # two shared tiles (one barrier per K step: the last one also orders the reads of the
# tile the next step overwrites); 0: one tile, two barriers per K step
EDGE = 1  # partial blocks at the edges of C and K (0: M, N, K must be multiples of BM, BN, BK)
WG = (BM // TM) * (BN // TN)  # invocations per workgroup (config() derives it per variant)
# Per K step each invocation moves BM * BK // WG elements of A and BK * BN // WG of B; a k-row
# of the transposed A tile is BM + APAD long. All constants, so the loops over them unroll.


def sgemm(m: int, n: int, k: int, a: list[float], b: list[float], c: list[float]) -> None:
    # C (m x n) = A (m x k) @ B (k x n), all row-major flat lists.
    As = shared(float, (1 + DB) * BK * (BM + APAD))  # DB: two tiles, multiply one, fill the other
    Bs = shared(float, (1 + DB) * BK * BN)
    acc = local(float, TM * TN)
    ra = local(float, TM)
    rb = local(float, TN)
    pa = local(float, BM * BK // WG)
    pb = local(float, BK * BN // WG)
    t: int = ThreadIdx.x
    # the invocation's place (tr, tc) in the (BM/TM) x (BN/TN) grid of register tiles: row by
    # row, or (WARP) each subgroup of 32 a 4 x 8 patch of it, so one shared-memory read of the
    # subgroup touches 4 rows of A and 8 columns of B instead of 2 and 16
    tr: int = t // (BN // TN)
    tc: int = t % (BN // TN)
    if WARP:
        w: int = t // 32
        lane: int = t % 32
        tr = (w // (BN // TN // 8)) * 4 + lane // 8
        tc = (w % (BN // TN // 8)) * 8 + lane % 8
    blocks_n: int = (n + BN - 1) // BN
    bm: int = (BlockIdx.x // blocks_n) * BM
    bn: int = (BlockIdx.x % blocks_n) * BN
    # row / column steps of the register tile inside the block
    rs: int = 1 if ACONTIG else BM // TM
    r0: int = tr * TM if ACONTIG else tr
    cs: int = 1 if BCONTIG else BN // TN
    c0: int = tc * TN if BCONTIG else tc
    # Step k0 multiplies the tile in shared memory while the registers pa, pb receive the next
    # one (kl = k0 + BK; double buffering through registers: its global-memory latency hides
    # behind the FMAs); then, between two barriers, they replace the tile. The first pass only
    # fetches step 0.
    for k0 in range(-BK, k, BK):
        kl: int = k0 + BK
        if kl < k:
            for q in range(BM * BK // WG):
                e: int = t + WG * q
                ar: int = bm + e // BK
                ak: int = kl + e % BK
                pa[q] = a[ar * k + ak] if not EDGE or (ar < m and ak < k) else 0.0
            for q in range(BK * BN // WG):
                e2: int = t + WG * q
                bk: int = kl + e2 // BN
                bc: int = bn + e2 % BN
                pb[q] = b[bk * n + bc] if not EDGE or (bk < k and bc < n) else 0.0
        if k0 >= 0:
            ca: int = (k0 // BK % 2) * BK * (BM + APAD) if DB else 0  # this step's tiles
            cb: int = (k0 // BK % 2) * BK * BN if DB else 0
            for kk in range(BK):
                for i in range(TM):
                    ra[i] = As[ca + kk * (BM + APAD) + r0 + i * rs]
                for j in range(TN):
                    rb[j] = Bs[cb + kk * BN + c0 + j * cs]
                for i in range(TM):
                    for j in range(TN):
                        acc[i * TN + j] = math.fma(ra[i], rb[j], acc[i * TN + j])
        if kl < k:
            if not DB:
                __sync_threads()  # every invocation is done reading the tile
            sa: int = (kl // BK % 2) * BK * (BM + APAD) if DB else 0  # the next step's tiles
            sb: int = (kl // BK % 2) * BK * BN if DB else 0
            for q in range(BM * BK // WG):
                e5: int = t + WG * q
                As[sa + (e5 % BK) * (BM + APAD) + e5 // BK] = pa[q]  # transposed: As[kk][row]
            for q in range(BK * BN // WG):
                Bs[sb + t + WG * q] = pb[q]  # as in B: Bs[kk][col]
            __sync_threads()
    for i in range(TM):
        row: int = bm + r0 + i * rs
        for j in range(TN):
            col: int = bn + c0 + j * cs
            if not EDGE or (row < m and col < n):
                c[row * n + col] = acc[i * TN + j]


# The variants the sweep races (name -> constants). 8x8 tiles on 128x128 blocks are the
# classic fp32 shape (64 accumulators, 256 invocations); 128x64 and 64x64 trade reuse for
# more workgroups per SM; BK 16 halves the barriers per FMA.
VARIANTS: dict[str, dict[str, int]] = {
    "128x128x8 t8x8": {},
    "128x128x8 t8x8 bcontig": {"BCONTIG": 1},
    "128x128x8 t8x8 bcontig multiples": {"BCONTIG": 1, "EDGE": 0},
    "128x128x8 t8x8 bcontig db": {"BCONTIG": 1, "DB": 1},
    "128x128x16 t8x8": {"BK": 16},
    "128x64x16 t8x8": {"BN": 64, "BK": 16},
    "128x64x8 t8x4": {"BN": 64, "TN": 4},
    "64x64x8 t4x4": {"BM": 64, "BN": 64, "TM": 4, "TN": 4},
    # session 12: twice the FMAs per shared read (8 x 16 and 16 x 8 register tiles), whatever
    # that costs in registers (the rows carry the driver's count)
    "128x256x8 t8x16 bcontig": {"BN": 256, "TN": 16, "BCONTIG": 1},
    "256x128x8 t16x8 bcontig": {"BM": 256, "TM": 16, "BCONTIG": 1},
}
_DEFAULTS = {
    "BM": BM, "BN": BN, "BK": BK, "TM": TM, "TN": TN,
    "APAD": APAD, "ACONTIG": ACONTIG, "BCONTIG": BCONTIG, "WARP": WARP, "DB": DB, "EDGE": EDGE,
}  # fmt: skip
# `sgemm` as an @autotune kernel (docs/autotune.md): 128 x 128 blocks of 8 x 8 register tiles
# (256 invocations) fixed, the tuner racing the K step and the two layouts per problem size.
AUTOTUNE = "autotune 128x128 t8x8"
_TUNED_FIXED = {"BM": 128, "BN": 128, "TM": 8, "TN": 8, "WG": 256, "APAD": 4, "ACONTIG": 1}
_TUNED_CHOICES = {"BK": [8, 16], "BCONTIG": [0, 1], "WARP": [1, 0]}
_KERNELS: dict[str, object] = {}


def config(name: str) -> dict[str, int]:
    """The constants of variant `name`: the module defaults overridden by its own, and WG."""
    if name == AUTOTUNE:
        return {**_DEFAULTS, **_TUNED_FIXED}
    cfg = {**_DEFAULTS, **VARIANTS[name]}
    wg = (cfg["BM"] // cfg["TM"]) * (cfg["BN"] // cfg["TN"])
    if cfg["BM"] * cfg["BK"] % wg or cfg["BK"] * cfg["BN"] % wg:
        raise ValueError(f"variant {name!r}: the A and B tiles must split evenly over {wg}")
    if cfg["WARP"] and (cfg["BN"] // cfg["TN"] % 8 or cfg["BM"] // cfg["TM"] % 4):
        raise ValueError(f"variant {name!r}: WARP needs a thread grid of 4k rows by 8k columns")
    return {**cfg, "WG": wg}


def kernel(name: str):
    """Variant `name` of `sgemm` as a kernel (made once)."""
    if name == AUTOTUNE and name not in _KERNELS:
        plain = Gpu(workgroup_size=256, constants=_TUNED_FIXED)(sgemm)
        _KERNELS[name] = autotune(**_TUNED_CHOICES, key=["m", "n", "k"])(plain)
    elif name not in _KERNELS:
        cfg = config(name)
        _KERNELS[name] = Gpu(workgroup_size=cfg["WG"], constants=cfg)(sgemm)
    return _KERNELS[name]


def launch_size(name: str, m: int, n: int) -> int:
    """Invocations for an m x n C with variant `name` (one workgroup per BM x BN block)."""
    cfg = config(name)
    return -(-m // cfg["BM"]) * -(-n // cfg["BN"]) * cfg["WG"]


def fits(name: str, m: int, n: int, k: int) -> bool:
    """Whether variant `name` computes an m x n x k product (EDGE=0 ones need whole tiles)."""
    cfg = config(name)
    return bool(cfg["EDGE"]) or not (m % cfg["BM"] or n % cfg["BN"] or k % cfg["BK"])


def tolerance(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |ours - reference| accepted for C = A @ B in float32, with K = a.shape[1]: any
    order of the K multiply-adds is within K * 2**-24 * (|A| @ |B|)[i, j] of the exact value
    (the classical bound), so two float32 results are within K * 2**-23 * max(|A| @ |B|); the
    max is bounded by max row sum of |A| times max |B| (cheap at 8192). Rigorous, not tight:
    observed differences are far smaller. Unwritten elements stay NaN and always fail."""
    k = a.shape[1]
    bound = float(np.abs(a).sum(axis=1, dtype=np.float64).max() * np.abs(b).max())
    return k * 2.0**-23 * bound


def run(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, launches: int) -> float | None:
    """Best device ms per launch of variant `name` over `launches` timed launches (None without
    timestamps); C is left with the result."""
    (m, k), n = a.shape, b.shape[1]
    kern, size = kernel(name), launch_size(name, m, n)
    gpu(kern, m, n, k, a, b, c, grid=size).join(download=False)  # warm: built (and tuned)
    best = None
    for _ in range(launches):
        job = gpu(kern, m, n, k, a, b, c, grid=size, timed=True)
        job.join(download=False)
        if job.elapsed_ms:
            best = job.elapsed_ms if best is None else min(best, job.elapsed_ms)
    return best


def _torch(a: np.ndarray, b: np.ndarray, launches: int):
    """(best ms per torch.matmul in float32 without TF32, its result) or (None, None)."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    out = torch.matmul(ta, tb)
    times = []
    for _ in range(launches):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(ta, tb)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return min(times), out.cpu().numpy()


def bench(s: int, names: list[str], launches: int) -> list[dict]:
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (s, s)).astype(np.float32)
    b = rng.uniform(-1, 1, (s, s)).astype(np.float32)
    t_ms, ref = _torch(a, b, launches)
    if ref is None and s <= 2048:
        ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = tolerance(a, b)
    flop = 2.0 * s**3
    rows = []
    for name in names:
        c = np.full((s, s), np.nan, np.float32)  # a variant that skips an element fails
        row: dict = {"bench": "sgemm", "variant": name, "n": s}
        if not fits(name, s, s, s):
            row["skipped"] = "EDGE=0 needs M, N, K multiples of BM, BN, BK"
            rows.append(row)
            print(json.dumps(row), flush=True)
            continue
        with GpuArena() as arena:
            arena.bind(a=a, b=b, c=c)
            dev = run(name, a, b, c, launches)
            arena.sync("c")
        row.update(ours_device_ms=dev, ours_TFLOPs=flop / dev / 1e9 if dev else None)
        stats = pipeline_statistics(kernel(name)) if name != AUTOTUNE else None
        if stats is not None:  # registers per invocation set how many workgroups share an SM
            row["pipeline_statistics"] = {e.name: e.as_dict() for e in stats}
        if name == AUTOTUNE:
            row["tuned"] = kernel(name).tuned()  # the winner per tuning key
        if t_ms:
            row.update(torch_ms=t_ms, torch_TFLOPs=flop / t_ms / 1e9)
            if dev:
                row["ours_over_torch"] = t_ms / dev
        if ref is not None:
            err = float(np.nan_to_num(np.abs(c.astype(np.float64) - ref), nan=np.inf).max())
            row.update(max_abs_error=err, tolerance=tol, ok=err <= tol)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--variants", default="all", help="'all' or names from VARIANTS, by ','")
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--json")
    opts = ap.parse_args()
    names = [*VARIANTS, AUTOTUNE] if opts.variants == "all" else opts.variants.split(",")
    unknown = [v for v in names if v not in VARIANTS and v != AUTOTUNE]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    print(f"# {device_name()}", flush=True)
    rows = []
    for s in (int(v) for v in opts.sizes.split(",") if v):
        rows += bench(s, names, opts.launches)
        timed = [r for r in rows if r["n"] == s and r.get("ours_TFLOPs")]
        if timed:
            top = max(timed, key=lambda r: r["ours_TFLOPs"])
            print(
                f"# best at {s}: {top['variant']} {top['ours_TFLOPs']:.1f} TFLOP/s"
                + (f", {top['ours_over_torch']:.2f} x torch" if "ours_over_torch" in top else ""),
                flush=True,
            )
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"device": device_name(), "rows": rows}, f, indent=1)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
