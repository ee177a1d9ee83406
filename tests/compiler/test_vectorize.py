"""The 4-wide element-wise form (vectorize.py, codegen_vec.py): which kernels take it, that both
forms pass spirv-val, and that on the device both give the same bits for every size, list length,
alignment and dispatch shape (the scalar form is the reference; test_device checks it)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import vec_kernels as vk
from spv_inspect import Spv

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.spirv.grammar import Decoration, Op
from cthreads.compiler.target import Target

DTYPES = {"int": np.int32, "uint": np.uint32, "float": np.float32}
needs_val = pytest.mark.skipif(not tools.available("spirv-val"), reason="spirv-tools not installed")


@pytest.mark.parametrize("kern", vk.VECTOR + vk.SCALAR, ids=lambda k: k.name)
def test_plan(kern):
    ck = compile_kernel(kern.lower(), Target(), validate=False)
    assert ck.elements_per_invocation == (4 if kern in vk.VECTOR else 1)
    assert ck.contract()["elements_per_invocation"] == ck.elements_per_invocation
    off = compile_kernel(kern.lower(), Target(), validate=False, vectorize=False)
    assert off.elements_per_invocation == 1


def test_env_switch_and_cache_key(monkeypatch):
    from cthreads.compiler import cache

    monkeypatch.delenv("CTHREADS_VECTORIZE", raising=False)
    k = vk.saxpy.lower()
    cpu = Target(vector_form=False)  # a CPU device's target (target_from_profile)
    assert compile_kernel(k, cpu, validate=False).elements_per_invocation == 1
    on_key = cache.cache_key("src", "tgt")
    monkeypatch.setenv("CTHREADS_NO_VECTORIZE", "1")
    assert compile_kernel(k, Target(), validate=False).elements_per_invocation == 1
    assert cache.cache_key("src", "tgt") != on_key  # the two forms never share a cache entry
    monkeypatch.delenv("CTHREADS_NO_VECTORIZE")
    ck = compile_kernel(k, Target(), validate=False)
    assert ck.elements_per_invocation == 4
    assert cache.decode(cache.encode(ck)).elements_per_invocation == 4
    monkeypatch.setenv("CTHREADS_VECTORIZE", "1")  # the vector form on CPU devices too
    assert compile_kernel(k, cpu, validate=False).elements_per_invocation == 4
    assert cache.cache_key("src", "tgt") != on_key
    monkeypatch.setenv("CTHREADS_NO_VECTORIZE", "1")  # the scalar form wins when both are set
    assert (
        compile_kernel(k, cpu.replace(vector_form=True), validate=False).elements_per_invocation
        == 1
    )


@needs_val
@pytest.mark.parametrize("kern", vk.VECTOR, ids=lambda k: k.name)
@pytest.mark.parametrize("vectorize", [False, True])
def test_both_forms_validate(kern, vectorize):
    compile_kernel(kern.lower(), Target(), validate=True, vectorize=vectorize)
    # and with the parameter block behind an address (tiny push-constant budget)
    ck = compile_kernel(
        kern.lower(), Target(max_push_constants_size=16), validate=True, vectorize=vectorize
    )
    assert ck.push.in_buffer


def test_vector_saxpy_structure():
    ck = compile_kernel(vk.saxpy.lower(), Target(), validate=False)
    s = Spv(ck.spirv)
    acc = list(s.psb_accesses())
    vec = [ops for _, ops in acc if ops[:2] == [2, 16]]
    assert len(vec) == 3  # x and y loaded as vec4 once, y stored as vec4 once
    # NonWritable on x's scalar and vec4 views, Restrict on all four
    assert len(s.blocks_with(Decoration.NonWritable)) == 2
    assert len(s.blocks_with(Decoration.Restrict)) == 4
    # 4 lanes of the vector body, 1 in the tail loop, 1 for a dispatch of one invocation per element
    assert s.count(Op.FunctionCall) == 6


def test_write_only_lists_are_not_loaded():
    s = Spv(compile_kernel(vk.uint_keep.lower(), Target(), validate=False).spirv)
    vec_loads = [o for op, o in s.psb_accesses() if op == Op.Load and o[:2] == [2, 16]]
    vec_stores = [o for op, o in s.psb_accesses() if op == Op.Store and o[:2] == [2, 16]]
    assert len(vec_loads) == 1 and len(vec_stores) == 1  # x read, y written, y never read


# ----------------------------------------------------------------------------- on the device


@pytest.fixture(scope="module")
def device():
    try:
        import cthreads.runtime as rt

        return rt.get_device()
    except Exception as exc:  # noqa: BLE001 - any failure means: no device here
        pytest.skip(f"no Vulkan device: {exc}")


def _dispatch(device, ck, args, *, wg=64, max_groups=65535, shift=0):
    """Run `ck` as launch does (problem size: `n` or the longest list; total rounded up to the
    logical width; groups divided by elements_per_invocation). `shift` elements of padding in
    front of every list make its address misaligned for vec4 when shift % 4 != 0."""
    lists, keep = {}, []
    for i, p in enumerate(ck.params):
        if p.is_list:
            arr = np.asarray(args[i], dtype=DTYPES[p.type.elem.kind])
            buf = device.buffer(max((arr.size + shift) * 4, 4))
            assert buf.address % 16 == 0  # the allocator's guarantee the vector form relies on
            buf.write(np.concatenate([np.zeros(shift, arr.dtype), arr]))
            lists[i] = (arr, buf)
            keep.append(buf)
    n_idx = [i for i, p in enumerate(ck.params) if p.name == "n" and not p.is_list]
    size = max(args[n_idx[0]], 0) if n_idx else max(len(a) for a, _ in lists.values())
    lwg = ck.workgroup_size[0]
    total = -(-size // lwg) * lwg
    vals = []
    for f in sorted(ck.push.fields, key=lambda f: f.offset):
        if f.role == "total":
            vals.append(total)
        elif f.role in ("total_y", "total_z"):
            vals.append(1)
        elif f.role in ("base_group", "grid_x"):
            vals.append(0 if f.role == "base_group" else total // lwg)
        elif f.role == "addr":
            vals.append(lists[f.param][1].address + 4 * shift)
        elif f.role == "len":
            vals.append(len(lists[f.param][0]))
        else:
            vals.append(args[f.param])
    block = struct.pack(ck.push.struct_format(), *vals)
    if ck.push.in_buffer:
        pb = device.buffer(len(block))
        pb.write(block)
        keep.append(pb)
        block = struct.pack("<Q", pb.address)
    pipe = device.pipeline(ck.spirv, ck.push.push_size, {0: wg, 1: 1, 2: 1})
    groups = max(1, min(-(-total // (wg * ck.elements_per_invocation)), max_groups))
    if total:
        device.wait(device.submit([("dispatch", pipe, block, (groups, 1, 1))], keep=(*keep, pipe)))
    out = {}
    for i, (arr, buf) in lists.items():
        raw = np.empty(arr.size + shift, arr.dtype)
        buf.read_into(raw)
        out[i] = raw[shift:].view(np.uint32)  # compare bits (NaN payloads, -0.0)
    return out


def _inputs(kern, rng, size):
    """Arguments for `kern` with lists of assorted lengths around `size` (some shorter)."""
    args = []
    for p in kern.lower().params:
        if p.is_list:
            length = int(max(1, size + rng.integers(-6, 7))) if rng.random() < 0.5 else size
            if p.type.elem.kind == "float":
                a = rng.normal(0, 3, length).astype(np.float32)
                a[rng.random(length) < 0.05] = np.nan
                a[rng.random(length) < 0.03] = -0.0
            else:
                a = rng.integers(-(2**31), 2**31 - 1, length, dtype=np.int64).astype(np.int32)
                a[rng.random(length) < 0.3] = rng.integers(-9, 9)
            args.append(a)
        elif p.name == "n":
            args.append(int(size - rng.integers(0, 5)))
        elif p.type.kind == "float":
            args.append(float(rng.normal()))
        else:
            args.append(int(rng.integers(-100, 100)))
    return args


SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 66, 127, 129, 255, 258, 511, 997, 1000]


@pytest.mark.parametrize("kern", vk.VECTOR, ids=lambda k: k.name)
def test_vector_equals_scalar_on_device(device, kern):
    ir_k = kern.lower()
    scalar = compile_kernel(ir_k, Target(), vectorize=False)
    vector = compile_kernel(ir_k, Target(), vectorize=True)
    assert vector.elements_per_invocation == 4
    rng = np.random.default_rng(abs(hash(kern.name)) % 2**32)
    for size in SIZES:
        args = _inputs(kern, rng, size)
        want = _dispatch(device, scalar, args)
        got = _dispatch(device, vector, args)
        for i in want:
            np.testing.assert_array_equal(
                got[i], want[i], err_msg=f"{kern.name} size={size} list {i}"
            )


@pytest.mark.parametrize(
    "kern", [vk.saxpy, vk.branches, vk.mixed, vk.stencil], ids=lambda k: k.name
)
def test_vector_equals_scalar_any_dispatch_shape_and_alignment(device, kern):
    """Few groups (each invocation loops over many blocks), other widths, and lists whose
    addresses are not 16-byte aligned (every block takes the scalar path)."""
    ir_k = kern.lower()
    scalar = compile_kernel(ir_k, Target(), vectorize=False)
    vector = compile_kernel(ir_k, Target(), vectorize=True)
    rng = np.random.default_rng(7)
    for size in (5, 130, 1000):
        args = _inputs(kern, rng, size)
        want = _dispatch(device, scalar, args)
        for wg, groups, shift in [(32, 1, 0), (256, 3, 0), (64, 65535, 1), (64, 2, 2), (64, 5, 4)]:
            got = _dispatch(device, vector, args, wg=wg, max_groups=groups, shift=shift)
            for i in want:
                np.testing.assert_array_equal(
                    got[i], want[i], err_msg=f"{kern.name} size={size} wg={wg} shift={shift}"
                )


def test_vector_saxpy_against_numpy(device):
    n = 1001
    x = np.linspace(-3, 3, n + 3, dtype=np.float32)
    y = np.arange(n + 3, dtype=np.float32)
    ck = compile_kernel(vk.saxpy.lower(), Target())
    out = _dispatch(device, ck, [n, 2.5, x, y])[3].view(np.float32)
    # drivers may contract a * x + y into one fma (both forms alike): not bitwise numpy
    np.testing.assert_allclose(out[:n], np.float32(2.5) * x[:n] + y[:n], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[n:], y[n:])  # i >= n untouched
