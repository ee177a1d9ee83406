"""The benchmark kernels as `@Gpu` functions, plus three more for compile/prepare timings.

Each benchmarked kernel has a GLSL twin in `shaders/bench_<name>.comp` with the same arithmetic
(grid-stride loop, workgroup width as specialization constant 0) and the push layout noted there.
"""

from __future__ import annotations

from cthreads.gpu import GlobalIdx, Gpu


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def stencil(n: int, x: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        left: float = x[i - 1] if i > 0 else 0.0
        right: float = x[i + 1] if i + 1 < n else 0.0
        out[i] = 0.25 * left + 0.5 * x[i] + 0.25 * right


@Gpu
def fma8(n: int, a: float, b: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        v: float = x[i]
        for k in range(8):
            v = v * a + b
        y[i] = v


@Gpu
def hash32(n: int, seed: int, x: list[int], out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        h: int = x[i] ^ seed
        for r in range(4):
            h = h ^ (h << 13)
            h = h ^ (h >> 17)
            h = h ^ (h << 5)
            h = h * 1103515245 + 12345
        out[i] = h


@Gpu
def mandel(n: int, w: int, max_iter: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        fw: float = float(w)
        cx: float = -2.0 + 3.0 * float(i % w) / fw
        cy: float = -1.5 + 3.0 * float(i // w) / fw
        zx: float = 0.0
        zy: float = 0.0
        it: int = 0
        while it < max_iter and zx * zx + zy * zy < 4.0:
            t: float = zx * zx - zy * zy + cx
            zy = 2.0 * zx * zy + cy
            zx = t
            it += 1
        out[i] = it


# -- only for compile/prepare timings (8 kernels in all) -------------------------------------


@Gpu
def scale(a: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] * a


@Gpu
def clamp(lo: float, hi: float, x: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    v: float = x[i]
    if v < lo:
        out[i] = lo
    elif v > hi:
        out[i] = hi
    else:
        out[i] = v


@Gpu
def collatz(x: list[int], steps: list[int]) -> None:
    i: int = GlobalIdx.x
    v: int = x[i]
    s: int = 0
    while v > 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        s += 1
        if s >= 1000:
            break
    steps[i] = s


ALL = [saxpy, stencil, fma8, hash32, mandel, scale, clamp, collatz]
