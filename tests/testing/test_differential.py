"""Differential fuzzing: generated kernels on the device vs the emulator (docs/reliability.md).

Budget: CTHREADS_FUZZ_EXAMPLES (default 150); seed: CTHREADS_FUZZ_SEED (default fixed, printed).
The device test is skipped, with the reason, only when no launch is possible at all.
"""

from __future__ import annotations

import ast
import math
import os
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

from cthreads.testing import differential as D
from cthreads.testing.kernelgen import kernel_cases
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

EXAMPLES = int(os.environ.get("CTHREADS_FUZZ_EXAMPLES", "150"))
SEED = int(os.environ.get("CTHREADS_FUZZ_SEED", "20240601"))
_SETTINGS = {
    "deadline": None,
    "database": None,
    "suppress_health_check": list(HealthCheck),
    "print_blob": True,
}


def _device_or_skip():
    """Skip only if a trivial launch cannot work (no launch layer, no device)."""
    try:
        from cthreads.gpu import available, gpu
        from cthreads.testing.kernelgen import load_kernel
    except ImportError as exc:  # pragma: no cover - the launch layer is not importable yet
        pytest.skip(f"launch layer not importable: {exc}")
    if not available():
        pytest.skip("no Vulkan device (cthreads.gpu.available() is False)")
    kern = load_kernel(
        "from cthreads.gpu import Gpu, GlobalIdx\n\n@Gpu\n"
        "def kern(n: int, x: list[float]) -> None:\n    i: int = GlobalIdx.x\n    if i < n:\n        x[i] = x[i] + 1.0\n"
    )
    x = [1.0, 2.0]
    gpu(kern, 2, x).join()
    assert x == [2.0, 3.0], "gpu() launches but returns wrong numbers; fix that first"
    from cthreads.gpu import device_name
    from cthreads.testing import kernelgen

    kernelgen.avoid_known_deviations(device_name())
    return gpu


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


def test_zeromul_keeps_constant_zeros_out_of_products():
    from cthreads.testing.kernelgen_avoid import not_zero_constant

    # #16: `f0: float = float(False)` ... `f1 * f0` was folded to 0 by lavapipe with f1 = nan
    for zero in ("0.0", "(-0.0)", "float(False)", "(3 - 3)", "float(0)", "(1.0 - 1.0)"):
        assert not_zero_constant(zero) == "0.5"
    for other in ("a", "xs[i]", "2.0", "float(True)", "(2 ** 40)", "(1 // 0)"):
        assert not_zero_constant(other) == other


_FLOAT_NAMES = {"a", "f0", "f1", "d0", "d1", "xs", "out_f", "ds", "sh"}
_INT_CALLS = {"int", "bool", "len", "i64", "u32", "floor", "ceil", "trunc", "isnan", "isinf"}


