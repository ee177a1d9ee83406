"""The kernels the demo and the example scripts share, with their numpy references.

`python -m cthreads.demo` runs from an installed package, where `examples/` is absent, so the
kernels it shows live here and `examples/*.py` import them: one copy of each kernel, one
reference computation to check it against, one colour map for the Mandelbrot picture.
"""

from __future__ import annotations

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    """y = a * x + y, one element per logical invocation."""
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def mandelbrot(
    n: int, width: int, x0: float, y0: float, step: float, max_iter: int, counts: list[int]
) -> None:
    """The escape-iteration count of pixel i (row-major, `width` wide) into counts[i]."""
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


def mandelbrot_view(
    width: int, height: int, cx: float = -0.6, cy: float = 0.0, span: float = 3.2
) -> tuple[float, float, float]:
    """(x0, y0, step) so that the picture is centred on (cx, cy) and `span` wide."""
    step = span / width
    return cx - step * width / 2, cy - step * height / 2, step


def mandelbrot_reference(
    idx: np.ndarray, width: int, x0: float, y0: float, step: float, max_iter: int
) -> np.ndarray:
    """The kernel's computation in numpy float32, for the pixel indexes `idx`."""
    f = np.float32
    cr = f(x0) + (idx % width).astype(f) * f(step)
    ci = f(y0) + (idx // width).astype(f) * f(step)
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    k = np.zeros(idx.shape, np.int32)
    for _ in range(max_iter):
        live = zr * zr + zi * zi <= f(4.0)
        if not live.any():
            break
        t = zr * zr - zi * zi + cr
        zi = np.where(live, f(2.0) * zr * zi + ci, zi)
        zr = np.where(live, t, zr)
        k += live
    return k


def mandelbrot_colors(counts: np.ndarray, max_iter: int) -> np.ndarray:
    """RGB uint8 image of the counts (any shape + a last axis of 3): points inside the set
    black, outside a blue-to-gold ramp."""
    t = np.sqrt(counts.astype(np.float64) / max_iter)
    r = np.clip(9.0 * (1 - t) * t**3, 0, 1)
    g = np.clip(15.0 * (1 - t) ** 2 * t**2, 0, 1)
    b = np.clip(8.5 * (1 - t) ** 3 * t, 0, 1)
    rgb = np.stack([r, g, b], axis=-1)
    rgb[counts >= max_iter] = 0.0
    return (rgb * 255).astype(np.uint8)
