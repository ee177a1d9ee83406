"""float32 -> float16 on the device rounds exactly as numpy does (nearest even, subnormals,
overflow to inf), computed in integer steps so no driver can skip it (compiler
codegen_expr.round_to_f16)."""

from __future__ import annotations

import numpy as np
import pytest
from devicehelp import device_target

from cthreads.gpu import GlobalIdx, Gpu, f16, gpu

_T = device_target()
pytestmark = pytest.mark.skipif(
    _T is None or not (_T.float16 and _T.storage_16bit), reason="no device with float16"
)


@Gpu
def to_half(x: list[float], out: list[f16]) -> None:
    i: int = GlobalIdx.x
    if i < len(x):
        out[i] = f16(x[i])


def _cases() -> np.ndarray:
    rng = np.random.default_rng(16)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    halves = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(over="ignore"):  # the last one steps to inf, and its tie is dropped
        nxt = np.nextafter(halves.astype(np.float16), np.float16(np.inf)).astype(np.float32)
    ties = (halves + (nxt - halves) / 2)[:-1]  # exactly halfway: nearest even decides
    edges = np.array([65504.0, 65519.99, 65520.0, 1e9, 2.0**-24, 2.0**-25, 3 * 2.0**-26,
                      2.0**-14, 2.0**-14 - 2.0**-25, np.inf, 1e-45], np.float32)  # fmt: skip
    x = np.concatenate([bits.view(np.float32), ties, edges])
    return np.concatenate([x, -x])


def test_float32_to_float16_matches_numpy_bit_for_bit():
    x = _cases()
    out = np.zeros(len(x), np.float16)
    gpu(to_half, x, out).join()
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.isnan(out[nan]).all()
    got_bits, want_bits = out[~nan].view(np.uint16), want[~nan].view(np.uint16)
    bad = np.nonzero(got_bits != want_bits)[0]
    assert bad.size == 0, [
        (float(x[~nan][i]), float(out[~nan][i]), float(want[~nan][i])) for i in bad[:10]
    ]
