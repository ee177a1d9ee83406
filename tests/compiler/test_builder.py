"""Module builder: header, string literals, interning, section order, determinism."""

from __future__ import annotations

import struct

from cthreads.compiler.spirv.builder import Function, Module, f32_bits, instructions, string_words
from cthreads.compiler.spirv.grammar import (
    AddressingModel,
    Capability,
    Decoration,
    ExecutionModel,
    MemoryModel,
    Op,
    StorageClass,
)


def test_string_words_nul_terminated_and_padded():
    assert string_words("") == [0]
    assert string_words("abc") == [0x00636261]  # 3 bytes + NUL fill exactly one word
    assert string_words("main") == [0x6E69616D, 0]  # 4 bytes need a second word for the NUL
    w = string_words("é∂")  # UTF-8: 2 + 3 bytes + NUL = 6 -> 2 words
    assert len(w) == 2
    raw = struct.pack("<2I", *w)
    assert raw.rstrip(b"\0").decode() == "é∂"


def test_f32_bits():
    assert f32_bits(1.0) == 0x3F800000
    assert f32_bits(-0.0) == 0x80000000
    assert f32_bits(1e39) == 0x7F800000 and f32_bits(-1e39) == 0xFF800000
    assert f32_bits(float("nan")) & 0x7F800000 == 0x7F800000


def test_interning_types_and_constants():
    m = Module()
    i32 = m.t_int(32, True)
    assert m.t_int(32, True) == i32
    assert m.t_int(32, False) != i32
    f32 = m.t_float()
    assert m.t_pointer(StorageClass.Function, i32) == m.t_pointer(StorageClass.Function, i32)
    assert m.const(i32, 5) == m.const(i32, 5) == m.const(i32, 5 + 2**32)  # same bits
    assert m.const(f32, 0.0) != m.const(f32, -0.0)  # keyed by bit pattern
    assert m.const(i32, 0) != m.const(f32, 0.0)
    b = m.t_bool()
    assert m.const(b, True) == m.const(b, 1) != m.const(b, False)
    rt = m.t_runtime_array(f32, 4)
    assert m.t_runtime_array(f32, 4) == rt
    # ArrayStride decorated exactly once
    strides = [
        o
        for op, o in instructions(m.annotations, 0)
        if op == Op.Decorate and o[1] == Decoration.ArrayStride
    ]
    assert strides == [[rt, Decoration.ArrayStride, 4]]
    # structs are never interned (each Block carries its own decorations)
    assert m.t_struct([rt], [0], block=True) != m.t_struct([rt], [0], block=True)
    assert m.capability(Capability.Shader) is None
    m.capability(Capability.Shader)
    assert len(m.capabilities) == 2  # one OpCapability, deduplicated


def _tiny_module() -> Module:
    m = Module()
    m.capability(Capability.Shader)
    m.set_memory_model(AddressingModel.Logical, MemoryModel.GLSL450)
    void = m.t_void()
    fn = Function(m, void, m.t_function(void))
    m.name(fn.id, "main")
    fn.body += [(1 << 16) | Op.Return]
    fn.finish()
    m.entry_point(ExecutionModel.GLCompute, fn.id, "main", [])
    m.execution_mode(fn.id, 17, 1, 1, 1)  # LocalSize
    m.decorate(void, Decoration.RelaxedPrecision)  # any annotation, just to see the section
    return m


def test_header_and_section_order():
    m = _tiny_module()
    words = m.words()
    assert words[:5] == [0x07230203, 0x00010500, 0, m.bound, 0]
    ops = [op for op, _ in instructions(words)]
    order = [
        Op.Capability,
        Op.MemoryModel,
        Op.EntryPoint,
        Op.ExecutionMode,
        Op.Name,
        Op.Decorate,
        Op.TypeVoid,
    ]
    assert [ops.index(o) for o in order] == sorted(ops.index(o) for o in order)
    assert ops[-4:] == [Op.Function, Op.Label, Op.Return, Op.FunctionEnd]
    assert m.to_bytes() == _tiny_module().to_bytes()  # deterministic
    assert len(m.to_bytes()) == 4 * len(words)


def test_function_variables_land_in_entry_block():
    m = Module()
    i32 = m.t_int()
    void = m.t_void()
    fn = Function(m, void, m.t_function(void))
    fn.body += [(1 << 16) | Op.Return]
    v = fn.variable(m.t_pointer(StorageClass.Function, i32), StorageClass.Function, m.const(i32, 0))
    fn.finish()
    ops = [(op, o) for op, o in instructions(m.functions, 0)]
    assert [op for op, _ in ops] == [Op.Function, Op.Label, Op.Variable, Op.Return, Op.FunctionEnd]
    assert ops[2][1][1] == v
