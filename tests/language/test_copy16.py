"""`copy16(dst_shared, dst_offset, src_list, src_offset)`: 16 bytes of a list into a shared
array. SPIR-V passes spirv-val; on the device and in the emulator each element size copies like
the numpy slice, in range, with reads past the list (0) and writes past the array (dropped);
the host function; rejected forms name the argument at fault."""

from __future__ import annotations

import array

import copy_kernels as K
import numpy as np
import pytest
from devicehelp import device_target

from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target
from cthreads.errors import GpuCompileError
from cthreads.gpu import available, copy16, gpu
from cthreads.testing.emulate import emulate

device = pytest.mark.skipif(not available(), reason="no Vulkan device")
spirv = pytest.mark.skipif(not tools.available("spirv-val"), reason="spirv-tools not installed")
_DTYPES = {16: np.float16, 32: np.float32, 64: np.uint64}


def _want(bits: int, per: int, src: np.ndarray, so: int, do: int) -> np.ndarray:
    """What each kernel leaves in `out`: shared starts at zero; invocation t copies `per`
    elements src[so + per t + j] (0 past the end) to s[do + per t + j] (dropped past S)."""
    s = np.zeros(K.S, src.dtype)
    for t in range(8):
        for j in range(per):
            i, o = so + per * t + j, do + per * t + j
            if 0 <= o < K.S:
                s[o] = src[i] if 0 <= i < len(src) else 0
    return s


def _cases():
    # (source offset, destination offset): aligned, misaligned, reading past the list's end,
    # writing past the shared array's end, reading and writing before the start
    return [(0, 0), (3, 1), (40, 0), (0, 60), (-8, 0), (0, -2)]


def _inputs(k, so, do):
    bits, per = K.COPIES[k]
    src = (np.arange(48) * 3 + 1).astype(_DTYPES[bits])
    out = np.zeros(K.S, src.dtype)
    return bits, per, src, out


@spirv
@pytest.mark.parametrize("k", K.COPIES, ids=lambda k: k.name)
def test_spirv_val_for_the_h200(k):
    tools.validate(k.compile(chip="nvidia-h200").spirv)


@pytest.mark.parametrize("so, do", _cases())
@pytest.mark.parametrize("k", K.COPIES, ids=lambda k: k.name)
def test_emulator_copies_like_numpy(k, so, do):
    bits, per, src, out = _inputs(k, so, do)
    emulate(k, src, out, so, do, oob="device")
    np.testing.assert_array_equal(out, _want(bits, per, src, so, do))


def test_emulator_names_a_read_past_the_list_unless_told_to_follow_the_device():
    _, _, src, out = _inputs(K.copy_f32, 40, 0)
    with pytest.raises(IndexError, match=r"src\[48\]"):
        emulate(K.copy_f32, src, out, 40, 0)


@device
@pytest.mark.parametrize("so, do", _cases())
@pytest.mark.parametrize("k", K.COPIES, ids=lambda k: k.name)
def test_device_copies_like_numpy_and_the_emulator(k, so, do):
    t = device_target()
    bits = K.COPIES[k][0]
    if (bits == 16 and not t.float16) or (bits == 64 and not t.int64):
        pytest.skip("the device lacks shaderFloat16 or shaderInt64")
    bits, per, src, out = _inputs(k, so, do)
    gpu(k, src, out, so, do).join()
    np.testing.assert_array_equal(out, _want(bits, per, src, so, do))


def test_on_the_host_it_is_the_element_loop_sized_by_itemsize():
    src, dst = np.arange(10, dtype=np.float16), np.zeros(12, np.float16)
    copy16(dst, 6, src, 5)  # 8 halves: src[5..9], then three reads past the end give 0
    np.testing.assert_array_equal(dst, [0] * 6 + [5, 6, 7, 8, 9, 0])  # dst[12..13] dropped
    words = array.array("Q", [7, 8, 9])
    into = [0, 0, 0]
    copy16(into, 1, words, 1)
    assert into == [0, 8, 9]
    with pytest.raises(TypeError, match="numpy array or array.array"):
        copy16([0] * 8, 0, [1.0] * 8, 0)


@pytest.mark.parametrize("fn", K.BAD, ids=lambda fn: fn.name)
def test_rejected_naming_the_argument(fn):
    at, words = K.BAD[fn]
    with pytest.raises(GpuCompileError) as info:
        fn.lower(Target())
    err = info.value
    assert words in str(err) and err.allowed
    assert err.line[err.col - 1 :].startswith(at), (err.line, err.col)


@pytest.mark.skipif(not tools.available("spirv-dis"), reason="spirv-tools not installed")
@pytest.mark.parametrize(
    "k, vector", [(K.copy_f16, "v4uint"), (K.copy_f32, "v4float"), (K.copy_u64, "v2ulong")]
)
def test_one_aligned_16_byte_load_behind_the_guard(k, vector):
    dis = tools.disassemble(k.compile(chip="nvidia-h200").spirv)
    loads = [line for line in dis.splitlines() if "Aligned 16" in line]
    assert len(loads) == 1 and f"OpLoad %{vector} " in loads[0], loads
    assert f"OpBitcast %_ptr_PhysicalStorageBuffer_{vector} " in dis
    assert "Vector16" not in dis  # 2-byte elements: words bitcast to pairs, no 8-wide vectors
    if k is K.copy_f16:
        assert dis.count("OpBitcast %v2half ") == 4


def test_ir_shows_the_statement_over_its_element_copies():
    text = K.copy_f32.ir_text()
    head = next(line for line in text.splitlines() if "copy16" in line)
    assert head.strip().startswith("copy16 @s[") and "<- src[" in head
    body = text.split(head, 1)[1].splitlines()[1:5]
    assert [line.strip().startswith("@s[") and "= src[" in line for line in body] == [True] * 4


@device
def test_device_matches_the_element_loop_at_random_offsets():
    rng = np.random.default_rng(18)
    src = (np.arange(48) * 3 + 1).astype(np.float32)
    for so, do in rng.integers(-12, 64, (12, 2)):
        out = np.zeros(K.S, np.float32)
        gpu(K.copy_f32, src, out, int(so), int(do)).join()
        np.testing.assert_array_equal(out, _want(32, 4, src, so, do), err_msg=f"{so}, {do}")


@device
def test_into_a_float_shared_array_that_atomics_keep_as_int_bits():
    src = np.arange(16, dtype=np.float32) + 0.5
    want = src.copy()
    want[:4] += 1
    out, emu = np.zeros(16, np.float32), np.zeros(16, np.float32)
    gpu(K.copy_then_atomics, src, out).join()
    emulate(K.copy_then_atomics, src, emu)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(emu, want)
