"""Resident saxpy bandwidth against n, written against the API cthreads shares with
`cthreads-gpu` 0.2, so the same file measures either package (its arena takes Python lists).

    python bench/saxpy_bandwidth.py --min-log2 16 --max-log2 26 [--lists] --json out.json

Each size: x and y bound in a GpuArena, K launches queued, one join(download=False); bandwidth
is 12 bytes per element over the wall time per launch.
"""

from __future__ import annotations

import argparse
import json
import time

from _common import package_label

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, device_name, gpu, prepare


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def one(n: int, lists: bool) -> dict:
    if lists:
        x, y = [1.0] * n, [0.0] * n
    else:
        import numpy as np

        x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    k = max(5, min(200, (1 << 31) // (12 * n)))
    arena = GpuArena()
    arena.bind(x=x, y=y)
    for _ in range(2):
        gpu(saxpy, n, 0.5, x, y).join(download=False)
    t0 = time.perf_counter()
    for _ in range(k - 1):
        gpu(saxpy, n, 0.5, x, y)
    gpu(saxpy, n, 0.5, x, y).join(download=False)
    per = (time.perf_counter() - t0) / k
    arena.release()
    return {
        "log2n": n.bit_length() - 1,
        "launches": k,
        "us_per_launch": per * 1e6,
        "TBps": 12 * n / per / 1e12,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-log2", type=int, default=16)
    ap.add_argument("--max-log2", type=int, default=26)
    ap.add_argument("--lists", action="store_true", help="Python lists instead of numpy arrays")
    ap.add_argument("--json")
    opts = ap.parse_args()
    prepare()
    rows = []
    for lg in range(opts.min_log2, opts.max_log2 + 1, 2):
        rows.append(one(1 << lg, opts.lists))
        print(json.dumps(rows[-1]), flush=True)
    package = package_label()
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"package": package, "device": device_name(), "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