def _is_float(node) -> bool:
    """A generated expression's type is float (f32 or f64): a small type inference."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    if isinstance(node, ast.Name):
        return node.id in _FLOAT_NAMES
    if isinstance(node, ast.Subscript):
        return _is_float(node.value)
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if name in ("abs", "min", "max"):
            return any(_is_float(arg) for arg in node.args)
        return name not in _INT_CALLS and name != "isfinite"
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.Div) or _is_float(node.left) or _is_float(node.right)
    if isinstance(node, ast.UnaryOp):
        return not isinstance(node.op, ast.Not) and _is_float(node.operand)
    if isinstance(node, ast.IfExp):
        return _is_float(node.body) or _is_float(node.orelse)
    return False


class _OutOfRangeReads(ast.NodeTransformer):
    """Replaces each read `xs[e]` whose index names `len(xs)` (other than `(e) % len(xs)`) by
    the zero it reads: what a compiler that folds the bounds check sees."""

    def visit_Subscript(self, node):
        self.generic_visit(node)
        name = node.value.id if isinstance(node.value, ast.Name) else None
        index, mod = ast.unparse(node.slice), isinstance(node.slice, ast.BinOp)
        in_range = mod and isinstance(node.slice.op, ast.Mod)
        in_range = in_range and ast.unparse(node.slice.right) == f"len({name})"
        if name and f"len({name})" in index and not in_range:
            return ast.Constant(0.0 if _is_float(node) else 0)
        return node


def _folds_to_zero(node) -> bool:
    """Whether a lavapipe-like compiler can see `node` as a constant zero (a constant, or one
    built from reads it can prove out of range)."""
    folded = ast.fix_missing_locations(
        _OutOfRangeReads().visit(ast.parse(ast.unparse(node), mode="eval"))
    )
    names = {n.id for n in ast.walk(folded) if isinstance(n, ast.Name)}
    if not names <= {"math", "float", "int", "bool", "abs", "min", "max", "True", "False"}:
        return False
    try:
        return eval(compile(folded, "<factor>", "eval"), {"math": math}) == 0
    except (ArithmeticError, ValueError, OverflowError):
        return False


def test_zeromul_keeps_out_of_range_reads_out_of_products():
    from cthreads.testing.kernelgen_avoid import AVOID, known_zero_reads, not_zero_constant

    # #17: `f0: float = xs[len(xs)]` (out of range: 0.0) ... `xs[i] * f0` with xs[i] = inf gave
    # 0.0 on lavapipe: its bounds check `uint(len(xs)) < len(xs)` folds, then `0 * x` does
    for read in (
        "xs[len(xs)]",
        "xs[(len(xs) + 2)]",
        "(-xs[max(len(xs), c0)])",
        "float(ks[len(ks)])",
    ):
        assert not_zero_constant(read) == "0.5", read
    assert not_zero_constant("math.sin(xs[len(xs)])") == "0.5"
    for other in ("xs[i + 3]", "xs[(c0) % len(xs)]", "xs[len(ks)]", "(xs[len(xs)] + a)"):
        assert not_zero_constant(other) == other, other
    assert known_zero_reads("(xs[len(xs)] * a)") == "0.0 * a"

    added = "zeromul" not in AVOID
    AVOID.add("zeromul")
    try:
        cases = _generated("base", 400, examples=400) + _generated("types", 200, examples=200)
    finally:
        if added:
            AVOID.discard("zeromul")
    products = oob_reads = f64_locals = 0
    for case in cases:
        tree = ast.parse(case.source)
        for node in ast.walk(tree):
            factors = []
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                if _is_float(node):  # an int product of a zero is zero on every device
                    factors = [node.left, node.right]
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult):
                if _is_float(node.target):
                    factors = [node.value]
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "math.fma":
                factors = node.args[:2]
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(target, ast.Name) and target.id in ("f0", "f1"):
                    assert not _folds_to_zero(node.value), (ast.unparse(node), case.source)
                if isinstance(target, ast.Name) and target.id in ("d0", "d1"):
                    # #28: `d1: f64 = f64(math.trunc(-0.75) ...)` is a constant 0.0 that
                    # lavapipe folded into `d0 = d0 * d1` (d0 = inf: 0, not nan)
                    value = node.value
                    if isinstance(value, ast.Call) and ast.unparse(value.func) == "f64":
                        value = value.args[0]
                    assert not _folds_to_zero(value), (ast.unparse(node), case.source)
                    f64_locals += 1
            products += len(factors)
            for factor in factors:
                assert not _folds_to_zero(factor), (ast.unparse(node), case.source)
            if isinstance(node, ast.Subscript) and known_zero_reads(ast.unparse(node)) in (
                "0.0",
                "0",
                "False",
            ):
                oob_reads += 1
    # out-of-range reads stay in the generator (a feature under test), only out of products
    assert products > 100 and oob_reads > 5 and f64_locals > 100, (products, oob_reads, f64_locals)


def _emulator_as_device(kernel, args, grid=None):
    return D.emulator_runs(kernel, args, perturbed=0, grid=grid)[0]


@hseed(SEED)
@settings(max_examples=min(EXAMPLES, 60), **_SETTINGS)
@given(case=kernel_cases())
def test_generated_kernels_are_well_defined(case):
    """Every generated kernel translates and runs in the emulator without undefined behaviour
    (the generator's guards work), and agrees with itself under the comparison rules."""
    D.check_kernel(case, None, device_runs=_emulator_as_device)


def test_differential_fuzz_device_vs_emulator():
    _device_or_skip()
    global FUZZ_SUMMARY
    FUZZ_SUMMARY = f"differential fuzz: {EXAMPLES} kernels, seed {SEED} (CTHREADS_FUZZ_EXAMPLES / CTHREADS_FUZZ_SEED)"  # printed in the run's summary by tests/conftest.py
    before = D.Stats(**vars(D.STATS))

    @hseed(SEED)
    @settings(max_examples=EXAMPLES, **_SETTINGS)
    @given(case=kernel_cases())
    def fuzz(case):
        D.check_kernel(case, None, seed=SEED)

    fuzz()
    done = D.Stats(*(getattr(D.STATS, f) - getattr(before, f) for f in vars(before)))
    FUZZ_SUMMARY += f": {done.line()}"
    assert done.compared > 0


def _generated(feature: str, count: int, examples: int = 60) -> list:
    """Kernels the generator writes with feature section `feature` (no device needed)."""
    from hypothesis import Phase

    found = []

    @hseed(SEED)
    @settings(max_examples=examples, phases=[Phase.generate], **_SETTINGS)
    @given(case=kernel_cases(features=(feature,)))
    def collect(case):
        if len(found) < count:
            found.append(case)

    collect()
    return found


def test_generator_writes_3d_grid_kernels():
    cases = _generated("grid3", 40)
    for case in cases:
        assert "GlobalIdx.z" in case.source and "xs.shape[2]" in case.source
        assert len(case.grid) == 3 and case.args[3].ndim == 3
        assert case.grid[::-1] >= case.args[3].shape  # the grid covers the array (or more)
    assert any(case.grid[::-1] != case.args[3].shape for case in cases)  # the guard is reached
    assert any("workgroup_size=(" in case.source for case in cases)
    _device_or_skip()
    for case in cases[:6]:
        D.check_kernel(case, None, seed=SEED)


_F64_MATH = re.compile(r"math\.(fma|fabs|floor|ceil|trunc|isnan|isinf|isfinite)\((d[01]|f64\()")


def test_generator_writes_f64_math_kernels():
    cases = [c for c in _generated("types", 60) if _F64_MATH.search(c.source)]
    seen = {m.group(1) for c in cases for m in _F64_MATH.finditer(c.source)}
    assert {"fma", "fabs"} <= seen, seen
    assert seen & {"floor", "ceil", "trunc"} and seen & {"isnan", "isinf", "isfinite"}, seen
    assert any("math.fma(f64(" in c.source for c in cases)  # float32 factors: exact product
    _device_or_skip()
    for case in cases[:6]:
        D.check_kernel(case, None, seed=SEED)


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


_NARROW = ("f16", "u64", "i8", "u8", "i16", "u16")


def test_generator_writes_narrow_type_kernels():
    import numpy as np

    cases = _generated("narrow", 80, examples=80)
    sources = "\n".join(c.source for c in cases)
    for t in _NARROW:
        assert f": {t} = " in sources and f"list[{t}]" in sources and f"{t}(" in sources, t
    dtypes = {a.dtype for c in cases for a in c.args if isinstance(a, np.ndarray)}
    assert {
        np.dtype(t) for t in ("float16", "uint64", "int8", "uint8", "int16", "uint16")
    } <= dtypes
    for pattern in (
        r"math\.sqrt\(abs\(",
        r"abs\(h",
        r"min\(",
        r"max\(",
        r"h0 = .*[-+*/] ",  # f16 math
        r"q0 = .*(\*|<<|>>|//|%) ",  # u64 arithmetic
        r"e[0-3] = .*(\*|<<|-) ",  # narrow ints that wrap
        r"e2 = .*\b(e0|e1|u8s|b8)\b",  # promotion: i8 / u8 into i16
        r"subgroup_(add|min|max|broadcast_first|shuffle)\(",
        r"out_[hqnmsw]\[i\] \+?= ",  # stores into the narrow lists
        r"f0 = f0 \+ h0|float\(h1\)|int\(q0 >> 33\)|c0 = c0 \+ e[0-3]",  # back to 32 bits
    ):
        assert re.search(pattern, sources), pattern
    assert any("@Gpu(workgroup_size=64)" in c.source for c in cases)
    _device_or_skip()
    for case in cases[:8]:
        D.check_kernel(case, None, seed=SEED)


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


def test_zeromul_keeps_constant_zeros_out_of_f64_locals():
    from hypothesis import strategies as st

    from cthreads.testing import kernelgen_features as F

    # #28 (fuzz seed 7, kernel 120, a types kernel): `d1: f64 = f64((math.trunc(-0.75) if
    # abs(-0.75) < 1000000.0 else -1))` is a constant 0.0 to the compiler; lavapipe folded it into
    # `d0 = d0 * d1` with d0 = inf (from `(out_f[i] * xs[i]) ** -1.0`): 0.0, not nan
    class Writer:  # every expression a constant zero, every choice the f64 one
        def __init__(self):
            self.lines: list[str] = []

        def expr(self, t, depth):
            return "(math.trunc(-0.75) if abs(-0.75) < 1000000.0 else -1)" if t == "i" else "0.0"

        def pick(self, options):
            return next((o for o in options if "f64(" in o), options[0])

        def emit(self, depth, line):
            self.lines.append(line)

    w = Writer()
    F.typed_section(w, lambda s: 1, st, frozenset({"zeromul"}))
    decls = [line for line in w.lines if line.startswith(("d0: f64", "d1: f64"))]
    assert decls == ["d0: f64 = f64(0.5)", "d1: f64 = f64(0.5)"], w.lines


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
    assert len(runs) == 8 and runs[-1][1:] == [[-0.0, -0.0625], [0.0, runs[0][2][1]], [False, True]]
    assert runs[0][1][0] == -4.3642039372932103e-41

    def lavapipe(k, a, grid):  # pow's subnormal result flushed, the rest as written
        return [list(a[0]), [-0.0, -0.0625], [0.0, runs[0][2][1]], [False, True]]

    D.check_kernel(kern, args, device_runs=lavapipe)
    # a kernel without subnormals gets no extra run; the flush is off again after the runs
    assert len(D.emulator_runs(kern, ([2.0, 2.0], *args[1:]))) == 7
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
    assert len(D.emulator_runs(kern, ([-9.5, 1.5, 1.0], [0.25, 0.75], *args[2:]))) == 7


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
