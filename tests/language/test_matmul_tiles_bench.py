"""bench/matmul_tiles.py's kernel (4 subgroups, 2 x 4 accumulators each) computes the right
product: run in the emulator at a small size, since only the H200 runs it at speed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from cthreads.testing import emulate

BENCH = Path(__file__).resolve().parents[2] / "bench" / "matmul_tiles.py"


def _bench():
    spec = importlib.util.spec_from_file_location("matmul_tiles", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_bench_kernel_multiplies_like_numpy_in_the_emulator():
    mod = _bench()
    m, n, k = 64, 128, 32
    rng = np.random.default_rng(3)
    a = (rng.integers(-4, 5, (m, k)) / 2).astype(np.float16)
    b = (rng.integers(-4, 5, (k, n)) / 2).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    emulate(mod.mm_tiles, a, b, c, m, n, k, grid=mod.grid(m, n), subgroup_size=32)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_the_bench_kernel_compiles_for_the_h200():
    assert len(_bench().mm_tiles.compile(chip="nvidia-h200").spirv) > 0
