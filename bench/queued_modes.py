"""Queued launches in a fast or a slow mode (issue 14): `bench/launch.py`'s 1,000 queued
launches gave 2.9-4.1 us per launch in some processes and 12.9-13.8 in others on the H200
(2026-12-03), while the same processes' other cases did not move. This runs that case in
several fresh processes and keeps, per process, every sample's time per launch (not only the
median) and what the native submission path counted meanwhile (`Device.stats()["counters"]`:
direct submits, appends to a pending batch, full batches, the submission thread's submits,
sleeps and wakes, host blocks, lock blocks), the device time of one such launch (median of 20
timed launches after each sample: is the slow mode the GPU's own pace, at lower clocks?) and,
where `nvidia-smi` runs, the SM clock before and after, so the two modes can be told apart.

    python bench/queued_modes.py [--processes 6] [--samples 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, statistics, subprocess, sys, time
from cthreads import runtime
from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu, prepare

@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]

samples = int(sys.argv[1])
prepare()
n = 256
x, y = [float(i) for i in range(n)], [0.0] * n
arena = GpuArena()
arena.bind(x=x, y=y)
gpu(saxpy, n, 1.0, x, y).join(download=False)
dev = runtime.get_device()

def sm_clock():
    try:
        q = ["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"]
        return subprocess.run(q, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None

def device_us():
    ms = []
    for _ in range(20):
        job = gpu(saxpy, n, 1.0, x, y, timed=True)
        job.join(download=False)
        ms.append(job.elapsed_ms)
    return 1e3 * statistics.median(ms)

clock_before = sm_clock()
out = []
for _ in range(samples):
    before = dict(dev.stats()["counters"])
    t0 = time.perf_counter()
    for _ in range(999):
        gpu(saxpy, n, 1.0, x, y)
    gpu(saxpy, n, 1.0, x, y).join(download=False)
    us = 1e6 * (time.perf_counter() - t0) / 1000
    after = dev.stats()["counters"]
    out.append({"us_per_launch": us, "device_us_one_launch": device_us(),
                "counters": {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}})
arena.release()
print(json.dumps({"samples": out, "knobs": dev.stats()["knobs"],
                  "sm_clock_mhz": [clock_before, sm_clock()]}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    runs = []
    # (a file, not `-c`: @Gpu reads the kernel's source; in a directory of its own, which
    # becomes the child's sys.path[0])
    work = tempfile.mkdtemp(prefix="queued_modes_")
    child = os.path.join(work, "queued_child.py")
    with open(child, "w") as f:
        f.write(CHILD)
    for p in range(args.processes):
        out = subprocess.run(
            [sys.executable, child, str(args.samples)],
            capture_output=True,
            text=True,
            check=True,
        )
        run = json.loads(out.stdout.strip().splitlines()[-1])
        runs.append(run)
        times = [s["us_per_launch"] for s in run["samples"]]
        device = [s["device_us_one_launch"] for s in run["samples"]]
        print(
            f"process {p}: us per launch {', '.join(f'{t:.2f}' for t in times)} "
            f"(median {statistics.median(times):.2f}); one launch on the device "
            f"{statistics.median(device):.2f} us; SM clock {run['sm_clock_mhz']}"
        )
        for s in run["samples"][:2]:
            print(f"    {s['us_per_launch']:.2f} us: {s['counters']}")
    os.remove(child)
    os.rmdir(work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
