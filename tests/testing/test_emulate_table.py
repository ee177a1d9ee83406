"""The emulator reads the compiler's one table of operation meaning (cthreads.compiler.semantics)
for every exactly defined rule, so it agrees with the device where its old copies did not."""

from __future__ import annotations

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, f64, gpu
from cthreads.testing import emulate
from cthreads.testing import semantics as S


@Gpu
def f64_floor_ops(a: list[f64], b: list[f64], o: list[f64]) -> None:
    i = GlobalIdx.x
    o[2 * i] = a[i] // b[i]
    o[2 * i + 1] = a[i] % b[i]


A, B = [7.0, 1.0, -7.0, 5.5, -8.0], [0.1, 0.1, 0.1, -2.0, -2.0]


def test_f64_floordiv_and_mod_are_the_devices():
    # the device divides, rounds, then floors: 7.0 / 0.1 rounds to 70.0, so 7.0 // 0.1 is 70.0
    # there and 7.0 % 0.1 is 0.0 (Python's exact floor gives 69.0 and 0.0999...); the emulator
    # used Python's and disagreed with every device
    out = [0.0] * (2 * len(A))
    emulate(f64_floor_ops, A, B, out, grid=(len(A),))
    assert out[:6] == [70.0, 0.0, 10.0, 0.0, -70.0, 0.0]
    assert out[6:8] == [-3.0, -0.5]
    assert str(out[9]) == "-0.0"  # a zero remainder takes the divisor's sign, as Python's


def test_emulator_f64_floor_ops_match_the_device():
    dev = np.zeros(2 * len(A), np.float64)
    gpu(f64_floor_ops, np.array(A), np.array(B), dev, grid=(len(A),)).join()
    emu = [0.0] * (2 * len(A))
    emulate(f64_floor_ops, A, B, emu, grid=(len(A),))
    assert [float(x) for x in dev] == emu


def test_int_rules_come_from_the_table():
    assert S.idiv(-(2**31), -1) == -(2**31)
    assert S.idiv(5, 0) == 0 and S.imod(5, 0) == 5
    assert S.shl(1, 33) == 2
    # a negative exponent is the device's int(a ** e), not a modular inverse
    assert S.ipow(3, -1) == 0 and S.ipow(-1, -3) == -1
    assert S.wpow(3, -1, "i64") == 0
    assert S.f2w(float("nan"), "u32") == 0 and S.f2w(1e30, "i64") == 2**63 - 1
