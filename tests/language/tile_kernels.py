"""Tile (cooperative matrix) kernels, one per form, with the numpy result each must give.

Each kernel runs one subgroup of 32 per workgroup and one output tile per workgroup
(`BlockIdx.x` = tile index, row-major over the output's tiles). `FORMS` lists, per kernel, how
to make its arguments and the numpy reference, so the compile tests (tests/compiler), the
emulator tests (tests/testing) and the H200 execution test (tests/gpu) share them.
One body per element-type pair is sized by `@Gpu(constants=...)` (the fixed-shape forms and
`SHAPE_FORMS`, one kernel per matrix shape the nvidia-h200 profile lists, alike);
`shape_forms(shapes)` makes those of a device.
"""

from __future__ import annotations

import numpy as np

from cthreads.sync import __sync_threads
from cthreads.gpu import (
    BlockIdx,
    Gpu,
    ThreadIdx,
    bf16,
    f16,
    f32,
    i8,
    i32,
    shared,
    tile_fill,
    tile_load,
    tile_mma,
    tile_store,
    to_bf16,
    u8,
    u16,
    u32,
    u64,
)
from cthreads.gpu.tiles import from_bf16

WG = 32


# ---------------------------------- one body per element-type pair, sized TM x TN x TK
# Never read: every kernel binds its own with constants= (0 makes a resolver that reads the
# module instead fail loudly, in the compiler and in the emulator alike).
TM = TN = TK = 0


