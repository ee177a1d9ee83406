"""Word-level SPIR-V module builder: one word list per logical section, joined in spec order.

Types and constants are interned (asking twice gives the same id); ids are handed out in call
order, so the same sequence of calls yields identical bytes. Knows nothing about kernels: codegen
drives it. Opcode and enum numbers come from the generated `grammar` module.
"""

from __future__ import annotations

import struct
import sys
from array import array

from .grammar import MAGIC, Decoration, Op

SPIRV_VERSION = 0x00010500  # SPIR-V 1.5: the version Vulkan 1.2 consumes
GENERATOR = 0  # no registered generator id; spirv-dis prints "Khronos; 0"


def string_words(s: str) -> list[int]:
    """A SPIR-V literal string: UTF-8, NUL-terminated, zero-padded to whole little-endian words."""
    raw = s.encode("utf-8") + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


def f32_bits(value: float) -> int:
    """The IEEE binary32 bit pattern of `value` (rounded to nearest; overflow gives +-inf)."""
    try:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:  # |value| > float32 max: Python's float -> float32 rounds to inf
        return 0xFF800000 if value < 0 else 0x7F800000


def f16_bits(value: float) -> int:
    """The IEEE binary16 bit pattern of `value` (rounded to nearest even; overflow gives +-inf)."""
    try:
        return struct.unpack("<H", struct.pack("<e", value))[0]
    except OverflowError:
        return 0xFC00 if value < 0 else 0x7C00


