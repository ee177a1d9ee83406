"""Matrix tiles as SPV_KHR_cooperative_matrix: types, tile locals, load/store, multiply-add.

A tile type is `OpTypeCooperativeMatrixKHR` of Subgroup scope (rows, columns and use as u32
constant ids); each tile local is a Function variable of it, so loops may carry accumulators.
Loads and stores keep the language's rule for accesses that do not fit (SPEC §5.6; tiles.py):
one uniform guard per access (offset and stride non-negative and aligned, the last row or column
inside the array, computed without overflow), a zero tile or no write otherwise; the tests that
cannot fail (constant strides, offsets the range analysis bounds) are left out, and an access
that always fits has no guard. Lists are
reached through their PhysicalStorageBuffer element pointer with an `Aligned` memory operand (the
lesser of 16 bytes and a row's size, which the guard's alignment test makes true when the list
itself starts 16-byte aligned, as every cthreads buffer does); shared arrays by an access chain.

Memory model: a Shader module declaring CooperativeMatrixKHR must declare VulkanMemoryModel
(SPIR-V's validation rules; spirv-val 2025.5 enforces it), so kernels with tiles, and only they,
use `PhysicalStorageBuffer64 Vulkan` (other kernels keep GLSL450, codegen.py, so their output is
unchanged). Nothing else changes meaning: atomics are relaxed and barriers carry
acquire-release semantics in both models; Device-scope atomics (on lists) add the
VulkanMemoryModelDeviceScope capability the Vulkan model asks for. Drivers with
VK_KHR_cooperative_matrix have vulkanMemoryModel (Vulkan 1.2), which device.c enables.

bf16 tiles (SPV_KHR_bfloat16): the component is `OpTypeFloat 16 BFloat16KHR`, declared only in
modules that use it; the data is read and written through the list's (or shared array's) u16
element pointer, which cooperative matrix loads and stores allow, so no bf16 buffer type exists.
Packed loads (`tile_load(..., elem=f16)` from u32 / u64 words) work the same way: the pointer is
the words', and offset, stride, length and alignment count words (`_unit`).
"""

from __future__ import annotations

from .. import ir
from ..ranges import tile_offset_ranges
from ..semantics import INT_MAX as INT32_MAX
from ..semantics import INT_MIN as INT32_MIN
from .builder import Module
from .grammar import (
    AddressingModel,
    Capability,
    MemoryAccess,
    MemoryModel,
    Op,
    Scope,
    SelectionControl,
    StorageClass,
)
from .grammar_coopmat import (
    CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX,
    CAPABILITY_BFLOAT16_TYPE,
    CAPABILITY_COOPERATIVE_MATRIX,
    EXTENSION,
    EXTENSION_BFLOAT16,
    CoopOp,
    FPEncoding,
    Layout,
    Operands,
    Use,
)


def vulkan_memory_model(m: Module, kernel: ir.Kernel) -> None:
    """Declare the Vulkan memory model (and its Device scope where list atomics use it)."""
    m.capability(Capability.VulkanMemoryModel)
    if any(isinstance(s, ir.Atomic) and not s.shared for s in ir.walk_stmts(kernel.body)):
        m.capability(Capability.VulkanMemoryModelDeviceScope)
    m.set_memory_model(AddressingModel.PhysicalStorageBuffer64, MemoryModel.Vulkan)


_USE = {"a": Use.MatrixAKHR, "b": Use.MatrixBKHR, "acc": Use.MatrixAccumulatorKHR}


