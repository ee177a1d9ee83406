"""Tile kernels in the emulator (exact arithmetic, cthreads/gpu/tiles.py) against numpy, every
form of tests/language/tile_kernels.py; the host (plain Python) tile functions; misfit tiles."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "language"))
import tile_kernels as TK  # noqa: E402

from cthreads.gpu import f32  # noqa: E402
from cthreads.gpu import tiles as T  # noqa: E402
from cthreads.testing import emulate  # noqa: E402


@pytest.mark.parametrize("form", sorted(TK.FORMS))
def test_emulator_runs_every_tile_form_like_numpy(form):
    kernel, make, ref, outputs, grid = TK.FORMS[form]
    args = make(np.random.default_rng(7))
    emulate(kernel, *args, grid=grid)
    for i, want in zip(outputs, ref(args)):
        np.testing.assert_array_equal(args[i], want)


def test_f32_accumulation_rounds_once_per_addition_in_k_order():
    """The documented rule: products exact, float32 sums in order k = 0..K-1."""
    a = T.fill("a", "f16", 16, 16, 0.0)
    b = T.fill("b", "f16", 16, 16, 0.0)
    a.data[0, :3] = [2048.0, 1.0, -2048.0]  # 2048 + 1 is exact in f32, (2048+1)-2048 = 1
    b.data[:3, 0] = [16384.0, 1.0, 16384.0]  # products 2**25, 1, -2**25
    c = T.fill("acc", "f32", 16, 16, 0.0)
    out = T.mma(a, b, c).data[0, 0]
    # float32: 2**25 + 1 rounds to 2**25 (24-bit significand), then - 2**25 = 0
    assert out == 0.0
    exact = float(a.data[0].astype(np.float64) @ b.data[:, 0].astype(np.float64))
    assert exact == 1.0


def test_f16_accumulator_rounds_to_f16_at_the_end_of_each_mma():
    a = T.fill("a", "f16", 16, 16, 0.0)
    b = T.fill("b", "f16", 16, 16, 0.0)
    a.data[0, :2] = [1.0, 1.0]
    b.data[:2, 0] = [1024.0, 0.5]  # 1024.5: exact in f32, rounds to 1024 in f16 (ties to even)
    out = T.mma(a, b, T.fill("acc", "f16", 16, 16, 0.0)).data[0, 0]
    assert out.dtype == np.float16 and float(out) == 1024.0


def test_integer_accumulators_wrap_to_32_bits():
    a = T.fill("a", "u8", 16, 32, 255)
    b = T.fill("b", "u8", 32, 8, 255)
    c = T.fill("acc", "u32", 16, 8, 0xFFFFFFFF)
    out = T.mma(a, b, c).data
    assert int(out[0, 0]) == (32 * 255 * 255 + 0xFFFFFFFF) % 2**32


def test_a_tile_that_does_not_fit_is_reported_by_the_emulator_and_zero_on_the_device_rule():
    kernel, make, _, _, grid = TK.FORMS["f16_f32_16x16x16"]
    args = make(np.random.default_rng(1))
    args[5] = 48  # k past the end of a and b: the third k-step's tiles do not fit
    with pytest.raises(IndexError):
        emulate(kernel, *args, grid=grid)
    args = make(np.random.default_rng(1))
    args[5] = 48
    emulate(kernel, *args, grid=grid, oob="device")  # misfit tiles read as zeros


def test_misaligned_offsets_do_not_fit():
    # f16 rows of 16 elements: offset and stride must be multiples of 8 elements (16 bytes)
    assert T.tile_alignment("f16", 16, 16) == 8
    assert T.tile_alignment("i8", 32, 8) == 8
    assert T.tile_alignment("f32", 16, 8) == 4
    assert not T.tile_fits(1024, 4, 32, 16, 16, False, 8)
    assert T.tile_fits(1024, 8, 32, 16, 16, False, 8)
    assert not T.tile_fits(15 * 32 + 15, 0, 32, 16, 16, False, 8)  # last row one short
    assert T.tile_fits(15 * 32 + 16, 0, 32, 16, 16, False, 8)
    assert not T.tile_fits(15 * 32 + 15, 0, 32, 16, 16, True, 8)  # column-major: same sizes
    assert not T.tile_fits(1024, -8, 32, 16, 16, False, 8)


def test_a_tile_kernel_runs_as_plain_python_on_the_host():
    """Called as Python (no launch), the tile functions compute the whole tile."""
    a = (np.arange(256).reshape(16, 16) % 5).astype(np.float16)
    b = np.eye(16, dtype=np.float16) * 2
    acc = T.tile_fill(f32, 16, 16, 1.0)
    ta = T.tile_load(a.ravel(), 0, 16, 16, 16)
    tb = T.tile_load(b.ravel(), 0, 16, 16, 16, use="b")
    acc = T.tile_mma(ta, tb, acc)
    out = np.zeros(256, np.float32)
    T.tile_store(out, 0, 16, acc * 0.5)
    np.testing.assert_array_equal(out.reshape(16, 16), (2 * a.astype(np.float32) + 1) * 0.5)


@pytest.mark.parametrize("off,s", TK.EDGE_CASES)
def test_tiles_that_do_not_fit_read_zero_and_write_nothing_in_the_emulator(off, s):
    # the reference the H200 test (tests/gpu/test_tiles_device.py) compares the device with
    x, out, spill = TK.edge_inputs()
    emulate(TK.tile_edges, x, out, spill, off, s, grid=TK.WG, oob="device")
    xs = np.array(x, np.float32)

    def tile(offset, stride):
        if not T.tile_fits(len(xs), offset, stride, 16, 16, False, 4):
            return np.zeros((16, 16), np.float32)
        return np.stack([xs[offset + r * stride : offset + r * stride + 16] for r in range(16)])

    got = np.array(out, np.float32)
    np.testing.assert_array_equal(got[0:256].reshape(16, 16), tile(off, 16))
    np.testing.assert_array_equal(got[256:512].reshape(16, 16), tile(off, s))
    np.testing.assert_array_equal(got[512:768].reshape(16, 16), tile(off, 16))
    placed = np.zeros(TK.EDGE_N, np.float32)
    if T.tile_fits(TK.EDGE_N, off, 16, 16, 16, False, 4):
        for r in range(16):
            placed[off + r * 16 : off + r * 16 + 16] = xs[off + r * 16 : off + r * 16 + 16]
    np.testing.assert_array_equal(got[768:], placed)
    np.testing.assert_array_equal(np.array(spill, np.float32), placed)
