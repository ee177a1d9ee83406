"""DeviceArray on the H200 (issue 15): a saxpy chain on device arrays against the same chain on
GpuArena-bound arrays, and host <-> device transfer against torch.

    python bench/device_array.py [--json out.json]     # H200 sizes: 2^24 elements, 1,000 launches,
                                                       # transfers of 2^26 float32
    python bench/device_array.py --quick               # lavapipe: 2^16, 100 launches, 2^20

chain:    `launches` saxpy launches (y = a*x + y) on n float32, timed from the first launch to
          the device finishing the last; bandwidth counts 12 bytes per element per launch
          (read x and y, write y). Target: DeviceArray >= 0.95 x GpuArena.
transfer: DeviceArray.from_numpy(a) + d.numpy() of m float32, against torch's
          t = torch.from_numpy(a).cuda(); t.cpu() (synchronized), when torch with CUDA is
          importable. Target: ours >= 0.8 x torch's throughput.
Each figure is the best of `--repeat` runs after one warm-up; results are checked.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _common import package_label

from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, GpuArena, device_name, gpu, prepare


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def _chain(n: int, launches: int, x, y) -> float:
    t0 = time.perf_counter()
    job = None
    for _ in range(launches):
        job = gpu(saxpy, n, 0.5, x, y)
    job.join(download=False)  # waits only: device arrays and arena lists stay on the device
    return time.perf_counter() - t0


def chain_device_array(n: int, launches: int, repeat: int) -> dict:
    xs = np.ones(n, np.float32)
    x = DeviceArray.from_numpy(xs)
    y = DeviceArray(n, "f32")
    _chain(n, 10, x, y)  # warm: pipeline built, pool filled
    best = min(_chain(n, launches, x, y) for _ in range(repeat))
    total = 10 + repeat * launches
    ok = bool((y.numpy() == np.float32(0.5 * total)).all())
    x.release()
    y.release()
    return {"seconds": best, "GB_per_s": 12 * n * launches / best / 1e9, "ok": ok}


def chain_arena(n: int, launches: int, repeat: int) -> dict:
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    with GpuArena().bind(x=x, y=y) as arena:
        _chain(n, 10, x, y)
        best = min(_chain(n, launches, x, y) for _ in range(repeat))
        arena.sync("y")
    total = 10 + repeat * launches
    ok = bool((y == np.float32(0.5 * total)).all())
    return {"seconds": best, "GB_per_s": 12 * n * launches / best / 1e9, "ok": ok}


def transfer_ours(m: int, repeat: int) -> dict:
    a = np.random.default_rng(0).random(m, dtype=np.float32)

    def once() -> tuple[float, bool]:
        t0 = time.perf_counter()
        d = DeviceArray.from_numpy(a)
        back = d.numpy()
        seconds = time.perf_counter() - t0
        d.release()
        return seconds, bool(np.array_equal(back, a))

    once()
    runs = [once() for _ in range(repeat)]
    best = min(s for s, _ in runs)
    return {"seconds": best, "GB_per_s": 2 * a.nbytes / best / 1e9, "ok": all(k for _, k in runs)}


def transfer_torch(m: int, repeat: int) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a = np.random.default_rng(0).random(m, dtype=np.float32)
    host = torch.from_numpy(a)

    def once() -> tuple[float, bool]:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        t = host.cuda()
        back = t.cpu()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        return seconds, bool(np.array_equal(back.numpy(), a))

    once()
    runs = [once() for _ in range(repeat)]
    best = min(s for s, _ in runs)
    return {"seconds": best, "GB_per_s": 2 * a.nbytes / best / 1e9, "ok": all(k for _, k in runs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="lavapipe sizes (2^16, 100, 2^20)")
    ap.add_argument("--n", type=int, help="chain elements (default 2^24)")
    ap.add_argument("--launches", type=int, help="chain launches (default 1000)")
    ap.add_argument("--m", type=int, help="transfer elements (default 2^26)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    opts = ap.parse_args()
    n = opts.n or (1 << 16 if opts.quick else 1 << 24)
    launches = opts.launches or (100 if opts.quick else 1000)
    m = opts.m or (1 << 20 if opts.quick else 1 << 26)
    repeat = 2 if opts.quick and opts.repeat == 5 else opts.repeat
    prepare()
    report: dict = {
        "device": device_name(),
        "package": package_label(),
        "n": n,
        "launches": launches,
        "m": m,
        "repeat": repeat,
    }
    report["chain_device_array"] = chain_device_array(n, launches, repeat)
    report["chain_arena"] = chain_arena(n, launches, repeat)
    report["chain_ratio"] = (
        report["chain_device_array"]["GB_per_s"] / report["chain_arena"]["GB_per_s"]
    )
    report["transfer_device_array"] = transfer_ours(m, repeat)
    torch_result = transfer_torch(m, repeat)
    report["transfer_torch"] = torch_result
    if torch_result is not None:
        report["transfer_ratio"] = (
            report["transfer_device_array"]["GB_per_s"] / torch_result["GB_per_s"]
        )
    for key, value in report.items():
        print(f"{key}: {json.dumps(value)}")
    print(
        f"chain: DeviceArray {report['chain_device_array']['GB_per_s']:.1f} GB/s vs GpuArena "
        f"{report['chain_arena']['GB_per_s']:.1f} GB/s (ratio {report['chain_ratio']:.3f}, "
        "target >= 0.95)"
    )
    if torch_result is not None:
        print(
            f"transfer: DeviceArray {report['transfer_device_array']['GB_per_s']:.2f} GB/s vs "
            f"torch {torch_result['GB_per_s']:.2f} GB/s (ratio {report['transfer_ratio']:.3f}, "
            "target >= 0.8)"
        )
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    checks = [report["chain_device_array"]["ok"], report["chain_arena"]["ok"]]
    checks.append(report["transfer_device_array"]["ok"])
    if torch_result is not None:
        checks.append(torch_result["ok"])
    return 0 if all(checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
