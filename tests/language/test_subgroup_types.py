"""Subgroup operations on the explicit scalar types (issue 8): i64/u64/f64 values with the
Vulkan 1.2 feature shaderSubgroupExtendedTypes, narrow values (f16, i8, u8, i16, u16) widened to
32 bits and converted back (adds wrap as numpy's same-type sums). Device (lavapipe) against
numpy and against the emulator; the missing-feature error, located at the kernel line.

Results are grouped by each invocation's (workgroup, subgroup_id(), subgroup_lane()), never by
an assumed subgroup layout.
"""

from __future__ import annotations


import numpy as np
import pytest
from devicehelp import device_target

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target
from cthreads.gpu import (
    BlockIdx,
    GlobalIdx,
    Gpu,
    GpuCompileError,
    f16,
    f64,
    gpu,
    i8,
    i16,
    i64,
    subgroup_add,
    subgroup_broadcast,
    subgroup_exclusive_add,
    subgroup_id,
    subgroup_inclusive_add,
    subgroup_lane,
    subgroup_max,
    subgroup_min,
    subgroup_shuffle_xor,
    u8,
    u16,
    u64,
)
from cthreads.testing.emulate import emulate

FULL = Target(
    float64=True, int64=True, float16=True, int16=True, storage_16bit=True,
    subgroup_arithmetic=True, subgroup_ballot=True, subgroup_shuffle=True, subgroup_vote=True,
    subgroup_extended_types=True,
)  # fmt: skip
WG = 64
OPS = 7  # add, min, max, inclusive_add, exclusive_add, shuffle_xor(x, 1), broadcast(x, 0)


_T = device_target()
needs_device = pytest.mark.skipif(
    _T is None
    or not (_T.subgroup_arithmetic and _T.subgroup_shuffle and _T.subgroup_ballot)
    or not (_T.int64 and _T.float64 and _T.float16 and _T.int16 and _T.storage_16bit),
    reason="no Vulkan device with subgroup arithmetic/shuffle/ballot and 64/16-bit types",
)
needs_extended = pytest.mark.skipif(
    _T is None or not _T.subgroup_extended_types,
    reason="the device lacks shaderSubgroupExtendedTypes",
)


@Gpu(workgroup_size=WG)
def sg_i64(x: list[i64], o: list[i64], pos: list[int]) -> None:
    i = GlobalIdx.x
    v = x[i]
    a = subgroup_add(v)
    b = subgroup_min(v)
    c = subgroup_max(v)
    d = subgroup_inclusive_add(v)
    e = subgroup_exclusive_add(v)
    f = subgroup_shuffle_xor(v, 1)
    g = subgroup_broadcast(v, 0)
    o[i * 7] = a
    o[i * 7 + 1] = b
    o[i * 7 + 2] = c
    o[i * 7 + 3] = d
    o[i * 7 + 4] = e
    o[i * 7 + 5] = f
    o[i * 7 + 6] = g
    pos[i * 3] = BlockIdx.x
    pos[i * 3 + 1] = subgroup_id()
    pos[i * 3 + 2] = subgroup_lane()


@Gpu(workgroup_size=WG)
def sg_u64(x: list[u64], o: list[u64], pos: list[int]) -> None:
    i = GlobalIdx.x
    v = x[i]
    a = subgroup_add(v)
    b = subgroup_min(v)
    c = subgroup_max(v)
    d = subgroup_inclusive_add(v)
    e = subgroup_exclusive_add(v)
    f = subgroup_shuffle_xor(v, 1)
    g = subgroup_broadcast(v, 0)
    o[i * 7] = a
    o[i * 7 + 1] = b
    o[i * 7 + 2] = c
    o[i * 7 + 3] = d
    o[i * 7 + 4] = e
    o[i * 7 + 5] = f
    o[i * 7 + 6] = g
    pos[i * 3] = BlockIdx.x
    pos[i * 3 + 1] = subgroup_id()
    pos[i * 3 + 2] = subgroup_lane()


