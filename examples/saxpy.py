"""saxpy (y = a*x + y) on plain Python lists and on numpy arrays, verified against numpy.

    python examples/saxpy.py            # n = 1,000,000
    python examples/saxpy.py --small    # n = 10,000 (what the test suite runs)
    python examples/saxpy.py --n 5000000

Lists are packed for the device and the results written back into the same list object; numpy
float32 arrays are copied as raw memory and updated in place. A float64 array is refused (no
silent conversion): convert with `astype(numpy.float32)`.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cthreads.examples_kernels import saxpy  # the kernel the demo runs too
from cthreads.gpu import GPUNotAvailable, device_name, gpu, prepare


def on_lists(n: int, a: float) -> float:
    """saxpy on Python lists; returns the wall time in seconds. Raises if the result is wrong."""
    x = [i * 0.5 for i in range(n)]
    y = [1.0] * n
    expected = np.float32(a) * np.asarray(x, np.float32) + np.float32(1.0)
    t0 = time.perf_counter()
    gpu(saxpy, n, a, x, y).join()  # y is rewritten in place with Python floats
    seconds = time.perf_counter() - t0
    assert isinstance(y, list) and len(y) == n
    assert np.array_equal(np.asarray(y, np.float32), expected), "list saxpy differs from numpy"
    return seconds


def on_arrays(n: int, a: float) -> float:
    """saxpy on numpy float32 arrays; returns the wall time in seconds."""
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    expected = np.float32(a) * x + y  # float32 throughout, exactly what the device does
    t0 = time.perf_counter()
    gpu(saxpy, n, a, x, y).join()  # y is updated in place
    seconds = time.perf_counter() - t0
    assert np.array_equal(y, expected), "array saxpy differs from numpy"
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="elements (default 1,000,000)")
    parser.add_argument("--small", action="store_true", help="n = 10,000")
    opts = parser.parse_args(argv)
    n = 10_000 if opts.small else opts.n
    try:
        prepare()
    except GPUNotAvailable as exc:
        print(f"no usable Vulkan device: {exc}", file=sys.stderr)
        return 1
    print(f"device: {device_name()}")
    t_list = on_lists(n, 2.0)
    print(f"saxpy on Python lists,  n={n:>11,}: {t_list * 1e3:8.2f} ms  (matches numpy)")
    t_arr = on_arrays(n, 3.0)
    print(f"saxpy on numpy arrays,  n={n:>11,}: {t_arr * 1e3:8.2f} ms  (matches numpy)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