class Module:
    """The sections of one SPIR-V module plus id allocation and interning tables."""

    def __init__(self) -> None:
        self.bound = 1
        self.capabilities: list[int] = []
        self.extensions: list[int] = []
        self.ext_imports: list[int] = []
        self.memory_model: list[int] = []
        self.entry_points: list[int] = []
        self.execution_modes: list[int] = []
        self.debug_source: list[int] = []  # OpString / OpSource (debug section 7a)
        self.debug_names: list[int] = []  # OpName / OpMemberName (7b)
        self.annotations: list[int] = []
        self.globals: list[int] = []  # types, constants, global variables
        self.functions: list[int] = []
        self._caps: set[int] = set()
        self._interned: dict[tuple, int] = {}
        self.type_key: dict[int, tuple] = {}  # type id -> its interning key, e.g. ('int', 32, 1)

    # ----------------------------------------------------------------------------- basics
    def new_id(self) -> int:
        i = self.bound
        self.bound += 1
        return i

    @staticmethod
    def emit(section: list[int], op: int, *operands: int) -> None:
        section.append(((len(operands) + 1) << 16) | op)
        section.extend(operands)

    def capability(self, cap: int) -> None:
        if cap not in self._caps:
            self._caps.add(cap)
            self.emit(self.capabilities, Op.Capability, cap)

    def extension(self, name: str) -> None:
        key = ("ext", name)
        if key not in self._interned:
            self._interned[key] = 0
            self.emit(self.extensions, Op.Extension, *string_words(name))

    def ext_import(self, name: str) -> int:
        key = ("import", name)
        rid = self._interned.get(key)
        if rid is None:
            rid = self._interned[key] = self.new_id()
            self.emit(self.ext_imports, Op.ExtInstImport, rid, *string_words(name))
        return rid

    def set_memory_model(self, addressing: int, model: int) -> None:
        self.memory_model[:] = [(3 << 16) | Op.MemoryModel, addressing, model]

    def entry_point(self, model: int, fn: int, name: str, interface: list[int]) -> None:
        self.emit(self.entry_points, Op.EntryPoint, model, fn, *string_words(name), *interface)

    def execution_mode(self, fn: int, mode: int, *literals: int) -> None:
        self.emit(self.execution_modes, Op.ExecutionMode, fn, mode, *literals)

    def name(self, target: int, name: str) -> None:
        self.emit(self.debug_names, Op.Name, target, *string_words(name))

    def member_name(self, struct_id: int, member: int, name: str) -> None:
        self.emit(self.debug_names, Op.MemberName, struct_id, member, *string_words(name))

    def decorate(self, target: int, decoration: int, *literals: int) -> None:
        self.emit(self.annotations, Op.Decorate, target, decoration, *literals)

    def member_decorate(self, struct_id: int, member: int, decoration: int, *literals: int) -> None:
        self.emit(self.annotations, Op.MemberDecorate, struct_id, member, decoration, *literals)

    # ----------------------------------------------------------------------------- types
    def _type(self, key: tuple, op: int, *operands: int) -> int:
        tid = self._interned.get(key)
        if tid is None:
            tid = self._interned[key] = self.new_id()
            self.type_key[tid] = key
            self.emit(self.globals, op, tid, *operands)
        return tid

    def t_void(self) -> int:
        return self._type(("void",), Op.TypeVoid)

    def t_bool(self) -> int:
        return self._type(("bool",), Op.TypeBool)

    def t_int(self, width: int = 32, signed: bool = True) -> int:
        return self._type(("int", width, int(signed)), Op.TypeInt, width, int(signed))

    def t_float(self, width: int = 32) -> int:
        return self._type(("float", width), Op.TypeFloat, width)

    def t_vector(self, elem: int, count: int) -> int:
        return self._type(("vector", elem, count), Op.TypeVector, elem, count)

    def t_pointer(self, storage_class: int, pointee: int) -> int:
        return self._type(
            ("pointer", storage_class, pointee), Op.TypePointer, storage_class, pointee
        )

    def t_function(self, ret: int, params: tuple[int, ...] = ()) -> int:
        return self._type(("function", ret, *params), Op.TypeFunction, ret, *params)

    def t_array(self, elem: int, length: int) -> int:
        """A sized array without layout (workgroup memory); `length` is a constant id."""
        return self._type(("array", elem, length), Op.TypeArray, elem, length)

    def t_runtime_array(self, elem: int, stride: int) -> int:
        """Runtime array with its ArrayStride (interned per element type and stride)."""
        key = ("rtarray", elem, stride)
        tid = self._interned.get(key)
        if tid is None:
            tid = self._type(key, Op.TypeRuntimeArray, elem)
            self.decorate(tid, Decoration.ArrayStride, stride)
        return tid

    def t_struct(
        self, members: list[int], offsets: list[int] | None = None, *, block: bool = False
    ) -> int:
        """A fresh (never interned) struct: blocks carry per-instance decorations."""
        tid = self.new_id()
        self.type_key[tid] = ("struct", *members)
        self.emit(self.globals, Op.TypeStruct, tid, *members)
        if offsets is not None:
            for i, off in enumerate(offsets):
                self.member_decorate(tid, i, Decoration.Offset, off)
        if block:
            self.decorate(tid, Decoration.Block)
        return tid

    # ------------------------------------------------------------------------- constants
    def const(self, type_id: int, value: float | bool) -> int:
        """An interned OpConstant / OpConstantTrue / OpConstantFalse of a scalar type."""
        tkey = self.type_key[type_id]
        kind = tkey[0]
        if kind == "bool":
            key = ("const", type_id, bool(value))
            cid = self._interned.get(key)
            if cid is None:
                cid = self._interned[key] = self.new_id()
                self.emit(
                    self.globals, Op.ConstantTrue if value else Op.ConstantFalse, type_id, cid
                )
            return cid
        width = tkey[1]
        if kind == "float":
            if width == 64:
                bits = struct.unpack("<Q", struct.pack("<d", float(value)))[0]
            elif width == 16:
                bits = f16_bits(float(value))
            else:
                bits = f32_bits(float(value))
        elif kind == "int":
            bits = int(value) & ((1 << width) - 1)
            if width < 32 and tkey[2] and bits >> (width - 1):
                bits |= 0xFFFFFFFF ^ ((1 << width) - 1)  # narrow signed: sign-extended word
        else:
            raise TypeError(f"no scalar constants of type {tkey}")
        key = ("const", type_id, bits)
        cid = self._interned.get(key)
        if cid is None:
            cid = self._interned[key] = self.new_id()
            if width == 64:  # low-order word first
                self.emit(self.globals, Op.Constant, type_id, cid, bits & 0xFFFFFFFF, bits >> 32)
            else:
                self.emit(self.globals, Op.Constant, type_id, cid, bits)
        return cid

    def const_null(self, type_id: int) -> int:
        """An interned OpConstantNull (all zeros) of any type, e.g. an array's initialiser."""
        key = ("null", type_id)
        cid = self._interned.get(key)
        if cid is None:
            cid = self._interned[key] = self.new_id()
            self.emit(self.globals, Op.ConstantNull, type_id, cid)
        return cid

    def spec_const(self, type_id: int, value: int, spec_id: int) -> int:
        cid = self.new_id()
        self.emit(self.globals, Op.SpecConstant, type_id, cid, value & 0xFFFFFFFF)
        self.decorate(cid, Decoration.SpecId, spec_id)
        return cid

    def variable(self, ptr_type: int, storage_class: int, init: int | None = None) -> int:
        vid = self.new_id()
        extra = () if init is None else (init,)
        self.emit(self.globals, Op.Variable, ptr_type, vid, storage_class, *extra)
        return vid

    # ---------------------------------------------------------------------------- output
    def words(self) -> list[int]:
        if not self.memory_model:
            raise ValueError("module has no OpMemoryModel")
        header = [MAGIC, SPIRV_VERSION, GENERATOR, self.bound, 0]
        return (
            header
            + self.capabilities
            + self.extensions
            + self.ext_imports
            + self.memory_model
            + self.entry_points
            + self.execution_modes
            + self.debug_source
            + self.debug_names
            + self.annotations
            + self.globals
            + self.functions
        )

    def to_bytes(self) -> bytes:
        return words_to_bytes(self.words())


