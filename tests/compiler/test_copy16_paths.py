"""copy16's two device paths apart (tests/language/test_copy16.py checks the statement as a
whole): with the element copies removed from the IR, only the one 16-byte load can fill the
shared array, so an aligned in-range copy that arrives proves that path runs, and a list whose
address is 4 bytes past a 16-byte boundary, which must not take it, proves the address check.
Dispatched through `cthreads.runtime` directly, so the test picks the list's address."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from cthreads.compiler import ir
from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "language"))
import copy_kernels as K  # noqa: E402


@pytest.fixture(scope="module")
def device():
    try:
        import cthreads.runtime as rt

        return rt.get_device()
    except Exception as exc:  # noqa: BLE001 - any failure means: no device here
        pytest.skip(f"no Vulkan device: {exc}")


def _kernel(fast_only: bool) -> ir.Kernel:
    """copy_f32's IR; `fast_only`: its element copies run only when `so` is 12345, never here
    (kept, not dropped, so the list still counts as read and codegen reaches it)."""
    k = K.copy_f32.lower(Target())
    if not fast_only:
        return k
    never = ir.Compare(ir.BOOL, ir.CmpOp.EQ, ir.ParamRef(ir.I32, 2), ir.Const(ir.I32, 12345))

    def cut(s: ir.Stmt) -> ir.Stmt:
        return s.replace(body=(ir.If(never, s.body),))

    body = tuple(cut(s) if isinstance(s, ir.Copy16) else s for s in k.body)
    assert body != k.body  # the copy is a top-level statement of this kernel
    return k.replace(body=body)


def _run(device, kernel: ir.Kernel, src: np.ndarray, skew: int) -> np.ndarray:
    """One workgroup of copy_f32 with so = do = 0, `src` starting `skew` bytes into its buffer."""
    ck = compile_kernel(kernel, Target(), validate=True)
    sbuf, obuf = device.buffer(src.nbytes + 16), device.buffer(K.S * 4)
    sbuf.write(np.concatenate([np.zeros(skew // 4, np.float32), src]))
    obuf.write(np.zeros(K.S, np.float32))
    lists = {0: (sbuf.address + skew, len(src)), 1: (obuf.address, K.S)}
    fixed = {"total": 8, "base_group": 0, "grid_x": 1, "total_y": 1, "total_z": 1}
    vals = []
    for f in sorted(ck.push.fields, key=lambda f: f.offset):
        if f.role in fixed:
            vals.append(fixed[f.role])
        elif f.role in ("addr", "len"):
            vals.append(lists[f.param][f.role == "len"])
        else:
            vals.append(0)  # so, do
    block = struct.pack(ck.push.struct_format(), *vals)
    keep = [sbuf, obuf]
    if ck.push.in_buffer:
        pb = device.buffer(len(block))
        pb.write(block)
        keep.append(pb)
        block = struct.pack("<Q", pb.address)
    pipe = device.pipeline(ck.spirv, ck.push.push_size, None)
    device.wait(device.submit([("dispatch", pipe, block, (1, 1, 1))], keep=(*keep, pipe)))
    out = np.empty(K.S, np.float32)
    obuf.read_into(out)
    return out


def _copied(src: np.ndarray) -> np.ndarray:
    return np.concatenate([src[:32], np.zeros(K.S - 32, np.float32)])  # 8 x 4 floats


def test_aligned_in_range_copies_take_the_one_load(device):
    src = np.arange(40, dtype=np.float32) + 1
    np.testing.assert_array_equal(_run(device, _kernel(fast_only=True), src, 0), _copied(src))


def test_a_source_4_bytes_off_16_takes_the_element_copies(device):
    src = np.arange(40, dtype=np.float32) + 1
    fast_only = _run(device, _kernel(fast_only=True), src, 4)
    np.testing.assert_array_equal(fast_only, np.zeros(K.S, np.float32))  # the load never ran
    np.testing.assert_array_equal(_run(device, _kernel(fast_only=False), src, 4), _copied(src))
