"""`python -m cthreads.demo`: run real @Gpu kernels on the default device and verify them.

Shows the chosen device, a saxpy on Python lists and on numpy arrays, a resident `GpuArena`
loop, an awaited job and a Mandelbrot picture, each checked against numpy with its timing; says
where the picture was written (`mandelbrot.png` in the current directory, or the path given as
the first argument).
"""

from __future__ import annotations

import asyncio
import struct
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from cthreads.examples_kernels import (
    mandelbrot,
    mandelbrot_colors,
    mandelbrot_reference,
    mandelbrot_view,
    saxpy,
)
from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GPUNotAvailable, device_name, gpu, prepare


@Gpu
def relax(n: int, src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    if i > 0 and i < n - 1:
        dst[i] = 0.25 * src[i - 1] + 0.5 * src[i] + 0.25 * src[i + 1]


def _write_png(path: Path, rgb: np.ndarray) -> None:
    """A minimal RGB PNG writer (zlib only; no imaging library needed)."""
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def _ms(t0: float) -> str:
    return f"{(time.perf_counter() - t0) * 1e3:8.2f} ms"


def _check(label: str, ok: bool, timing: str) -> bool:
    print(f"  {'ok ' if ok else 'BAD'} {label:<44} {timing}")
    return ok


def main() -> int:
    try:
        t0 = time.perf_counter()
        report = prepare()
        print(f"device: {device_name()}")
        print(f"prepared {len(report)} kernels in {_ms(t0).strip()}")
    except GPUNotAvailable as exc:
        print(f"no usable Vulkan device: {exc}", file=sys.stderr)
        return 1
    ok = True

    n = 100_000
    x = [i * 0.001 for i in range(n)]
    y = [1.0] * n
    expected = np.float32(2.0) * np.asarray(x, np.float32) + np.float32(1.0)
    t0 = time.perf_counter()
    gpu(saxpy, n, 2.0, x, y).join()
    ok &= _check(
        f"saxpy on Python lists (n={n:,})",
        np.array_equal(np.asarray(y, np.float32), expected),
        _ms(t0),
    )

    n = 1_000_000
    xa = np.random.default_rng(1).random(n, dtype=np.float32)
    ya = np.ones(n, np.float32)
    expected = np.float32(3.0) * xa + ya
    t0 = time.perf_counter()
    gpu(saxpy, n, 3.0, xa, ya).join()
    ok &= _check(f"saxpy on numpy arrays (n={n:,})", np.array_equal(ya, expected), _ms(t0))

    n, steps = 4096, 100
    a = np.zeros(n, np.float32)
    a[n // 2] = 1.0
    b = a.copy()
    ref_a, ref_b = a.copy(), b.copy()
    for _ in range(steps // 2):
        ref_b[1:-1] = 0.25 * ref_a[:-2] + 0.5 * ref_a[1:-1] + 0.25 * ref_a[2:]
        ref_a[1:-1] = 0.25 * ref_b[:-2] + 0.5 * ref_b[1:-1] + 0.25 * ref_b[2:]
    t0 = time.perf_counter()
    with GpuArena().bind(a=a, b=b) as arena:
        for _ in range(steps // 2):
            gpu(relax, n, a, b).join(download=False)
            gpu(relax, n, b, a).join(download=False)
        arena.sync("a")
    ok &= _check(
        f"GpuArena loop, {steps} resident launches", bool(np.allclose(a, ref_a, atol=1e-6)), _ms(t0)
    )

    async def served() -> bool:
        xs = [float(i) for i in range(256)]
        ys = [0.0] * 256
        await gpu(saxpy, 256, 0.5, xs, ys)
        return ys == [float(np.float32(0.5) * np.float32(v)) for v in xs]

    t0 = time.perf_counter()
    ok &= _check("await gpu(...) inside asyncio", asyncio.run(served()), _ms(t0))

    width, height, max_iter = 640, 400, 256
    x0, y0, step = mandelbrot_view(width, height)
    counts = np.zeros(width * height, np.int32)
    t0 = time.perf_counter()
    gpu(mandelbrot, width * height, width, x0, y0, step, max_iter, counts).join()
    timing = _ms(t0)
    rows = np.arange(0, width * height).reshape(height, width)[::16].ravel()  # every 16th row
    same = np.array_equal(counts[rows], mandelbrot_reference(rows, width, x0, y0, step, max_iter))
    ok &= _check(f"Mandelbrot {width}x{height}, {max_iter} iterations", same, timing)
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "mandelbrot.png").resolve()
    _write_png(out, mandelbrot_colors(counts.reshape(height, width), max_iter))
    print(f"  wrote the Mandelbrot picture to {out}")
    print("all results verified" if ok else "SOME RESULTS WRONG")
    return 0 if ok else 2


if __name__ == "__main__":
    raise SystemExit(main())
