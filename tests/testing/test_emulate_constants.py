"""The emulator reads `@Gpu(constants=...)` and autotune choices as the compiler does (issue 18/16):
given constants before module globals, one translation per function and constants."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuInvalidArgument, autotune, available, gpu
from cthreads.testing import emulate

needs_device = pytest.mark.skipif(not available(), reason="no Vulkan device")

TILE = 4  # the module's value: a kernel given constants={"TILE": 8} must not read it


@Gpu(constants={"TILE": 8})
def tiled(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = TILE * i


def scale_body(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = K * i + 1  # noqa: F821 - given by constants=


two = Gpu(constants={"K": 2})(scale_body)
three = Gpu(constants={"K": 3})(scale_body)


@autotune(STEP=[1, 5], workgroup_size=[32, 64], key=["n"])
@Gpu
def stepped(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = STEP + i  # noqa: F821 - an autotune choice


def _emulated(kernel, n: int, **kw) -> list[int]:
    out = [0] * n
    emulate(kernel, n, out, **kw)
    return out


def test_given_constant_wins_over_the_module_global():
    assert _emulated(tiled, 10) == [8 * i for i in range(10)]


def test_variants_of_one_function_emulate_apart():
    # one function, two constants: the translation cache must not hand one the other's code
    assert _emulated(two, 6) == [2 * i + 1 for i in range(6)]
    assert _emulated(three, 6) == [3 * i + 1 for i in range(6)]
    assert _emulated(two, 6) == [2 * i + 1 for i in range(6)]


def test_plain_function_still_reads_module_globals():
    def body(n: int, out: list[int]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = TILE

    assert _emulated(body, 3) == [4, 4, 4]


def test_autotune_variant_emulates_with_its_pins():
    assert _emulated(stepped, 4, pins={"STEP": 5}) == [5, 6, 7, 8]
    assert _emulated(stepped, 4, pins={"STEP": 1}) == [1, 2, 3, 4]
    assert _emulated(stepped, 4) == [1, 2, 3, 4]  # unpinned: the first choice


def test_pins_on_a_plain_kernel_name_the_argument():
    with pytest.raises(GpuInvalidArgument) as exc:
        emulate(tiled, 3, [0, 0, 0], pins={"TILE": 2})
    assert exc.value.param == "pins"


@needs_device
@pytest.mark.parametrize("kernel", [tiled, two, three], ids=["tiled", "two", "three"])
def test_emulation_equals_the_device(kernel):
    n = 70
    out = np.zeros(n, dtype=np.int32)
    gpu(kernel, n, out).join()
    assert out.tolist() == _emulated(kernel, n)


@needs_device
@pytest.mark.parametrize("step", [1, 5])
def test_autotune_variant_equals_the_device(step):
    n = 70
    out = np.zeros(n, dtype=np.int32)
    gpu(stepped, n, out, pins={"STEP": step}).join()
    assert out.tolist() == _emulated(stepped, n, pins={"STEP": step})
