"""NaN, infinities and signed zeros in `min`, `max`, `abs` and comparisons follow Python on every
device (SPEC §14), for f16, f32 and f64; and `for ... in range` near the int32 limits runs
exactly Python's iterations (no wrap-around of the counter).

The device tests run on whatever device the suite has (lavapipe in CI); the structural test
pins down the instruction pattern, because the bug it guards against only showed on NVIDIA:
its driver turned `select(b < a, b, a)` into its hardware min, which returns the non-NaN
operand (min(nan, 1.0) gave 1.0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from devicehelp import device_target

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target
from cthreads.gpu import GlobalIdx, Gpu, f16, f64, gpu
from cthreads.testing.emulate import emulate

nan, inf = math.nan, math.inf
# every pair of specials that tells Python's rule apart from IEEE minNum / FMin / FMax
PAIRS = [(nan, 1.0), (1.0, nan), (nan, nan), (-inf, nan), (nan, -inf), (0.0, -0.0),
         (-0.0, 0.0), (-0.0, -0.0), (inf, -inf), (2.5, -1.5), (-1.5, 2.5), (3.0, 3.0),
         (-nan, 2.0), (inf, 5.0), (-inf, -5.0)]  # fmt: skip
XS = [a for a, _ in PAIRS]
YS = [b for _, b in PAIRS]
ZS = [-0.0, nan, 0.0, 1.0, -2.0, nan, 0.0, -0.0, 0.5, nan, -0.0, 3.0, 1.0, -inf, inf]
W = 8  # outputs per pair

_T = device_target()


def _same(got: float, want: float) -> bool:
    """Equal as Python values, with the sign of a zero and NaN-ness counted."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def _reference(x: float, y: float, z: float) -> list[float]:
    return [min(x, y), max(x, y), min(x, y, z), max(x, y, z), abs(x), -x,
            float(x < y) + 2.0 * float(x != y), float(x >= y) + 2.0 * float(x == y)]  # fmt: skip


@Gpu
def specials32(xs: list[float], ys: list[float], zs: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        x = xs[i]
        y = ys[i]
        z = zs[i]
        out[8 * i] = min(x, y)
        out[8 * i + 1] = max(x, y)
        out[8 * i + 2] = min(x, y, z)
        out[8 * i + 3] = max(x, y, z)
        out[8 * i + 4] = abs(x)
        out[8 * i + 5] = -x
        out[8 * i + 6] = float(x < y) + 2.0 * float(x != y)
        out[8 * i + 7] = float(x >= y) + 2.0 * float(x == y)


@Gpu
def specials16(xs: list[f16], ys: list[f16], zs: list[f16], out: list[f16]) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        x = xs[i]
        y = ys[i]
        z = zs[i]
        out[8 * i] = min(x, y)
        out[8 * i + 1] = max(x, y)
        out[8 * i + 2] = min(x, y, z)
        out[8 * i + 3] = max(x, y, z)
        out[8 * i + 4] = abs(x)
        out[8 * i + 5] = -x
        out[8 * i + 6] = f16(float(x < y) + 2.0 * float(x != y))
        out[8 * i + 7] = f16(float(x >= y) + 2.0 * float(x == y))


@Gpu
def specials64(xs: list[f64], ys: list[f64], zs: list[f64], out: list[f64]) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        x = xs[i]
        y = ys[i]
        z = zs[i]
        out[8 * i] = min(x, y)
        out[8 * i + 1] = max(x, y)
        out[8 * i + 2] = min(x, y, z)
        out[8 * i + 3] = max(x, y, z)
        out[8 * i + 4] = abs(x)
        out[8 * i + 5] = -x
        out[8 * i + 6] = f64(float(x < y) + 2.0 * float(x != y))
        out[8 * i + 7] = f64(float(x >= y) + 2.0 * float(x == y))


KERNELS = {
    np.float32: (specials32, lambda t: True),
    np.float16: (specials16, lambda t: t.float16 and t.storage_16bit and t.int16),
    np.float64: (specials64, lambda t: t.float64 and t.int64),
}


@pytest.mark.parametrize("dtype", list(KERNELS), ids=lambda d: d.__name__)
def test_min_max_abs_and_comparisons_of_specials_follow_python(dtype):
    kernel, usable = KERNELS[dtype]
    if _T is None or not usable(_T):
        pytest.skip(f"no Vulkan device with {dtype.__name__} values")
    xs, ys, zs = (np.array(v, dtype) for v in (XS, YS, ZS))
    out = np.full(W * len(xs), 7.0, dtype)
    gpu(kernel, xs, ys, zs, out).join()
    emu = np.full(W * len(xs), 7.0, dtype)
    emulate(kernel, xs, ys, zs, emu)
    bad = []
    for k, (x, y, z) in enumerate(zip(XS, YS, ZS)):
        want = _reference(x, y, z)
        for j in range(W):
            got, e = float(out[W * k + j]), float(emu[W * k + j])
            if not (_same(got, want[j]) and _same(e, want[j])):
                bad.append(f"({x}, {y}, {z}) #{j}: device {got}, emulator {e}, want {want[j]}")
    assert not bad, "\n".join(bad)


def _select_of_own_compare(text: str) -> list[str]:
    """`%r = OpSelect %t %c %b %a` where `%c = OpFOrd{Less,Greater}Than %bool %b %a`: the min/max
    pattern NVIDIA turns into its NaN-ignoring hardware min/max."""
    cmps, hits = {}, []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "=" and parts[2] in ("OpFOrdLessThan",
                                                                 "OpFOrdGreaterThan"):  # fmt: skip
            cmps[parts[0]] = (parts[4], parts[5])
        if len(parts) >= 7 and parts[2] == "OpSelect" and cmps.get(parts[4]) == tuple(parts[5:7]):
            hits.append(line.strip())
    return hits


def test_float_min_and_max_are_not_a_bare_select_of_their_own_comparison():
    full = Target(float64=True, int64=True, float16=True, int16=True, storage_16bit=True)
    for kernel in (specials32, specials16, specials64):
        text = tools.disassemble(compile_kernel(kernel.lower(full), full).spirv)
        assert not _select_of_own_compare(text), (kernel, _select_of_own_compare(text))
        assert "NMin" in text and "NMax" in text, kernel
