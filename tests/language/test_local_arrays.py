"""Local (per-invocation) arrays, `acc = local(float, 64)`: IR and SPIR-V (Function-storage
arrays, spirv-val, the Unroll hint), results on the device and in the emulator against numpy,
the out-of-range rule, and rejected forms (golden messages)."""

from __future__ import annotations

import local_kernels as K
import numpy as np
import pytest
from devicehelp import device_target
from langhelp import GOLDEN, check_golden, relative

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target
from cthreads.errors import GpuCompileError
from cthreads.gpu import Gpu, available, gpu, local
from cthreads.gpu.kernel import GpuKernel
from cthreads.testing.emulate import emulate

device = pytest.mark.skipif(not available(), reason="no Vulkan device")
spirv = pytest.mark.skipif(not tools.available("spirv-val"), reason="spirv-tools not installed")


@pytest.mark.parametrize("fn", K.BAD, ids=lambda fn: fn.__name__)
def test_rejected_with_golden_message(fn):
    with pytest.raises(GpuCompileError) as info:
        GpuKernel(fn).lower(Target())
    err = info.value
    assert err.allowed and err.filename == fn.__code__.co_filename and err.line
    check_golden(GOLDEN / "local_errors" / f"{fn.__name__}.txt", relative(str(err)) + "\n")


def test_every_bad_kernel_has_a_golden():
    files = {p.stem for p in (GOLDEN / "local_errors").glob("*.txt")}
    assert files <= {fn.__name__ for fn in K.BAD}, "stale goldens"


def test_ir_golden():
    check_golden(GOLDEN / "ir" / "row_tile.ir", K.row_tile.ir_text())


@spirv
@pytest.mark.parametrize("k", K.GOOD, ids=lambda k: k.name)
def test_spirv_val(k):
    compile_kernel(k.lower(Target()), Target(), validate=True)


def _loop_controls(k) -> list[str]:
    dis = tools.disassemble(compile_kernel(k.lower(Target()), Target()).spirv)
    return [line.split()[-1] for line in dis.splitlines() if "OpLoopMerge" in line]


@pytest.mark.skipif(not tools.available("spirv-dis"), reason="spirv-tools not installed")
def test_function_storage_and_unroll_only_where_a_local_array_is_reached():
    dis = tools.disassemble(compile_kernel(K.row_tile.lower(Target()), Target()).spirv)
    assert "OpVariable %_ptr_Function__arr_float_uint_8 Function" in dis
    assert "OpConstantNull %_arr_float_uint_8" in dis
    assert "Workgroup %" not in dis and " Workgroup\n" not in dis  # not workgroup memory
    # the body's three range(R) loops unroll; main's grid-stride loops keep the driver's choice
    assert _loop_controls(K.row_tile) == ["Unroll"] * 3 + ["None"] * 3

    @Gpu
    def loops(n: int, y: list[float]) -> None:
        a = local(float, 4)
        for j in range(n):  # trip count unknown: no hint
            a[j % 4] += 1.0
        for j in range(100):  # over UNROLL_MAX: no hint
            a[j % 4] += 1.0
        for j in range(4):  # no local array: no hint
            y[j] += 1.0
        for j in range(0, 8, 2):  # constant, small, reaches `a` (nested loop too)
            for q in range(2):
                y[j + q] = a[q]

    assert _loop_controls(loops)[:5] == ["None", "None", "None", "Unroll", "Unroll"]


def test_local_arrays_do_not_observe_the_workgroup():
    ck = compile_kernel(K.row_tile.lower(), Target())
    assert not ck.observes_workgroup and ck.elements_per_invocation == 1  # never 4-wide
    assert [(a.name, str(a), a.private) for a in K.row_tile.lower().shared] == [
        ("acc", "f32[8]", True)
    ]


def _expected(name: str, n: int):
    x = np.random.default_rng(5).standard_normal(n * K.R).astype(np.float32)
    if name == "row_tile":
        want = np.cumsum(x.reshape(n, K.R), axis=1, dtype=np.float32)[:, ::-1] * 0.5 + K.R
        return (n, x, np.zeros_like(x)), 2, want.ravel()
    if name == "fresh_per_invocation":
        i = np.arange(n)
        return (n, np.zeros(n, np.int32)), 1, i % 3 + 1 + np.where(i % 3 == 2, 100, 0)
    if name == "dynamic_index":
        return (n, 9, np.zeros(n, np.float32)), 2, np.ones(n, np.float32)
    return (n, x[:n], np.zeros(n, np.float32)), 2, x[:n] * 3.0 + 1.0


@device
@pytest.mark.parametrize("k", K.GOOD, ids=lambda k: k.name)
@pytest.mark.parametrize("n", [1, 130, 1000])
def test_device_and_emulator_against_numpy(k, n):
    args, out, want = _expected(k.name, n)
    dev = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu(k, *dev).join()
    np.testing.assert_allclose(dev[out], want, rtol=1e-6, atol=1e-6)
    emu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    if k is K.dynamic_index:  # the emulator names the array unless told to follow the device
        with pytest.raises(IndexError, match=r"write to local array a\[9\] out of range"):
            emulate(k, *emu)
        emulate(k, *emu, oob="device")
    else:
        emulate(k, *emu)
    np.testing.assert_array_equal(emu[out], dev[out])


@device
def test_dynamic_index_in_range_reads_what_was_written():
    y = np.zeros(8, np.float32)
    gpu(K.dynamic_index, 8, 2, y).join()
    # a[2] = 5.0, then a[i % 4] = 1.0: where i % 4 == 2 the second write wins
    np.testing.assert_array_equal(y, [6, 6, 2, 6, 6, 6, 2, 6])


def test_on_the_host_a_local_array_is_a_zero_filled_list():
    assert local(float, 3) == [0.0, 0.0, 0.0] and local(bool, 1) == [False]
    with pytest.raises(ValueError, match="local"):
        local(float, 0)
    y = [0.0] * 16
    K.row_tile(2, [1.0] * 16, y)  # called directly: plain Python
    assert y[0] == 8 * 0.5 + 8


@device
def test_narrow_and_64_bit_element_types_on_the_device_and_in_the_emulator():
    t = device_target()
    if t is None or not (t.float16 and t.storage_8bit and t.float64 and t.int64):
        pytest.skip("the device lacks shaderFloat16, shaderInt8, shaderFloat64 or shaderInt64")
    y = np.zeros(10, np.float32)
    gpu(K.narrow_types, 10, y).join()
    i = np.arange(10)
    want = (i + 3) * 0.5 + (251 + i) % 256 + np.float32(i / 3) + i
    np.testing.assert_allclose(y, want, rtol=1e-6)
    emu = np.zeros(10, np.float32)
    emulate(K.narrow_types, 10, emu)
    np.testing.assert_array_equal(emu, y)


@device
def test_zero_filled_again_for_each_logical_invocation_of_a_grid_stride_loop():
    from cthreads.runtime import get_device

    groups = get_device().info.limits["max_compute_work_group_count"][0]
    n = groups * 64 + 1000  # more than one dispatch covers: physical threads run several
    if n > 8_000_000:
        pytest.skip("the device dispatches this many workgroups at once")
    y = np.zeros(n, np.int32)
    gpu(K.fresh_per_invocation, n, y).join()
    i = np.arange(n)
    np.testing.assert_array_equal(y, i % 3 + 1 + np.where(i % 3 == 2, 100, 0))