@Gpu(workgroup_size=WG)
def sg_f64(x: list[f64], o: list[f64], pos: list[int]) -> None:
    i = GlobalIdx.x
    v = x[i]
    a = subgroup_add(v)
    b = subgroup_min(v)
    c = subgroup_max(v)
    d = subgroup_inclusive_add(v)
    e = subgroup_exclusive_add(v)
    f = subgroup_shuffle_xor(v, 1)
    g = subgroup_broadcast(v, 0)
    o[i * 7] = a
    o[i * 7 + 1] = b
    o[i * 7 + 2] = c
    o[i * 7 + 3] = d
    o[i * 7 + 4] = e
    o[i * 7 + 5] = f
    o[i * 7 + 6] = g
    pos[i * 3] = BlockIdx.x
    pos[i * 3 + 1] = subgroup_id()
    pos[i * 3 + 2] = subgroup_lane()


@Gpu(workgroup_size=WG)
def sg_narrow(
    x8: list[u8], y8: list[i8], x16: list[u16], y16: list[i16], h: list[f16],
    o8: list[u8], oi8: list[i8], o16: list[u16], oi16: list[i16], oh: list[f16], pos: list[int],
) -> None:  # fmt: skip
    i = GlobalIdx.x
    a = subgroup_add(x8[i])
    b = subgroup_min(x8[i])
    c = subgroup_max(x8[i])
    d = subgroup_inclusive_add(x8[i])
    e = subgroup_exclusive_add(x8[i])
    f = subgroup_shuffle_xor(x8[i], 1)
    g = subgroup_broadcast(x8[i], 0)
    o8[i * 7] = a
    o8[i * 7 + 1] = b
    o8[i * 7 + 2] = c
    o8[i * 7 + 3] = d
    o8[i * 7 + 4] = e
    o8[i * 7 + 5] = f
    o8[i * 7 + 6] = g
    a2 = subgroup_add(y8[i])
    b2 = subgroup_min(y8[i])
    c2 = subgroup_max(y8[i])
    d2 = subgroup_inclusive_add(y8[i])
    e2 = subgroup_exclusive_add(y8[i])
    f2 = subgroup_shuffle_xor(y8[i], 1)
    g2 = subgroup_broadcast(y8[i], 0)
    oi8[i * 7] = a2
    oi8[i * 7 + 1] = b2
    oi8[i * 7 + 2] = c2
    oi8[i * 7 + 3] = d2
    oi8[i * 7 + 4] = e2
    oi8[i * 7 + 5] = f2
    oi8[i * 7 + 6] = g2
    o16[i * 3] = subgroup_add(x16[i])
    o16[i * 3 + 1] = subgroup_max(x16[i])
    o16[i * 3 + 2] = subgroup_shuffle_xor(x16[i], 1)
    oi16[i * 3] = subgroup_add(y16[i])
    oi16[i * 3 + 1] = subgroup_min(y16[i])
    oi16[i * 3 + 2] = subgroup_broadcast(y16[i], 0)
    oh[i * 4] = subgroup_add(h[i])
    oh[i * 4 + 1] = subgroup_min(h[i])
    oh[i * 4 + 2] = subgroup_max(h[i])
    oh[i * 4 + 3] = subgroup_shuffle_xor(h[i], 1)
    pos[i * 3] = BlockIdx.x
    pos[i * 3 + 1] = subgroup_id()
    pos[i * 3 + 2] = subgroup_lane()


def _groups(pos: np.ndarray):
    """Index arrays of each subgroup's invocations, in lane order."""
    pos = pos.reshape(-1, 3)
    out = []
    for key in sorted({(b, s) for b, s, _ in pos}):
        idx = np.flatnonzero((pos[:, 0] == key[0]) & (pos[:, 1] == key[1]))
        out.append(idx[np.argsort(pos[idx, 2])])
    return out


def _expected(v: np.ndarray, dtype) -> np.ndarray:
    """The 7 results of every lane of one subgroup (values `v` in lane order), wrapping."""
    n = len(v)
    with np.errstate(over="ignore"):
        inc = np.cumsum(v, dtype=dtype)
    exc = np.concatenate([np.zeros(1, dtype), inc[:-1]])
    lanes = np.arange(n)
    xor = np.where((lanes ^ 1) < n, v[np.minimum(lanes ^ 1, n - 1)], 0).astype(dtype)
    cols = [np.full(n, inc[-1]), np.full(n, v.min()), np.full(n, v.max()), inc, exc, xor,
            np.full(n, v[0])]  # fmt: skip
    return np.stack(cols, axis=1).astype(dtype)


