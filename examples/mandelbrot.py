"""Render the Mandelbrot set on the GPU and write a PNG with Pillow.

    python examples/mandelbrot.py                       # 640x400 -> mandelbrot.png
    python examples/mandelbrot.py --small -o m.png      # 160x100, checked against numpy
    python examples/mandelbrot.py --width 1920 --height 1200 --iters 1000

The kernel computes one escape-iteration count per pixel into a `list[int]` (here a numpy
int32 array, updated in place); the host maps counts to colours.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, GPUNotAvailable, device_name, gpu, prepare


@Gpu
def mandelbrot(
    n: int, width: int, x0: float, y0: float, step: float, max_iter: int, counts: list[int]
) -> None:
    i: int = GlobalIdx.x
    if i < n:
        cr: float = x0 + (i % width) * step
        ci: float = y0 + (i // width) * step
        zr: float = 0.0
        zi: float = 0.0
        k: int = 0
        while k < max_iter and zr * zr + zi * zi <= 4.0:
            t: float = zr * zr - zi * zi + cr
            zi = 2.0 * zr * zi + ci
            zr = t
            k += 1
        counts[i] = k


def view(width: int, height: int, cx: float = -0.6, cy: float = 0.0, span: float = 3.2):
    """(x0, y0, step) so that the picture is centred on (cx, cy) and `span` wide."""
    step = span / width
    return cx - step * width / 2, cy - step * height / 2, step


def render(width: int, height: int, max_iter: int) -> np.ndarray:
    """Iteration counts, shape (height, width), int32."""
    x0, y0, step = view(width, height)
    counts = np.zeros(width * height, np.int32)
    gpu(mandelbrot, width * height, width, x0, y0, step, max_iter, counts).join()
    return counts.reshape(height, width)


def reference(width: int, height: int, max_iter: int) -> np.ndarray:
    """The same computation in numpy float32 (slow; for checking small sizes)."""
    f = np.float32
    x0, y0, step = (f(v) for v in view(width, height))
    i = np.arange(width * height, dtype=np.int32)
    cr = x0 + (i % width).astype(f) * step
    ci = y0 + (i // width).astype(f) * step
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    k = np.zeros(i.shape, np.int32)
    for _ in range(max_iter):
        live = zr * zr + zi * zi <= f(4.0)
        if not live.any():
            break
        t = zr * zr - zi * zi + cr
        zi = np.where(live, f(2.0) * zr * zi + ci, zi)
        zr = np.where(live, t, zr)
        k += live
    return k.reshape(height, width)


def colorize(counts: np.ndarray, max_iter: int) -> np.ndarray:
    """RGB uint8 image: points inside the set black, outside a blue-to-gold ramp."""
    t = np.sqrt(counts.astype(np.float64) / max_iter)
    r = np.clip(9.0 * (1 - t) * t**3, 0, 1)
    g = np.clip(15.0 * (1 - t) ** 2 * t**2, 0, 1)
    b = np.clip(8.5 * (1 - t) ** 3 * t, 0, 1)
    rgb = np.stack([r, g, b], axis=-1)
    rgb[counts >= max_iter] = 0.0
    return (rgb * 255).astype(np.uint8)


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
    Image.fromarray(colorize(counts, opts.iters)).save(opts.output)
    print(f"wrote {opts.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
