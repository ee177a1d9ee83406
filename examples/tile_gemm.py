"""A small GEMM on the matrix units: c = a @ b with f16 inputs and float32 accumulation.

Each workgroup is one subgroup of 32 invocations and computes one 16 x 16 tile of `c`: it walks
K in steps of 16, loading a 16 x 16 tile of `a` and of `b` and multiply-adding them into an
accumulator tile (`tile_mma`, one OpCooperativeMatrixMulAddKHR: the tensor cores on NVIDIA).

On a device with matrix units (`cthreads.gpu.matrix_shapes()` lists 16x16x16 f16 -> f32) the
kernel runs there; elsewhere (lavapipe) it runs in the emulator, with the same arithmetic rule,
and is compiled for the shipped nvidia-h200 profile to show the SPIR-V it would run.

    python examples/tile_gemm.py            # 256 x 256 x 256 (64 x 64 x 64 in the emulator)
    python examples/tile_gemm.py --n 1024
"""

from __future__ import annotations

import argparse

import numpy as np

import cthreads.gpu as cg
from cthreads.gpu import BlockIdx, Gpu, f16, f32, tile_fill, tile_load, tile_mma, tile_store
from cthreads.testing import emulate

T = 16  # the tile edge: M = N = K = 16


@Gpu(workgroup_size=32)
def gemm(a: list[f16], b: list[f16], c: list[f32], m: int, n: int, k: int):
    tm = BlockIdx.x // (n // T)  # this workgroup's tile row and column of c
    tn = BlockIdx.x % (n // T)
    acc = tile_fill(f32, T, T, 0.0)
    for kk in range(0, k, T):
        ta = tile_load(a, tm * T * k + kk, k, T, T, use="a")  # rows of a: stride k
        tb = tile_load(b, kk * n + tn * T, n, T, T, use="b")  # rows of b: stride n
        acc = tile_mma(ta, tb, acc)
    tile_store(c, tm * T * n + tn * T, n, acc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help="M = N = K (a multiple of 16)")
    args = ap.parse_args()
    has_units = (16, 16, 16, "f16", "f16", "f32", "f32") in {tuple(s) for s in cg.matrix_shapes()}
    n = args.n or (256 if has_units else 64)
    if n % T:
        ap.error("--n must be a multiple of 16")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    groups = (n // T) ** 2
    if has_units:
        cg.gpu(gemm, a, b, c, n, n, n, grid=groups * 32).join()
        where = f"on {cg.device_name()}'s matrix units"
    else:
        emulate(gemm, a, b, c, n, n, n, grid=groups * 32)
        build = gemm.compile(chip="nvidia-h200")
        where = f"in the emulator (no matrix units here; {len(build.spirv)} bytes of SPIR-V for the H200)"
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(c - ref).max())
    # float32 sums of n products of f16 values: allow n float32 roundings of the largest sum
    bound = (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)).max()
    tol = n * float(np.finfo(np.float32).eps) * float(bound)
    print(f"{n} x {n} x {n} f16 GEMM {where}: max error {err:.3g} (tolerance {tol:.3g})")
    if err > tol:
        raise SystemExit("result does not match numpy")
    print("matches numpy")


if __name__ == "__main__":
    main()
