"""@Gpu kernels (through the real frontend) for the vector-form tests: each either qualifies for
the 4-wide form (`VECTOR`) or must keep the scalar one (`SCALAR`), with the reason in a comment."""

from __future__ import annotations

from cthreads.gpu import GlobalIdx, Gpu, ThreadIdx


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def direct(x: list[float], y: list[float]) -> None:  # GlobalIdx.x itself as the index
    y[GlobalIdx.x] = x[GlobalIdx.x] * 2.0 - 1.0


@Gpu
def early_return(n: int, x: list[int], out: list[int], flag: list[int]) -> None:
    i: int = GlobalIdx.x
    if x[i] % 3 == 0:
        out[i] = -1
        return
    if i >= n:
        return
    flag[i] = 1
    out[i] = x[i] * 7 + 1


@Gpu
def branches(t: float, x: list[float], y: list[float], a: list[float], b: list[float]) -> None:
    i: int = GlobalIdx.x
    v: float = x[i]
    if v > t:
        a[i] = v - t
        y[i] = y[i] + 1.0
    elif v < -t:
        b[i] = v * v
    else:
        y[i] = y[i] * 0.5
        y[i] = y[i] - v  # a load after a store in the same lane sees the stored value


@Gpu
def inthash(seed: int, x: list[int], out: list[int]) -> None:
    i: int = GlobalIdx.x
    h: int = x[i] ^ seed
    for r in range(4):
        h = h ^ (h << 13)
        h = h ^ (h >> 17)
        h = h ^ (h << 5)
        h = h * 1103515245 + 12345 + r
    out[i] = h


@Gpu
def mixed(k: int, xs: list[float], ks: list[int], out_f: list[float], out_i: list[int]) -> None:
    i: int = GlobalIdx.x
    c: int = ks[i] // (i % 5 - 2)
    out_i[i] = c + k + len(xs)
    if c % 2 == 0:
        out_f[i] = xs[i] / float(c) if c != 0 else float(i)
    out_i[i] = out_i[i] + 1


@Gpu
def uint_keep(x: list[int], y: list[int]) -> None:  # write-only y, stored by some lanes only
    i: int = GlobalIdx.x
    if x[i] & 1 == 1:
        y[i] = x[i] >> 1


@Gpu
def stencil(x: list[float], out: list[float]) -> None:  # x read-only: guarded scalar loads
    i: int = GlobalIdx.x
    out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@Gpu
def gather(k: int, x: list[float], idx: list[int], out: list[float]) -> None:
    i: int = GlobalIdx.x
    j: int = idx[i] % (len(x) + 3) - k  # sometimes out of range: reads 0.0
    out[i] = x[j] + x[i] * 0.5


VECTOR = [saxpy, direct, early_return, branches, inthash, mixed, uint_keep, stencil, gather]


@Gpu
def flags(b: list[bool], out: list[int]) -> None:  # one-byte elements
    i: int = GlobalIdx.x
    if b[i]:
        out[i] = 1


@Gpu
def scatter(x: list[float], y: list[float]) -> None:  # a written list at another index
    i: int = GlobalIdx.x
    y[len(y) - 1 - i] = x[i]


@Gpu
def reassigned(x: list[float], y: list[float]) -> None:  # `i` no longer the index after += 1
    i: int = GlobalIdx.x
    y[i] = x[i]
    i += 1
    y[i] = 0.0


@Gpu
def converging(x: list[int], out: list[int]) -> None:  # data-dependent trip count
    i: int = GlobalIdx.x
    v: int = x[i]
    steps: int = 0
    while v > 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    out[i] = steps


@Gpu
def observing(x: list[float]) -> None:  # observes the workgroup
    i: int = GlobalIdx.x
    x[i] = float(ThreadIdx.x)


SCALAR = [scatter, flags, reassigned, converging, observing]
