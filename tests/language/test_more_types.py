"""More scalar types (issue 8 item 4): f16, u64, i8, u8, i16, u16 in parameters, lists (Python
lists and numpy arrays), locals, casts; narrow arithmetic wraps / rounds after every operation
(computed in 32 bits, as numpy's same-type arithmetic); shared arrays, atomics and subgroups of
the 32/64-bit explicit types; arenas; missing-feature errors. Device tests run on lavapipe
against numpy references and the emulator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from devicehelp import device_target

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target
from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuCompileError,
    GpuInvalidArgument,
    ThreadIdx,
    atomic_add,
    atomic_max,
    atomic_min,
    f16,
    f32,
    f64,
    gpu,
    i8,
    i16,
    i64,
    shared,
    subgroup_add,
    subgroup_max,
    subgroup_min,
    u8,
    u16,
    u32,
    u64,
)
from cthreads.sync import __sync_threads
from cthreads.testing.emulate import emulate

FULL = Target(float64=True, int64=True, float16=True, int16=True, storage_16bit=True,
              int64_atomics=True)  # fmt: skip


_T = device_target()
needs_device = pytest.mark.skipif(
    _T is None or not (_T.float16 and _T.int16 and _T.storage_16bit and _T.int64),
    reason="no Vulkan device with shaderFloat16, shaderInt16, storageBuffer16BitAccess, shaderInt64",
)


# ------------------------------------------------------------------------------ kernels


@Gpu
def narrow_ops(
    x: list[u8], y: list[i8], z: list[i16], w: list[u16], k: u8,
    o8: list[u8], oi8: list[i8], o16: list[i16], ou16: list[u16], oi: list[int],
) -> None:  # fmt: skip
    i = GlobalIdx.x
    if i >= len(x):
        return
    o8[i * 4] = x[i] + k
    o8[i * 4 + 1] = x[i] * x[i]
    o8[i * 4 + 2] = x[i] << 3
    o8[i * 4 + 3] = x[i] // 7 - 1
    oi8[i * 4] = -y[i]
    oi8[i * 4 + 1] = y[i] * 3
    oi8[i * 4 + 2] = abs(y[i])
    oi8[i * 4 + 3] = y[i] % 5
    o16[i * 2] = z[i] * 300
    o16[i * 2 + 1] = z[i] + y[i]
    ou16[i * 2] = w[i] - 1
    ou16[i * 2 + 1] = w[i] >> 2
    oi[i * 4] = x[i] + z[i]
    oi[i * 4 + 1] = int(y[i] < i16(x[i]))
    oi[i * 4 + 2] = w[i] + 70000
    oi[i * 4 + 3] = min(x[i], 100)


@Gpu
def half_ops(x: list[f16], s: f16, o: list[f16], o32: list[float], ou: list[u8]) -> None:
    i = GlobalIdx.x
    if i >= len(x):
        return
    v = x[i]
    acc: f16 = 0.0
    for _ in range(10):
        acc += v * 0.1
    o[i * 6] = acc
    o[i * 6 + 1] = math.sqrt(abs(v))
    o[i * 6 + 2] = max(v, s) / 3
    o[i * 6 + 3] = v * 1000.0
    o[i * 6 + 4] = f16(f32(v) * 1.0001)
    o[i * 6 + 5] = min(v, -s)
    o32[i] = v + 1.0
    ou[i] = u8(v)


@Gpu
def u64_ops(x: list[u64], k: u64, o: list[u64], of: list[f64]) -> None:
    i = GlobalIdx.x
    if i >= len(x):
        return
    o[i * 4] = x[i] * 3 + k
    o[i * 4 + 1] = x[i] >> 7
    o[i * 4 + 2] = x[i] // 10
    o[i * 4 + 3] = max(x[i], k)
    of[i] = f64(x[i])


@Gpu
def scalars(a: f16, b: i8, c: u8, d: i16, e: u16, f: u64, out: list[u64]) -> None:
    if GlobalIdx.x == 0:
        out[0] = u64(a * 2.0)
        out[1] = u64(b)
        out[2] = u64(c)
        out[3] = u64(d)
        out[4] = u64(e)
        out[5] = f


@Gpu(workgroup_size=64)
def shared_types(x: list[f16], y: list[f64], z: list[u8], o: list[f16], od: list[f64], oz: list[u8]) -> None:  # fmt: skip
    t = ThreadIdx.x
    i = GlobalIdx.x
    s = shared(f16, 64)
    d = shared(f64, 64)
    b = shared(u8, 64)
    s[t] = x[i]
    d[t] = y[i]
    b[t] = z[i]
    __sync_threads()
    o[i] = s[63 - t]
    od[i] = d[63 - t] * 2.0
    oz[i] = b[63 - t] + 1


@Gpu
def wide_atomics(x: list[u32], y: list[i64], z: list[u64], cu: list[u32], ci: list[i64], cz: list[u64]) -> None:  # fmt: skip
    i = GlobalIdx.x
    if i < len(x):
        atomic_add(cu, 0, x[i])
        atomic_max(cu, 1, x[i])
        atomic_min(ci, 0, y[i])
        atomic_add(ci, 1, y[i])
        atomic_add(cz, 0, z[i])
        atomic_max(cz, 1, z[i])


@Gpu(workgroup_size=64)
def wide_subgroups(x: list[u32], o: list[u32]) -> None:
    i = GlobalIdx.x
    a = subgroup_add(x[i])
    b = subgroup_max(x[i])
    c = subgroup_min(x[i])
    if i < len(o) // 3:
        o[i * 3] = a
        o[i * 3 + 1] = b
        o[i * 3 + 2] = c


def _ulps16(a, b) -> int:
    """The largest distance between two float16 arrays, in float16 steps."""
    ia, ib = (np.asarray(v, np.float16).view(np.int16).astype(np.int32) for v in (a, b))
    ia, ib = (np.where(v < 0, -32768 - v, v) for v in (ia, ib))  # monotonic order
    return int(np.abs(ia - ib).max(initial=0))


def _agree(kernel, *args, inexact16=None):
    """Device and emulator results are equal; `inexact16=(stride, slots)` lets those float16
    elements differ by one step (f32 sqrt and division may be 2.5 ulp off on a GPU, which
    moves the float16 rounding near a boundary; seen on NVIDIA)."""
    dev = [a.copy() if hasattr(a, "copy") else a for a in args]
    emu = [a.copy() if hasattr(a, "copy") else a for a in args]
    gpu(kernel, *dev).join()
    emulate(kernel, *emu)
    for d, e in zip(dev, emu):
        if hasattr(d, "dtype"):
            assert d.dtype == e.dtype, (kernel, d, e)
            if inexact16 and d.dtype == np.float16:
                loose = np.isin(np.arange(len(d)) % inexact16[0], inexact16[1])
                assert _ulps16(d[loose], e[loose]) <= 1, (kernel, d, e)
                d, e = d[~loose], e[~loose]
            assert np.array_equal(d, e, equal_nan=True), (kernel, d, e)
    return dev


# ------------------------------------------------------------------------- device tests


@needs_device
def test_narrow_ints_wrap_like_numpy():
    x = np.array([0, 1, 7, 100, 200, 255, 128, 33], np.uint8)
    y = np.array([-128, -1, 0, 1, 127, 50, -50, 99], np.int8)
    z = np.array([-32768, 32767, 0, 5, -5, 1000, -1000, 123], np.int16)
    w = np.array([0, 1, 65535, 4, 100, 7, 9, 60000], np.uint16)
    n = len(x)
    outs = (np.zeros(4 * n, np.uint8), np.zeros(4 * n, np.int8), np.zeros(2 * n, np.int16),
            np.zeros(2 * n, np.uint16), np.zeros(4 * n, np.int32))  # fmt: skip
    o8, oi8, o16, ou16, oi = _agree(narrow_ops, x, y, z, w, 250, *outs)[-5:]
    with np.errstate(over="ignore"):
        assert np.array_equal(o8[0::4], x + np.uint8(250))
        assert np.array_equal(o8[1::4], x * x)
        assert np.array_equal(o8[2::4], x << np.uint8(3))
        assert np.array_equal(o8[3::4], x // np.uint8(7) - np.uint8(1))
        assert np.array_equal(oi8[0::4], -y)
        assert np.array_equal(oi8[1::4], y * np.int8(3))
        assert np.array_equal(oi8[2::4], np.abs(y))
        assert np.array_equal(oi8[3::4], y % np.int8(5))
        assert np.array_equal(o16[0::2], z * np.int16(300))
        assert np.array_equal(o16[1::2], z + y.astype(np.int16))
        assert np.array_equal(ou16[0::2], w - np.uint16(1))
        assert np.array_equal(ou16[1::2], w >> np.uint16(2))
    assert np.array_equal(oi[0::4], x.astype(np.int16) + z)  # u8 + i16 is i16 (wraps)
    assert np.array_equal(oi[2::4], w.astype(np.int32) + 70000)
    assert np.array_equal(oi[3::4], np.minimum(x, 100))


@needs_device
def test_f16_rounds_after_every_operation():
    x = np.array([0.0, 1.5, -2.25, 65504.0, 0.0999, 1e-5, -7.0, 300.0], np.float16)
    n = len(x)
    o, o32, ou = _agree(half_ops, x, 0.7, np.zeros(6 * n, np.float16), np.zeros(n, np.float32),
                        np.zeros(n, np.uint8), inexact16=(6, (1, 2)))[-3:]  # fmt: skip
    h = np.float16
    acc = np.zeros(n, np.float16)
    with np.errstate(over="ignore"):
        for _ in range(10):
            acc = acc + x * h(0.1)
        assert np.array_equal(o[0::6], acc)
        assert _ulps16(o[1::6], np.sqrt(np.abs(x))) <= 1  # sqrt, / : see _agree
        assert _ulps16(o[2::6], np.maximum(x, h(0.7)) / h(3)) <= 1
        assert np.array_equal(o[3::6], x * h(1000))
        assert np.array_equal(o[5::6], np.minimum(x, -h(0.7)))
    assert np.array_equal(o32, (x + h(1)).astype(np.float32))  # the literal is f16
    assert list(ou) == [0, 1, 0, 255, 0, 0, 0, 255]  # truncates and saturates


@needs_device
def test_python_lists_of_the_new_types_round_trip():
    xs, out, o32, ou = [0.1, 1.5, 70000.0, -3.0], [0.0] * 24, [0.0] * 4, [0] * 4
    gpu(half_ops, xs, 0.5, out, o32, ou).join()
    assert out[3] == f16(f16(0.1) * 1000.0) and o32[1] == 2.5 and out[9] == 1500.0
    assert o32[2] == math.inf  # 70000.0 overflows float16 when packed
    x, o, of = [2**64 - 1, 5, 2**63], [0] * 12, [0.0] * 3
    gpu(u64_ops, x, 7, o, of).join()
    ref = np.array(x, np.uint64)
    assert o[0::4] == [int(v) for v in ref * np.uint64(3) + np.uint64(7)]
    assert o[1::4] == [v >> 7 for v in x] and o[2::4] == [v // 10 for v in x]
    assert of == [float(v) for v in x]
    with pytest.raises(GpuInvalidArgument, match="outside the uint64 range"):
        gpu(u64_ops, [-1], 1, [0] * 4, [0.0]).join()
    with pytest.raises(GpuInvalidArgument, match="outside the uint8 range"):
        gpu(narrow_ops, [256], [0], [0], [0], 1, [0] * 4, [0] * 4, [0] * 2, [0] * 2, [0] * 4)


@needs_device
def test_u64_matches_numpy_and_the_emulator():
    x = np.array([2**64 - 1, 5, 2**63, 123456789012345678], np.uint64)
    o, _of = _agree(u64_ops, x, 2**63 + 1, np.zeros(16, np.uint64), np.zeros(4))[-2:]
    with np.errstate(over="ignore"):
        assert np.array_equal(o[0::4], x * np.uint64(3) + np.uint64(2**63 + 1))
    assert np.array_equal(o[3::4], np.maximum(x, np.uint64(2**63 + 1)))


@needs_device
def test_narrow_scalar_parameters():
    out = np.zeros(6, np.uint64)
    gpu(scalars, 1.5, -3, 200, -30000, 65535, 2**64 - 1, out).join()
    assert list(out) == [3, 2**64 - 3, 200, 2**64 - 30000, 65535, 2**64 - 1]
    with pytest.raises(GpuInvalidArgument, match="overflows float16"):
        gpu(scalars, 1e5, 0, 0, 0, 0, 0, out)
    with pytest.raises(GpuInvalidArgument, match=r"outside \[-128, 127\]"):
        gpu(scalars, 1.0, 128, 0, 0, 0, 0, out)


@needs_device
def test_shared_arrays_of_f16_f64_u8():
    x = np.arange(64, dtype=np.float16) * np.float16(0.5)
    y = np.arange(64.0) / 3
    z = np.arange(64, dtype=np.uint8) + np.uint8(200)
    o, od, oz = _agree(shared_types, x, y, z, np.zeros(64, np.float16), np.zeros(64),
                       np.zeros(64, np.uint8))[-3:]  # fmt: skip
    assert np.array_equal(o, x[::-1]) and np.array_equal(od, y[::-1] * 2)
    with np.errstate(over="ignore"):
        assert np.array_equal(oz, z[::-1] + np.uint8(1))


@needs_device
def test_atomics_on_u32_i64_u64_lists():
    if not _T.int64_atomics:
        pytest.skip("the device lacks shaderBufferInt64Atomics")
    x = np.arange(100, dtype=np.uint32) * np.uint32(3_000_000)
    y = np.arange(100, dtype=np.int64) * -(2**40)
    z = np.arange(100, dtype=np.uint64) << np.uint64(40)
    cu, ci, cz = np.zeros(2, np.uint32), np.zeros(2, np.int64), np.zeros(2, np.uint64)
    gpu(wide_atomics, x, y, z, cu, ci, cz).join()
    assert cu[0] == x.sum(dtype=np.uint32) and cu[1] == x.max()
    assert ci[0] == y.min() and ci[1] == y.sum()
    assert cz[0] == z.sum(dtype=np.uint64) and cz[1] == z.max()
    e = [np.zeros(2, np.uint32), np.zeros(2, np.int64), np.zeros(2, np.uint64)]
    emulate(wide_atomics, x, y, z, *e)
    assert all(np.array_equal(a, b) for a, b in zip(e, (cu, ci, cz)))


@needs_device
def test_subgroup_reductions_of_u32():
    if not _T.subgroup_arithmetic:
        pytest.skip("the device lacks subgroup arithmetic")
    size = _T.subgroup_size
    x = np.arange(64, dtype=np.uint32) + np.uint32(4_000_000_000)
    o = np.zeros(3 * size, np.uint32)
    gpu(wide_subgroups, x, o).join()
    with np.errstate(over="ignore"):
        assert o[0] == x[:size].sum(dtype=np.uint32)  # wraps modulo 2**32
    assert o[1] == x[:size].max() and o[2] == x[:size].min()  # unsigned comparisons


def test_subgroup_operations_on_64_bit_values_are_rejected():
    def k(x: list[i64]) -> None:
        a = subgroup_add(x[GlobalIdx.x])
        x[0] = a

    assert "shaderSubgroupExtendedTypes" in str(_compile_error(k))


@needs_device
def test_arena_holds_the_new_types():
    @Gpu
    def bump(x: list[f16], y: list[u8], z: list[u64], w: list[i16]) -> None:
        i = GlobalIdx.x
        if i < len(x):
            x[i] = x[i] + 0.5
            y[i] = y[i] + 1
            z[i] = z[i] * 2
            w[i] = w[i] - 1

    x = np.array([1, 2, 3], np.float16)
    y = np.array([255, 1, 2], np.uint8)
    z = np.array([2**63, 3, 5], np.uint64)
    w = np.array([-32768, 0, 7], np.int16)
    with GpuArena() as arena:
        arena.bind(x=x, y=y, z=z, w=w)
        for _ in range(3):
            gpu(bump, x, y, z, w).join(download=False)
        arena.sync()
    assert list(x) == [2.5, 3.5, 4.5] and list(y) == [2, 4, 5] and list(z) == [0, 24, 40]
    assert list(w) == [32765, -3, 4]


# ------------------------------------------------------------------- compile-time rules


def _compile_error(fn, target=FULL) -> GpuCompileError:
    from cthreads.gpu.kernel import GpuKernel

    k = GpuKernel(fn) if not hasattr(fn, "lower") else fn
    with pytest.raises(GpuCompileError) as info:
        compile_kernel(k.lower(target), target)
    return info.value


@pytest.mark.parametrize(
    "feature, capability, kernel, word",
    [
        ("float16", "shaderFloat16", half_ops, "f16"),
        ("int16", "shaderInt16", narrow_ops, "i16"),
        ("storage_16bit", "storageBuffer16BitAccess", half_ops, "f16"),
        ("storage_8bit", "shaderInt8", narrow_ops, "u8"),
        ("int64", "shaderInt64", u64_ops, "u64"),
    ],
)
def test_missing_feature_is_a_located_compile_error(feature, capability, kernel, word):
    target = FULL.replace(**{feature: False})
    exc = _compile_error(kernel, target)
    assert f"`{capability}" in str(exc)
    assert exc.filename == __file__ and exc.line is not None and word in exc.line


def test_every_module_validates_and_declares_its_capabilities():
    from cthreads.compiler.spirv import tools

    for kernel, caps in [
        (half_ops, ("Float16", "StorageBuffer16BitAccess", "Int8", "StorageBuffer8BitAccess")),
        (narrow_ops, ("Int8", "Int16", "StorageBuffer8BitAccess", "StorageBuffer16BitAccess")),
        (u64_ops, ("Int64", "Float64")),
        (wide_atomics, ("Int64Atomics",)),
    ]:
        text = tools.disassemble(compile_kernel(kernel.lower(FULL), FULL).spirv)
        for cap in caps:
            assert f"OpCapability {cap}\n" in text + "\n", (kernel, cap)


def test_atomics_on_narrow_or_f64_elements_are_rejected():
    def k(x: list[u8]) -> None:
        atomic_add(x, 0, 1)

    assert "atomics need int, float, u32, i64 or u64 elements" in str(_compile_error(k))

    def k2(x: list[f64]) -> None:
        atomic_add(x, 0, 1.0)

    assert "holds f64" in str(_compile_error(k2))

    def k3(x: list[i64]) -> None:
        s = shared(i64, 8)
        atomic_add(s, 0, x[0])

    assert "64-bit atomics work on lists, not on shared arrays" in str(_compile_error(k3))


def test_promotion_rules():
    def mix(x: list[u8], y: list[i8]) -> None:
        y[0] = x[0] + y[0]

    assert "cannot mix u8 and i8 (signed and unsigned)" in str(_compile_error(mix))

    def narrowing(x: list[u8], y: list[int]) -> None:
        x[0] = y[0] + x[0]  # u8 + int is int: storing it back needs a cast

    assert "without an explicit cast" in str(_compile_error(narrowing))

    def wider(x: list[u8], y: list[i16], z: list[u32], w: list[i64]) -> None:
        y[0] = x[0] + y[0]  # u8 + i16 -> i16
        w[0] = z[0] + w[0]  # u32 + i64 -> i64
        x[1] = x[0] * 2  # the literal takes the type u8

    from cthreads.gpu.kernel import GpuKernel

    compile_kernel(GpuKernel(wider).lower(FULL), FULL)


def test_host_side_casts():
    assert f16(0.1) == float(np.float16(0.1)) and f16(1e6) == math.inf and f16(65519) == 65504
    assert u8(300) == 44 and i8(200) == -56 and u16(-1) == 65535 and i16(40000) == -25536
    assert u64(-1) == 2**64 - 1 and u8(3.9) == 3 and i8(-1000.0) == -128 and u8(1e9) == 255
    assert i64(u64(2**63)) == -(2**63)
