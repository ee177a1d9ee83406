"""bench/matmul_tiles.py's kernels (f16, bf16, int8; every variant) compile for the H200 and pass
spirv-val 2025.5, and compute the right product in the emulator at small sizes (with subgroups
of 32, as on the H200), since only the H200 runs them at speed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from cthreads.compiler.spirv import tools
from cthreads.testing import emulate

BENCH = Path(__file__).resolve().parents[2] / "bench" / "matmul_tiles.py"


def _bench():
    spec = importlib.util.spec_from_file_location("matmul_tiles", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MT = _bench()


@pytest.mark.parametrize("dtype", sorted(MT.TYPES))
@pytest.mark.parametrize("variant", sorted(MT.VARIANTS))
def test_every_bench_kernel_compiles_for_the_h200_and_validates(dtype, variant, tmp_path):
    k = MT.kernel(dtype, variant, tmp_path).kernel
    spirv = k.compile(chip="nvidia-h200").spirv
    if tools.newer_tool("spirv-val") is None:
        pytest.skip("no spirv-val that knows SPV_KHR_cooperative_matrix (tools_new installs one)")
    tools.validate(spirv)


@pytest.mark.parametrize(
    "dtype, variant, blocks",
    [
        ("f16", "smem2", 1),
        ("bf16", "smem", 1),
        ("bf16", "direct", 1),
        ("i8", "smem2", 1),
        ("f16", "smem2_elems", 1),
        ("f16", "regs", 2),  # 2 x 2 blocks: the grouped launch order maps each once
        ("i8", "regs", 1),
        ("bf16", "regs_g1", 2),
        ("f16", "regs_b1", 1),
        ("bf16", "regs_k64", 1),
        ("f16", "big", 2),
        ("bf16", "big_all", 1),
        ("i8", "big", 1),
        ("f16", "big_k64", 1),
        ("bf16", "wide", 1),
        ("f16", "wide_k16", 1),
        ("i8", "wide", 1),
        ("f16", "tall", 1),
        ("f16", "wide16", 1),  # copy16 staging
        ("bf16", "wide16_k16", 1),
        ("i8", "wide16", 1),
    ],
)
def test_bench_kernels_multiply_like_numpy_in_the_emulator(dtype, variant, blocks, tmp_path):
    k, bm, bn, wg, bk = MT.kernel(dtype, variant, tmp_path)
    m, n, kk = blocks * bm, blocks * bn, 3 * bk  # three K blocks: the buffers swap
    rng = np.random.default_rng(3)
    if dtype == "i8":
        a = rng.integers(-128, 128, (m, kk), dtype=np.int8)
        b = rng.integers(-128, 128, (kk, n), dtype=np.int8)
        va, vb = a, b
    else:  # small integers and halves: every sum exact in float32
        va = (rng.integers(-4, 5, (m, kk)) / 2).astype(np.float32)
        vb = (rng.integers(-4, 5, (kk, n)) / 2).astype(np.float32)
        conv = MT.to_bf16 if dtype == "bf16" else (lambda x: x.astype(np.float16))
        a, b = conv(va), conv(vb)
    c = np.zeros((m, n), np.int32 if dtype == "i8" else np.float32)
    a, b = MT.as_words(a, variant), MT.as_words(b, variant)
    grid = (m // bm) * (n // bn) * wg
    emulate(k, a, b, c, m, n, kk, grid=grid, subgroup_size=32)
    want = va.astype(np.int64) @ vb.astype(np.int64) if dtype == "i8" else va @ vb
    np.testing.assert_array_equal(c, want.astype(c.dtype))