def alignment(t: ir.TileType, col_major: bool, unit: int | None = None) -> int:
    """Array elements (of `unit` bytes; default the tile's element size) that `offset` and
    `stride` must be multiples of: the lesser of 16 bytes and one row's, or column's, size
    (Vulkan's VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986)."""
    size = t.elem.bits // 8
    unit = unit or size
    line = (t.rows if col_major else t.cols) * size
    return max(1, min(16, line) // unit)


class TileGen:
    """Mixin for codegen.Codegen (needs ExprGen's helpers and StmtGen's function state)."""

    def _component(self, elem: ir.Scalar) -> int:
        if elem != ir.BF16:
            return self.ty(elem)
        m = self.m
        m.capability(CAPABILITY_BFLOAT16_TYPE)
        m.capability(CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX)
        m.extension(EXTENSION_BFLOAT16)
        return m._type(("bf16",), Op.TypeFloat, 16, FPEncoding.BFloat16KHR)

    def _element_zero(self, elem: ir.Scalar) -> int:
        if elem != ir.BF16:
            return self.zero(elem)
        key = ("bf16 zero",)
        cid = self.m._interned.get(key)
        if cid is None:
            cid = self.m._interned[key] = self.m.new_id()
            Module.emit(self.m.globals, Op.Constant, self._component(elem), cid, 0)
        return cid

    def tile_type(self, t: ir.TileType) -> int:
        m = self.m
        m.capability(CAPABILITY_COOPERATIVE_MATRIX)
        m.extension(EXTENSION)
        comp = self._component(t.elem)
        u32 = m.t_int(32, False)
        ids = [m.const(u32, v) for v in (Scope.Subgroup, t.rows, t.cols, _USE[t.use])]
        key = ("coopmat", comp, *ids)
        return m._type(key, CoopOp.TypeCooperativeMatrixKHR, comp, *ids)

    def declare_tile_vars(self, fn) -> None:
        """One Function variable per tile local (called by emit_body; nothing without tiles)."""
        self.tile_vars: dict[str, tuple[int, int]] = {}
        for name, t in self.k.tiles.items():
            tt = self.tile_type(t)
            var = fn.variable(self.m.t_pointer(StorageClass.Function, tt), StorageClass.Function)
            self.m.name(var, name)
            self.tile_vars[name] = (var, tt)

    def _tile_load_var(self, name: str) -> int:
        var, tt = self.tile_vars[name]
        return self.op(Op.Load, tt, var)

    def _zero_tile(self, t: ir.TileType) -> int:
        tt = self.tile_type(t)
        key = ("coopzero", tt)
        cid = self.m._interned.get(key)
        if cid is None:
            cid = self.m._interned[key] = self.m.new_id()
            Module.emit(self.m.globals, Op.ConstantComposite, tt, cid, self._element_zero(t.elem))
        return cid

    # ----------------------------------------------------------------------- guard
    def _tile_fits(self, t: ir.TileType, s, length: int) -> tuple[int, int, int | None]:
        """(offset, stride, bool id: the tile fits and is aligned, as tiles.tile_fits; None
        when it always does). The tests that cannot fail are left out: those on a constant
        stride, a lower bound the range analysis proves (compiler/ranges.py), and with a
        constant stride the row-room division becomes one compare against a bound."""
        b, i32 = self.t_bool, self.t_i32
        off, stride = self.expr(s.offset), self.expr(s.stride)
        major, inner = (t.cols, t.rows) if s.col_major else (t.rows, t.cols)
        unit = self._unit(s)  # bytes of one array element: a packed word holds several
        inner = inner * (t.elem.bits // 8) // unit  # array elements per row (column)
        align = alignment(t, s.col_major, unit)
        lo, hi, multiple = self._offset_range(s)
        fixed = s.stride.value if isinstance(s.stride, ir.Const) else None
        if fixed is not None and (fixed < 0 or fixed % align):
            return off, stride, self.m.const(b, False)  # (never fits: every element zero)
        conds = []
        if lo < 0:
            conds.append(self.op(Op.SGreaterThanEqual, b, off, self.c0))
        if fixed is None:
            conds.append(self.op(Op.SGreaterThanEqual, b, stride, self.c0))
        if align > 1:
            mask = self.ki(align - 1)
            aligned_offset = multiple % align == 0  # (a constant's multiple is itself)
            for v, known in ((off, aligned_offset), (stride, fixed is not None)):
                if not known:
                    low = self.op(Op.BitwiseAnd, i32, v, mask)
                    conds.append(self.op(Op.IEqual, b, low, self.c0))
        if fixed is not None:
            # the last row's end: offset + (major - 1) * stride + inner <= length
            reach = inner + (major - 1) * fixed
            constant = self._length_constant(s)
            if reach > INT32_MAX:
                return off, stride, self.m.const(b, False)
            if constant is None:  # (length >= 0 and reach <= INT32_MAX: no wrap)
                bound = self.op(Op.ISub, i32, length, self.ki(reach))
                conds.append(self.op(Op.SLessThanEqual, b, off, bound))
            elif hi > constant - reach:  # (not proven by the range analysis)
                conds.append(self.op(Op.SLessThanEqual, b, off, self.ki(constant - reach)))
        else:
            room = self.op(Op.ISub, i32, length, off)  # elements from offset to the end
            conds.append(self.op(Op.SGreaterThanEqual, b, room, self.ki(inner)))
            if major > 1:
                # (room - inner) / (major - 1) >= stride: the last row starts early enough (no
                # multiplication, so no overflow; a negative `room - inner` fails the test above)
                spare = self.op(Op.ISub, i32, room, self.ki(inner))
                rows_room = self.op(Op.SDiv, i32, spare, self.ki(major - 1))
                conds.append(self.op(Op.SGreaterThanEqual, b, rows_room, stride))
        if not conds:
            return off, stride, None
        ok = conds[0]
        for c in conds[1:]:
            ok = self.op(Op.LogicalAnd, b, ok, c)
        return off, stride, ok

    def _offset_range(self, s) -> tuple[int, int, int]:
        """(lo, hi, multiple): the interval the range analysis proves for a tile access's
        offset and a number it is a multiple of (0: the offset is 0); int32's and 1 if none."""
        ranges = getattr(self, "_tile_offsets", None)
        if ranges is None:
            ranges = self._tile_offsets = tile_offset_ranges(self.k, self.target.min_subgroup_size)
        node, (lo, hi), multiple = ranges.get(id(s), (None, (INT32_MIN, INT32_MAX), 1))
        return (lo, hi, multiple) if node is s else (INT32_MIN, INT32_MAX, 1)

    def _length_constant(self, s) -> int | None:
        """A shared array's length in elements (known when compiling); None for a list."""
        return self.shared_info[s.array].size if s.shared else None

    def _unit(self, s) -> int:
        """Bytes of one element of the array a tile access reads or writes."""
        info = self.shared_info[s.array] if s.shared else self.lists[s.array]
        return info.elem.bits // 8

    def _tile_pointer(self, s, off: int) -> tuple[int, tuple[int, ...]]:
        """The element pointer at `off` and the memory operands of the access."""
        if s.shared:
            info = self.shared_info[s.array]
            return self.op(Op.AccessChain, info.elem_ptr, info.var, off), ()
        li = self.lists[s.array]
        ptr = self.op(Op.AccessChain, li.elem_ptr, li.base, self.c0, off)
        t, unit = self.k.tiles[s.tile], self._unit(s)
        return ptr, (MemoryAccess.Aligned, alignment(t, s.col_major, unit) * unit)

    def _length(self, s) -> int:
        return self.shared_info[s.array].size_id if s.shared else self.lists[s.array].len

    def _layout(self, col_major: bool) -> int:
        return self.ki(Layout.ColumnMajorKHR if col_major else Layout.RowMajorKHR)

    # ------------------------------------------------------------------ statements
    def visit_TileFill(self, s: ir.TileFill) -> None:
        var, tt = self.tile_vars[s.tile]
        t = self.k.tiles[s.tile]
        value = self.expr(s.value)
        if t.elem == ir.BF16:  # the frontend gives an f32 value
            value = self.op(Op.FConvert, self._component(t.elem), self._bf16_exact(value))
        value = self.op(Op.CompositeConstruct, tt, value)
        self.ins(Op.Store, var, value)

    def _bf16_exact(self, value: int) -> int:
        """f32 `value` rounded to the nearest bf16 (ties to even), still an f32: OpFConvert's
        rounding is the driver's choice (NVIDIA truncates: 1.0059 became 1.0, not 1.0078, on
        the H200), an exact value converts the same everywhere. NaN stays NaN (the carry of
        the rounding add could make it infinity)."""
        i32, bt = self.t_i32, self.t_bool
        bits = self.op(Op.Bitcast, i32, value)
        lsb = self.op(
            Op.BitwiseAnd, i32, self.op(Op.ShiftRightLogical, i32, bits, self.ki(16)), self.ki(1)
        )
        up = self.op(Op.IAdd, i32, self.op(Op.IAdd, i32, bits, self.ki(0x7FFF)), lsb)
        rounded = self.op(Op.Bitcast, self.t_f32, self.op(Op.BitwiseAnd, i32, up, self.ki(-65536)))
        return self.op(Op.Select, self.t_f32, self.op(Op.IsNan, bt, value), value, rounded)

    def visit_TileLoad(self, s: ir.TileLoad) -> None:
        t = self.k.tiles[s.tile]
        var, tt = self.tile_vars[s.tile]
        off, stride, ok = self._tile_fits(t, s, self._length(s))
        if ok is None:  # always fits: no guard
            ptr, mem = self._tile_pointer(s, off)
            layout = self._layout(s.col_major)
            v = self.op(CoopOp.CooperativeMatrixLoadKHR, tt, ptr, layout, stride, *mem)
            self.ins(Op.Store, var, v)
            return
        then, other, merge = (self.m.new_id() for _ in range(3))
        self.ins(Op.SelectionMerge, merge, SelectionControl.None_)
        self.ins(Op.BranchConditional, ok, then, other)
        self.begin(then)
        ptr, mem = self._tile_pointer(s, off)
        v = self.op(
            CoopOp.CooperativeMatrixLoadKHR, tt, ptr, self._layout(s.col_major), stride, *mem
        )
        self.ins(Op.Store, var, v)
        self.br(merge)
        self.begin(other)
        self.ins(Op.Store, var, self._zero_tile(t))
        self.br(merge)
        self.begin(merge)

    def visit_TileStore(self, s: ir.TileStore) -> None:
        t = self.k.tiles[s.tile]
        off, stride, ok = self._tile_fits(t, s, self._length(s))
        then, merge = self.m.new_id(), self.m.new_id()
        if ok is not None:
            self.ins(Op.SelectionMerge, merge, SelectionControl.None_)
            self.ins(Op.BranchConditional, ok, then, merge)
            self.begin(then)
        ptr, mem = self._tile_pointer(s, off)
        obj = self._tile_load_var(s.tile)
        self.ins(
            CoopOp.CooperativeMatrixStoreKHR, ptr, obj, self._layout(s.col_major), stride, *mem
        )
        if ok is not None:
            self.br(merge)
            self.begin(merge)

    def visit_TileMma(self, s: ir.TileMma) -> None:
        ta, tc = self.k.tiles[s.a], self.k.tiles[s.c]
        var, tt = self.tile_vars[s.result]
        a, b, c = (self._tile_load_var(n) for n in (s.a, s.b, s.c))
        mask = 0
        if ta.elem.kind == "int":
            mask |= Operands.MatrixASignedComponentsKHR | Operands.MatrixBSignedComponentsKHR
        if tc.elem.kind == "int":
            mask |= Operands.MatrixCSignedComponentsKHR | Operands.MatrixResultSignedComponentsKHR
        extra = (mask,) if mask else ()
        self.ins(Op.Store, var, self.op(CoopOp.CooperativeMatrixMulAddKHR, tt, a, b, c, *extra))

    def visit_TileScale(self, s: ir.TileScale) -> None:
        var, tt = self.tile_vars[s.result]
        src = self._tile_load_var(s.src)
        factor = self.expr(s.factor)
        self.ins(Op.Store, var, self.op(Op.MatrixTimesScalar, tt, src, factor))

    def visit_TileAdd(self, s: ir.TileAdd) -> None:
        t = self.k.tiles[s.lhs]
        var, tt = self.tile_vars[s.result]
        x, y = self._tile_load_var(s.lhs), self._tile_load_var(s.rhs)
        if t.elem.is_float:
            opc = Op.FSub if s.subtract else Op.FAdd
        else:
            opc = Op.ISub if s.subtract else Op.IAdd
        self.ins(Op.Store, var, self.op(opc, tt, x, y))
