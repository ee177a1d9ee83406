"""cthreads.dask scaling: one `map_blocks` over a large dask array on a LocalCluster of N
worker processes (one thread each; each worker opens its own device, round-robin over the
visible GPUs), against one worker, plus the per-task overhead cthreads adds to Dask's own.

    python bench/dask_scale.py [--workers 1,2,4,8] [--kernel saxpy|mandelbrot]
                               [--size 67108864] [--chunks 64] [--repeats 3] [--json out.json]

Measured per worker count (min and median over the repeats, after one warm-up computation):
- `map_blocks`: the whole computation, from graph to numpy result on the client (the result's
  transfer back included: that is what a user waits for), and its throughput;
- per-task overhead: many tiny chunks (`--tiny-chunks` of 64 elements) through map_blocks, and
  the same graph with a plain numpy function in its place (Dask's own per-task cost); the
  difference is what cthreads adds per task (import by name, copy of the written chunk,
  launch + join);
- which device each worker opened (`cthreads.dask.worker_stats`).
The kernels are cthreads.examples_kernels' (importable on every worker). Validation is off in
the workers (CTHREADS_VALIDATION=0) unless it is set.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # workers are spawned with this sys.path

import numpy as np  # noqa: E402


def _timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up: pipelines built, modules imported on every worker
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _summary(samples: list[float]) -> dict:
    return {"min_s": min(samples), "median_s": statistics.median(samples), "samples": samples}


def _workload(kernel: str, size: int, chunks: int):
    import dask.array as da

    import cthreads.dask as cdask
    from cthreads.examples_kernels import mandelbrot, saxpy

    chunk = -(-size // chunks)
    if kernel == "saxpy":
        x = da.random.default_rng(1).random(size, chunks=chunk, dtype=np.float32)
        y = da.ones(size, chunks=chunk, dtype=np.float32)
        x, y = x.persist(), y.persist()  # inputs live on the workers: time the kernel's part
        return cdask.map_blocks(saxpy, np.float32(2.0), x, y), size * 12  # bytes moved
    width = 4096
    counts = da.zeros(size, chunks=chunk, dtype=np.int32).persist()
    # every chunk draws the same rows (the pixel index restarts per chunk): equal work per task
    out = cdask.map_blocks(mandelbrot, width, -2.2, -1.2, 3.2 / width, 256, counts)
    return out, None


def _overhead(client, tiny_chunks: int) -> dict:
    import dask.array as da

    import cthreads.dask as cdask
    from cthreads.examples_kernels import saxpy

    n = tiny_chunks * 64
    x = da.ones(n, chunks=64, dtype=np.float32).persist()
    y = da.ones(n, chunks=64, dtype=np.float32).persist()
    gpu = cdask.map_blocks(saxpy, np.float32(2.0), x, y)
    plain = da.map_blocks(lambda a, b: 2.0 * a + b, x, y, dtype=np.float32)
    t_gpu = _timed(lambda: client.compute(gpu).result(), 3)
    t_plain = _timed(lambda: client.compute(plain).result(), 3)
    per_gpu = min(t_gpu) / tiny_chunks
    per_plain = min(t_plain) / tiny_chunks
    return {
        "tasks": tiny_chunks,
        "cthreads_task_us": per_gpu * 1e6,
        "numpy_task_us": per_plain * 1e6,
        "added_per_task_us": (per_gpu - per_plain) * 1e6,
    }


def run_one(workers: int, args: argparse.Namespace) -> dict:
    import distributed

    import cthreads.dask as cdask
    from cthreads.examples_kernels import mandelbrot, saxpy

    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,  # logging.CRITICAL: no heartbeat noise while the cluster closes
    )
    with cluster, distributed.Client(cluster) as client:
        t0 = time.perf_counter()
        cdask.register(client, saxpy, mandelbrot)
        setup_s = time.perf_counter() - t0
        out, nbytes = _workload(args.kernel, args.size, args.chunks)
        samples = _timed(lambda: client.compute(out).result(), args.repeats)
        row = {
            "workers": workers,
            "plugin_setup_s": setup_s,
            "map_blocks": _summary(samples),
            "elements_per_s": args.size / min(samples),
            "overhead": _overhead(client, args.tiny_chunks),
            "devices": sorted(
                f"{s['device_selector']}: {s['device']}"
                for s in client.run(cdask.worker_stats).values()
            ),
        }
        if nbytes:
            row["gb_per_s"] = nbytes / min(samples) / 1e9
        return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    p.add_argument("--kernel", choices=("saxpy", "mandelbrot"), default="saxpy")
    p.add_argument("--size", type=int, default=1 << 24, help="elements of the array")
    p.add_argument("--chunks", type=int, default=64)
    p.add_argument("--tiny-chunks", type=int, default=512)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    os.environ.setdefault("CTHREADS_VALIDATION", "0")
    rows = [run_one(int(w), args) for w in args.workers.split(",")]
    base = rows[0]["map_blocks"]["min_s"]
    print(f"{args.kernel}: {args.size} elements in {args.chunks} chunks")
    print(
        f"{'workers':>8} {'min s':>9} {'median s':>9} {'speedup':>8} {'Melem/s':>9} "
        f"{'task us':>8} {'numpy task us':>14} {'added us':>9}"
    )
    for r in rows:
        o = r["overhead"]
        r["speedup_vs_first"] = base / r["map_blocks"]["min_s"]
        print(
            f"{r['workers']:>8} {r['map_blocks']['min_s']:>9.3f} {r['map_blocks']['median_s']:>9.3f}"
            f" {r['speedup_vs_first']:>8.2f} {r['elements_per_s'] / 1e6:>9.1f}"
            f" {o['cthreads_task_us']:>8.0f} {o['numpy_task_us']:>14.0f}"
            f" {o['added_per_task_us']:>9.0f}"
        )
        print(f"{'':>8} devices: {'; '.join(r['devices'])}")
    if args.json:
        report = {
            "benchmark": "dask_scale",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "machine": {"node": platform.node(), "cpus": os.cpu_count()},
            "kernel": args.kernel,
            "size": args.size,
            "chunks": args.chunks,
            "rows": rows,
        }
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
