"""GpuArena bind/sync throughput (issue 5), written against the API cthreads shares with
`cthreads-gpu` 0.2, so the same file measures either package.

    python bench/arena.py [--n 30000000] [--json out.json]

Binds two lists (and then two float32 numpy arrays) of n elements, syncs them back, and reports
seconds and elements per second for each step.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _common import package_label

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, device_name, prepare


@Gpu
def touch(n: int, y: list[float]) -> None:  # cthreads-gpu's prepare() needs one kernel
    i: int = GlobalIdx.x
    if i < n:
        y[i] = y[i] + 0.0


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(n: int, kind: str) -> dict:
    if kind == "list":
        x = [float(i % 1000) for i in range(n)]
        y = [1.0] * n
    else:
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, np.float32)
    arena = GpuArena()
    bind = _time(lambda: arena.bind(x=x, y=y))
    sync = _time(lambda: arena.sync())
    rebind = _time(lambda: arena.bind(x=x, y=y))
    arena.release()
    ok = (y[0] == 1.0) and (y[-1] == 1.0)
    return {
        "bind_s": bind,
        "sync_s": sync,
        "rebind_s": rebind,
        "bind_Melem_per_s": 2 * n / bind / 1e6,
        "sync_Melem_per_s": 2 * n / sync / 1e6,
        "ok": bool(ok),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30_000_000)
    ap.add_argument("--json")
    ap.add_argument("--kinds", default="list,numpy")
    opts = ap.parse_args()
    prepare()
    report = {"device": device_name(), "n": opts.n, "results": {}}
    report["package"] = package_label()
    for kind in opts.kinds.split(","):
        report["results"][kind] = measure(opts.n, kind)
        print(kind, json.dumps(report["results"][kind]))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
