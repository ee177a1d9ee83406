"""A chain of kernels on `DeviceArray`s: the data stays on the device, read back once at the end.

    python examples/device_arrays.py            # n = 1,000,000, 200 steps
    python examples/device_arrays.py --small    # n = 10,000, 50 steps (what the test suite runs)

Each step is three launches (scale, saxpy, clamp) on device arrays: nothing is copied between
the host and the device at launch or join, and `y.numpy()` at the end waits only for the last
launch that writes `y`. The same steps in numpy float32 check the result bit for bit.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cthreads.examples_kernels import saxpy
from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, GPUNotAvailable, device_name, gpu, prepare


@Gpu
def scale(n: int, a: float, x: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = a * x[i]


@Gpu
def clamp(n: int, lo: float, hi: float, y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = min(max(y[i], lo), hi)


def run(n: int, steps: int) -> float:
    """The chain on device arrays; returns the wall time. Raises if it differs from numpy."""
    rng = np.random.default_rng(0)
    xs = rng.random(n, dtype=np.float32)
    x = DeviceArray.from_numpy(xs)  # one upload
    t = DeviceArray(n, "f32")  # zero-filled, never leaves the device
    y = DeviceArray(n, np.float32)
    want_y = np.zeros(n, np.float32)
    f32 = np.float32
    t0 = time.perf_counter()
    for k in range(steps):
        a = 0.5 + (k % 7) / 8
        gpu(scale, n, a, x, t)
        gpu(saxpy, n, 0.25, t, y)
        gpu(clamp, n, -4.0, 4.0, y)
        want_t = f32(a) * xs
        want_y = np.clip(f32(0.25) * want_t + want_y, f32(-4.0), f32(4.0))
    result = y.numpy()  # the one download
    seconds = time.perf_counter() - t0
    assert np.array_equal(result, want_y), "device-array chain differs from numpy"
    for d in (x, t, y):
        d.release()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="elements (default 1,000,000)")
    parser.add_argument("--steps", type=int, default=200, help="steps of 3 launches (default 200)")
    parser.add_argument("--small", action="store_true", help="n = 10,000, 50 steps")
    opts = parser.parse_args(argv)
    n, steps = (10_000, 50) if opts.small else (opts.n, opts.steps)
    try:
        prepare()
    except GPUNotAvailable as exc:
        print(f"no GPU: {exc}", file=sys.stderr)
        return 69
    print(f"device: {device_name()}")
    seconds = run(n, steps)
    print(
        f"{3 * steps} launches on device arrays of {n} float32, one read back: "
        f"{seconds * 1e3:.1f} ms; matches numpy"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