def words_to_bytes(words: list[int]) -> bytes:
    """Little-endian bytes of a word list (the byte order every SPIR-V consumer expects)."""
    arr = array("I", words)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


class Function:
    """One OpFunction under construction: variables gathered apart so they land in the entry
    block (SPIR-V requires Function-storage OpVariables there), everything else in `body`."""

    def __init__(self, module: Module, result_type: int, fn_type: int, control: int = 0) -> None:
        self.m = module
        self.id = module.new_id()
        self.head: list[int] = []
        self.vars: list[int] = []
        self.body: list[int] = []
        Module.emit(self.head, Op.Function, result_type, self.id, control, fn_type)
        self.entry_label = module.new_id()

    def param(self, type_id: int) -> int:
        pid = self.m.new_id()
        Module.emit(self.head, Op.FunctionParameter, type_id, pid)
        return pid

    def variable(self, ptr_type: int, storage_class: int, init: int | None = None) -> int:
        vid = self.m.new_id()
        extra = () if init is None else (init,)
        Module.emit(self.vars, Op.Variable, ptr_type, vid, storage_class, *extra)
        return vid

    def finish(self) -> None:
        fns = self.m.functions
        fns += self.head
        fns += ((2 << 16) | Op.Label, self.entry_label)
        fns += self.vars
        fns += self.body
        fns.append((1 << 16) | Op.FunctionEnd)


def instructions(words: list[int], start: int = 5):
    """Yield (opcode, operands) for each instruction of a module's words (after the header)."""
    i = start
    while i < len(words):
        n = words[i] >> 16
        if n == 0:
            raise ValueError(f"zero-length instruction at word {i}")
        yield words[i] & 0xFFFF, words[i + 1 : i + n]
        i += n


__all__ = [
    "SPIRV_VERSION",
    "Function",
    "Module",
    "f32_bits",
    "instructions",
    "string_words",
    "words_to_bytes",
]
