"""The kernels whose IR text is kept under tests/frontend/golden/ir/ (one file per kernel)."""

import math

from cthreads.gpu.indices import BlockDim, BlockIdx, GlobalIdx, ThreadIdx
from cthreads.gpu.kernel import Gpu
from cthreads.sync import Barrier, __sync_threads

TILE = 64


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    """y = a * x + y"""
    i: int = GlobalIdx.x
    if i >= n:
        return
    y[i] = a * x[i] + y[i]


@Gpu
def horner(n: int, coeffs: list[float], x: list[float], out: list[float]) -> None:
    i = GlobalIdx.x
    if i < n:
        acc = 0.0
        for k in range(len(coeffs) - 1, -1, -1):
            acc = acc * x[i] + coeffs[k]
        out[i] = acc


@Gpu
def int_mix(a: list[int], b: list[int], out: list[int]) -> None:
    i = GlobalIdx.x
    v = a[i]
    out[i] = (v % 7) + (v // 3) + ((v & 0xFF) >> 2) + (v ^ b[i]) - (b[i] << 1)


@Gpu
def bool_logic(p: list[bool], q: list[bool], both: list[bool], either: list[bool]) -> None:
    i = GlobalIdx.x
    both[i] = p[i] and q[i]
    either[i] = p[i] or not q[i]


@Gpu
def collatz(start: list[int], steps: list[int]) -> None:
    i = GlobalIdx.x
    v = start[i]
    count = 0
    while v > 1:
        if v % 2 == 0:
            v //= 2
        else:
            v = 3 * v + 1
        count += 1
        if count >= 1000:
            break
    steps[i] = count


@Gpu
def clamp(lo: float, hi: float, x: list[float]) -> None:
    i = GlobalIdx.x
    v = x[i]
    if v < lo:
        v = lo
    elif v > hi:
        v = hi
    else:
        v = math.sqrt(v) * 2
    x[i] = v


@Gpu
def stencil(n: int, src: list[float], dst: list[float]) -> None:
    i = GlobalIdx.x
    if 0 < i < n - 1:
        dst[i] = (src[i - 1] + 2.0 * src[i] + src[i + 1]) / 4
    elif i == 0 or i == n - 1:
        dst[i] = src[i]


@Gpu(workgroup_size=TILE)
def block_sum(x: list[float], partial: list[float], ids: list[int]) -> None:
    t = ThreadIdx.x
    g = BlockIdx.x * BlockDim.x + t
    ids[g] = g
    __sync_threads()
    if t == 0:
        s = 0.0
        for k in range(TILE):
            s += x[BlockIdx.x * TILE + k]
        partial[BlockIdx.x] = s
    Barrier.arrive_and_wait()


ALL = [saxpy, horner, int_mix, bool_logic, collatz, clamp, stencil, block_sum]
