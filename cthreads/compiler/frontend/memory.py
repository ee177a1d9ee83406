"""Arrays declared in the body and atomics: `tile = shared(float, 256)`, `acc = local(float, 64)`,
`old = atomic_add(xs, i, v)`.

An array is declared by one assignment at the top level of the kernel body, with a size known
when compiling (literals, module constants, `BlockDim`, arithmetic on them); shared arrays fit in
the device's `maxComputeSharedMemorySize`, local (per-invocation) ones in MAX_LOCAL_BYTES.
Atomics change memory, so they are statements (`ir.Atomic`) and appear only on a line of their
own or as the value of an assignment.
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import I32, AtomicOp
from . import typerules as tr
from .signature import ALLOWED_LOCAL_TYPES, python_type_name, type_from_node

SHARED_FORM = "name = shared(float, 256) at the top level of the kernel body"
LOCAL_FORM = "name = local(float, 64) at the top level of the kernel body"
# All local arrays of a kernel together, per invocation. They are meant for register tiles
# (NVIDIA keeps at most 255 32-bit registers per invocation; larger arrays spill to slow local
# memory), so this only stops sizes no driver should be handed.
MAX_LOCAL_BYTES = 16384
_SIZE_ALLOWED = (
    "an int literal, a module-level int constant, BlockDim.x (the workgroup size), "
    "or arithmetic on those, e.g. shared(float, TILE * TILE)"
)
ATOMIC_OPS = {
    "atomic_add": AtomicOp.ADD,
    "atomic_min": AtomicOp.MIN,
    "atomic_max": AtomicOp.MAX,
    "atomic_and": AtomicOp.AND,
    "atomic_or": AtomicOp.OR,
    "atomic_xor": AtomicOp.XOR,
    "atomic_exchange": AtomicOp.EXCHANGE,
    "atomic_compare_exchange": AtomicOp.COMPARE_EXCHANGE,
}
_INT_ONLY = (AtomicOp.AND, AtomicOp.OR, AtomicOp.XOR)
ELEM_BYTES = 4  # int, float and bool (32-bit in workgroup memory)


def array_form(what: str) -> str:
    """How to declare a `shared` or `local` array (the 'allowed' part of messages)."""
    return LOCAL_FORM if what == "local" else SHARED_FORM


def array_what(what: str) -> str:
    return "a local (per-invocation) array" if what == "local" else "a workgroup shared array"


def elem_bytes(t: ir.Scalar) -> int:
    """Bytes per element of a shared array of `t` (bool: 4; f16 2; i8 1; f64 8; ...)."""
    return ELEM_BYTES if t.is_bool else t.bits // 8


# element types atomics work on (SPIR-V atomics need 32- or 64-bit ints; floats go through a
# 32-bit compare-exchange loop)
ATOMIC_TYPES = (ir.I32, ir.U32, ir.I64, ir.U64, ir.F32)


def atomic_form(name: str) -> str:
    args = "xs, i, expected, new" if name == "atomic_compare_exchange" else "xs, i, v"
    return (
        f"a statement of its own (`{name}({args})`) or the value of an assignment "
        f"(`old = {name}({args})`)"
    )


class MemoryLowering:
    """Mixin of stmts.StmtLowerer: the two call forms that are statements, not values."""

    # ------------------------------------------------------------------ shared arrays

    def declare_shared(
        self, node: ast.Assign, call: ast.Call, what: str = "shared"
    ) -> list[ir.Stmt]:
        """`name = shared(type, size)`, or `name = local(type, size)` (`what`): the one rule
        for both kinds of array declared in the body."""
        ctx = self.ctx
        private = what == "local"
        kind = "local array" if private else "shared array"
        form, example = array_form(what), f"{what}(float, {64 if private else 256})"
        target = node.targets[0]
        if len(node.targets) != 1 or not isinstance(target, ast.Name):
            self.fail(
                node,
                f"{what}() declares {array_what(what)}; it cannot be assigned to `{ast.unparse(node.targets[0])}`"
                if len(node.targets) == 1
                else f"a {kind} is declared with one name",
                form,
            )
        name = target.id
        if ctx.block_depth:
            once = "is zero-filled once per invocation" if private else "exists once per workgroup"
            self.fail(
                node,
                f"{kind} `{name}` must be declared at the top level of the kernel body "
                f"(it {once}, not per branch or iteration)",
                form,
            )
        p = ctx.param(name)
        if p is not None:
            self.fail(
                target,
                f"`{name}` is a {python_type_name(p.type)} parameter; a {kind} needs a new name",
                form,
            )
        if name in ctx.shared or name in ctx.locals:
            self.fail(
                target,
                f"`{name}` is already defined above; a {kind} needs a new name",
                form,
            )
        if call.keywords:
            self.fail(call.keywords[0], f"{what}() takes positional arguments", example)
        if len(call.args) != 2:
            self.fail(
                call,
                f"{what}() takes 2 arguments (type, size); got {len(call.args)}",
                example,
            )
        elem = type_from_node(call.args[0])
        if not isinstance(elem, ir.Scalar):
            self.fail(
                call.args[0],
                f"unsupported {kind} element type `{ast.unparse(call.args[0])}`",
                ALLOWED_LOCAL_TYPES,
            )
        size = self._size(call.args[1], kind)
        line = ctx.source.position(node)[0]
        array = ir.SharedArray(name, elem, size, line, private)
        if not tr.is_legacy(elem):
            ctx.note_type(elem, call.args[0])
        same = [a for a in ctx.shared_arrays if a.private == private] + [array]
        used = sum(a.size * elem_bytes(a.elem) for a in same)
        limit = MAX_LOCAL_BYTES if private else ctx.max_shared_memory
        if limit is not None and used > limit:
            parts = ", ".join(f"`{a.name}` {a.size * elem_bytes(a.elem)}" for a in same)
            where = (
                "an invocation may hold (local arrays are meant to stay in registers)"
                if private
                else "bytes of workgroup memory this device has (maxComputeSharedMemorySize)"
            )
            self.fail(
                call,
                f"{kind}s need {used} bytes ({parts}), more than the {limit} "
                + ("bytes " + where if private else where),
                f"smaller {kind}s (4 bytes per element), e.g. a smaller tile",
            )
        ctx.shared[name] = len(ctx.shared_arrays)
        ctx.shared_arrays.append(array)
        return []

    def _size(self, node: ast.expr, kind: str = "shared array") -> int:
        from .. import passes

        wg = self.ctx.workgroup_size

        def fold(e: ir.Expr) -> ir.Expr:
            if isinstance(e, ir.Builtin) and e.kind is ir.BuiltinKind.WORKGROUP_SIZE:
                return tr.const(wg[e.axis])
            return passes.fold_expr(e)

        value = passes.map_expr(self.x.expr(node), fold)
        if not isinstance(value, ir.Const) or not value.type.is_int:
            what = "a float" if value.type.is_float else "not known when compiling"
            self.fail(
                node,
                f"the size of a {kind} must be a constant int; this is {what}",
                _SIZE_ALLOWED,
            )
        if value.value < 1:
            self.fail(
                node,
                f"the size of a {kind} must be at least 1; this is {value.value}",
                _SIZE_ALLOWED,
            )
        return int(value.value)

    # ------------------------------------------------------------------------ atomics

    def atomic(
        self, call: ast.Call, name: str, want_result: bool
    ) -> tuple[list[ir.Stmt], ir.Expr | None]:
        """The `ir.Atomic` for `name(xs, i, v)` and, when `want_result`, a local holding the old
        value."""
        x = self.x
        op = ATOMIC_OPS[name]
        if call.keywords:
            self.fail(call.keywords[0], f"{name}() takes positional arguments", atomic_form(name))
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                self.fail(
                    arg, "starred arguments (`*x`) are not supported in kernels", atomic_form(name)
                )
        want = 4 if op is AtomicOp.COMPARE_EXCHANGE else 3
        if len(call.args) != want:
            self.fail(
                call, f"{name}() takes {want} arguments; got {len(call.args)}", atomic_form(name)
            )
        space, index = x.array_ref(call.args[0], f"updated by {name}()", atomic=True)
        if space == "shared":
            arr = self.ctx.shared_arrays[index]
            elem, shown = arr.elem, f"shared array `{arr.name}` ({tr.type_name(arr.elem)} elements)"
        else:
            p = self.ctx.params[index]
            elem, shown = p.type.elem, f"`{p.name}` ({python_type_name(p.type)})"  # type: ignore[union-attr]
        if not elem.is_bool and elem not in ATOMIC_TYPES:
            self.fail(
                call.args[0],
                f"atomics need int, float, u32, i64 or u64 elements (32/64-bit ints, float32); "
                f"{shown} holds {elem}",
                "a list[int], list[float], list[u32], list[i64] or list[u64]",
            )
        if space == "shared" and elem.bits == 64:
            self.fail(
                call.args[0],
                f"64-bit atomics work on lists, not on shared arrays; {shown} holds {elem}",
                "a shared array of int or u32, or atomics on a list[i64]/list[u64]",
            )
        if elem.is_bool:
            self.fail(
                call.args[0],
                f"atomics need int or float elements; {shown} holds bools",
                "a list[int] of 0/1 values",
            )
        if elem.is_float and op in _INT_ONLY:
            self.fail(
                call,
                f"{name}() works on int elements; {shown} holds floats",
                "atomic_add, atomic_min, atomic_max, atomic_exchange or atomic_compare_exchange on floats",
            )
        idx = x.index(call.args[1])
        values = [
            self.coerce(a, x.expr(a), elem, f"an element of {shown} in {name}()")
            for a in call.args[2:]
        ]
        comparator = None
        if op is AtomicOp.COMPARE_EXCHANGE:
            comparator, value = values
        else:
            (value,) = values
        result = None
        ref = None
        if want_result:
            result = self.ctx.hidden("old")
            self.ctx.declare(result, elem, call)
            ref = ir.LocalRef(elem, result)
        stmt = ir.Atomic(op, space == "shared", index, tr.cast(idx, I32), value, comparator, result)
        return [stmt], ref
