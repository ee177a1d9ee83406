"""Cross-API semaphore latency on the H200 (issue 17): is the ~150 us per CUDA hand-off in the
GPU's handling of shared timeline semaphores, or in our host code?

    python bench/semaphore_latency.py [--rounds 200] [--json out.json]

Every case is a chain of queued operations with no kernels, ended by one host wait, timed on
the host per round (median of `--rounds`), each on an idle device:
  vk_only        our queue signals S (a command-less submission), the host waits for S
  cuda_only      CUDA signals C on a stream, cuStreamSynchronize
  cuda_to_vk     CUDA signals C, our queue waits for C and then signals S, the host waits for S
                 (the inbound half of a hand-off)
  vk_to_cuda     our queue signals S, a CUDA stream waits for S, cuStreamSynchronize
                 (the outbound half)
  host_calls     only the host calls of cuda_to_vk (C signalled, the wait submitted), timed
                 without waiting: what the host spends per hand-off
`gpu_side_inbound_us` = cuda_to_vk - vk_only - host_calls: what the cross-API wait adds beyond
our own signal-and-wait and the host's calls; if it is most of the 150 us, no host-side rework
can reach the issue's 30 us.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from _common import package_label

from cthreads import runtime
from cthreads.interop import cuda


def _median_us(fn, rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def run(rounds: int) -> dict:
    device = runtime.get_device()
    dev = device._dev
    ctx = cuda.context_for(device)
    # C: CUDA signals, we wait (on its imported alias); S: we signal, CUDA / the host wait
    c_index, c_fd = dev.export_semaphore()
    c_cuda = cuda.Semaphore(ctx, c_fd)
    s_index, s_fd = dev.export_semaphore()
    s_cuda = cuda.Semaphore(ctx, s_fd)
    value = {"c": 0, "s": 0}

    def vk_only():
        value["s"] += 1
        dev.semaphore_submit(s_index, signal=value["s"])
        assert dev.semaphore_wait(s_index, value["s"], 10.0)

    def cuda_only():
        value["c"] += 1
        c_cuda.signal(value["c"], None)
        ctx.synchronize(None)

    def cuda_to_vk():
        value["c"] += 1
        value["s"] += 1
        c_cuda.signal(value["c"], None)
        dev.semaphore_submit(c_index, wait=value["c"])
        dev.semaphore_submit(s_index, signal=value["s"])
        assert dev.semaphore_wait(s_index, value["s"], 10.0)

    def vk_to_cuda():
        value["s"] += 1
        dev.semaphore_submit(s_index, signal=value["s"])
        s_cuda.wait(value["s"], None)
        ctx.synchronize(None)

    host = []

    def host_calls():
        value["c"] += 1
        t0 = time.perf_counter()
        c_cuda.signal(value["c"], None)
        dev.semaphore_submit(c_index, wait=value["c"])
        host.append((time.perf_counter() - t0) * 1e6)
        ctx.synchronize(None)
        dev.wait_idle()

    out = {
        "vk_only_us": _median_us(vk_only, rounds),
        "cuda_only_us": _median_us(cuda_only, rounds),
        "cuda_to_vk_us": _median_us(cuda_to_vk, rounds),
        "vk_to_cuda_us": _median_us(vk_to_cuda, rounds),
    }
    for _ in range(rounds):
        host_calls()
    out["host_calls_us"] = statistics.median(host)
    out["gpu_side_inbound_us"] = out["cuda_to_vk_us"] - out["vk_only_us"] - out["host_calls_us"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    res = {"package": package_label(), "device": runtime.get_device().name, **run(args.rounds)}
    print(json.dumps(res, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
