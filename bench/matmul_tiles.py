"""f16, bf16 and int8 matmul on the matrix units, next to torch.matmul / torch._int_mm.

    python bench/matmul_tiles.py [--sizes 4096,8192] [--dtypes f16,bf16,i8]
                                 [--variants smem2,regs | all] [--launches 10] [--json out.json]

The kernel is written in the kernel language with matrix tiles (docs/language-extensions.md),
generated per variant by matmul_tiles_kernel.py. A workgroup of SGR x SGC subgroups (32
invocations each) computes a block of C; each subgroup holds RA x RB accumulator tiles of
16 x 16 (f32, or i32 for int8). K is walked BK at a time; per TK-wide slice (16 for f16/bf16,
32 for int8) each subgroup loads RA "a" and RB "b" tiles and issues RA x RB `tile_mma`. The
first variants (SGR x SGC = 2 x 4, RA x RB = 4 x 2: 128 x 128 blocks, BK 64 bytes) differ in
where the tiles come from:

- `direct`: straight from the lists (L1/L2 serve the reuse between subgroups);
- `smem`: the workgroup first copies the A and B blocks into shared arrays (rows padded by 16
  bytes against bank conflicts), a barrier, the multiply-adds from there, a barrier;
- `smem2`: two shared buffers: the copy of the next K block is issued before the
  multiply-adds of the current one, one barrier per step;
- `regs`: smem2 with the next block's global loads held in registers (4 words of A and 4 of B
  per invocation) across the current block's multiply-adds, stored to shared memory after them;
- `smem2_4sg`: smem2 with 2 x 2 subgroups (128 x 64 blocks); `smem_k128`: smem with twice BK;
- `smem2_elems`: smem2 copying one element per access instead of one u64 word;
- `regs_g1`: regs launching blocks row by row (the others group 8 block rows, so workgroups
  running together share A rows and B columns in L2).

The later ones are `regs` reshaped (issue 18: more multiply-adds per tile load). "b1" order
loads a subgroup's RA "a" tiles, then each "b" tile followed by its RA multiply-adds, so RA + 1
tiles are live instead of RA + RB. One buffer means two barriers per K block (all reads done
before the prefetched words overwrite it); the 48 KiB of shared memory the H200 offers Vulkan
(maxComputeSharedMemorySize) rules out two buffers of the larger blocks.

| variant | subgroups | per subgroup | block | BK (f16) | buffers | order |
|---|---|---|---|---|---|---|
| `regs_b1` | 2 x 4 | 64 x 32 | 128 x 128 | 32 | 2 | b1 |
| `regs_k64` | 2 x 4 | 64 x 32 | 128 x 128 | 64 | 1 | all |
| `big` / `big_all` | 2 x 2 | 64 x 64 | 128 x 128 | 32 | 2 | b1 / all |
| `big_k64` | 2 x 2 | 64 x 64 | 128 x 128 | 64 | 1 | b1 |
| `wide` | 2 x 4 | 64 x 64 | 128 x 256 | 32 | 1 | b1 |
| `wide_k16` | 2 x 4 | 64 x 64 | 128 x 256 | 16 | 2 | b1 |
| `tall` | 4 x 2 | 64 x 64 | 256 x 128 | 32 | 1 | b1 |
| `wide16` | 2 x 4 | 64 x 64 | 128 x 256 | 32 | 1 (smem) | b1 |
| `wide16_k16` | 2 x 4 | 64 x 64 | 128 x 256 | 16 | 2 (smem2) | b1 |

`wide16` and `wide16_k16` stage with `copy16()` (docs/language-extensions.md): two u64 words,
16 bytes, per statement, one 16-byte load where aligned and in range. The copy goes straight
into shared memory (no registers between), so they are the `smem` / `smem2` stages of `wide`'s
shape rather than `regs`.

Copies move u64 words (4 f16 / bf16 or 8 int8 elements; the operands are passed as `.view(
np.uint64)`), and tiles are loaded from the words with `tile_load(..., elem=f16)`.

bf16 data is held as bit patterns in uint16 arrays (`cthreads.gpu.to_bf16`), read as u64 words
(or, for `smem2_elems`, from `list[u16]`, which tiles load as bf16). The three element types
share one generator (written out per type and variant into a module the compiler reads:
parameters and shared arrays need their element type written, and the sizes are module
constants). M, N, K must be multiples of the block sizes (128 or 256, and the K block).

Each output row: our device time (timestamps) and wall time per launch, TFLOP/s (TOP/s for
int8), torch's time for the same operation on CUDA tensors in the same run (`torch.matmul` of
f16 / bf16 tensors, `torch._int_mm` of int8 ones; skipped without torch or CUDA), the ratio
ours / torch as speed (`ours_over_torch`, issue 18 asks >= 0.6 for f16 and bf16), and the check
against torch: float results against torch's float32 matmul of the same (exactly representable)
inputs with TF32 off, within K * 2**-23 * max(|A| @ |B|) (float32 accumulation of exact
products may differ by one rounding per addition); int8 results exactly equal to
`torch._int_mm`'s (the sums fit in int32). Without torch, sizes <= 2048 are checked with numpy.
Where the driver reports them (VK_KHR_pipeline_executable_properties, which NVIDIA lists), a row
also carries `pipeline_statistics`, the driver's figures for the variant's pipeline by
executable (registers, spills, shared memory, as the driver names them): a variant that
spills shows it there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling, also when a test loads this
from matmul_tiles_kernel import TYPES, VARIANTS, kernel  # noqa: E402

from cthreads.gpu import (  # noqa: E402
    GpuArena,
    device_name,
    from_bf16,
    gpu,
    matrix_shapes,
    pipeline_statistics,
    to_bf16,
)

_NEEDS = {  # the multiply-add each dtype needs from matrix_shapes()
    "f16": (16, 16, 16, "f16", "f16", "f32", "f32"),
    "bf16": (16, 16, 16, "bf16", "bf16", "f32", "f32"),
    "i8": (16, 16, 32, "i8", "i8", "i32", "i32"),
}


def as_words(x: np.ndarray, variant: str) -> np.ndarray:
    """The kernel's view of operand `x`: its u64 words where the variant copies words."""
    return x.view(np.uint64) if VARIANTS[variant].words else x


