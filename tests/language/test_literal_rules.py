"""Literal rules found by the fuzzer: float -> int casts of constants saturate (#29), and a
negative float literal takes the explicit float type of the other operand (#30)."""

from __future__ import annotations

import numpy as np
import pytest
from devicehelp import device_target

from cthreads.gpu import Gpu, f16, gpu, i8, u8, u32
from cthreads.testing.emulate import emulate

_T = device_target()
pytestmark = pytest.mark.skipif(
    _T is None or not (_T.float16 and _T.int16 and _T.storage_16bit), reason="no f16/int8 device"
)


@Gpu
def const_casts(out: list[u8], o32: list[u32], o8: list[i8]) -> None:
    out[0] = u8(float(-7))
    out[1] = u8(float(300))
    out[2] = u8(-7.0)
    o32[0] = u32(float(-7))
    o8[0] = i8(float(300))
    o8[1] = i8(float(-300))


def test_casts_of_float_constants_saturate_like_run_time_values():
    args = (np.zeros(3, np.uint8), np.zeros(1, np.uint32), np.zeros(2, np.int8))
    ref = tuple(a.copy() for a in args)
    gpu(const_casts, *args).join()
    emulate(const_casts, *ref)
    assert args[0].tolist() == [0, 255, 0] == ref[0].tolist()
    assert args[1].tolist() == [0] == ref[1].tolist()
    assert args[2].tolist() == [127, -128] == ref[2].tolist()


@Gpu
def half_with_negative_literal(hs: list[f16], out: list[f16]) -> None:
    h0: f16 = hs[0]
    h0 = hs[0] + -0.75
    out[0] = h0
    out[1] = -0.1 * hs[1]


def test_negative_float_literals_take_the_f16_operand_type():
    hs = np.array([2.0, 3.0], np.float16)
    out = np.zeros(2, np.float16)
    gpu(half_with_negative_literal, hs, out).join()
    assert out[0] == np.float16(1.25)
    assert out[1] == np.float16(-0.1) * np.float16(3.0)
