"""Memory bandwidth of a resident saxpy (12 bytes per element) against torch, in one run.

    python bench/bandwidth.py [--max-log2 28] [--json out.json]

Each size: x and y bound in a GpuArena, K launches queued, one join(download=False); the time
per launch is wall-clock over the K launches (so it includes launch overhead, as users see it)
and, where the device has timestamps, the device time of one launch (`job.elapsed_ms`).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, device_name, gpu, prepare


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def ours(n: int, k: int) -> dict:
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    with GpuArena().bind(x=x, y=y) as arena:
        for _ in range(3):
            gpu(saxpy, n, 0.5, x, y).join(download=False)
        t0 = time.perf_counter()
        jobs = [gpu(saxpy, n, 0.5, x, y) for _ in range(k)]
        jobs[-1].join(download=False)
        wall = (time.perf_counter() - t0) / k
        dev = jobs[-1].elapsed_ms
        arena.sync("y")
    assert float(y[0]) == 0.5 * (k + 3), float(y[0])
    return {"wall_us": wall * 1e6, "wall_TBps": 12 * n / wall / 1e12,
            "device_TBps": (12 * n / (dev * 1e-3) / 1e12) if dev else None}


def torch_saxpy(n: int, k: int) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.ones(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    for _ in range(3):
        y.add_(x, alpha=0.5)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(k):
        y.add_(x, alpha=0.5)
    end.record()
    torch.cuda.synchronize()
    per = start.elapsed_time(end) / k * 1e-3
    return {"wall_us": per * 1e6, "wall_TBps": 12 * n / per / 1e12}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-log2", type=int, default=16)
    ap.add_argument("--max-log2", type=int, default=28)
    ap.add_argument("--json")
    opts = ap.parse_args()
    prepare()
    rows = []
    for lg in range(opts.min_log2, opts.max_log2 + 1, 2):
        n = 1 << lg
        k = max(10, min(200, (1 << 30) // (12 * n)))
        row = {"log2n": lg, "ours": ours(n, k), "torch": torch_saxpy(n, k)}
        rows.append(row)
        print(json.dumps(row))
    report = {"device": device_name(), "rows": rows}
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