def _time(k, args, grid: int, launches: int) -> tuple[float, float | None]:
    """(wall ms per launch, device ms per launch or None)."""
    gpu(k, *args, grid=grid).join(download=False)  # warm: pipeline built, buffers resident
    t0 = time.perf_counter()
    for _ in range(launches - 1):
        gpu(k, *args, grid=grid)
    gpu(k, *args, grid=grid, timed=True).join(download=False)
    wall = (time.perf_counter() - t0) / launches * 1e3
    dev = []
    for _ in range(3):
        j = gpu(k, *args, grid=grid, timed=True)
        j.join(download=False)
        if j.elapsed_ms:
            dev.append(j.elapsed_ms)
    return wall, (min(dev) if dev else None)


def _inputs(s: int, dtype: str):
    """(A, B as the kernel reads them, A, B as float32 / int8 values for the references)."""
    rng = np.random.default_rng(2)
    if dtype == "i8":
        a = rng.integers(-128, 128, (s, s), dtype=np.int8)
        b = rng.integers(-128, 128, (s, s), dtype=np.int8)
        return a, b, a, b
    a = rng.standard_normal((s, s), dtype=np.float32)
    b = rng.standard_normal((s, s), dtype=np.float32)
    if dtype == "bf16":
        ka, kb = to_bf16(a), to_bf16(b)
        return ka, kb, from_bf16(ka), from_bf16(kb)
    ka, kb = a.astype(np.float16), b.astype(np.float16)
    return ka, kb, ka.astype(np.float32), kb.astype(np.float32)


def _torch(va: np.ndarray, vb: np.ndarray, dtype: str, launches: int):
    """(ms per torch op on dtype tensors, the reference as numpy, max(|A| @ |B|)), each None
    without torch and CUDA."""
    try:
        import torch
    except ImportError:
        return None, None, None
    if not torch.cuda.is_available():
        return None, None, None
    ta, tb = torch.from_numpy(va).cuda(), torch.from_numpy(vb).cuda()
    if dtype == "i8":
        op, x, y = torch._int_mm, ta, tb
        ref, bound = torch._int_mm(ta, tb), None
    else:
        tdt = torch.float16 if dtype == "f16" else torch.bfloat16
        op, x, y = torch.matmul, ta.to(tdt), tb.to(tdt)
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference in plain float32
        ref = torch.matmul(ta, tb)
        bound = float((ta.abs() @ tb.abs()).max())
    op(x, y)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        op(x, y)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / launches, ref.cpu().numpy(), bound


