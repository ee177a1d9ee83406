"""Float32 `/` is rounded as IEEE, Python and numpy round it, on every device (codegen_expr
`float32_div`): Vulkan lets OpFDiv be 2.5 ULP off, and NVIDIA's driver gave
31.21289 / 31.21289 == 0.99999994, so `int(floor(x / x))` was 0."""

from __future__ import annotations

import math

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, gpu


@Gpu
def divide(n: int, a: list[float], b: list[float], q: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        q[i] = a[i] / b[i]


@Gpu
def cells(n: int, size: float, pos: list[float], cell: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        cell[i] = int(math.floor(pos[i] / size))


def _run(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    q = np.zeros_like(a)
    gpu(divide, a.size, a, b, q).join()
    return q


def test_quotients_are_correctly_rounded():
    rng = np.random.default_rng(20261201)
    a = rng.uniform(-1e3, 1e3, 4096).astype(np.float32)
    b = rng.uniform(-1e3, 1e3, 4096).astype(np.float32)
    b[b == 0] = 1.0
    # exponents far apart, and operands whose quotient is a whole number or one
    a[:512] = (a[:512] * np.float32(1e30)).astype(np.float32)
    b[512:1024] = a[512:1024]
    b[1024:1536] = (a[1024:1536] / np.float32(7)).astype(np.float32)
    q = _run(a, b)
    want = a / b  # numpy: IEEE float32 division
    bad = np.flatnonzero(q.view(np.int32) != want.view(np.int32))
    assert bad.size == 0, [(float(a[i]), float(b[i]), float(q[i]), float(want[i])) for i in bad[:5]]


def test_x_over_x_is_one_and_cells_floor_as_python():
    pos = np.array([31.212890625, 0.1, 3.0e-5, 7.0, 62.42578125, 12345.678], np.float32)
    assert (_run(pos, pos) == 1.0).all()
    assert (_run([1e30, -3e-30], [1e30, -3e-30]) == 1.0).all()
    # divisors beyond 2^126, whose reciprocal is subnormal (NVIDIA gave 0 for all of these)
    huge = np.array([3e38, -3e38, 1.0e38, 2.0**127], np.float32)
    assert (_run(huge, huge) == 1.0).all()
    q = _run([4.0, 1e38, -5.0e37], [-3e38, 3e38, 1.0e38])
    assert (
        q.tolist()
        == (
            np.array([4.0, 1e38, -5e37], np.float32) / np.array([-3e38, 3e38, 1e38], np.float32)
        ).tolist()
    )
    assert math.floor(float(q[0])) == -1
    cell = [9] * pos.size
    gpu(cells, pos.size, 31.212890625, pos, cell).join()
    assert cell == [math.floor(float(p / np.float32(31.212890625))) for p in pos]


def test_special_quotients_keep_their_meaning():
    inf, nan = math.inf, math.nan
    a = [1.0, -1.0, 0.0, -0.0, inf, 1.0, 1.0, nan, 3.0e38, 1e-30]
    b = [0.0, 0.0, 5.0, 5.0, 2.0, inf, -inf, 1.0, 1e-10, 3e30]
    q = _run(a, b)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        want = np.asarray(a, np.float32) / np.asarray(b, np.float32)
    same = (q.view(np.int32) == want.view(np.int32)) | (np.isnan(q) & np.isnan(want))
    assert same.all(), list(zip(a, b, q.tolist(), want.tolist()))


def test_the_correction_step_is_emitted_only_where_fma_is_fused():
    from cthreads.compiler.compile import compile_kernel
    from cthreads.compiler.spirv import tools
    from cthreads.compiler.target import Target

    texts = {}
    for fused in (True, False):
        target = Target(fused_fma=fused)
        texts[fused] = tools.disassemble(compile_kernel(divide.lower(target), target).spirv)
        assert ("Fma" in texts[fused]) is fused
    # each division (scalar body and 4-wide body) gets a second one, for the residual
    assert texts[True].count("OpFDiv") == 2 * texts[False].count("OpFDiv") > 0