def _run(kernel, x, dtype, run):
    o = np.zeros(len(x) * OPS, dtype)
    pos = np.zeros(len(x) * 3, np.int32)
    run(kernel, x, o, pos, grid=len(x))
    return o.reshape(-1, OPS), pos


@needs_device
@needs_extended
@pytest.mark.parametrize(
    "kernel, dtype",
    [(sg_i64, np.int64), (sg_u64, np.uint64)],
)
def test_64_bit_int_subgroups_match_numpy_and_the_emulator(kernel, dtype):
    rng = np.random.default_rng(8)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 2 * WG, dtype=dtype, endpoint=True)
    x[:4] = [info.max, info.max, info.min, 1]  # sums wrap modulo 2**64
    o, pos = _run(kernel, x, dtype, lambda *a, **k: gpu(*a, **k).join())
    for idx in _groups(pos):
        np.testing.assert_array_equal(o[idx], _expected(x[idx], dtype))
    size = _T.subgroup_size
    e, epos = _run(kernel, x, dtype, lambda *a, **k: emulate(*a, **k, subgroup_size=size))
    np.testing.assert_array_equal(epos, pos)
    np.testing.assert_array_equal(e, o)


@needs_device
@needs_extended
def test_f64_subgroups_keep_double_precision():
    rng = np.random.default_rng(9)
    x = 1.0 + rng.random(2 * WG) * 1e-9  # float32 would round every value to 1.0
    o, pos = _run(sg_f64, x, np.float64, lambda *a, **k: gpu(*a, **k).join())
    for idx in _groups(pos):
        want = _expected(x[idx], np.float64)
        np.testing.assert_allclose(o[idx], want, rtol=1e-14)  # adds in an unspecified order
        np.testing.assert_array_equal(o[idx][:, [1, 2, 5, 6]], want[:, [1, 2, 5, 6]])
    assert len(np.unique(o[:, 1])) > 1 and (o[:, 1] != 1.0).all()
    e, _ = _run(
        sg_f64, x, np.float64, lambda *a, **k: emulate(*a, **k, subgroup_size=_T.subgroup_size)
    )
    np.testing.assert_allclose(e, o, rtol=1e-14)


def _min_max_rule(v: np.ndarray) -> tuple[float, float]:
    """The language's float subgroup_min/max: NaN if any lane is NaN, -0.0 below 0.0."""
    if np.isnan(v).any():
        return np.nan, np.nan
    key = [(float(a), -1 if np.signbit(a) else 0) for a in v]  # -0.0 sorts below 0.0
    return min(key)[0] * 1.0, max(key)[0] * 1.0


@needs_device
@needs_extended
def test_f64_subgroup_min_max_of_nan_and_signed_zeros():
    x = np.where(np.arange(2 * WG) % 2 == 0, 0.0, -0.0)  # every subgroup: a tie of zeros
    x[WG:] = np.arange(WG) + 1.0
    x[WG + 5] = np.nan  # one NaN lane: its subgroup's min and max are NaN
    o, pos = _run(sg_f64, x, np.float64, lambda *a, **k: gpu(*a, **k).join())
    size = _T.subgroup_size
    e, _ = _run(sg_f64, x, np.float64, lambda *a, **k: emulate(*a, **k, subgroup_size=size))
    for idx in _groups(pos):
        lo, hi = _min_max_rule(x[idx])
        for got in (o[idx], e[idx]):
            for col, want in ((1, lo), (2, hi)):
                vals = got[:, col]
                if np.isnan(want):
                    assert np.isnan(vals).all(), (idx, vals)
                else:
                    assert (vals == want).all() and (np.signbit(vals) == np.signbit(want)).all()