def sh_f16_f32(a: list[f16], b: list[f16], c: list[f32], m: int, n: int, k: int):
    tm = BlockIdx.x // (n // TN)
    tn = BlockIdx.x % (n // TN)
    acc = tile_fill(f32, TM, TN, 0.0)
    for kk in range(0, k, TK):
        ta = tile_load(a, tm * TM * k + kk, k, TM, TK, use="a")
        tb = tile_load(b, kk * n + tn * TN, n, TK, TN, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * TM * n + tn * TN, n, acc)


def sh_f16_f16(a: list[f16], b: list[f16], c: list[f16], m: int, n: int, k: int):
    tm = BlockIdx.x // (n // TN)
    tn = BlockIdx.x % (n // TN)
    acc = tile_fill(f16, TM, TN, 0.0)
    for kk in range(0, k, TK):
        ta = tile_load(a, tm * TM * k + kk, k, TM, TK, use="a")
        tb = tile_load(b, kk * n + tn * TN, n, TK, TN, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * TM * n + tn * TN, n, acc)


def sh_bf16_f32(a: list[u16], b: list[u16], c: list[f32], m: int, n: int, k: int):
    """bf16 operands held as bit patterns in u16 lists."""
    tm = BlockIdx.x // (n // TN)
    tn = BlockIdx.x % (n // TN)
    acc = tile_fill(f32, TM, TN, 0.0)
    for kk in range(0, k, TK):
        ta = tile_load(a, tm * TM * k + kk, k, TM, TK, use="a")
        tb = tile_load(b, kk * n + tn * TN, n, TK, TN, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * TM * n + tn * TN, n, acc)


def sh_i8_i32(a: list[i8], b: list[i8], c: list[i32], m: int, n: int, k: int):
    tm = BlockIdx.x // (n // TN)
    tn = BlockIdx.x % (n // TN)
    acc = tile_fill(i32, TM, TN)
    for kk in range(0, k, TK):
        ta = tile_load(a, tm * TM * k + kk, k, TM, TK, use="a")
        tb = tile_load(b, kk * n + tn * TN, n, TK, TN, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * TM * n + tn * TN, n, acc)


def sh_u8_u32(a: list[u8], b: list[u8], c: list[u32], m: int, n: int, k: int):
    tm = BlockIdx.x // (n // TN)
    tn = BlockIdx.x % (n // TN)
    acc = tile_fill(u32, TM, TN)
    for kk in range(0, k, TK):
        ta = tile_load(a, tm * TM * k + kk, k, TM, TK, use="a")
        tb = tile_load(b, kk * n + tn * TN, n, TK, TN, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * TM * n + tn * TN, n, acc)


def _shaped(body, m: int, n: int, k: int):
    """`body` as the kernel of one M x N x K shape."""
    return Gpu(workgroup_size=WG, constants={"TM": m, "TN": n, "TK": k})(body)


mm_f16_f32 = _shaped(sh_f16_f32, 16, 16, 16)
mm_f16_f16_16x8x16 = _shaped(sh_f16_f16, 16, 8, 16)
mm_f16_f32_16x8x8 = _shaped(sh_f16_f32, 16, 8, 8)
mm_i8 = _shaped(sh_i8_i32, 16, 16, 32)
mm_u8 = _shaped(sh_u8_u32, 16, 8, 32)


@Gpu(workgroup_size=WG)
def mm_col_major(a: list[f16], bt: list[f16], ct: list[f32], m: int, n: int, k: int):
    """B given transposed (N x K row-major = K x N column-major); C written transposed."""
    tm = BlockIdx.x // (n // 16)
    tn = BlockIdx.x % (n // 16)
    acc = tile_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, 16):
        ta = tile_load(a, tm * 16 * k + kk, k, 16, 16, use="a")
        tb = tile_load(bt, tn * 16 * k + kk, k, 16, 16, use="b", col_major=True)
        acc = tile_mma(ta, tb, acc)
    tile_store(ct, tn * 16 * m + tm * 16, m, acc, col_major=True)


@Gpu(workgroup_size=WG)
def mm_epilogue(
    a: list[f16], b: list[f16], c: list[f32], d: list[f32], m: int, n: int, k: int,
    alpha: float, beta: float,
):  # fmt: skip
    """d = 2 * (alpha * (a @ b) + beta * c - c) + c: an accumulator loaded from a list, scaled,
    added and subtracted (operators and augmented assignments)."""
    tm = BlockIdx.x // (n // 16)
    tn = BlockIdx.x % (n // 16)
    acc = tile_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, 16):
        ta = tile_load(a, tm * 16 * k + kk, k, 16, 16, use="a")
        tb = tile_load(b, kk * n + tn * 16, n, 16, 16, use="b")
        acc = tile_mma(ta, tb, acc)
    old = tile_load(c, tm * 16 * n + tn * 16, n, 16, 16, use="acc")
    acc = alpha * acc
    scaled = old * beta
    out = acc + scaled
    out -= old
    out *= 2.0
    out += old
    tile_store(d, tm * 16 * n + tn * 16, n, out)


@Gpu(workgroup_size=WG)
def mm_shared(a: list[f16], b: list[f16], c: list[f32], m: int, n: int, k: int):
    """A and B staged through shared arrays; the result through one too."""
    sa = shared(f16, 256)
    sb = shared(f16, 256)
    sc = shared(f32, 256)
    tm = BlockIdx.x // (n // 16)
    tn = BlockIdx.x % (n // 16)
    t = ThreadIdx.x
    acc = tile_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, 16):
        for e in range(t, 256, WG):
            sa[e] = a[(tm * 16 + e // 16) * k + kk + e % 16]
            sb[e] = b[(kk + e // 16) * n + tn * 16 + e % 16]
        __sync_threads()
        ta = tile_load(sa, 0, 16, 16, 16, use="a")
        tb = tile_load(sb, 0, 16, 16, 16, use="b")
        acc = tile_mma(ta, tb, acc)
        __sync_threads()
    tile_store(sc, 0, 16, acc)
    __sync_threads()
    for e in range(t, 256, WG):
        c[(tm * 16 + e // 16) * n + tn * 16 + e % 16] = sc[e]


@Gpu(workgroup_size=WG)
def bf16_fill_store(x: list[f32], a: list[u16], b: list[u16], c: list[f32]):
    """A bf16 "a" tile filled from a runtime f32 (rounded to nearest even), stored as bits; an
    "a" x "b" product of fills into c."""
    ta = tile_fill(bf16, 16, 16, x[0], use="a")
    tb = tile_fill(bf16, 16, 16, 2.0, use="b")
    tile_store(a, 0, 16, ta)
    tile_store(b, 0, 16, tb)
    acc = tile_fill(f32, 16, 16, 0.0)
    acc = tile_mma(ta, tb, acc)
    tile_store(c, 0, 16, acc)


@Gpu(workgroup_size=WG)
def mm_packed(a: list[u32], b: list[u64], c: list[f32], m: int, n: int, k: int):
    """f16 A and B read packed: A two per u32 word (row-major), B four per u64 word (stored
    transposed, so its tiles are column-major); offsets and strides count words."""
    tm = BlockIdx.x // (n // 16)
    tn = BlockIdx.x % (n // 16)
    acc = tile_fill(f32, 16, 16, 0.0)
    for kk in range(0, k, 16):
        ta = tile_load(a, (tm * 16 * k + kk) // 2, k // 2, 16, 16, use="a", elem=f16)
        tb = tile_load(b, (tn * 16 * k + kk) // 4, k // 4, 16, 16, "b", True, f16)
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * 16 * n + tn * 16, n, acc)


def _packed():
    m = n = k = 32

    def make(rng):
        a, b = _f16(rng, (m, k)), _f16(rng, (k, n))
        bt = np.ascontiguousarray(b.T)
        return [a.view(np.uint32), bt.view(np.uint64), np.zeros((m, n), np.float32), m, n, k]

    def ref(args):
        a, bt = args[0].view(np.float16), args[1].view(np.float16)
        return [_mm(a, bt.T, np.float32)]

    return make, ref


_SHAPE_BODIES = {
    ("f16", "f32"): sh_f16_f32,
    ("f16", "f16"): sh_f16_f16,
    ("bf16", "f32"): sh_bf16_f32,
    ("i8", "i32"): sh_i8_i32,
    ("u8", "u32"): sh_u8_u32,
}
_NP = {"f16": np.float16, "bf16": "bf16", "i8": np.int8, "u8": np.uint8}
_NP_ACC = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u32": np.uint32}


def shape_forms(shapes) -> dict:
    """name -> form (as FORMS) for each (M, N, K, A, B, C, Result) whose types have a body."""
    out = {}
    for m, n, k, a, b, c, r in shapes:
        body = _SHAPE_BODIES.get((a, c))
        if body is None or a != b or c != r:
            continue
        kernel = _shaped(body, m, n, k)
        make, ref = _std(_NP[a], _NP_ACC[c], m, n, m=2 * m, n=2 * n, k=2 * k)
        out[f"shape_{m}x{n}x{k}_{a}_{c}"] = (kernel, make, ref, (2,), 4 * WG)
    return out


def _f16(rng, shape):
    # small integers and halves: every product and partial sum is exact in float32, so any
    # summation order gives the numpy result exactly
    return (rng.integers(-4, 5, shape) / 2).astype(np.float16)


def _mm(a, b, dt):
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(dt)


def _std(adt, cdt, tm, tn, m=32, n=32, k=32):
    def make(rng):
        if adt == "bf16":  # the same exact values as f16, as bf16 bit patterns
            a, b = to_bf16(_f16(rng, (m, k))), to_bf16(_f16(rng, (k, n)))
        elif adt == np.float16:
            a, b = _f16(rng, (m, k)), _f16(rng, (k, n))
        else:
            lo, hi = (-128, 128) if adt == np.int8 else (0, 256)
            a = rng.integers(lo, hi, (m, k)).astype(adt)
            b = rng.integers(lo, hi, (k, n)).astype(adt)
        return [a, b, np.zeros((m, n), cdt), m, n, k]

    def ref(args):
        a, b = args[0], args[1]
        if adt == "bf16":
            return [_mm(from_bf16(a), from_bf16(b), cdt)]
        if adt == np.float16:
            return [_mm(a, b, cdt)]
        return [(a.astype(np.int64) @ b.astype(np.int64)).astype(cdt)]

    return make, ref


def _colmajor():
    m = n = k = 32

    def make(rng):
        a, b = _f16(rng, (m, k)), _f16(rng, (k, n))
        return [a, np.ascontiguousarray(b.T), np.zeros((n, m), np.float32), m, n, k]

    def ref(args):
        return [np.ascontiguousarray(_mm(args[0], args[1].T, np.float32).T)]

    return make, ref


def _epilogue():
    m = n = k = 32

    def make(rng):
        a, b = _f16(rng, (m, k)), _f16(rng, (k, n))
        c = (rng.integers(-8, 9, (m, n)) / 4).astype(np.float32)
        return [a, b, c, np.zeros((m, n), np.float32), m, n, k, 0.5, 2.0]

    def ref(args):
        a, b, c = args[0], args[1], args[2]
        return [(2 * (0.5 * _mm(a, b, np.float64) + 2.0 * c - c) + c).astype(np.float32)]

    return make, ref


# name -> (kernel, make(rng) -> args, ref(args) -> expected outputs, output arg indexes, grid)
FORMS = {
    "f16_f32_16x16x16": (mm_f16_f32, *_std(np.float16, np.float32, 16, 16), (2,), 4 * WG),
    "f16_f16_16x8x16": (mm_f16_f16_16x8x16, *_std(np.float16, np.float16, 16, 8), (2,), 8 * WG),
    "f16_f32_16x8x8": (mm_f16_f32_16x8x8, *_std(np.float16, np.float32, 16, 8), (2,), 8 * WG),
    "col_major": (mm_col_major, *_colmajor(), (2,), 4 * WG),
    "i8_i32_16x16x32": (mm_i8, *_std(np.int8, np.int32, 16, 16), (2,), 4 * WG),
    "u8_u32_16x8x32": (mm_u8, *_std(np.uint8, np.uint32, 16, 8), (2,), 8 * WG),
    "epilogue": (mm_epilogue, *_epilogue(), (3,), 4 * WG),
    "shared": (mm_shared, *_std(np.float16, np.float32, 16, 16), (2,), 4 * WG),
}


def _bf16_fill():
    def make(rng):
        x = np.array([1.00390625 + 2.0**-9], np.float32)  # between two bf16 values: rounds up
        z = np.zeros(256, np.uint16)
        return [x, z, z.copy(), np.zeros(256, np.float32)]

    def ref(args):
        a = to_bf16(np.full(256, args[0][0], np.float32))
        b = to_bf16(np.full(256, 2.0, np.float32))
        return [a, b, np.full(256, 16 * float(from_bf16(a[0])) * 2.0, np.float32)]

    return make, ref


FORMS["bf16_fill_store"] = (bf16_fill_store, *_bf16_fill(), (1, 2, 3), WG)
FORMS["packed"] = (mm_packed, *_packed(), (2,), 4 * WG)


def _h200_shapes():
    from cthreads.compiler import profiles

    return profiles.load("nvidia-h200")[2].matrix_shapes


SHAPE_FORMS = shape_forms(_h200_shapes())


# ------------------------------------------- accesses that may not fit (issue 18's guards)
# One workgroup (one subgroup) loads a 16 x 16 f32 tile at offset `off` from a 320-element
# list with the constant stride 16, with the runtime stride `s`, and from a shared copy of the
# list; stores each into `out` (at fixed places that always fit), and stores the first at
# `off` into a shared array and a list of 320 (which do not fit where the loads do not). An
# f32 tile fits at `off` (stride 16) when 0 <= off <= 64 and off % 4 == 0.
EDGE_N = 320


@Gpu(workgroup_size=WG)
def tile_edges(x: list[f32], out: list[f32], spill: list[f32], off: int, s: int):
    t = ThreadIdx.x
    sh = shared(f32, EDGE_N)
    back = shared(f32, EDGE_N)
    for e in range(t, EDGE_N, WG):
        sh[e] = x[e]
        back[e] = 0.0
    __sync_threads()
    fixed = tile_load(x, off, 16, 16, 16, use="acc")
    tile_store(out, 0, 16, fixed)
    runtime = tile_load(x, off, s, 16, 16, use="acc")
    tile_store(out, 256, 16, runtime)
    staged = tile_load(sh, off, 16, 16, 16, use="acc")
    tile_store(out, 512, 16, staged)
    tile_store(back, off, 16, fixed)
    tile_store(spill, off, 16, fixed)
    __sync_threads()
    for e in range(t, EDGE_N, WG):
        out[768 + e] = back[e]


# (off, s) pairs: in range, at the last place that fits, one element past it, misaligned,
# negative; and runtime strides that fit, reach past the end, are misaligned, negative
EDGE_CASES = (
    (0, 16),
    (4, 16),
    (64, 16),
    (68, 16),
    (2, 16),
    (-4, 16),
    (0, 20),
    (0, 24),
    (0, 18),
    (0, -16),
)


def edge_inputs() -> list:
    x = [float(i + 1) for i in range(EDGE_N)]
    return [x, [0.0] * (768 + EDGE_N), [0.0] * EDGE_N]
