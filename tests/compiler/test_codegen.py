"""Codegen over the hand-built kernel zoo: spirv-val passes, output is deterministic and has the
structure launch and drivers rely on (layout, decorations, capabilities, dispatch form)."""

from __future__ import annotations

import struct

import pytest
from ir_kernels import BLOCKS, BOOLOPS, I32, LB, MANY, SAXPY, ZOO, P, const, gid, kernel, store
from spv_inspect import Spv

from cthreads.compiler import ir
from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.spirv.grammar import BuiltIn, Capability, Decoration, ExecutionMode, Op
from cthreads.compiler.target import Target
from cthreads.errors import GpuCompileError, GpuInternalCompilerError

needs_val = pytest.mark.skipif(not tools.available("spirv-val"), reason="spirv-tools not installed")


@needs_val
@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_validates(name):
    ck = compile_kernel(ZOO[name], Target(), validate=True)  # spirv-val failure raises
    assert ck.spirv[:4] == struct.pack("<I", 0x07230203)
    assert len(ck.spirv) % 4 == 0


@pytest.mark.parametrize("name", sorted(ZOO))
def test_deterministic(name):
    a = compile_kernel(ZOO[name], Target(), validate=False)
    b = compile_kernel(ZOO[name], Target(), validate=False)
    assert a.spirv == b.spirv and a.push == b.push


def test_push_layout_saxpy():
    ck = compile_kernel(SAXPY, Target(), validate=False, cache_key="k1")
    assert ck.cache_key == "k1"
    f = {(x.role, x.param): (x.offset, x.fmt) for x in ck.push.fields}
    assert (
        f[("total", None)] == (0, "I")
        and f[("total_y", None)] == (4, "I")  # a free-shape kernel: grid-stride extents
        and f[("total_z", None)] == (8, "I")
    )
    assert f[("addr", 2)] == (16, "Q") and f[("addr", 3)] == (24, "Q")
    assert f[("len", 2)] == (32, "I") and f[("len", 3)] == (36, "I")
    assert f[("scalar", 0)] == (40, "i") and f[("scalar", 1)] == (44, "f")
    assert ck.push.size == 48 and not ck.push.in_buffer and ck.push.push_size == 48
    assert struct.calcsize(ck.push.struct_format()) == 48


def test_in_buffer_fallback():
    ck = compile_kernel(MANY, Target(), validate=False)
    assert ck.push.in_buffer and ck.push.size > 128 and ck.push.push_size == 8
    # a device with a big push-constant budget keeps everything in push constants
    big = compile_kernel(MANY, Target(max_push_constants_size=256), validate=False)
    assert not big.push.in_buffer and big.push.push_size == big.push.size


def test_decorations_saxpy():
    s = Spv(compile_kernel(SAXPY, Target(), validate=False, vectorize=False).spirv)
    assert s.caps == {Capability.Shader, Capability.PhysicalStorageBufferAddresses}
    restrict = s.blocks_with(Decoration.Restrict)
    nonwritable = s.blocks_with(Decoration.NonWritable)
    assert len(restrict) == 2 and len(nonwritable) == 1  # x read-only, y written
    # every physical-pointer access carries Aligned 4
    acc = list(s.psb_accesses())
    assert len(acc) == 3
    assert all(ops[:2] == [2, 4] for _, ops in acc)


def test_bool_lists_use_8bit_storage():
    s = Spv(compile_kernel(BOOLOPS, Target(), validate=False).spirv)
    assert {Capability.StorageBuffer8BitAccess, Capability.Int8} <= s.caps
    assert all(ops[:2] == [2, 1] for _, ops in s.psb_accesses())
    # an untouched list[bool] costs no capability
    k = kernel(
        "untouched",
        [P("flags", LB), P("out", ir.ListType(I32), w=True)],
        [store(1, gid(), const(1))],
    )
    s2 = Spv(compile_kernel(k, Target(), validate=True).spirv)
    assert Capability.Int8 not in s2.caps
    with pytest.raises(GpuCompileError, match="storageBuffer8BitAccess"):
        compile_kernel(BOOLOPS, Target(storage_8bit=False), validate=False)


def test_grid_stride_form_for_non_observing_kernel():
    ck = compile_kernel(SAXPY, Target(), validate=False, vectorize=False)
    assert not ck.observes_workgroup and ck.elements_per_invocation == 1
    s = Spv(ck.spirv)
    spec_ids = sorted(
        d[1] for decs in s.decorations.values() for d in decs if d[0] == Decoration.SpecId
    )
    assert spec_ids == [0, 1, 2]
    assert any((Decoration.BuiltIn, BuiltIn.WorkgroupSize) in d for d in s.decorations.values())
    assert s.count(Op.LoopMerge) == 3  # the grid-stride loops over z, y, x; saxpy has none
    assert s.count(Op.FunctionCall) == 1


def test_observing_kernel_fixed_local_size():
    ck = compile_kernel(BLOCKS, Target(), validate=False)
    assert ck.observes_workgroup and ck.workgroup_size == (32, 1, 1)
    s = Spv(ck.spirv)
    assert [m[1:] for m in s.exec_modes] == [[ExecutionMode.LocalSize, 32, 1, 1]]
    assert not any(d[0] == Decoration.SpecId for decs in s.decorations.values() for d in decs)
    assert s.count(Op.ControlBarrier) == 1
    # declared non-observing but uses ThreadIdx: codegen upgrades rather than miscompiling
    sneaky = BLOCKS.replace(observes_workgroup=False)
    assert compile_kernel(sneaky, Target(), validate=False).observes_workgroup


def test_contract_reads_writes_from_body():
    lying = SAXPY.replace(params=tuple(p.replace(reads=False, writes=False) for p in SAXPY.params))
    ck = compile_kernel(lying, Target(), validate=False)
    assert [(p.reads, p.writes) for p in ck.params if p.is_list] == [(True, False), (True, True)]


def test_bad_ir_is_internal_error():
    bad = kernel(
        "bad", [P("out", ir.ListType(I32), w=True)], [store(0, gid(), ir.LocalRef(I32, "nope"))]
    )
    with pytest.raises(GpuInternalCompilerError, match="nope"):
        compile_kernel(bad, Target(), validate=False)


def test_workgroup_size_checked_against_target():
    big = BLOCKS.replace(workgroup_size=(2048, 1, 1))
    with pytest.raises(GpuCompileError, match="workgroup size"):
        compile_kernel(big, Target(), validate=False)


@needs_val
def test_validation_failure_is_internal_error(monkeypatch):
    from cthreads.compiler.spirv import builder

    real = builder.words_to_bytes
    monkeypatch.setattr(
        "cthreads.compiler.compile.words_to_bytes", lambda w: real(w[:-1])
    )  # drop OpFunctionEnd
    with pytest.raises(GpuInternalCompilerError) as ei:
        compile_kernel(SAXPY, Target())
    text = str(ei.value)
    assert "invalid SPIR-V for kernel `saxpy`" in text
    assert "--- SPIR-V ---" in text and "OpEntryPoint" in text  # disassembly included
