"""Codegen entry: module setup, the parameter block, the body function (`main`: codegen_main.py).

`generate(kernel, target)` returns SPIR-V words plus the `PushLayout` launch fills. The kernel
body becomes its own function `body(g, params...)` called from `main`; `main` loads every used
parameter once and maps the physical dispatch to logical invocations (SPEC §4):

- kernels that never observe the workgroup run a grid-stride loop
  `for g = GlobalInvocationId.x; g < total; g += NumWorkgroups.x * WorkgroupSize.x`, nested in
  the same loops over y (< total_y) and z (< total_z) for 2-D/3-D launches, with the
  workgroup size a specialization constant (SpecId 0/1/2), so launch picks any shape and any
  group count covers any n;
  element-wise kernels (vectorize.py) instead walk blocks of 4 consecutive indexes with 16-byte
  list accesses and a scalar tail (codegen_vec.py; `elements_per_invocation` 4);
- kernels that observe it keep `LocalSize = kernel.workgroup_size`; BlockIdx.x is
  WorkgroupId.x + base_group (push) and GridDim.x is grid_x (push), so a grid split over several
  dispatches is invisible to the kernel.

Memory model: `PhysicalStorageBuffer64 GLSL450`. Lists are reached by 64-bit device addresses
(no descriptor sets, no maxStorageBufferRange limit, SPEC §5.7). GLSL450 rather than the Vulkan
memory model because kernels have no cross-workgroup ordering beyond relaxed atomics, every driver
supports it without `vulkanMemoryModel` (atomics are relaxed, ordered only by barriers,
codegen_memory.py), and glslang's output for the same shaders is identical
in spirit, so drivers see the code they are tuned for. Switching is local to this module.
"""

from __future__ import annotations

from .. import ir
from ..artifact import PushLayout
from ..target import Target
from .builder import Function, Module
from .codegen_expr import ExprGen, UnsupportedFeature
from .codegen_main import MainGen
from .codegen_math import MathGen
from .codegen_memory import MemoryGen
from .codegen_copy import CopyGen
from .codegen_stmt import StmtGen
from .codegen_subgroup import SubgroupGen
from .codegen_tiles import TileGen, vulkan_memory_model
from .codegen_vec import VecGen
from .grammar import (
    AddressingModel,
    BuiltIn,
    Capability,
    Decoration,
    ExecutionMode,
    ExecutionModel,
    FunctionControl,
    MemoryAccess,
    MemoryModel,
    Op,
    StorageClass,
)
from .layout import push_layout
from .usage import Usage, scan
from .vectorize import WIDTH, VecPlan
from .vectorize import plan as vector_plan

PSB = StorageClass.PhysicalStorageBuffer
# spirv-val (and Vulkan drivers) reject an OpTypeFunction of more than 255 parameters.
MAX_FUNCTION_PARAMS = 255
# The body inputs that are not parameter-block fields (computed in `main`, always passed).
_DISPATCH_ROLES = ("g", "bx", "grid_x", "gy", "gz")
_BUILTIN_VAR = {
    ir.BuiltinKind.GLOBAL_ID: BuiltIn.GlobalInvocationId,
    ir.BuiltinKind.LOCAL_ID: BuiltIn.LocalInvocationId,
    ir.BuiltinKind.WORKGROUP_ID: BuiltIn.WorkgroupId,
    ir.BuiltinKind.NUM_WORKGROUPS: BuiltIn.NumWorkgroups,
}


_TYPE_CAPABILITY = {
    (True, 16): Capability.Float16,
    (True, 64): Capability.Float64,
    (False, 8): Capability.Int8,
    (False, 16): Capability.Int16,
    (False, 64): Capability.Int64,
}


