"""Per-launch host cost of `kernel[grid](...)` against `gpu()` (issue 15 item 2).

    python bench/bracket_launch.py [--quick] [--json out.json]

Each case queues 1,000 launches of saxpy on arena-resident lists (n = 256) and joins the last
one; the host cost is the calling thread's CPU time per launch, the median and the least of the
rounds (wall time, the join included, is reported too). All cases run in one process, interleaved round by round, and each round
starts at the next case (the order rotates), so neither machine load nor a fixed position
(first after a join, say) favours one case. The first line printed is the summary the issues'
targets read (issue 14: `gpu()`; issue 15: `kernel[grid]` held / `gpu()` <= 1.1). Cases: `gpu(saxpy, ...)` (the C fast path),
`gpu(saxpy, ..., grid=(n,))` (invocations per axis), `saxpy[groups](...)` with the same grid
object each time, `saxpy[(groups,)](...)` with a new tuple each time, and a callable grid
`saxpy[lambda m: ...](...)` (meta built per launch). Ratios are against `gpu()` and
`gpu(grid=)`. `bench/launch_instructions.py` counts instructions for the same cases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from _common import package_label

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, device_name, gpu, prepare


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--json", help="write results here")
    opts = ap.parse_args()
    rounds = 5 if opts.quick else 11
    launches = 1000
    prepare()
    n = 256
    x = [float(i) for i in range(n)]
    y = [0.0] * n
    arena = GpuArena()
    arena.bind(x=x, y=y)
    groups = -(-n // saxpy.workgroup_size[0])
    grid_inv = (n,)
    static = saxpy[groups]

    def by_groups(m: dict) -> tuple:
        return (-(-m["n"] // m["workgroup_size"][0]),)

    cases = {
        "gpu": lambda: gpu(saxpy, n, 1.0, x, y),
        "gpu_grid": lambda: gpu(saxpy, n, 1.0, x, y, grid=grid_inv),
        "bracket_static": lambda: static(n, 1.0, x, y),
        "bracket_subscript_int": lambda: saxpy[groups](n, 1.0, x, y),
        "bracket_new_tuple": lambda: saxpy[(groups + 0,)](n, 1.0, x, y),
        "bracket_callable": lambda: saxpy[by_groups](n, 1.0, x, y),
    }
    for case in cases.values():  # warm up: pipelines, launchers, pools
        for _ in range(50):
            case()
        case().join(download=False)
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases.items())
    for r in range(rounds):
        for name, case in order[r % len(order) :] + order[: r % len(order)]:
            t0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(launches - 1):
                case()
            job = case()
            c1 = time.thread_time()
            job.join(download=False)
            wall[name].append((time.perf_counter() - t0) / launches)
            cpu[name].append((c1 - c0) / launches)
    arena.release()
    # The calling thread's CPU time is the host cost proper: on lavapipe the kernels run on
    # the driver's threads (and other processes share the cores), which wall time includes.
    us = {name: 1e6 * statistics.median(s) for name, s in cpu.items()}
    results: dict[str, float] = {f"{name}_cpu_us": round(v, 3) for name, v in us.items()}
    results.update(
        {f"{name}_wall_us": round(1e6 * statistics.median(s), 3) for name, s in wall.items()}
    )
    for name in cases:
        if name.startswith("bracket"):
            results[f"{name}_vs_gpu"] = round(us[name] / us["gpu"], 3)
            results[f"{name}_vs_gpu_grid"] = round(us[name] / us["gpu_grid"], 3)
    results["gpu_grid_vs_gpu"] = round(us["gpu_grid"] / us["gpu"], 3)
    # The least CPU time over the rounds as well: interference (the submit thread holding the
    # lock the caller spins on, other processes) only adds, and on the H200 the medians of two
    # runs of the same code differed by up to 45 %, the ratio between 0.96 and 1.86.
    least = {name: 1e6 * min(s) for name, s in cpu.items()}
    results.update({f"{name}_cpu_min_us": round(v, 3) for name, v in least.items()})
    for name in cases:
        if name.startswith("bracket"):
            results[f"{name}_vs_gpu_min"] = round(least[name] / least["gpu"], 3)
    report = {
        "package": package_label(),
        "device": device_name(),
        "python": sys.version.split()[0],
        "launches_per_sample": launches,
        "rounds": rounds,
        "results": results,
    }
    print(
        f"host CPU per queued launch: gpu() {us['gpu']:.3f} us, kernel[grid] held "
        f"{us['bracket_static']:.3f} us ({us['bracket_static'] / us['gpu']:.3f} x gpu()), "
        f"k[g](...) at the call {us['bracket_subscript_int']:.3f} us "
        f"({us['bracket_subscript_int'] / us['gpu']:.3f} x), gpu(grid=) {us['gpu_grid']:.3f} us "
        f"({us['gpu_grid'] / us['gpu']:.3f} x); least of the rounds: kernel[grid] held "
        f"{least['bracket_static'] / least['gpu']:.3f} x gpu()"
    )
    print(json.dumps(report, indent=2))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
