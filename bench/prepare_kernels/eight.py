"""Eight kernels in the dialect cthreads shares with cthreads-gpu 0.2 (bench/prepare_compare.py).

No parameter is named `out`: cthreads-gpu turns names into GLSL identifiers and fails on it."""

from cthreads.gpu import GlobalIdx, Gpu


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def fill(n: int, v: float, res: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        res[i] = v


@Gpu
def scale(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] * k


@Gpu
def add_scaled(
    n: int, a: float, x: list[float], b: float, y: list[float], res: list[float]
) -> None:
    i: int = GlobalIdx.x
    if i < n:
        res[i] = a * x[i] + b * y[i]


@Gpu
def clamp(n: int, lo: float, hi: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        if x[i] < lo:
            x[i] = lo
        elif x[i] > hi:
            x[i] = hi


@Gpu
def stencil(n: int, src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    if i > 0 and i < n - 1:
        dst[i] = 0.25 * src[i - 1] + 0.5 * src[i] + 0.25 * src[i + 1]


@Gpu
def poly(n: int, x: list[float], res: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        acc: float = 0.0
        for k in range(4):
            acc = acc * x[i] + 1.0
        res[i] = acc


@Gpu
def int_mix(n: int, a: list[int], b: list[int], res: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        res[i] = (a[i] + b[i]) * 3 - a[i]