def _numpy(va: np.ndarray, vb: np.ndarray, dtype: str):
    """(reference, max(|A| @ |B|)) on the host, for small sizes without torch."""
    if dtype == "i8":
        return va.astype(np.int64) @ vb.astype(np.int64), None
    return va.astype(np.float64) @ vb, float((np.abs(va) @ np.abs(vb)).max())


def bench(s: int, dtype: str, variants: list[str], launches: int, shapes: set) -> list[dict]:
    """One row per variant for an s x s x s `dtype` matmul (inputs and torch's run shared)."""
    head = {"bench": f"matmul_{dtype}", "m": s, "n": s, "k": s}
    if _NEEDS[dtype] not in shapes:
        why = f"no {_NEEDS[dtype]} multiply-add in this device's matrix_shapes()"
        rows = [dict(head, variant=v, skipped=why) for v in variants]
        for row in rows:
            print(json.dumps(row), flush=True)
        return rows
    ka, kb, va, vb = _inputs(s, dtype)
    t_ms, ref, bound = _torch(va, vb, dtype, launches)
    if ref is None and s <= 2048:
        ref, bound = _numpy(va, vb, dtype)
    rows = []
    for variant in variants:
        row = dict(head, variant=variant)
        k, bm, bn, wg, _ = kernel(dtype, variant)
        stats = pipeline_statistics(k)
        if stats is not None:
            row["pipeline_statistics"] = {e.name: e.as_dict() for e in stats}
        c = np.zeros((s, s), np.int32 if dtype == "i8" else np.float32)
        wa, wb = as_words(ka, variant), as_words(kb, variant)
        with GpuArena() as arena:
            arena.bind(a=wa, b=wb, c=c)
            grid = (s // bm) * (s // bn) * wg
            wall, dev = _time(k, (wa, wb, c, s, s, s), grid, launches)
            arena.sync("c")
        best = dev if dev is not None else wall
        flop = 2.0 * s**3
        row.update(ours_wall_ms=wall, ours_device_ms=dev, ours_TFLOPs=flop / best / 1e9)
        if t_ms:
            row.update(torch_ms=t_ms, torch_TFLOPs=flop / t_ms / 1e9, ours_over_torch=t_ms / best)
        if ref is None:
            row["check"] = "no reference (no torch and too large for numpy here)"
        elif dtype == "i8":
            bad = int(np.count_nonzero(c != ref))
            row.update(tolerance="exact (int32 sums)", mismatches=bad, ok=bad == 0)
        else:
            tol = s * 2.0**-23 * bound
            err = float(np.abs(c.astype(np.float64) - ref).max())
            row.update(max_abs_error=err, tolerance=tol, ok=err <= tol)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--dtypes", default="f16,bf16,i8")
    ap.add_argument(
        "--variants", default="smem2,regs", help=f"comma-separated, or all: {list(VARIANTS)}"
    )
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--json")
    opts = ap.parse_args()
    variants = list(VARIANTS) if opts.variants == "all" else opts.variants.split(",")
    dtypes = opts.dtypes.split(",")
    bad = [v for v in variants if v not in VARIANTS] + [d for d in dtypes if d not in TYPES]
    if bad:
        ap.error(f"unknown {bad}: variants are {list(VARIANTS)} or all, dtypes {list(TYPES)}")
    print(f"# {device_name()}", flush=True)
    shapes = {tuple(x) for x in matrix_shapes()}
    if not shapes:
        print("# no matrix units on this device (matrix_shapes() is empty): nothing to measure")
        return 0
    rows = []
    for s in (int(v) for v in opts.sizes.split(",") if v):
        for dtype in dtypes:
            rows += bench(s, dtype, variants, opts.launches, shapes)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"device": device_name(), "rows": rows}, f, indent=1)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
