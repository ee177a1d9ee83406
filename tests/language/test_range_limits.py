"""`for k in range(start, stop, step)` near the int32 limits runs exactly Python's iterations.

The counter's `k + step` past the last value wraps in int32; before the fix it could land back
inside the range, and `range(2147483640, 2147483647, 5)` ran 65,535 times on lavapipe instead
of twice. Ranges are given as list elements (stop and step unknown to the compiler) and as
literals (the compiler knows them).
"""

from __future__ import annotations

import pytest

from cthreads.gpu import Gpu, available, gpu
from cthreads.testing.emulate import emulate

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")

MAX, MIN = 2**31 - 1, -(2**31)
CASES = [
    (2147483640, MAX, 5),
    (0, MAX, 2**30),
    (MIN, MAX, 2**30),
    (MIN, MAX, MAX),
    (MAX - 1, MAX, 3),
    (-2147483643, MIN, -3),
    (MAX, MIN, MIN),
    (MIN + 7, MIN, -(2**30)),
    (0, 10, 3),
    (10, 0, -3),
    (5, MAX, 0),
    (3, 3, 7),
]
CAP = 16  # values recorded per range; a wrapping loop runs far more often


def _record(values: list[int]) -> list[int]:
    got = [len(values)] + values[:CAP]
    return got + [0] * (1 + CAP - len(got))


@Gpu
def dynamic_range(p: list[int], out: list[int]) -> None:
    n: int = 0
    for k in range(p[0], p[1], p[2]):
        if n < 16:
            out[1 + n] = k
        n += 1
        if n > 100000:
            break
    out[0] = n


@Gpu
def constant_step(p: list[int], out: list[int]) -> None:
    n: int = 0
    for k in range(p[0], p[1], 5):  # a constant step of 5, a run-time stop
        if n < 16:
            out[1 + n] = k
        n += 1
        if n > 100000:
            break
    out[0] = n


@Gpu
def literal_ranges(out: list[int]) -> None:
    n: int = 0
    for k in range(2147483640, 2147483647, 5):
        out[1 + n] = k
        n += 1
        if n > 100000:
            break
    out[0] = n
    m: int = 0
    for j in range(-2147483643, -2147483647, -3):
        out[4 + m] = j
        m += 1
        if m > 100000:
            break
    out[3] = m


@pytest.mark.parametrize("start, stop, step", CASES)
def test_a_run_time_range_never_wraps(start, stop, step):
    out = [0] * (1 + CAP)
    gpu(dynamic_range, [start, stop, step], out).join()
    want = _record(list(range(start, stop, step)) if step else [])
    assert out == want
    if step == 0:
        return  # the emulator reports a zero step (KernelUndefined); the device runs nothing
    emu = [0] * (1 + CAP)
    emulate(dynamic_range, [start, stop, step], emu)
    assert emu == want


@pytest.mark.parametrize("start, stop", [(2147483640, MAX), (MAX - 4, MAX), (0, 12), (MAX, 0)])
def test_a_constant_step_with_a_run_time_stop_never_wraps(start, stop):
    out = [0] * (1 + CAP)
    gpu(constant_step, [start, stop], out).join()
    assert out == _record(list(range(start, stop, 5)))


def test_literal_ranges_near_the_limits_run_pythons_iterations():
    out = [0] * 8
    gpu(literal_ranges, out).join()
    a = list(range(2147483640, 2147483647, 5))
    b = list(range(-2147483643, -2147483647, -3))
    assert out == [len(a), *a, len(b), *b, 0, 0], out
