"""Explicit scalar types (issue 8 item 4): f32, f64, i32, i64, u32 from `cthreads.gpu` in
parameters, lists, locals and casts; promotion rules; argument contract; missing device
features. Device tests run on lavapipe against numpy / Python references; f64 and i64 tests are
skipped with a reason when the device lacks shaderFloat64 / shaderInt64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.ir import F32, F64, I64, U32
from cthreads.compiler.target import Target
from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArgumentTypeError,
    GpuCompileError,
    GpuInvalidArgument,
    available,
    f32,
    f64,
    gpu,
    i32,
    i64,
    u32,
)

FULL = Target(float64=True, int64=True)


def _device_target() -> Target | None:
    if not available():
        return None
    from cthreads.launch import session

    return session.target_from_device(session._current_device())


def _needs(feature: str):
    target = _device_target()
    if target is None:
        return pytest.mark.skipif(True, reason="no Vulkan device")
    name = {"float64": "shaderFloat64", "int64": "shaderInt64"}[feature]
    return pytest.mark.skipif(
        not getattr(target, feature),
        reason=f"the device lacks {name} (needed by {feature} kernels)",
    )


needs_device = pytest.mark.skipif(not available(), reason="no Vulkan device")
needs_f64 = _needs("float64")
needs_i64 = _needs("int64")


# ------------------------------------------------------------------------------ kernels


@Gpu
def sum_small_terms(terms: int, x: list[f64], out: list[f64]) -> None:
    """Adds 1.0 then `terms` tiny terms: float32 would lose every one of them."""
    i = GlobalIdx.x
    acc: f64 = 1.0
    for _ in range(terms):
        acc += x[i] * 1e-9
    out[i] = acc


@Gpu
def f64_math(x: list[f64], out: list[f64]) -> None:
    i = GlobalIdx.x
    if i >= len(x):
        return
    v = x[i]
    out[i * 6 + 0] = math.sqrt(abs(v))
    out[i * 6 + 1] = math.fabs(v)
    out[i * 6 + 2] = f64(math.floor(v))
    out[i * 6 + 3] = min(v, 0.5)
    out[i * 6 + 4] = v / 3
    out[i * 6 + 5] = v % 2.5


@Gpu
def i64_arith(x: list[i64], k: i64, out: list[i64]) -> None:
    i = GlobalIdx.x
    if i >= len(x):
        return
    v = x[i] * k + 1
    out[i * 4 + 0] = v
    out[i * 4 + 1] = v // 7
    out[i * 4 + 2] = v % 7
    out[i * 4 + 3] = (v >> 3) ^ (v << 2)


@Gpu
def u32_hash(x: list[u32], out: list[u32]) -> None:
    """A 32-bit integer hash (lowbias32): logical shifts and wrapping multiplies."""
    i = GlobalIdx.x
    h = x[i]
    h ^= h >> 16
    h *= u32(0x7FEB352D)
    h ^= h >> 15
    h *= u32(0x846CA68B)
    h ^= h >> 16
    out[i] = h


@Gpu
def casts(x: list[f64], out_f: list[f64], out_i: list[i64], out_u: list[u32], out_s: list[int]):
    i = GlobalIdx.x
    if i >= len(x):
        return
    v = x[i]
    out_i[i * 3 + 0] = i64(v)  # f64 -> i64 (truncates, saturates)
    out_u[i * 3 + 0] = u32(v)  # f64 -> u32 (truncates, saturates to 0 .. 2**32 - 1)
    out_s[i * 3 + 0] = int(v)  # f64 -> int32
    w = f32(v)  # f64 -> f32 (rounds)
    out_f[i * 3 + 0] = f64(w)
    out_i[i * 3 + 1] = i64(u32(v))  # u32 -> i64 zero-extends
    out_u[i * 3 + 1] = u32(i64(v))  # i64 -> u32 wraps
    out_s[i * 3 + 1] = i32(i64(v))  # i64 -> i32 wraps
    out_f[i * 3 + 1] = f64(i64(v))  # i64 -> f64
    out_f[i * 3 + 2] = f64(u32(v))  # u32 -> f64
    out_i[i * 3 + 2] = i64(int(v))  # i32 -> i64 sign-extends
    out_u[i * 3 + 2] = u32(int(v))  # i32 -> u32 wraps
    out_s[i * 3 + 2] = int(u32(v) > 5)


@Gpu
def scalar_args(a: f64, b: i64, c: u32, d: int, out: list[f64], outi: list[i64]) -> None:
    out[0] = a
    outi[0] = b
    outi[1] = i64(c)
    outi[2] = d


# --------------------------------------------------------------------------- device runs


@needs_f64
def test_f64_sum_that_float32_gets_wrong():
    n = 1000
    x = np.linspace(0.5, 2.0, 256)
    out = np.zeros_like(x)
    gpu(sum_small_terms, n, x, out).join()
    ref = np.ones_like(x)
    for _ in range(n):
        ref += x * 1e-9
    assert np.array_equal(out, ref)
    assert not np.array_equal(out.astype(np.float32).astype(np.float64), ref)


@needs_f64
def test_f64_math_functions():
    x = np.array([-7.25, -0.1, 0.0, 0.3, 1e10, 123.456], np.float64)
    out = np.zeros(6 * len(x))
    gpu(f64_math, x, out).join()
    r = out.reshape(-1, 6)
    assert np.array_equal(r[:, 0], np.sqrt(np.abs(x)))
    assert np.array_equal(r[:, 1], np.abs(x))
    assert np.array_equal(r[:, 2], np.clip(np.floor(x), -(2**31), 2**31 - 1))
    assert np.array_equal(r[:, 3], np.minimum(x, 0.5))
    assert np.array_equal(r[:, 4], x / 3)
    assert np.allclose(r[:, 5], np.mod(x, 2.5), rtol=0, atol=1e-12)


@needs_i64
def test_i64_beyond_int32_and_wrapping():
    x = np.array([3_000_000_000, -5, 2**62, 7, -(2**40)], np.int64)
    k = 3
    out = np.zeros(4 * len(x), np.int64)
    gpu(i64_arith, x, k, out).join()

    def wrap(v):
        return (v + 2**63) % 2**64 - 2**63

    ref = []
    for v in x.tolist():
        v = wrap(v * k + 1)
        ref += [v, v // 7, v % 7, wrap((v >> 3) ^ wrap(v << 2))]
    assert out.tolist() == ref


@needs_device
def test_u32_hash_matches_numpy():
    x = np.arange(4096, dtype=np.uint32) * np.uint32(2654435761)
    out = np.zeros_like(x)
    gpu(u32_hash, x, out).join()
    h = x.astype(np.uint64)
    m = 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x7FEB352D) & m
    h ^= h >> 15
    h = (h * 0x846CA68B) & m
    h ^= h >> 16
    assert np.array_equal(out, h.astype(np.uint32))
    # Python lists pack to uint32 and come back as ints
    lst, res = [1, 2, 2**32 - 1], [0, 0, 0]
    gpu(u32_hash, lst, res).join()
    assert res == out_ref_list(lst)


def out_ref_list(values):
    out = []
    for h in values:
        h ^= h >> 16
        h = (h * 0x7FEB352D) & 0xFFFFFFFF
        h ^= h >> 15
        h = (h * 0x846CA68B) & 0xFFFFFFFF
        h ^= h >> 16
        out.append(h)
    return out


@needs_f64
@needs_i64
def test_casts_between_types():
    x = np.array([-1.5, 0.0, 2.7, 5e9, -5e9, 1e30, 123456789.123], np.float64)
    n = len(x)
    of, oi = np.zeros(3 * n), np.zeros(3 * n, np.int64)
    ou, os_ = np.zeros(3 * n, np.uint32), np.zeros(3 * n, np.int32)
    gpu(casts, x, of, oi, ou, os_).join()
    for j, v in enumerate(x.tolist()):
        t = math.trunc(v)
        as_u32 = min(max(t, 0), 2**32 - 1)
        as_i32 = min(max(t, -(2**31)), 2**31 - 1)
        as_i64 = min(max(t, -(2**63)), 2**63 - 1)
        assert oi[3 * j] == as_i64
        assert ou[3 * j] == as_u32
        assert os_[3 * j] == as_i32
        assert of[3 * j] == float(np.float32(v))
        assert oi[3 * j + 1] == as_u32
        assert ou[3 * j + 1] == as_i64 % 2**32
        assert os_[3 * j + 1] == (as_i64 + 2**31) % 2**32 - 2**31
        assert of[3 * j + 1] == float(as_i64)
        assert of[3 * j + 2] == float(as_u32)
        assert oi[3 * j + 2] == as_i32
        assert ou[3 * j + 2] == as_i32 % 2**32
        assert os_[3 * j + 2] == int(as_u32 > 5)


@needs_f64
@needs_i64
def test_scalar_arguments_in_push_constants():
    out, outi = np.zeros(1), np.zeros(3, np.int64)
    gpu(scalar_args, 0.1, 2**40 + 3, 2**32 - 1, -7, out, outi).join()
    assert out[0] == 0.1 and outi.tolist() == [2**40 + 3, 2**32 - 1, -7]


def test_push_layout_aligns_8_byte_scalars():
    k = compile_kernel(scalar_args.lower(FULL), FULL)
    fields = {f.param: (f.offset, f.fmt) for f in k.push.fields if f.role == "scalar"}
    assert fields[0][1] == "d" and fields[0][0] % 8 == 0
    assert fields[1][1] == "q" and fields[1][0] % 8 == 0
    assert fields[2][1] == "I" and fields[3][1] == "i"


# ------------------------------------------------------------------------ argument contract


@needs_device
def test_argument_contract():
    out = np.zeros(4, np.uint32)
    with pytest.raises(GpuInvalidArgument, match=r"element 1 is -1, outside the uint32 range"):
        gpu(u32_hash, [1, -1, 2, 3], out).join()
    with pytest.raises(
        GpuArgumentTypeError, match=r"list\[u32\] \(uint32\); got numpy array of int32"
    ):
        gpu(u32_hash, np.zeros(4, np.int32), out).join()


@needs_i64
def test_i64_argument_contract():
    x, out = np.zeros(2, np.int64), np.zeros(8, np.int64)
    gpu(i64_arith, x, 1, out).join()  # int64 arrays are accepted for list[i64]
    with pytest.raises(
        GpuInvalidArgument, match=r"`k` expects i64 \(int64\); got 9223372036854775808"
    ):
        gpu(i64_arith, x, 2**63, out).join()
    with pytest.raises(
        GpuArgumentTypeError, match=r"list\[i64\] \(int64\); got numpy array of float64"
    ):
        gpu(i64_arith, np.zeros(2), 1, out).join()
    with pytest.raises(
        GpuInvalidArgument, match=r"element 0 is 9223372036854775808, outside the int64"
    ):
        gpu(i64_arith, [2**63], 1, out).join()


@Gpu
def plain(x: list[float]) -> None:
    x[GlobalIdx.x] = 1.0


@needs_device
def test_float64_array_still_refused_for_list_float():
    with pytest.raises(
        GpuArgumentTypeError, match=r"list\[float\] \(float32\); got numpy array of float64"
    ):
        gpu(plain, np.zeros(4)).join()


# ------------------------------------------------------------------------ typing rules


def _ir(fn, target=FULL):
    from cthreads.compiler.frontend import lower_kernel

    return lower_kernel(fn, target=target)  # not registered: prepare() never sees these


def _local_types(fn):
    return _ir(fn).locals


def test_promotion_rules():
    def k(a: i64, b: int, c: f32, d: f64, e: u32, out: list[float]) -> None:
        p = a + b  # noqa: F841 - i32 + i64 -> i64
        q = c * d  # noqa: F841 - f32 * f64 -> f64
        r = a * c  # noqa: F841 - int with float -> the float type
        s = e * 3 + 1  # noqa: F841 - literals take the other operand's type
        t = e >> 1  # noqa: F841 - shifts keep the left operand's type
        u = b / 2  # noqa: F841 - int / int is float32
        w = d / 2  # noqa: F841 - f64 / int is f64
        out[0] = 0.0

    t = _local_types(k)
    assert (t["p"], t["q"], t["r"], t["s"], t["t"], t["u"], t["w"]) == (
        I64,
        F64,
        F32,
        U32,
        U32,
        F32,
        F64,
    )


def test_f64_literal_keeps_double_precision():
    def k(x: list[f64]) -> None:
        x[0] = x[0] * 0.1

    text = repr(_ir(k).body)
    assert "0.1" in text and "0.10000000149" not in text


def _compile_error(fn, target=FULL) -> GpuCompileError:
    with pytest.raises(GpuCompileError) as info:
        compile_kernel(_ir(fn, target), target)
    return info.value


def test_signed_unsigned_mix_is_an_error():
    def k(a: u32, b: int, out: list[int]) -> None:
        out[0] = int(a < b)

    exc = _compile_error(k)
    assert "cannot mix u32 and int (signed and unsigned) without a cast" in str(exc)
    assert "u32(x) or i64(x)" in str(exc)


def test_narrowing_assignment_needs_a_cast():
    def k(a: i64, out: list[int]) -> None:
        x: int = 0
        x = a
        out[0] = x

    exc = _compile_error(k)
    assert "cannot assign an i64 to" in str(exc) and "without an explicit cast" in str(exc)


def test_f64_transcendentals_are_rejected():
    def k(x: list[f64]) -> None:
        x[0] = math.sin(x[0])

    exc = _compile_error(k)
    assert "math.sin() is not available for f64" in str(exc)
    assert "16/32-bit floats only" in str(exc) and "math.sin(f32(x))" in str(exc)

    def p(x: list[f64]) -> None:
        x[0] = x[0] ** 2

    assert "`**` is not available on f64" in str(_compile_error(p))


def test_literal_in_explicit_casts_wraps_like_the_host():
    def k(out: list[u32]) -> None:
        out[0] = u32(4294967301)

    (store,) = _ir(k, FULL).body
    assert store.value.value == 5  # 2**32 + 5 wraps to 5


@pytest.mark.parametrize(
    "feature, capability, kernel, word",
    [
        ("float64", "shaderFloat64", sum_small_terms, "f64"),
        ("int64", "shaderInt64", i64_arith, "i64"),
    ],
)
def test_missing_feature_is_a_located_compile_error(feature, capability, kernel, word):
    target = FULL.replace(**{feature: False})
    with pytest.raises(GpuCompileError) as info:
        compile_kernel(kernel.lower(target), target)
    exc = info.value
    assert f"`{capability}`" in str(exc)
    assert exc.filename == __file__ and exc.line is not None and word in exc.line


def test_capabilities_only_when_used():
    from cthreads.compiler.spirv import tools

    plain = compile_kernel(u32_hash.lower(FULL), FULL)
    text = tools.disassemble(plain.spirv)
    assert "Float64" not in text and "Int64" not in text
    text = tools.disassemble(compile_kernel(i64_arith.lower(FULL), FULL).spirv)
    assert "OpCapability Int64" in text and "Float64" not in text
    text = tools.disassemble(compile_kernel(sum_small_terms.lower(FULL), FULL).spirv)
    assert "OpCapability Float64" in text and "OpCapability Int64" not in text


def test_host_side_casts_match_the_device():
    assert u32(-1) == 2**32 - 1 and i64(2**63) == -(2**63) and i32(2**31) == -(2**31)
    assert f32(0.1) == float(np.float32(0.1)) and f64(1) == 1.0 and u32(3.9) == 3


# ----------------------------------------------------------------------------- emulator


def _emulator_agrees(kernel, *args):
    from cthreads.testing.emulate import emulate

    dev = [a.copy() if hasattr(a, "copy") else a for a in args]
    emu = [a.copy() if hasattr(a, "copy") else a for a in args]
    gpu(kernel, *dev).join()
    emulate(kernel, *emu)
    for d, e in zip(dev, emu):
        if hasattr(d, "dtype"):
            assert d.dtype == e.dtype and np.array_equal(d, e), (kernel, d, e)


@needs_f64
@needs_i64
def test_emulator_agrees_with_the_device():
    x = np.linspace(0.5, 2.0, 64)
    _emulator_agrees(sum_small_terms, 100, x, np.zeros_like(x))
    _emulator_agrees(f64_math, np.array([-7.25, -0.1, 0.0, 0.3, 1e9, 123.456]), np.zeros(36))
    xi = np.array([3_000_000_000, -5, 2**62, 7, -(2**40)], np.int64)
    _emulator_agrees(i64_arith, xi, 3, np.zeros(20, np.int64))
    xu = np.arange(256, dtype=np.uint32) * np.uint32(2654435761)
    _emulator_agrees(u32_hash, xu, np.zeros(256, np.uint32))
    xc = np.array([-1.5, 0.0, 2.7, 2e9, -2e9, 123456789.123])  # int() in range (else undefined)
    n = len(xc)
    outs = (np.zeros(3 * n), np.zeros(3 * n, np.int64), np.zeros(3 * n, np.uint32))
    _emulator_agrees(casts, xc, *outs, np.zeros(3 * n, np.int32))
    _emulator_agrees(scalar_args, 0.1, 2**40 + 3, 2**32 - 1, -7, np.zeros(1), np.zeros(3, np.int64))


def test_emulator_semantics_of_explicit_types():
    from cthreads.testing.emulate import emulate

    def ops(x: list[u32], y: list[i64], z: list[f64]) -> None:  # not registered: emulate only
        if GlobalIdx.x != 0:
            return
        x[0] = x[0] - 1  # wraps to 2**32 - 1
        x[1] = x[1] >> 1  # logical
        y[0] = y[0] * 2  # wraps at 2**63
        z[0] = z[0] + 1e-12  # no float32 rounding

    x, y, z = [0, 2**32 - 2], [2**62], [1.0]
    emulate(ops, x, y, z)
    assert x == [2**32 - 1, 2**31 - 1] and y == [-(2**63)] and z == [1.0 + 1e-12]
