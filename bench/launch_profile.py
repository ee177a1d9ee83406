"""Where the host time of a queued launch goes: gpu() as a whole, the native submit alone, and
a cProfile of the launch path (issue 4's ≤ 5 µs per queued launch target).

    python bench/launch_profile.py
"""

from __future__ import annotations

import cProfile
import pstats
import time

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu, prepare
from cthreads.launch import session


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def main() -> None:
    n = 256
    x, y = [1.0] * n, [0.0] * n
    prepare()
    arena = GpuArena().bind(x=x, y=y)
    for _ in range(200):
        gpu(saxpy, n, 1.0, x, y).join(download=False)
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(1000):
            gpu(saxpy, n, 1.0, x, y)
        t1 = time.perf_counter()
        gpu(saxpy, n, 1.0, x, y).join(download=False)
        t2 = time.perf_counter()
        print(
            f"gpu() host {1e6 * (t1 - t0) / 1000:.2f} us/launch, with drain {1e6 * (t2 - t0) / 1001:.2f}"
        )
    # the native submit alone, with the same command
    prep = session.state.prepared[saxpy.source_key]
    device = session.state.device
    block = bytes(prep.compiled.push.size)
    cmd = [("dispatch", prep.pipeline, block, (1, 1, 1))]
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(1000):
            v = device.submit(cmd)
        t1 = time.perf_counter()
        device.wait(v)
        t2 = time.perf_counter()
        print(
            f"native submit {1e6 * (t1 - t0) / 1000:.2f} us, with drain {1e6 * (t2 - t0) / 1000:.2f}"
        )
    t0 = time.perf_counter()
    for _ in range(100000):
        time.perf_counter()
    print(f"perf_counter() {1e6 * (time.perf_counter() - t0) / 100000:.3f} us (syscall cost hint)")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3000):
        gpu(saxpy, n, 1.0, x, y)
    prof.disable()
    gpu(saxpy, n, 1.0, x, y).join(download=False)
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    print(device.stats())
    arena.release()


if __name__ == "__main__":
    main()
