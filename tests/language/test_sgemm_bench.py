"""bench/sgemm.py's variants compute C = A @ B exactly (small-integer inputs: every sum is exact
in float32, in any order) on the device at sizes that are and (EDGE=1) are not multiples of the
tiles, in the emulator, and compile for the H200; the bench's tolerance fails a wrong result."""

from __future__ import annotations

import numpy as np
import pytest
from langhelp import load_bench

from cthreads.gpu import available, gpu
from cthreads.testing import emulate

device = pytest.mark.skipif(not available(), reason="no Vulkan device")
S = load_bench("sgemm")
RNG = np.random.default_rng(4)


def _case(m: int, n: int, k: int):
    a = RNG.integers(-3, 4, (m, k)).astype(np.float32)
    b = RNG.integers(-3, 4, (k, n)).astype(np.float32)
    return a, b, np.full((m, n), np.nan, np.float32)  # NaN: an element left unwritten fails


@device
@pytest.mark.parametrize("name", list(S.VARIANTS))
def test_every_variant_multiplies_exactly_on_the_device(name):
    shapes = [(128, 128, 64), (256, 128, 48), (256, 64, 40), (67, 45, 53), (130, 200, 17)]
    for m, n, k in [shape for shape in shapes if S.fits(name, *shape)]:
        a, b, c = _case(m, n, k)
        gpu(S.kernel(name), m, n, k, a, b, c, grid=S.launch_size(name, m, n)).join()
        np.testing.assert_array_equal(c, a @ b, err_msg=f"{name} at {(m, n, k)}")


def test_a_variant_multiplies_exactly_in_the_emulator():
    name = "64x64x8 t4x4"
    m, n, k = 40, 70, 20  # two blocks of C, three K steps (the last one partial)
    a, b, c = _case(m, n, k)
    emulate(S.kernel(name), m, n, k, a, b, c, grid=S.launch_size(name, m, n))
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("name", list(S.VARIANTS))
def test_every_variant_compiles_for_the_h200(name):
    assert len(S.kernel(name).compile(chip="nvidia-h200").spirv) > 0


def test_tolerance_accepts_rounding_and_rejects_a_wrong_element():
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (64, 300)).astype(np.float32)
    b = rng.uniform(-1, 1, (300, 48)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    tol = S.tolerance(a, b)
    assert np.abs((a @ b) - exact).max() <= tol  # numpy's float32 order of additions
    wrong = exact.copy()
    wrong[3, 4] -= float(a[3, 0]) * float(b[0, 4]) + 1.0  # a product dropped and more
    assert np.abs(wrong - exact).max() > tol


@device
def test_the_autotuned_form_tunes_and_multiplies_exactly():
    m, n, k = 150, 130, 70
    a, b, c = _case(m, n, k)
    kern = S.kernel(S.AUTOTUNE)
    gpu(kern, m, n, k, a, b, c, grid=S.launch_size(S.AUTOTUNE, m, n)).join()
    np.testing.assert_array_equal(c, a @ b)
    (choice,) = kern.tuned().values()
    assert set(choice) == set(S._TUNED_CHOICES)


@device
def test_the_glsl_twins_and_ours_agree_with_numpy():
    # bench/sgemm_twins.py: both GLSL twins (4- and 16-byte shared reads) and our variant
    # compute the same product within the bench's tolerance; a twin that skipped a block of C
    # leaves NaN, which fails
    twins = load_bench("sgemm_twins")
    row = twins.bench(256, launches=1)
    for which in ("ours", *twins.TWINS):
        assert row[which]["ok"], (which, row[which])
