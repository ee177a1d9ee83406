"""Minimal kernels the differential fuzzer found, each run on the device against the emulator.

Each is a compiler/driver bug report (docs/reliability.md, "Mismatches found"); a test marked
xfail(strict=True) turns into a failure once the bug is fixed: then remove the marker.
"""

from __future__ import annotations

import pytest

from cthreads.gpu import GlobalIdx, Gpu
from cthreads.testing.differential import check_kernel


@pytest.fixture(scope="module", autouse=True)
def _device():
    from cthreads.gpu import available

    if not available():
        pytest.skip("no Vulkan device (cthreads.gpu.available() is False)")


@Gpu
def mod_by_zero(xs: list[int], ys: list[int], q: list[int], r: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < len(xs):
        q[i] = xs[i] // ys[i]
        r[i] = xs[i] % ys[i]


def test_int_division_and_modulo_by_zero_follow_the_contract():
    # the contract: a // 0 == 0 and a % 0 == a (the emulator and codegen agree)
    check_kernel(mod_by_zero, ([1, 7, -7, 0, 5], [0, 0, 0, 0, 0], [9] * 5, [9] * 5))


@Gpu
def div_by_folded_zero(a: float, out_f: list[float]) -> None:
    i: int = GlobalIdx.x
    f0: float = 0.0
    f1: float = a / f0
    out_f[i] = f1


@pytest.mark.xfail(
    strict=False,
    reason="a / 0.0 with a constant-propagated zero: the store vanishes (lavapipe, no float controls; seen without the validation layer)",
)
def test_division_by_a_known_zero_gives_inf():
    check_kernel(div_by_folded_zero, (2.0, [7.0]))


@Gpu
def product_times_constant(x: list[float], o: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < len(x):
        out[i] = (x[i] * o[i]) * 3.0


def test_float_multiplication_is_not_reassociated():
    check_kernel(product_times_constant, ([273.9233703613281], [-643.1942138671875], [0.0]))


@Gpu
def pow_negative_zero(x: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < len(x):
        out[i] = x[i] ** -1.0


def test_float_power_with_negative_exponent():
    # pow(+-0, y < 0) is left undefined (Python raises, Vulkan leaves it undefined); the rest
    # must match within the pow bound
    check_kernel(pow_negative_zero, ([2.0, 0.5, -4.0, 3.0], [0.0] * 4))


@Gpu
def zero_times(a: float, out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < len(out):
        out[i] = 0.0 * a


def _on_lavapipe() -> bool:
    from cthreads.gpu import device_name

    return "llvmpipe" in device_name()


def test_zero_times_infinity_is_nan():
    # We emit NoContraction and SignedZeroInfNanPreserve; Mesa 22.3's lavapipe still folds
    # 0.0 * x to 0.0. Recorded as a driver deviation in docs/reliability.md.
    if _on_lavapipe():
        pytest.xfail("lavapipe (Mesa 22.3) folds 0.0 * x to 0.0 despite float controls")
    check_kernel(zero_times, (float("inf"), [7.0]))
