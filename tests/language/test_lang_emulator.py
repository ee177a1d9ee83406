"""The emulator on shared arrays and atomics: against the device on the same kernels (ints and
order-independent floats exactly), per-workgroup shared arrays, errors naming the shared array."""

from __future__ import annotations

import lang_kernels as L
import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, atomic_add, available, gpu, shared
from cthreads.testing.emulate import emulate
from cthreads.testing.semantics import EmulationError

device = pytest.mark.skipif(not available(), reason="no Vulkan device")
RNG = np.random.default_rng(11)
X_I = RNG.integers(-(2**31), 2**31 - 1, 700, dtype=np.int32)
X_F = RNG.random(700, dtype=np.float32)


def both(kernel, *args):
    """Run on the device and in the emulator on copies; returns (device args, emulator args)."""
    dev = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    emu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu(kernel, *dev).join()
    emulate(kernel, *emu)
    return dev, emu


CASES = {
    "histogram": (L.histogram, lambda: (700, X_I, np.zeros(256, np.int32))),
    "histogram_shared": (L.histogram_shared, lambda: (700, X_I, np.zeros(256, np.int32))),
    "matmul": (  # same order of roundings per element: exact
        L.matmul,
        lambda: (
            4 * 256,
            19,
            23,
            29,
            RNG.standard_normal((19, 23)).astype(np.float32),
            RNG.standard_normal((23, 29)).astype(np.float32),
            np.zeros((19, 29), np.float32),
        ),
    ),
    "cas_max": (L.cas_max, lambda: (700, X_F, np.zeros(1, np.float32))),
    "cas_max_int": (L.cas_max_int, lambda: (700, X_I, np.full(1, -(2**31), np.int32))),
    "int_atomics": (
        L.int_atomics,
        lambda: (700, X_I, np.array([0, 2**31 - 1, -(2**31), -1, 0, 0], np.int32)),
    ),
    "shared_float_atomics": (
        L.shared_float_atomics,
        lambda: (256, X_F[:256], np.zeros(12, np.float32)),
    ),
    "list_atomic_bounds": (
        L.list_atomic_bounds,
        lambda: (10, np.zeros(10, np.int32), np.zeros(3, np.float32), np.full(10, 7, np.int32)),
    ),
}


@device
@pytest.mark.parametrize("name", CASES)
def test_emulator_matches_device(name):
    kernel, make = CASES[name]
    if name == "list_atomic_bounds":
        args = make()
        dev = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        gpu(kernel, *dev).join()
        emu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        emulate(kernel, *emu, oob="device")
    else:
        dev, emu = both(kernel, *make())
    for d, e in zip(dev, emu):
        if isinstance(d, np.ndarray):
            np.testing.assert_array_equal(d, e)


@device
def test_block_sum_emulator_and_device_agree_within_rounding():
    x = RNG.random(5000, dtype=np.float32)
    dev, emu = both(L.block_sum, 512, x, np.zeros(1, np.float32))
    ref = float(x.astype(np.float64).sum())
    bound = (10 + 8 + 2) * 2.0**-24 * ref  # per-invocation chain + tree + 2 atomics
    assert abs(dev[2][0] - ref) <= bound and abs(emu[2][0] - ref) <= bound


@device
def test_tickets_emulator_sequential_device_a_permutation():
    dev, emu = both(L.tickets, 300, np.zeros(1, np.int32), np.zeros(300, np.int32))
    assert emu[2].tolist() == list(range(300))  # one invocation at a time, in index order
    assert sorted(dev[2].tolist()) == list(range(300)) and dev[1][0] == emu[1][0] == 300


def test_shared_arrays_are_per_workgroup_and_zero_filled():
    @Gpu(workgroup_size=4)
    def k(n: int, out: list[int]) -> None:
        acc = shared(int, 1)
        atomic_add(acc, 0, GlobalIdx.x)
        out[GlobalIdx.x] = acc[0]

    out = [0] * 8
    emulate(k, 8, out)
    assert out == [0, 1, 3, 6, 4, 9, 15, 22]  # running sums restart in the second workgroup


def test_out_of_range_shared_index_names_the_array():
    probe = np.array([32, 64], np.int32)
    with pytest.raises(
        IndexError,
        match=r"write to shared array buf\[32\] out of range \(shared array of size 32\)",
    ):
        emulate(L.shared_bounds, 32, probe, np.zeros(64, np.int32))
    out = np.zeros(64, np.int32)
    emulate(L.shared_bounds, 32, probe, out, oob="device")
    assert out[:32].tolist() == list(range(1, 33))


def test_out_of_range_atomic_raises_in_the_emulator():
    with pytest.raises(IndexError, match=r"h\[10\] out of range \(len 10\)"):
        emulate(
            L.list_atomic_bounds,
            10,
            np.zeros(10, np.int32),
            np.zeros(3, np.float32),
            np.zeros(10, np.int32),
        )


def test_emulator_rejects_atomics_inside_expressions():
    def k(n: int, h: list[int], y: list[int]) -> None:
        y[0] = 1 + atomic_add(h, 0, 1)

    with pytest.raises(EmulationError, match="statement or the value of an assignment"):
        emulate(k, 1, [0], [0])
