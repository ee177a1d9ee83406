"""Past differential mismatches (docs/reliability.md, #13 to #36, the seed 777 and seed 28 findings),
each the rule it needed: the emulator's runs must reach what the device computed, given as a
stand-in device.
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("hypothesis")  # cthreads.testing.differential needs it (kernelgen)

from cthreads.testing import differential as D
from cthreads.testing.tolerance import Perturber, bound, ulp


def test_chained_approximations_are_moved_apart():
    # mismatch #13: pow then hypot (hypot(1.25, x ** -1.0) + 5.25, x = -0.75): moving both up
    # (or both down) cancels; the alternating runs reach 1 ULP either side, where lavapipe is
    from cthreads.testing.kernelgen import load_kernel

    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(x: list[float], out: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n    if i < len(x):\n"
        "        out[i] = math.hypot(1.25, x[i] ** -1.0) + 5.25\n"
    )
    args = ([-0.75] * 8, [0.0] * 8)
    runs = [run[1][0] for run in D.emulator_runs(kern, args, perturbed=2)]
    assert runs[:3] == [runs[0]] * 3  # exact, all up, all down: the moves cancel
    assert min(runs) < runs[0] < max(runs)  # alt+ / alt-

    def lavapipe(k, a, grid):
        return [list(a[0]), [7.077642917633057] * 8]  # 1 ULP above the exact 7.0776424

    D.check_kernel(kern, args, device_runs=lavapipe)


def test_a_bound_that_reaches_zero_gives_zero_in_one_run():
    # #18: lavapipe's asinh(1e-30) is 0 (log(x + sqrt(x*x + 1)) = log(1)), within its bound;
    # the generator's guard `(y if y != 0 else 3)` then takes the other branch. The all-down
    # run gives 0 there (the all-up run for a negative result), the alternating runs cross it
    x = 1.0000000031710769e-30
    r = math.asinh(x)
    assert Perturber(-1)("asinh", (x,), r) == 0.0 < Perturber(1)("asinh", (x,), r)
    assert Perturber(1)("asinh", (-x,), -r) == 0.0 > Perturber(-1)("asinh", (-x,), -r)
    assert Perturber("alt-")("asinh", (x,), r) < 0.0
    assert Perturber(-1)("div", (1.0, 3.0), 1 / 3) > 0.0  # a bound that stops short of 0
    from cthreads.testing.kernelgen import load_kernel

    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(x: list[float], y: list[float], out: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n    if i < len(x):\n"
        "        out[i] = y[i] % (math.asinh(x[i]) if math.asinh(x[i]) != 0 else 3.0)\n"
    )
    args = ([x], [-47.25], [0.0])

    def lavapipe(k, a, grid):
        return [list(a[0]), list(a[1]), [0.75]]  # -47.25 % 3.0

    D.check_kernel(kern, args, device_runs=lavapipe)


def test_undefined_and_remainder_runs_cover_what_a_device_computes():
    inf = math.inf
    # #14: inf // y is nan in Python, floor(inf / y) = -inf by the recipe: undefined
    assert math.isnan(Perturber(1)("floordiv", (inf, -3.0), math.nan))
    assert Perturber(-1)("floordiv", (inf, -3.0), math.nan) == -inf
    # #15: an undefined result is +-3e38 in some runs, not only nan (which subgroup_max and
    # max() drop) and the exact value (atan2(0, 0) = 0 in the emulator: lavapipe gave pi)
    assert math.isnan(Perturber(1)("asin", (2.0,), math.nan))
    assert Perturber(-1)("asin", (2.0,), math.nan) == 3.0e38
    assert Perturber("alt-")("asin", (2.0,), math.nan) == -3.0e38
    # #34 (fuzz seed 8, kernel 600): atan2(0, 0) too, not atan2(-0, -0) = -pi, its zero signs
    # flipped as for a defined atan2 (all runs then gave 0, nan or -pi to `0 < atan2(0, 0)`,
    # lavapipe 3pi/4)
    assert Perturber(-1)("atan2", (0.0, 0.0), 0.0) == 3.0e38
    assert Perturber("alt-")("atan2", (-0.0, 0.0), -0.0) == -3.0e38
    assert Perturber(-1)("atan2", (0.0, -1.0), math.pi) < -3.14  # defined: zero sign flips
    # a quotient beyond 2^63: the recipe's 3e38 - 3 * 1e38 = 0, Python's exact 3e38 % 3 = 2
    x = 3.0000000054977558e38
    assert Perturber(-1)("mod", (x, 3.0), x % 3.0) == 0.0
    # #21: subgroup_min/max of NaNs only is undefined (lavapipe: +-inf, the identity)
    assert math.isnan(Perturber(1)("undefined", (), math.nan))
    assert Perturber(-1)("undefined", (), math.nan) == 3.0e38


def test_a_remainder_of_an_approximation_off_by_a_period_is_unconstrained():
    # #20 (fuzz seed 6, kernel 323): x ** 3.0 with x = -976.08 is -9.3e8, lavapipe's 1088 off
    # (its bound: 10152, through exp2(3 * log2|x|)); `% y` with y = 5x = -4880.4 then gives
    # -3072.0 (Python's exact value: -1976.2). Every value in (y, 0] is within the bounds, but
    # the perturbed runs only sampled it (-1497 ... -2455); the remainder is now nan in the
    # up runs and anywhere in (y, 0] in the others, so the outputs it reaches go unchecked.
    from cthreads.testing import semantics as S
    from cthreads.testing.kernelgen import load_kernel

    x = -976.0799560546875
    y = S.f32(5.0 * x)
    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(x: list[float], y: list[float], out: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n    if i < len(x):\n"
        "        out[i] = (x[i] ** 3.0) % y[i]\n"
    )
    args = ([x], [y], [0.0])

    def lavapipe(k, a, grid):
        return [list(a[0]), list(a[1]), [-3072.0]]

    report = D.check_kernel(kern, args, device_runs=lavapipe)
    assert report.unstable == 1
    # the rule: operands moved by >= 1/4 period from the exact run's (same call) are aliased
    exact = Perturber(None)
    assert exact("mod", (x**3, y), -1976.2) == -1976.2 and exact.remainders == [(x**3, y)]
    far, near = (x**3 + 2000.0, y), (x**3 + 64.0, y)
    assert math.isnan(Perturber(1, exact=exact.remainders)("mod", far, -1976.2))
    assert y < Perturber(-1, exact=exact.remainders)("mod", far, -1976.2) <= 0.0
    assert not math.isnan(Perturber(1, exact=exact.remainders)("mod", near, -1976.2))
    # a small error keeps the remainder checked
    runs = D.emulator_runs(kern, ([2.0], [3.0], [0.0]))
    assert all(abs(run[2][0] - 2.0) < 1e-3 for run in runs)  # 8.0 % 3.0, pow ~1e-5 off


def test_an_unconstrained_remainder_reaches_both_sides_of_a_comparison():
    from cthreads.testing.kernelgen import load_kernel

    # #24 (fuzz seed 3, kernel 210, a types kernel): `d0 = f64((a * -5) % (ks[i - 1] / 1000003))`,
    # then `b0 = (2*d0 ... < d1)`: the divisor's 2.5 ULP move shifts x/y by ~16 periods, so the
    # remainder is unconstrained (#20), but the runs drew it at random in [0, y) (or nan) and
    # all fell on one side of the comparison, while lavapipe's remainder was 0
    kern = load_kernel(
        "from cthreads.gpu import Gpu\n\n@Gpu\n"
        "def kern(a: float, ks: list[int], d1: list[float], out_b: list[bool]) -> None:\n"
        "    r: float = (a * -5) % (ks[0] / 1000003)\n"
        "    out_b[0] = 2.0 * r < d1[0]\n"
    )
    runs = D.emulator_runs(kern, (377.710693359375, [17], [8.40359693e-06], [False]))
    assert {run[2][0] for run in runs} == {True, False}  # unstable: not compared


def test_an_exact_remainder_does_not_cancel_the_next_approximation():
    from cthreads.testing.kernelgen import load_kernel

    # #25 (fuzz seed 3, kernel 216): `f1 = xs[0] % -0.75` (-0.25: y*q = 7.5 and x - y*q are
    # exact in float32), then `f1 += math.exp2(0.5)` behind a guard with a division, then
    # `f0 + f1 * (f1 * a)`. The Perturber moved the remainder's roundings by 1 ULP each against
    # the run's direction (4.25 ULP(1.4) down) while exp2 moved 4 ULP up: every run but one
    # random one cancelled, and lavapipe's exp2(0.5), 1 ULP above the rounded value, mismatched
    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(xs: list[float], a: float, out: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    f1: float = xs[0] % -0.75\n"
        "    f1 += math.exp2(0.5 if xs[1] / 7.0 > 1.0 else 0.0)\n"
        "    out[i] = -5.0 + f1 * (f1 * a)\n"
    )
    args = ([7.25, 128.0], 99.49248504638672, [0.0])
    runs = [run[1][0] for run in D.emulator_runs(kern, args)]
    assert runs[0] == 129.8514404296875
    assert runs[1] > runs[0] > runs[2] and runs[3] > runs[0] > runs[4]  # +1, -1, alt+, alt-
    # the exact steps move nothing; where y*q rounds, both roundings still move (#11)
    assert Perturber(1)("mod", (7.25, -0.75), -0.25) == -0.25
    assert Perturber(-1)("mod", (7.25, -0.75), -0.25) == -0.25
    y = 0.0010000000474974513  # float32(0.001): -8500 * y rounds
    assert Perturber(1)("mod", (-8.5, y), 4.0372833609580994e-07) < 0.0

    def lavapipe(k, a, grid):
        return [list(a[0]), [129.85148620605469]]

    # without the random runs (one of which happened to move here): the four patterned ones
    D.check_kernel(kern, args, perturbed=2, device_runs=lavapipe)


def test_an_approximation_whose_move_rounds_away_still_gets_ulp_slack():
    from cthreads.testing import semantics as S
    from cthreads.testing.emulate import emulate
    from cthreads.testing.kernelgen import load_kernel

    # #27 (fuzz seed 4, kernel 510): `f0 = copysign(sinh(-1.25), 60.0)` (7 ULP bound), then
    # `f0 + f1 * (x - f0)` with f1 = 3, x = -10: the ±7 ULP moves of f0 round away at the output
    # (-30 - 2 f0: 14 ULP(1.6) is under half an ULP(33)) in every run, but f0 enters twice with
    # roundings in between (x - f0, the product), so the output is a sawtooth in f0: lavapipe's
    # sinh, 1 ULP above (inside the bound), gives -33.2038345, the runs all -33.2038383
    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(xs: list[float], out: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    f0: float = math.copysign(math.sinh(xs[0]), 60.0)\n"
        "    f1: float = max(xs[1], 3.0)\n"
        "    out[i] = f0 + f1 * (xs[2] - f0)\n"
    )
    args = ([-1.25, -7.0, -10.0], [0.0])
    runs = [run[1][0] for run in D.emulator_runs(kern, args)]
    assert set(runs) == {-33.20383834838867}  # every move rounded away
    assert D.probe_run(kern, args)[1][0] != runs[0]  # the probe shows sinh reaches it

    def one_ulp_out(name, a, r):  # lavapipe: sinh(-1.25) 1 ULP further from zero
        if name == "sinh":
            assert ulp(r) <= bound(name, a, r)
            return S.f32(r - ulp(r))
        return r

    def lavapipe(k, a, grid):
        copies = ([*a[0]], [*a[1]])
        S.set_perturbation(one_ulp_out)
        try:
            emulate(k, *copies, oob="device")
        finally:
            S.set_perturbation(None)
        return list(copies)

    assert lavapipe(kern, args, None)[1] == [-33.203834533691406]  # the device's value
    D.check_kernel(kern, args, device_runs=lavapipe)
    # an output no approximation reaches is still compared exactly
    assert D.compare_float(1.0 + 2**-23, [1.0, 1.0], reached=False) == "bad"
    assert D.compare_float(1.0 + 2**-22, [1.0, 1.0], reached=True) == "tolerant"
    assert D.compare_float(1.0 + 2**-20, [1.0, 1.0], reached=True) == "bad"


def test_a_float32_subnormal_result_may_be_flushed_wherever_it_flows():
    from cthreads.testing import semantics as S
    from cthreads.testing.kernelgen import load_kernel

    # #31 (fuzz seed 6, kernel 57, a types kernel): `d0 = f64(pow(abs(f0) + 0.5, -6.0) / ...)`
    # with pow(6714645.5, -6.0) = 1.09e-41, a float32 subnormal, which lavapipe flushes to 0
    # (Vulkan allows it): the f64 output was -0.0, the emulator's -4.4e-41, and f64 outputs
    # forgive f64 subnormals only. The same flush reaches a float output scaled back up and a
    # `!= 0` test, so a kernel whose exact run makes a subnormal gets a flushed run too
    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx, f64\n\n@Gpu\n"
        "def kern(xs: list[float], out_d: list[f64], out_f: list[float], out_b: list[bool])"
        " -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    out_d[i] = f64(xs[i] ** -6.0 / -0.25)\n"
        "    out_f[i] = (xs[i] ** -6.0) * 1e30\n"
        "    out_b[i] = (xs[i] ** -6.0) != 0\n"
    )
    args = ([6714645.5, 2.0], [0.0, 0.0], [0.0, 0.0], [False, False])
    runs = D.emulator_runs(kern, args)
    assert len(runs) == 10 and runs[-1][1:] == [
        [-0.0, -0.0625],
        [0.0, runs[0][2][1]],
        [False, True],
    ]
    assert runs[0][1][0] == -4.3642039372932103e-41

    def lavapipe(k, a, grid):  # pow's subnormal result flushed, the rest as written
        return [list(a[0]), [-0.0, -0.0625], [0.0, runs[0][2][1]], [False, True]]

    D.check_kernel(kern, args, device_runs=lavapipe)
    # a kernel without subnormals gets no extra run; the flush is off again after the runs
    assert len(D.emulator_runs(kern, ([2.0, 2.0], *args[1:]))) == 9
    assert S.f32(2.0**-140) == 2.0**-140


def test_a_remainder_the_unfused_recipe_gives_as_zero_gets_a_run():
    from cthreads.testing.kernelgen import load_kernel

    # #32 (fuzz seed 8, kernels 35 and 39): `f0 = (GlobalIdx.x / c0) % (r if r != 0 else 3)`
    # with r = xs[i] % xs[n - 1 - i]. -9.75 % float32(0.001) is 4.6e-7, but y*q rounds to -9.75
    # in float32, so lavapipe's remainder is exactly 0 and the guard takes 3: 37 % 3 = 1 (kernel
    # 35: `0.5 <= f0` True), -111 % 3 = 0 (kernel 39: `f0 + f0 * (1 / (f0 if f0 != 0 else 3))`
    # 0). The runs moved the roundings 1 ULP each, across 0, never onto it, and moved the
    # quotient -111.0 too; -8.75 % 1e-30 (x/y beyond 2^63) did give the recipe's 0 in the
    # all-down run, but its next remainder counted as aliased (#20). A run that computes every
    # remainder as the unfused recipe, nothing else moved, gives the device's values
    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(xs: list[float], ys: list[float], out_b: list[bool], out_f: list[float])"
        " -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    r: float = xs[i] % ys[i]\n"
        "    f0: float = 37.0 % (r if r != 0 else 3)\n"
        "    out_b[i] = 0.5 <= f0\n"
        "    f1: float = (-111.0 / xs[2]) % (r if r != 0 else 3)\n"
        "    out_f[i] = f1 + f1 * (1.0 / (f1 if f1 != 0 else 3))\n"
    )
    y = 0.0010000000474974513  # float32(0.001)
    args = ([-9.75, -8.75, 1.0], [y, 1.0000000031710769e-30], [False, False], [0.0, 0.0])
    runs = D.emulator_runs(kern, args)
    assert runs[0][2] == [False, False] and runs[0][3][0] > 0.5
    assert runs[-1][2:] == [[True, True], [0.0, 0.0]]  # the recipe run
    assert {run[2][0] for run in runs} == {True, False}  # unstable: not compared
    assert {run[2][1] for run in runs} == {True, False}

    def lavapipe(k, a, grid):
        return [list(a[0]), list(a[1]), [True, True], [0.0, 0.0]]

    D.check_kernel(kern, args, device_runs=lavapipe)
    # a kernel whose remainders the recipe gives as Python does gets no extra run
    assert len(D.emulator_runs(kern, ([-9.5, 1.5, 1.0], [0.25, 0.75], *args[2:]))) == 9


def test_a_hypot_whose_bound_reaches_the_larger_operand_gives_it_in_one_run():
    from cthreads.testing.kernelgen import load_kernel

    # #33 (fuzz seed 8, kernel 146): `f1 = math.hypot(a, xs[n - 1 - i])` with a = 3.25 and
    # xs[..] = float32(0.001), then `b0 = (not (f1 != a < xs[i + 1] + 7))`: hypot is 3.2500002,
    # lavapipe's 3.25 (1 ULP down, inside the 5.5 ULP bound), so `f1 != a` was False on the
    # device, True in every run: the moves stepped over |x| as over zero before #18
    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu\n\n@Gpu\n"
        "def kern(xs: list[float], out_b: list[bool], out_f: list[float]) -> None:\n"
        "    out_f[0] = math.hypot(xs[0], xs[1])\n"
        "    out_b[0] = math.hypot(xs[0], xs[1]) != xs[0]\n"
    )
    args = ([3.25, 0.0010000000474974513], [False], [0.0])
    runs = D.emulator_runs(kern, args)
    assert {run[1][0] for run in runs} == {True, False}  # unstable: not compared
    assert runs[2][2] == [3.25]  # the all-down run stops at |x|

    def lavapipe(k, a, grid):
        return [list(a[0]), [False], [3.25]]

    D.check_kernel(kern, args, device_runs=lavapipe)


def test_remainders_of_infinities_get_the_recipe_run():
    from cthreads.testing.kernelgen import load_kernel

    # #36 (the H200, fuzz seed 4, kernel 382): `f1 = (out_f[i] / xs[i - 3]) // 3.0` with the
    # read out of range (0.0), then `max(xs[i + 3] / f1, ...) * ... + f1 * out_f[i]`. inf // 3.0
    # is undefined: Python nan, the device's floor(inf / 3) = inf. The moved runs gave nan or
    # the recipe's value by the draw of their signs, and x / inf (undefined too) nan or +-3e38,
    # so in 17 of 30 seeds every run ended in nan where the device (and lavapipe) gave inf. The
    # recipe run now computes `//` and `%` of infinities as the recipe too, in every seed.
    inf, nan = math.inf, math.nan
    exact = Perturber(None)
    assert math.isnan(exact("floordiv", (inf, 3.0), nan)) and exact.recipe_differs
    recipe = Perturber("recipe")
    assert recipe("floordiv", (inf, 3.0), nan) == inf
    assert recipe("floordiv", (-inf, 3.0), nan) == -inf
    assert math.copysign(1.0, recipe("floordiv", (-2.0, inf), -1.0)) == -1.0  # floor(-0.0)
    assert recipe("floordiv", (-2.0, inf), -1.0) == 0.0
    assert math.isnan(recipe("mod", (2.0, inf), 2.0))  # 2 - inf * 0
    assert math.isnan(recipe("fmod", (2.0, -inf), 2.0))
    for args, r in [((inf, 3.0), nan), ((nan, 3.0), nan), ((2.0, 3.0), 2.0)]:
        same = Perturber(None)  # nan either way, or no infinity: no extra run
        same("mod", args, r)
        assert not same.recipe_differs, args
    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(xs: list[float], out_f: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    f1: float = (out_f[i] / xs[i]) // 3.0\n"
        "    out_f[i] = f1 + max(2.0 / f1, 1.0) * 3.0\n"
    )
    args = ([0.0] * 8 + [2.0, -4.0], [7.0, -1.25, 3.75, -8.5] * 2 + [7.0, 7.0])
    want = [inf, -inf, inf, -inf] * 2 + [7.0, 2.0]  # floor(+-inf / 3) = +-inf, 2 / +-inf = 0
    assert D.emulator_runs(kern, args)[-1][1] == want

    def device(out):
        return lambda k, a, grid: [list(a[0]), out]

    for seed in range(10):
        D.check_kernel(kern, args, seed=seed, device_runs=device(want))
        with pytest.raises(D.DifferentialMismatch):  # the defined elements are still compared
            D.check_kernel(kern, args, seed=seed, device_runs=device(want[:-1] + [3.0]))


def test_an_undefined_result_does_not_end_the_probe_run():
    from cthreads.testing import semantics as S
    from cthreads.testing.emulate import emulate
    from cthreads.testing.kernelgen import load_kernel

    # fuzz seed 1, kernel 118 (lavapipe, found while checking #36): `c0 = math.trunc(out_f[i] %
    # 3.0)` with out_f[82] = 3e38 (a quotient beyond 2^63: undefined, nan in the runs that move
    # it up) ended the probe run in KernelUndefined, so no output got #27's slack and
    # `f0 + pow(x, -1.0) * xs[i]`, whose moves round away, was compared exactly: lavapipe 1 ULP
    # off. The probe now keeps undefined results at the exact value.
    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(xs: list[float], out: list[float], out_i: list[int]) -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    out_i[i] = math.trunc(xs[3] % 3.0)\n"
        "    f0: float = math.copysign(math.sinh(xs[0]), 60.0)\n"
        "    f1: float = max(xs[1], 3.0)\n"
        "    out[i] = f0 + f1 * (xs[2] - f0)\n"
    )
    args = ([-1.25, -7.0, -10.0, 3.0000000054977558e38], [0.0], [0])
    probe = D.probe_run(kern, args)
    assert probe is not None and probe[1][0] != -33.20383834838867 and probe[2] == [2]

    def lavapipe(k, a, grid):  # sinh(-1.25) 1 ULP further from zero (#27), `%` the recipe's
        copies = ([*a[0]], [*a[1]], [*a[2]])
        S.set_perturbation(lambda name, a, r: S.f32(r - ulp(r)) if name == "sinh" else r)
        try:
            emulate(k, *copies, oob="device")
        finally:
            S.set_perturbation(None)
        return [copies[0], copies[1], [0]]

    D.check_kernel(kern, args, device_runs=lavapipe)
    # defined approximations still move: the probe is not the exact run
    assert Perturber("probe")("sinh", (-1.25,), -1.6019190549850464) != -1.6019190549850464
    assert Perturber("probe")("mod", (3.0000000054977558e38, 3.0), 2.0) == 2.0
    assert Perturber("probe")("pow", (0.0, -1.0), math.inf) == math.inf  # not nan


def test_a_remainder_whose_float32_quotient_overflows_is_an_infinity_in_the_recipe():
    from cthreads.testing.kernelgen import load_kernel

    # lavapipe, fuzz seed 777, kernel 154: `b0 = (xs[j] != (max(a, f1) % fmod(100.0, a))
    # < xs[i + 2])` with f1 = out_f[4] = 3e38 and fmod(100.0, 4.75) = 0.25. The quotient 1.2e39
    # overflows float32, so the device's x - y * floor(x / y) is 3e38 - inf = -inf and the
    # comparison True; the runs gave Python's 0.0 (exact) or nan (the recipe taken as nan for an
    # infinite quotient), both False. The recipe now gives the infinity the device computes.
    x = 3.0000000054977558e38
    assert Perturber("recipe")("mod", (x, 0.5), 0.0) == -math.inf
    assert Perturber(-1)("mod", (x, 0.5), 0.0) == -math.inf
    assert Perturber("alt-")("fmod", (-x, 0.25), -0.0) == math.inf
    assert math.isnan(Perturber(1)("mod", (x, 0.5), 0.0))  # undefined: nan when moved up
    assert math.isnan(Perturber("recipe")("mod", (math.inf, 3.0), math.nan))  # inf - inf
    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(xs: list[float], ys: list[float], out_f: list[float], out_b: list[bool]) "
        "-> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    out_f[i] = xs[i] % ys[i]\n"
        "    out_b[i] = (xs[i] % ys[i]) < -0.5\n"
    )
    args = ([x, -x, 7.25], [0.5, 0.25, 0.5], [0.0] * 3, [False] * 3)

    def device(out_b):  # lavapipe's remainders: the recipe's infinities, then a defined 0.25
        return lambda k, a, grid: [list(a[0]), list(a[1]), [-math.inf, math.inf, 0.25], out_b]

    D.check_kernel(kern, args, device_runs=device([True, False, False]))
    with pytest.raises(D.DifferentialMismatch):  # the defined element is still compared
        D.check_kernel(kern, args, device_runs=device([True, False, True]))


def test_runs_whose_moves_cancel_reach_the_other_side_through_their_mirror():
    # H200, fuzz seed 28, kernel 8, out_d[7]: sqrt(|0.1 * fma(f64(x), f64(degrees(x)), d0)|)
    # with x = -4.5 and d0 = f64(atan2(f1, f1) ** 0.5). NVIDIA's degrees is x * float32(180 / pi),
    # 1 ULP from the rounded product. Moving atan2 and degrees the same way moves the output in
    # opposite senses by about as much, so the all-up, all-down and alternating runs cancelled;
    # one random run moved degrees alone, the other way from the device. The emulator's runs
    # (exact first) and the device's value as reported:
    runs = [
        10.7755542706054,
        10.775554274200855,
        10.775554267009946,
        10.775554270881974,
        10.775554270328827,
        10.775554268669387,
        10.775553631444135,
    ]
    device = 10.775554907830614
    assert device > max(runs)  # no run reaches it, the mirror of the last one does
    assert D.compare_float(device, runs, f64=True) == "tolerant"
    assert D.compare_float(2 * runs[0] - runs[-1], runs, f64=True) == "tolerant"
    # beyond the mirrored spread (and its slack) it is still a mismatch
    spread = runs[0] - runs[-1]
    assert D.compare_float(runs[0] + 2.5 * spread, runs, f64=True) == "bad"
    assert D.compare_float(runs[-1] - 1.5 * spread, runs, f64=True) == "bad"


def test_operations_of_different_names_move_apart_in_a_run_of_their_own():
    from cthreads.testing import semantics as S
    from cthreads.testing.kernelgen import load_kernel

    # lavapipe, fuzz seed 28, kernel 8, out_d[45]: as above, with both random runs cancelling
    # too. atan2 (moved up, d0 grows) and degrees (moved up, the product shrinks) move the
    # output in opposite senses by about as much, whatever else moves; a run moving each name
    # its own way reaches the device's side.
    kern = load_kernel(
        "import math\nfrom cthreads.gpu import Gpu, GlobalIdx, f64\n\n@Gpu\n"
        "def kern(x: list[float], y: list[float], out: list[f64]) -> None:\n"
        "    i: int = GlobalIdx.x\n"
        "    z: f64 = f64(math.atan2(y[i], y[i]) ** 0.5)\n"
        "    out[i] = math.fma(f64(x[i]), f64(math.degrees(x[i])), z)\n"
    )
    y = S.f32(math.atanh(0.5))
    args = ([-4.5], [y], [0.0])
    degrees = S.f32(-4.5 * S.f32(180 / math.pi))  # the device's: -257.83102 (-257.83099 rounded)
    device = [[-4.5], [y], [-4.5 * degrees + S.f32(S.f32(math.pi / 4) ** 0.5)]]
    runs = [run[2][0] for run in D.emulator_runs(kern, args, perturbed=2)]
    spread_without_names = max(abs(v - runs[0]) for v in runs[1:5])  # +1, -1, alt+, alt-
    assert abs(device[2][0] - runs[0]) > 100 * spread_without_names  # they all cancel
    D.check_kernel(kern, args, perturbed=2, device_runs=lambda k, a, grid: device)  # no random