def _narrow_args():
    rng = np.random.default_rng(10)
    n = 2 * WG
    x8 = rng.integers(0, 256, n, dtype=np.uint8)
    x8[:4] = 255  # sums wrap modulo 256
    y8 = rng.integers(-128, 128, n, dtype=np.int8)
    x16 = rng.integers(0, 65536, n, dtype=np.uint16)
    y16 = rng.integers(-32768, 32768, n, dtype=np.int16)
    h = (rng.integers(-128, 128, n) / 16).astype(np.float16)  # sums of 8 are exact in f16
    outs = [np.zeros(n * 7, np.uint8), np.zeros(n * 7, np.int8), np.zeros(n * 3, np.uint16),
            np.zeros(n * 3, np.int16), np.zeros(n * 4, np.float16), np.zeros(n * 3, np.int32)]  # fmt: skip
    return [x8, y8, x16, y16, h, *outs]


@needs_device
def test_narrow_subgroups_wrap_like_numpy_and_match_the_emulator():
    args = _narrow_args()
    gpu(sg_narrow, *args, grid=2 * WG).join()
    x8, y8, x16, y16, h, o8, oi8, o16, oi16, oh, pos = args
    o8, oi8 = o8.reshape(-1, 7), oi8.reshape(-1, 7)
    o16, oi16, oh = o16.reshape(-1, 3), oi16.reshape(-1, 3), oh.reshape(-1, 4)
    for idx in _groups(pos):
        np.testing.assert_array_equal(o8[idx], _expected(x8[idx], np.uint8))
        np.testing.assert_array_equal(oi8[idx], _expected(y8[idx], np.int8))
        e16 = _expected(x16[idx], np.uint16)
        np.testing.assert_array_equal(o16[idx], e16[:, [0, 2, 5]])
        ei16 = _expected(y16[idx], np.int16)
        np.testing.assert_array_equal(oi16[idx], ei16[:, [0, 1, 6]])
        eh = _expected(h[idx].astype(np.float64), np.float64).astype(np.float16)
        np.testing.assert_array_equal(oh[idx], eh[:, [0, 1, 2, 5]])
    emu = _narrow_args()
    emulate(sg_narrow, *emu, grid=2 * WG, subgroup_size=_T.subgroup_size)
    for d, e in zip(args, emu):
        np.testing.assert_array_equal(d, e)


def test_f16_subgroup_add_rounds_the_32_bit_sum_once():
    @Gpu(workgroup_size=4)
    def k(h: list[f16], o: list[f16]) -> None:
        s = subgroup_add(h[GlobalIdx.x])
        o[GlobalIdx.x] = s

    h = np.array([2048, 1, 1, 0], np.float16)  # f16 steps would lose each 1: 2048 + 1 == 2048
    o = np.zeros(4, np.float16)
    emulate(k, h, o, grid=4, subgroup_size=4)
    assert (o == 2050).all()


def test_narrow_values_need_no_extended_types():
    target = FULL.replace(subgroup_extended_types=False)
    compile_kernel(sg_narrow.lower(target), target)  # compiles: computed in 32 bits


@pytest.mark.parametrize("kernel, word", [(sg_i64, "i64"), (sg_u64, "u64"), (sg_f64, "f64")])
def test_missing_extended_types_is_a_located_compile_error(kernel, word):
    target = FULL.replace(subgroup_extended_types=False)
    with pytest.raises(GpuCompileError) as info:
        compile_kernel(kernel.lower(target), target)
    exc = info.value
    assert "`subgroup_extended_types`" in str(exc) and "shaderSubgroupExtendedTypes" in str(exc)
    assert exc.filename == __file__ and "a = subgroup_add(v)" in exc.line
    compile_kernel(kernel.lower(FULL), FULL)  # and with the feature it compiles


def test_extended_types_capabilities_pass_spirv_val():
    from cthreads.compiler.spirv import tools

    text = tools.disassemble(compile_kernel(sg_i64.lower(FULL), FULL).spirv)
    assert "OpCapability Int64" in text and "OpGroupNonUniformIAdd %long" in text
    text = tools.disassemble(compile_kernel(sg_narrow.lower(FULL), FULL).spirv)
    assert "OpGroupNonUniformIAdd %int" in text and "%uchar" not in text.split("IAdd")[1][:20]
