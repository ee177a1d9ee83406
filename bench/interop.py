"""Exchange with torch on the H200 (issue 17): torch -> cthreads kernel -> torch on 2^26 float32.

    python bench/interop.py [--n 67108864] [--steps 50] [--repeat 3] [--json out.json]

One step is: torch writes x (x.add_(1)), our kernel reads x and writes y (y = 2 x), torch reads
y (y.sum()). Modes:
  zero_copy  x and y are torch views of DeviceArrays (torch.from_dlpack(d)); the kernel gets
             the views: no copy, only the stream waits of the exchange
  staged     x and y are torch's own tensors: copied device to device into exported staging
             arrays and, y, back (cuMemcpyDtoDAsync), never through the host
  host       what the exchange replaces: x.cpu().numpy() -> gpu(kernel, host arrays).join() ->
             torch.from_numpy(y).cuda()
and the parts alone: the torch work of a step (torch only) and the kernel on DeviceArrays
(cthreads only), each timed over `steps` steps with one wait at the end.
Overhead per hand-off = (step time of the mode - torch part - kernel part) / 2 (two hand-offs
a step: torch -> ours, ours -> torch). The hand-off mode is printed (`cthreads.interop.
handoff_mode()`): "gpu" waits through exported timeline semaphores, no host wait per step;
"host" (with its reason) waits on the host at each hand-off, so the overhead includes draining
the GPU twice a step. Best of `--repeat`; results checked.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from _common import package_label

import cthreads.interop as interop
from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, device_name, gpu


@Gpu
def twice(n: int, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = 2.0 * x[i]


def _best(fn, repeat: int) -> float:
    fn()  # warm-up: pipelines, staging arrays, CUDA imports
    return min(fn() for _ in range(repeat))


def run(n: int, steps: int, repeat: int) -> dict:
    import torch

    dx, dy = DeviceArray(n, "f32", exportable=True), DeviceArray(n, "f32", exportable=True)
    ordinal = dx.__dlpack_device__()[1]
    dev = torch.device(f"cuda:{ordinal}")
    vx, vy = torch.from_dlpack(dx), torch.from_dlpack(dy)
    tx = torch.zeros(n, dtype=torch.float32, device=dev)
    ty = torch.zeros(n, dtype=torch.float32, device=dev)
    sink = torch.zeros((), dtype=torch.float32, device=dev)

    cpu: dict[int, float] = {}  # the calling thread's CPU time per step, by input tensor

    def pipeline(x, y):
        def go() -> float:
            torch.cuda.synchronize(dev)
            t0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(steps):
                x.add_(1.0)
                gpu(twice, n, x, y)
                sink.add_(y.sum())
            cpu[id(x)] = (time.thread_time() - c0) / steps  # the host's part of a step
            torch.cuda.synchronize(dev)
            return (time.perf_counter() - t0) / steps

        return go

    def host() -> float:
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        hy = np.empty(n, np.float32)
        for _ in range(steps):
            tx.add_(1.0)
            hx = tx.cpu().numpy()
            gpu(twice, n, hx, hy).join()
            y = torch.from_numpy(hy).to(dev)
            sink.add_(y.sum())
        torch.cuda.synchronize(dev)
        return (time.perf_counter() - t0) / steps

    def torch_only() -> float:
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            tx.add_(1.0)
            sink.add_(ty.sum())
        torch.cuda.synchronize(dev)
        return (time.perf_counter() - t0) / steps

    def ours_only() -> float:
        t0 = time.perf_counter()
        job = None
        for _ in range(steps):
            job = gpu(twice, n, dx, dy)
        job.join(download=False)
        return (time.perf_counter() - t0) / steps

    parts = {"torch_only_s": _best(torch_only, repeat), "cthreads_only_s": _best(ours_only, repeat)}
    base = parts["torch_only_s"] + parts["cthreads_only_s"]
    out: dict = {"n": n, "steps": steps, "device": device_name(), "package": package_label()}
    out["handoff_mode"], out["handoff_reason"] = interop.handoff_mode()
    out.update(parts)
    for name, fn in (
        ("zero_copy", pipeline(vx, vy)),
        ("staged", pipeline(tx, ty)),
        ("host", host),
    ):
        step = _best(fn, repeat)
        out[name] = {"step_s": step, "overhead_per_handoff_us": (step - base) / 2 * 1e6}
        if name != "host":  # (of the last repeat) near step_s: the host, not the GPU, sets the pace
            out[name]["step_cpu_s"] = cpu[id(vx if name == "zero_copy" else tx)]
    # correctness of one step of each exchange
    vx.fill_(1.5)
    gpu(twice, n, vx, vy)
    tx.fill_(2.5)
    gpu(twice, n, tx, ty)
    out["ok"] = bool((vy == 3.0).all()) and bool((ty == 5.0).all())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="PATH", help="also write the results here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("bench/interop.py needs torch with CUDA")
    if not torch.cuda.is_available() or not hasattr(
        DeviceArray(1, "f32", exportable=True), "__dlpack__"
    ):
        sys.exit("bench/interop.py needs an NVIDIA GPU that both torch and cthreads see")
    res = run(args.n, args.steps, args.repeat)
    why = f" ({res['handoff_reason']})" if res["handoff_reason"] else ""
    print(f"hand-off mode: {res['handoff_mode']}{why}")
    for key in ("zero_copy", "staged", "host"):
        r = res[key]
        print(
            f"{key:10s} step {r['step_s'] * 1e3:8.3f} ms   overhead per hand-off "
            f"{r['overhead_per_handoff_us']:10.1f} us"
            + (f"   host CPU {r['step_cpu_s'] * 1e3:.3f} ms a step" if "step_cpu_s" in r else "")
        )
    print(
        f"parts: torch {res['torch_only_s'] * 1e3:.3f} ms, cthreads kernel "
        f"{res['cthreads_only_s'] * 1e3:.3f} ms per step; ok={res['ok']}"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
