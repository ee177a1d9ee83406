"""The differential checker's rules (docs/reliability.md): ULP bounds, how a device value is
compared with the emulator's runs, and how the Perturber moves approximate results.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("hypothesis")  # cthreads.testing.differential needs it (kernelgen)

from cthreads.testing import differential as D
from cthreads.testing.tolerance import (
    UNDEFINED,
    Perturber,
    bound,
    f64_bound,
    subgroup_sum_bound,
    ulp,
    ulp16,
    ulp64,
)


def test_ulp_and_bounds():
    assert ulp(1.0) == 2.0**-23 and ulp(1.5) == 2.0**-23 and ulp(2.0) == 2.0**-22
    assert ulp(0.0) == 2.0**-149 and ulp(-3.0) == 2.0**-22
    assert bound("div", (1.0, 3.0), 1 / 3) == 2.5 * ulp(1 / 3)
    assert bound("div", (1.0, 0.0), math.inf) == 0.0  # IEEE infinity is required
    assert bound("sin", (1.0,), math.sin(1.0)) == 2.0**-11
    assert bound("sin", (10.0,), math.sin(10.0)) == UNDEFINED  # outside [-pi, pi]
    assert bound("exp", (2.0,), math.exp(2.0)) == 7 * ulp(math.exp(2.0))
    assert bound("log", (1.5,), math.log(1.5)) == 2.0**-21
    assert bound("sqrt", (-1.0,), math.nan) == UNDEFINED
    assert bound("pow", (-2.0, 0.5), math.nan) == 0.0  # nan is the contract


def test_compare_float_rules():
    assert D.compare_float(1.0, [1.0]) == "ok"
    assert D.compare_float(1.0 + 2**-23, [1.0]) == "bad"  # exact ops are exact
    assert D.compare_float(-0.0, [0.0]) == "ok"
    assert D.compare_float(0.0, [2.0**-130]) == "ok"  # subnormals may flush
    assert D.compare_float(math.nan, [math.nan, math.nan]) == "ok"
    assert D.compare_float(1.0, [math.nan, 1.0]) == "unstable"
    assert D.compare_float(1.0 + 2**-22, [1.0, 1.0 + 2**-23, 1.0 - 2**-23]) == "tolerant"
    assert D.compare_float(1.01, [1.0, 1.0 + 2**-23, 1.0 - 2**-23]) == "bad"


def test_subgroup_sum_and_f64_rules():
    assert ulp64(1.0) == 2.0**-52 and ulp64(0.0) == 2.0**-1074
    b = subgroup_sum_bound(100.0)
    assert 2 * 63 * 2.0**-24 * 100.0 <= b < 1e-3
    assert subgroup_sum_bound(math.inf) == math.inf
    assert D.compare_float(10.0 + 2**-20, [10.0], extra=b) == "tolerant"
    assert D.compare_float(10.1, [10.0], extra=b) == "bad"
    assert D.compare_float(5.0, [4.0], extra=math.inf) == "unstable"
    # f64: compared as doubles (no float32 rounding), exact unless a rule says otherwise
    assert D.compare_float(0.1, [0.1], f64=True) == "ok"
    assert D.compare_float(0.1 + 2**-56, [0.1], f64=True) == "bad"
    assert (
        D.compare_float(2.0 + 2**-51, [2.0], extra=f64_bound("sqrt", 2.0), f64=True) == "tolerant"
    )
    assert f64_bound("exact", 3.0) == 0.0


def test_grid_and_typed_lists_reach_both_sides():
    import numpy as np

    from cthreads.testing.kernelgen import load_kernel

    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx, u32\n\n@Gpu\n"
        "def kern(xs: list[float], out: list[u32]) -> None:\n"
        "    x: int = GlobalIdx.x\n    y: int = GlobalIdx.y\n"
        "    if x < xs.shape[1] and y < xs.shape[0]:\n"
        "        out[y * xs.shape[1] + x] = u32(x * 100 + y) ^ u32(0x9E3779B9)\n"
    )
    xs = np.zeros((3, 5), np.float32)
    seen = []

    def fake_device(k, args, grid):
        seen.append(grid)
        return D.emulator_runs(k, args, perturbed=0, grid=grid)[0]

    D.check_kernel(kern, (xs, np.zeros(15, np.uint32)), grid=(5, 3), device_runs=fake_device)
    assert seen == [(5, 3)]
    run = D.emulator_runs(kern, (xs, np.zeros(15, np.uint32)), perturbed=0, grid=(5, 3))[0]
    assert run[1][5 + 1] == (1 * 100 + 1) ^ 0x9E3779B9  # flat, row-major, as Python ints


def test_perturber_moves_approximate_results_within_their_bound():
    up, down = Perturber(1), Perturber(-1)
    r = 1 / 3
    assert up("div", (1.0, 3.0), r) > r > down("div", (1.0, 3.0), r)
    assert up("div", (1.0, 3.0), r) - r <= bound("div", (1.0, 3.0), r)
    assert math.isnan(up("sqrt", (-1.0,), math.nan)) and not math.isnan(
        down("sqrt", (-1.0,), math.nan)
    )


def test_f16_lists_are_compared_in_f16_ulps():
    step = 2.0**-10  # float16 spacing at 1.0
    assert ulp16(1.0) == step and ulp16(0.0) == 2.0**-24 and ulp16(65504.0) == 32.0
    # an f32 result moved within its bound can round to the next f16: the runs differ by a step
    assert D.compare_float(1.0, [1.0, 1.0 + step], f16=True) == "tolerant"
    assert D.compare_float(1.0 + 3 * step, [1.0, 1.0 + step], f16=True) == "tolerant"
    assert D.compare_float(1.0 + 5 * step, [1.0, 1.0 + step], f16=True) == "bad"
    assert D.compare_float(1.0 + step, [1.0, 1.0], f16=True) == "bad"  # all runs agree: exact
    # f16 subnormals (below 2^-14) may be flushed; as float32 values they are normal
    assert D.compare_float(2.0**-20, [0.0], f16=True) == "ok"
    assert D.compare_float(2.0**-20, [0.0]) == "bad"
