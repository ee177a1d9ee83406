"""Render the Mandelbrot set on the GPU and write a PNG with Pillow.

    python examples/mandelbrot.py                       # 640x400 -> mandelbrot.png
    python examples/mandelbrot.py --small -o m.png      # 160x100, checked against numpy
    python examples/mandelbrot.py --width 1920 --height 1200 --iters 1000

The kernel computes one escape-iteration count per pixel into a `list[int]` (here a numpy
int32 array, updated in place); the host maps counts to colours. The kernel, its numpy
reference and the colour map live in `cthreads/examples_kernels.py`, shared with
`python -m cthreads.demo`.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cthreads.examples_kernels import (
    mandelbrot,
    mandelbrot_colors,
    mandelbrot_reference,
    mandelbrot_view,
)
from cthreads.gpu import GPUNotAvailable, device_name, gpu, prepare


def render(width: int, height: int, max_iter: int) -> np.ndarray:
    """Iteration counts, shape (height, width), int32."""
    x0, y0, step = mandelbrot_view(width, height)
    counts = np.zeros(width * height, np.int32)
    gpu(mandelbrot, width * height, width, x0, y0, step, max_iter, counts).join()
    return counts.reshape(height, width)


def reference(width: int, height: int, max_iter: int) -> np.ndarray:
    """The same computation in numpy float32 (slow; for checking small sizes)."""
    i = np.arange(width * height, dtype=np.int32)
    return mandelbrot_reference(i, width, *mandelbrot_view(width, height), max_iter).reshape(
        height, width
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=400)
    parser.add_argument("--iters", type=int, default=256, help="maximum iterations per pixel")
    parser.add_argument("--small", action="store_true", help="160x100, verified against numpy")
    parser.add_argument("-o", "--output", default="mandelbrot.png", help="PNG to write")
    opts = parser.parse_args(argv)
    from PIL import Image  # the examples extra: pip install 'cthreads[examples]'

    width, height = (160, 100) if opts.small else (opts.width, opts.height)
    try:
        prepare()
    except GPUNotAvailable as exc:
        print(f"no usable Vulkan device: {exc}", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    counts = render(width, height, opts.iters)
    ms = (time.perf_counter() - t0) * 1e3
    print(f"device: {device_name()}")
    print(
        f"{width}x{height}, up to {opts.iters} iterations: {ms:.1f} ms, "
        f"{int(counts.sum()):,} iterations in total"
    )
    if opts.small:
        ref = reference(width, height, opts.iters)
        wrong = int((ref != counts).sum())
        print(f"pixels that differ from numpy float32: {wrong} of {counts.size}")
        if wrong:
            return 2
    Image.fromarray(mandelbrot_colors(counts, opts.iters)).save(opts.output)
    print(f"wrote {opts.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
