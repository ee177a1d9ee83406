"""Launch-path benchmark (issue 4): written against the API cthreads shares with `cthreads-gpu`
0.2, so the same file measures either package — whichever `cthreads` is importable.

    python bench/launch.py [--quick] [--json out.json]

Cases: launch + join(download=False) of a 256-element resident kernel; launch + join of a
256-element kernel on Python lists and on numpy arrays; 1,000 queued launches then one join;
saxpy round trips on Python lists (n = 1e6, 1e7) and numpy arrays (n = 1e7).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
from _common import package_label

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, device_name, gpu, prepare


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def _best(fn, repeats: int, inner: int) -> float:
    """Median over `repeats` of the mean seconds per call of `inner` calls."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--skip", default="", help="comma-separated case names to skip")
    opts = ap.parse_args()
    skip = set(filter(None, opts.skip.split(",")))
    reps = 3 if opts.quick else 5
    prepare()
    results: dict[str, float] = {}

    n = 256
    x = [float(i) for i in range(n)]
    y = [0.0] * n
    xa = np.arange(n, dtype=np.float32)
    ya = np.zeros(n, np.float32)
    gpu(saxpy, n, 1.0, x, y).join()  # warm up pipelines and pools

    if "resident256" not in skip:
        xr, yr = list(x), list(y)
        arena = GpuArena()
        arena.bind(x=xr, y=yr)
        results["resident256_us"] = 1e6 * _best(
            lambda: gpu(saxpy, n, 1.0, xr, yr).join(download=False), reps, 200
        )
        if "queued1000" not in skip:

            def queued():
                for _ in range(999):
                    gpu(saxpy, n, 1.0, xr, yr)
                gpu(saxpy, n, 1.0, xr, yr).join(download=False)

            results["queued1000_per_launch_us"] = 1e6 * _best(queued, reps, 1) / 1000
        arena.release()
    results["list256_us"] = 1e6 * _best(lambda: gpu(saxpy, n, 1.0, x, y).join(), reps, 200)
    results["numpy256_us"] = 1e6 * _best(lambda: gpu(saxpy, n, 1.0, xa, ya).join(), reps, 200)

    for big in [10**6] if opts.quick else [10**6, 10**7]:
        xs = [float(i % 1000) for i in range(big)]
        ys = [1.0] * big
        secs = _best(lambda big=big, xs=xs, ys=ys: gpu(saxpy, big, 2.0, xs, ys).join(), 3, 1)
        results[f"list_saxpy_{big:.0e}_ms"] = secs * 1e3
        results[f"list_saxpy_{big:.0e}_Melem_per_s"] = big / secs / 1e6
    big = 10**6 if opts.quick else 10**7
    xa = np.random.default_rng(0).random(big, dtype=np.float32)
    ya = np.ones(big, np.float32)
    results[f"numpy_saxpy_{big:.0e}_ms"] = 1e3 * _best(
        lambda: gpu(saxpy, big, 2.0, xa, ya).join(), reps, 1
    )

    report = {
        "package": package_label(),
        "device": device_name(),
        "python": sys.version.split()[0],
        "results": results,
    }
    print(json.dumps(report, indent=2))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
