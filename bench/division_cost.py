"""What correctly rounded float32 division costs (codegen_expr `float32_div`): a kernel of eight
dependent divisions per element against the same kernel with multiplications, and against
torch's `x / y` chain where torch sees a CUDA device (its division is correctly rounded too).

    python bench/division_cost.py [--log2 24] [--launches 20] [--json out.json]

Per kernel: the arrays are resident in a GpuArena, `--launches` timed launches are queued and
joined once; the device time per launch is the median of `job.elapsed_ms` (timestamps), the
wall time per launch is printed beside it. Written 2026-12-01, not yet run on a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu


@Gpu
def div8(n: int, x: list[float], y: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        a: float = x[i]
        b: float = y[i]
        a = a / b + 1.0
        a = a / b + 1.0
        a = a / b + 1.0
        a = a / b + 1.0
        a = a / b + 1.0
        a = a / b + 1.0
        a = a / b + 1.0
        a = a / b + 1.0
        out[i] = a


@Gpu
def mul8(n: int, x: list[float], y: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        a: float = x[i]
        b: float = y[i]
        a = a * b + 1.0
        a = a * b + 1.0
        a = a * b + 1.0
        a = a * b + 1.0
        a = a * b + 1.0
        a = a * b + 1.0
        a = a * b + 1.0
        a = a * b + 1.0
        out[i] = a


def _ours(kernel, n: int, x, y, out, launches: int) -> dict:
    gpu(kernel, n, x, y, out).join(download=False)  # compile, pipeline, warm-up
    t0 = time.perf_counter()
    jobs = [gpu(kernel, n, x, y, out, timed=True) for _ in range(launches)]
    jobs[-1].join(download=False)
    wall = (time.perf_counter() - t0) / launches
    device = [j.elapsed_ms for j in jobs if j.elapsed_ms is not None]
    return {
        "wall_us": round(wall * 1e6, 2),
        "device_us": round(statistics.median(device) * 1e3, 2) if device else None,
    }


def _torch(n: int, launches: int) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.rand(n, device="cuda", generator=g) + 0.5
    y = torch.rand(n, device="cuda", generator=g) + 0.5

    def run():
        a = x
        for _ in range(8):
            a = a / y + 1.0
        return a

    run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        run()
    end.record()
    torch.cuda.synchronize()
    return {"device_us": round(start.elapsed_time(end) / launches * 1e3, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, default=24)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = 1 << args.log2
    rng = np.random.default_rng(1)
    x = (rng.random(n, dtype=np.float32) + 0.5).astype(np.float32)
    y = (rng.random(n, dtype=np.float32) + 0.5).astype(np.float32)
    out = np.zeros(n, np.float32)
    results = {"n": n}
    with GpuArena() as arena:
        arena.bind(x=x, y=y, out=out)
        results["div8"] = _ours(div8, n, x, y, out, args.launches)
        arena.sync("out")
        want = x.copy()
        for _ in range(8):
            want = (want / y + np.float32(1.0)).astype(np.float32)
        results["div8_exact"] = bool(np.array_equal(out, want))
        results["mul8"] = _ours(mul8, n, x, y, out, args.launches)
    results["torch_div8"] = _torch(n, args.launches)
    print(f"n = 2^{args.log2}: {json.dumps(results)}")
    d, m = results["div8"]["device_us"], results["mul8"]["device_us"]
    if d and m:
        print(
            f"div8 / mul8 device time: {d / m:.2f}x; bit-exact against numpy: {results['div8_exact']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
