"""One kernel over every device: a contiguous piece of the data per device, joined at the end.

    python examples/multi_device.py             # n = 10,000,000 over every visible device
    python examples/multi_device.py --small     # n = 100,000 (what the test suite runs)
    python examples/multi_device.py --devices 2 # the first two (or two logical devices on one)

`split(n, devices)` cuts 0..n-1 into one range per device; each device gets its piece of `x`
and `y` as device arrays (`device=`), then every step is one launch per device: the launches
return at once, so all devices work side by side, each on its own queue. At the end each
piece is read back into its slice of the result and the whole is checked against numpy.

With one device (a single GPU, or lavapipe in CI) `--devices 2` opens a second logical device
on it (`device(0, logical=1)`: its own VkDevice, queue and submission thread), which shows the
mechanics but not a speed-up. Choose the devices with CTHREADS_VISIBLE_DEVICES or
CUDA_VISIBLE_DEVICES (docs/scale.md).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cthreads.examples_kernels import saxpy
from cthreads.gpu import DeviceArray, GPUNotAvailable, device, devices, gpu, prepare, split


def pick(count: int | None) -> list:
    """`count` devices (default: every visible one), extra logical devices on the first
    physical one where fewer are visible."""
    seen = devices()
    want = count or len(seen)
    return [seen[k] if k < len(seen) else device(0, logical=k) for k in range(want)]


def run(n: int, steps: int, chosen: list) -> tuple[np.ndarray, float]:
    """saxpy `steps` times over `n` elements split across `chosen`; the joined result and
    the wall time of the launches and the read-back."""
    rng = np.random.default_rng(0)
    xs = rng.random(n, dtype=np.float32)
    ys = rng.random(n, dtype=np.float32)
    parts = split(n, chosen)
    pieces = [
        (p, DeviceArray.from_numpy(xs[p.slice], device=p.device),
         DeviceArray.from_numpy(ys[p.slice], device=p.device))
        for p in parts if len(p)
    ]  # fmt: skip
    for p, _, _ in pieces:  # each device builds its pipelines before the clock starts
        prepare(device=p.device)
    t0 = time.perf_counter()
    for _ in range(steps):
        for p, x, y in pieces:  # one launch per device, none waits for another
            gpu(saxpy, len(p), 0.5, x, y, device=p.device)
    result = np.empty(n, np.float32)
    for p, _, y in pieces:  # the join: each piece into its slice (waits for its device)
        result[p.slice] = y.numpy()
    seconds = time.perf_counter() - t0
    for _, x, y in pieces:
        x.release()
        y.release()
    want = ys.copy()
    for _ in range(steps):
        want = np.float32(0.5) * xs + want
    assert np.array_equal(result, want), "the joined result differs from numpy"
    return result, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="elements (default 1e7)")
    parser.add_argument("--steps", type=int, default=20, help="launches per device (default 20)")
    parser.add_argument("--devices", type=int, default=None, help="how many devices (default all)")
    parser.add_argument("--small", action="store_true", help="n = 100,000, 5 steps, 2 devices")
    opts = parser.parse_args(argv)
    n, steps = (100_000, 5) if opts.small else (opts.n, opts.steps)
    count = opts.devices or (2 if opts.small else None)
    try:
        chosen = pick(count)
    except GPUNotAvailable as exc:
        print(f"no GPU: {exc}", file=sys.stderr)
        return 69
    for p in split(n, chosen):
        print(f"{p.device.name} (logical {p.device.logical}): elements {p.start} to {p.stop}")
    _, seconds = run(n, steps, chosen)
    print(
        f"{steps} saxpy steps over {n} float32 on {len(chosen)} devices, joined: "
        f"{seconds * 1e3:.1f} ms; matches numpy"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