class ListInfo:
    """How codegen reaches one list parameter."""

    __slots__ = ("align", "base", "elem", "elem_ptr", "index", "len", "ptr_type", "storage")

    def __init__(
        self, index: int, elem: ir.Scalar, storage: int, align: int, ptr_type: int, elem_ptr: int
    ):
        self.index, self.elem, self.storage, self.align = index, elem, storage, align
        self.ptr_type, self.elem_ptr = ptr_type, elem_ptr
        self.base = 0  # SSA id of the block pointer inside `body`
        self.len = 0  # SSA id of the element count (i32) inside `body`


def _push_type(t: ir.Scalar) -> ir.Scalar:
    """The type a scalar parameter has in the parameter block: narrow types widen to 32 bits
    (f16 -> f32, i8/i16 -> i32, u8/u16 -> u32)."""
    if t.bits >= 32 or t.is_bool:
        return t
    return ir.F32 if t.is_float else ir.Scalar(t.kind, 32)


class Codegen(MainGen, VecGen, CopyGen, MemoryGen, SubgroupGen, TileGen, StmtGen, MathGen, ExprGen):
    def __init__(self, kernel: ir.Kernel, target: Target, vectorize: bool = True) -> None:
        self.k = kernel
        self.target = target
        self.m = m = Module()
        self.usage = scan(kernel)
        self.observes = kernel.observes_workgroup or self.usage.observes_workgroup
        self.layout: PushLayout = push_layout(kernel, target, self.observes, self.usage.shapes)
        m.capability(Capability.Shader)
        m.capability(Capability.PhysicalStorageBufferAddresses)
        if kernel.tiles:  # SPV_KHR_cooperative_matrix requires the Vulkan memory model
            vulkan_memory_model(m, kernel)
        else:
            m.set_memory_model(AddressingModel.PhysicalStorageBuffer64, MemoryModel.GLSL450)
        self.t_void, self.t_bool = m.t_void(), m.t_bool()
        self.t_i32, self.t_f32 = m.t_int(32, True), m.t_float(32)
        self.c0 = m.const(self.t_i32, 0)
        self._types = {ir.I32: self.t_i32, ir.F32: self.t_f32, ir.BOOL: self.t_bool}
        self._inputs: dict[int, int] = {}
        self.interface: list[int] = []
        self._glsl = 0
        self.lists: dict[int, ListInfo] = {}
        self._declare_lists()
        self._declare_params()
        self.declare_shared()
        # A body reading GlobalIdx.y/.z keeps the scalar form (blocks of 4 walk x only).
        yz = any(k is ir.BuiltinKind.GLOBAL_ID and a for k, a in self.usage.builtins)
        self.vec: VecPlan | None = (
            vector_plan(kernel, self.usage, self.observes)
            # 4-wide form: 32-bit types only, and no local arrays (one per logical invocation)
            if vectorize and not yz and not kernel.type_lines and not kernel.shared
            else None
        )
        # `body` takes the parameter-block values as arguments, loaded once in `main`; a
        # kernel with so many lists that they pass MAX_FUNCTION_PARAMS loads them inside
        # `body` instead, and keeps the scalar form when even then the vector body's
        # per-list arguments would not fit.
        self.inputs = self._body_inputs()
        self.body_loads = len(self.inputs) + self._vec_extra_count() > MAX_FUNCTION_PARAMS
        if self.body_loads:
            self.passed = [a for a in self.inputs if a[0] in _DISPATCH_ROLES]
            if len(self.passed) + self._vec_extra_count() > MAX_FUNCTION_PARAMS:
                self.vec = None
        else:
            self.passed = self.inputs
        if self.vec is not None:
            self._declare_vec_views()

    def _vec_extra_count(self) -> int:
        """How many arguments the vector body takes beyond the scalar body's (vec_extra_types)."""
        plan = self.vec
        return 0 if plan is None else sum(2 if i in plan.writes else 1 for i in plan.lists)

    # ----------------------------------------------------------------------- types
    def ty(self, t: ir.Scalar) -> int:
        tid = self._types.get(t)
        if tid is None:
            # capabilities only where a type is used (compile.py checked the target)
            cap = _TYPE_CAPABILITY.get((t.is_float, t.bits))
            if cap is not None:
                self.m.capability(cap)
            if t.kind in ("int", "uint") and t.bits in (8, 16, 32, 64):
                tid = self.m.t_int(t.bits, t.kind == "int")
            elif t.kind == "float" and t.bits in (16, 64):
                tid = self.m.t_float(t.bits)
            else:
                raise NotImplementedError(f"scalar type {t} is not supported by codegen yet")
            self._types[t] = tid
        return tid

    def glsl(self) -> int:
        if not self._glsl:
            self._glsl = self.m.ext_import("GLSL.std.450")
        return self._glsl

    def input_var(self, builtin: int) -> int:
        """The Input variable for a vec3 builtin, declared on first use."""
        vid = self._inputs.get(builtin)
        if vid is None:
            m = self.m
            ptr = m.t_pointer(StorageClass.Input, m.t_vector(self.t_i32, 3))
            vid = self._inputs[builtin] = m.variable(ptr, StorageClass.Input)
            m.decorate(vid, Decoration.BuiltIn, builtin)
            self.interface.append(vid)
        return vid

    # ---------------------------------------------------------------- declarations
    def _declare_lists(self) -> None:
        m, u = self.m, self.usage
        for i, p in enumerate(self.k.params):
            if not p.is_list:
                continue
            elem = p.type.elem
            if elem.is_bool:
                # One byte per element (numpy bool): loaded/stored as uint8 and widened/narrowed
                # with OpUConvert. spirv-val (2023.1) looks through the typed pointers in the
                # parameter block and then demands Int8 (as glslang declares for the same GLSL),
                # so `Target.storage_8bit` means storageBuffer8BitAccess and shaderInt8.
                if i in u.loads or i in u.stores:
                    if not self.target.storage_8bit:
                        raise UnsupportedFeature(
                            f"list[bool] parameter `{p.name}` needs the device features "
                            "storageBuffer8BitAccess and shaderInt8, which this device lacks"
                        )
                    m.capability(Capability.Int8)
                    m.capability(Capability.StorageBuffer8BitAccess)
                    storage, align = m.t_int(8, False), 1
                else:  # never dereferenced: any element type will do, and 32-bit needs no capability
                    storage, align = m.t_int(32, False), 4
            elif elem.bits < 32 and i not in u.loads and i not in u.stores:
                storage, align = m.t_int(32, False), 4  # never dereferenced (as list[bool])
            else:
                storage, align = self.ty(elem), elem.bits // 8
                if elem.bits < 32:  # f16/i16/u16 and i8/u8 elements in a storage buffer
                    m.capability(
                        Capability.StorageBuffer16BitAccess
                        if elem.bits == 16
                        else Capability.StorageBuffer8BitAccess
                    )
            arr = m.t_runtime_array(storage, align)
            blk = m.t_struct([arr], [0], block=True)
            m.name(blk, f"{p.name}_t")
            # Lists are distinct buffers (launch refuses one buffer bound twice where either is
            # written), so Restrict is true; NonWritable lets drivers use read-only caches.
            m.member_decorate(blk, 0, Decoration.Restrict)
            if i not in u.stores:
                m.member_decorate(blk, 0, Decoration.NonWritable)
            self.lists[i] = ListInfo(
                i, elem, storage, align, m.t_pointer(PSB, blk), m.t_pointer(PSB, storage)
            )

    def _declare_params(self) -> None:
        """The parameter block struct (push constants, or a PSB block behind one address)."""
        m, lay = self.m, self.layout
        members, offsets = [], []
        self._member: dict[
            tuple[str, int | None], tuple[int, int, int]
        ] = {}  # -> (index, type, align)
        for f in sorted(lay.fields, key=lambda f: f.offset):
            if f.role == "addr":
                t, align = self.lists[f.param].ptr_type, 8
            elif f.role == "scalar":
                pt = self.k.params[f.param].type
                # bool and the narrow types travel as 32-bit values (no 8/16-bit push
                # constants needed); the body converts them on entry (`scalar_in`)
                t = self.t_i32 if pt.is_bool else self.ty(_push_type(pt))
                align = 4 if pt.is_bool else max(pt.bits, 32) // 8
            else:
                t, align = self.t_i32, 4
            self._member[(f.role, f.param)] = (len(members), t, align)
            members.append(t)
            offsets.append(f.offset)
        blk = m.t_struct(members, offsets, block=True)
        m.name(blk, "Params")
        if lay.in_buffer:
            self._pblock_ptr = m.t_pointer(PSB, blk)
            pc = m.t_struct([self._pblock_ptr], [0], block=True)
            m.name(pc, "ParamsAddress")
        else:
            pc = blk
        self.pc = m.variable(m.t_pointer(StorageClass.PushConstant, pc), StorageClass.PushConstant)
        m.name(self.pc, "params")
        self.interface.append(self.pc)

    def load_param(self, fn: Function, role: str, param: int | None, pblock: int) -> int:
        """Load one field of the parameter block at `fn`'s entry (before its first label's code)."""
        idx, t, align = self._member[(role, param)]
        m, code = self.m, fn.body
        ac, val = m.new_id(), m.new_id()
        if self.layout.in_buffer:
            Module.emit(
                code, Op.AccessChain, m.t_pointer(PSB, t), ac, pblock, m.const(self.t_i32, idx)
            )
            Module.emit(code, Op.Load, t, val, ac, MemoryAccess.Aligned, align)
        else:
            Module.emit(
                code,
                Op.AccessChain,
                m.t_pointer(StorageClass.PushConstant, t),
                ac,
                self.pc,
                m.const(self.t_i32, idx),
            )
            Module.emit(code, Op.Load, t, val, ac)
        if role == "scalar":
            pt = self.k.params[param].type
            if _push_type(pt) != pt and not pt.is_bool:  # a narrow scalar: convert from 32 bits
                nt, out = self.ty(pt), m.new_id()
                conv = (
                    Op.FConvert if pt.is_float else Op.SConvert if pt.kind == "int" else Op.UConvert
                )
                Module.emit(code, conv, nt, out, val)
                return out
        return val

    # ------------------------------------------------------------------- functions
    def _body_inputs(self) -> list[tuple[str, int | None]]:
        """The SSA values `main` passes to `body`, in order."""
        u, ins = self.usage, [("g", None)]
        if self.observes:
            if (ir.BuiltinKind.WORKGROUP_ID, 0) in u.builtins:
                ins.append(("bx", None))
            if (ir.BuiltinKind.NUM_WORKGROUPS, 0) in u.builtins:
                ins.append(("grid_x", None))
        else:  # the grid-stride loops' y and z (GlobalIdx.y/.z)
            if (ir.BuiltinKind.GLOBAL_ID, 1) in u.builtins:
                ins.append(("gy", None))
            if (ir.BuiltinKind.GLOBAL_ID, 2) in u.builtins:
                ins.append(("gz", None))
        lists = sorted(u.loads | u.stores | u.lens)
        ins += [("addr", i) for i in lists if i in u.loads or i in u.stores]
        ins += [("len", i) for i in lists]
        ins += [(f"shape{axis}", i) for i, axis in sorted(u.shapes)]
        scalars = set(u.scalars)
        for i, p in enumerate(self.k.params):
            if not p.is_list and p.name in self.k.locals:
                scalars.add(i)  # an assigned scalar parameter starts as a local holding its value
        ins += [("scalar", i) for i in sorted(scalars)]
        return ins

    def generate(self) -> list[int]:
        m, k = self.m, self.k
        inputs = self.passed
        ptypes = []
        for role, i in inputs:
            if role == "addr":
                ptypes.append(self.lists[i].ptr_type)
            elif role == "scalar":
                pt = self.k.params[i].type
                narrow = _push_type(pt) != pt and not pt.is_bool
                ptypes.append(self.ty(pt) if narrow else self._member[("scalar", i)][1])
            else:
                ptypes.append(self.t_i32)
        body_id = self._body_function(inputs, ptypes, k.name)
        vbody_id = 0
        if self.vec is not None:
            vbody_id = self._body_function(inputs, ptypes, f"{k.name}_x{WIDTH}", vector=True)
        main = Function(m, self.t_void, m.t_function(self.t_void))
        m.name(main.id, "main")
        self._emit_main(main, body_id, vbody_id, inputs)
        main.finish()
        m.entry_point(ExecutionModel.GLCompute, main.id, "main", self.interface)
        if self.target.nan_inf_preserve:
            # IEEE meaning of NaN, inf and -0.0 in float32 (SPIR-V 1.4 float controls)
            m.capability(Capability.SignedZeroInfNanPreserve)
            m.execution_mode(main.id, ExecutionMode.SignedZeroInfNanPreserve, 32)
        return m.words()

    def _body_function(self, inputs, ptypes, name: str, vector: bool = False) -> int:
        """`body(g, addrs..., lens..., scalars...)`; the vector body takes per accessed list a
        cell and a stored-flag pointer (written lists) or the lane's loaded value (read-only)."""
        m, k = self.m, self.k
        extra = self.vec_extra_types() if vector else []
        all_types = tuple(ptypes) + tuple(t for _, _, t in extra)
        body = Function(
            m, self.t_void, m.t_function(self.t_void, all_types), FunctionControl.Inline
        )
        m.name(body.id, name)
        args = {}
        for (role, i), t in zip(inputs, ptypes):
            pid = args[(role, i)] = body.param(t)
            if role == "addr":
                m.decorate(pid, Decoration.Restrict)  # PSB pointer params need Restrict/Aliased
                m.name(pid, k.params[i].name)
            elif role == "len":
                m.name(pid, f"{k.params[i].name}_len")
            elif role.startswith("shape"):
                m.name(pid, f"{k.params[i].name}_{role}")
            elif role == "scalar":
                m.name(pid, k.params[i].name)
            else:
                m.name(pid, role)
        if self.body_loads:  # too many for arguments: read the parameter block here
            pblock = self._load_pblock(body)
            for role, i in self.inputs:
                if role not in _DISPATCH_ROLES:
                    args[(role, i)] = self.load_param(body, role, i, pblock)
        access: dict[int, tuple[int, int, int]] = {}  # list -> (value, cell, flag)
        for role, i, t in extra:
            pid = body.param(t)
            m.name(pid, f"{k.params[i].name}_{role}")
            v, c, f = access.get(i, (0, 0, 0))
            access[i] = (
                (pid, c, f) if role == "value" else (v, pid, f) if role == "cell" else (v, c, pid)
            )
        self.emit_body(body, args, access)
        body.finish()
        return body.id

    def _load_pblock(self, fn: Function) -> int:
        """The parameter block's address at `fn`'s entry when the block lives in a buffer (the
        push constant then holds only that address); 0 when the fields are push constants."""
        if not self.layout.in_buffer:
            return 0
        m, ac, pblock = self.m, self.m.new_id(), self.m.new_id()
        Module.emit(
            fn.body,
            Op.AccessChain,
            m.t_pointer(StorageClass.PushConstant, self._pblock_ptr),
            ac,
            self.pc,
            self.c0,
        )
        Module.emit(fn.body, Op.Load, self._pblock_ptr, pblock, ac)
        return pblock


def generate(
    kernel: ir.Kernel, target: Target, vectorize: bool = True
) -> tuple[list[int], PushLayout, bool, Usage, int]:
    """SPIR-V words, the parameter block layout, whether the kernel observes its workgroup (as
    declared, or found in the body), the body's usage record, and the logical invocations one
    grid-stride step covers (4 in the vector form, codegen_vec.py; else 1)."""
    cg = Codegen(kernel, target, vectorize)
    words = cg.generate()
    return words, cg.layout, cg.observes, cg.usage, WIDTH if cg.vec is not None else 1
