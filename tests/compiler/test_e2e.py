"""Source -> frontend -> our codegen -> spirv-val, and a few kernels run through `gpu()` against
the same function called as plain Python."""

from __future__ import annotations

import math

import pytest

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target
from cthreads.gpu import BlockDim, BlockIdx, GlobalIdx, Gpu, ThreadIdx


@Gpu
def e2e_mix(a: list[int], out: list[int], f: list[float]) -> None:
    i: int = GlobalIdx.x
    s: int = 0
    for k in range(a[i], -3, -2):
        s += k**2 - k // 3 + k % 5
    out[i] = s >> 1
    f[i] = math.sqrt(abs(float(s))) + min(f[i], 2.0) * 0.5


@Gpu
def e2e_flags(x: list[float], flags: list[bool], lo: float) -> None:
    i: int = GlobalIdx.x
    if i >= len(x):
        return
    v: float = x[i]
    flags[i] = (v > lo and not math.isnan(v)) or v == -1.0


@Gpu
def e2e_ids(out: list[int]) -> None:
    i: int = GlobalIdx.x
    out[i] = BlockIdx.x * BlockDim.x + ThreadIdx.x - i


KERNELS = [e2e_mix, e2e_flags, e2e_ids]


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_source_compiles_and_validates(k):
    ck = compile_kernel(k.lower(Target()), Target(), validate=True)
    assert ck.ir_text.startswith(f"kernel {k.name}")


def _device_or_skip():
    try:
        import cthreads.gpu as g

        if not g.available():
            pytest.skip("no Vulkan device")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no Vulkan device: {exc}")


def test_run_matches_plain_python():
    _device_or_skip()
    from cthreads.gpu import gpu

    a = [5, 2, -7, 0, 11]
    out, f = [0] * 5, [1.0, 4.0, 9.0, -1.0, 0.25]
    gpu(e2e_mix, a, out, f).join()
    for i, ai in enumerate(a):
        s = 0
        for k in range(ai, -3, -2):
            s += k**2 - k // 3 + k % 5
        assert out[i] == s >> 1
    x = [0.5, float("nan"), -1.0, 3.0, -5.0]
    flags = [False] * 5
    gpu(e2e_flags, x, flags, 0.0).join()
    assert flags == [True, False, True, True, False]
    ids = [7] * 200
    gpu(e2e_ids, ids).join()
    assert ids == [0] * 200
