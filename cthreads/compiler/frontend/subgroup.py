"""Subgroup operations: `s = subgroup_add(x)`, `lane = subgroup_lane()`, ...

The builtins `subgroup_size()`, `subgroup_lane()`, `subgroup_id()` and `num_subgroups()` are
plain int values (`ir.SubgroupValue`). The operations depend on which invocations execute them
together, so like atomics they are statements (`ir.Subgroup`): the value of an assignment
(`s = subgroup_add(x)`, `s: float = ...`, `y[i] = subgroup_max(v)`), never part of a larger
expression, a condition or `and`/`or` (which evaluate both sides). The device features each
needs (`Target.subgroup_*`) are checked when compiling for a target (compile.py).

Value types: 32-bit values (int, float, bool, u32) need nothing more; i64/u64/f64 values need
`Target.subgroup_extended_types` (Vulkan 1.2 shaderSubgroupExtendedTypes). Narrow values (f16,
i8, u8, i16, u16) take part widened to 32 bits and the result is converted back, as narrow
arithmetic does everywhere (so `subgroup_add` of u8 wraps modulo 256, and no extended types are
needed for them).
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import BOOL, I32, SubgroupOp
from . import typerules as tr

# name -> what (ir.SubgroupValue)
SUBGROUP_VALUES = {
    "subgroup_size": "size",
    "subgroup_lane": "lane",
    "subgroup_id": "id",
    "num_subgroups": "count",
}
# name -> (op, argument names)
SUBGROUP_OPS: dict[str, tuple[SubgroupOp, tuple[str, ...]]] = {
    "subgroup_add": (SubgroupOp.ADD, ("x",)),
    "subgroup_min": (SubgroupOp.MIN, ("x",)),
    "subgroup_max": (SubgroupOp.MAX, ("x",)),
    "subgroup_inclusive_add": (SubgroupOp.INCLUSIVE_ADD, ("x",)),
    "subgroup_exclusive_add": (SubgroupOp.EXCLUSIVE_ADD, ("x",)),
    "subgroup_broadcast": (SubgroupOp.BROADCAST, ("x", "lane")),
    "subgroup_broadcast_first": (SubgroupOp.BROADCAST_FIRST, ("x",)),
    "subgroup_ballot": (SubgroupOp.BALLOT, ("cond",)),
    "subgroup_elect": (SubgroupOp.ELECT, ()),
    "subgroup_all": (SubgroupOp.ALL, ("cond",)),
    "subgroup_any": (SubgroupOp.ANY, ("cond",)),
    "subgroup_shuffle": (SubgroupOp.SHUFFLE, ("x", "lane")),
    "subgroup_shuffle_xor": (SubgroupOp.SHUFFLE_XOR, ("x", "mask")),
}
SUBGROUP_NAMES = frozenset(SUBGROUP_VALUES) | frozenset(SUBGROUP_OPS)

# The device feature (Target field, `python -m cthreads.gpu info` name) each operation needs.
_ARITH = (SubgroupOp.ADD, SubgroupOp.MIN, SubgroupOp.MAX)
_SCANS = (SubgroupOp.INCLUSIVE_ADD, SubgroupOp.EXCLUSIVE_ADD)
OP_FEATURES: dict[SubgroupOp, tuple[str, ...]] = {
    **{op: ("subgroup_arithmetic",) for op in (*_ARITH, *_SCANS)},
    SubgroupOp.BROADCAST: ("subgroup_ballot",),
    SubgroupOp.BROADCAST_FIRST: ("subgroup_ballot",),
    SubgroupOp.BALLOT: ("subgroup_ballot",),
    SubgroupOp.ELECT: ("subgroup_basic",),
    SubgroupOp.ALL: ("subgroup_vote",),
    SubgroupOp.ANY: ("subgroup_vote",),
    # the shuffles read the active-invocation mask (a ballot) to give 0 for inactive lanes
    SubgroupOp.SHUFFLE: ("subgroup_shuffle", "subgroup_ballot"),
    SubgroupOp.SHUFFLE_XOR: ("subgroup_shuffle", "subgroup_ballot"),
}
# The SPIR-V capability behind each feature (for messages).
FEATURE_CAPABILITY = {
    "subgroup_basic": "GroupNonUniform",
    "subgroup_arithmetic": "GroupNonUniformArithmetic",
    "subgroup_ballot": "GroupNonUniformBallot",
    "subgroup_vote": "GroupNonUniformVote",
    "subgroup_shuffle": "GroupNonUniformShuffle",
    # not a capability of its own: the Vulkan feature that allows Int64/Float64 operands
    "subgroup_extended_types": "GroupNonUniform* on Int64/Float64 values, allowed by Vulkan 1.2's "
    "shaderSubgroupExtendedTypes",
}


def subgroup_form(name: str) -> str:
    args = ", ".join(SUBGROUP_OPS[name][1]) if name in SUBGROUP_OPS else ""
    return (
        f"the value of an assignment of its own, e.g. `s = {name}({args})`, then use `s` "
        "(subgroup operations are statements, like atomics)"
    )


class SubgroupValues:
    """Mixin of exprs.ExprLowerer: the subgroup builtins that are values."""

    def subgroup_value(self, node: ast.Call, name: str) -> ir.Expr:
        """A subgroup builtin value, or the error for an operation used inside an expression."""
        if name in SUBGROUP_VALUES:
            if node.args or node.keywords:
                self.fail(node, f"{name}() takes no arguments", f"{name}()")
            return ir.SubgroupValue(I32, SUBGROUP_VALUES[name], self.ctx.source.position(node)[0])
        self.fail(
            node,
            f"`{name}()` depends on which invocations run it together, so it cannot be part of an "
            "expression",
            subgroup_form(name),
        )


class SubgroupLowering:
    """Mixin of stmts.StmtLowerer: the subgroup operations, statements like atomics."""

    def subgroup_call(
        self, call: ast.Call, name: str, want_result: bool
    ) -> tuple[list[ir.Stmt], ir.Expr | None]:
        """The `ir.Subgroup` for `name(args)` and a local holding its result."""
        if name in SUBGROUP_VALUES:  # `n = subgroup_size()`: an ordinary value
            return [], self.x.expr(call)
        op, names = SUBGROUP_OPS[name]
        if not want_result:
            self.fail(call, f"`{name}()` alone has no effect", subgroup_form(name))
        if call.keywords:
            self.fail(call.keywords[0], f"{name}() takes positional arguments", subgroup_form(name))
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                self.fail(
                    arg,
                    "starred arguments (`*x`) are not supported in kernels",
                    subgroup_form(name),
                )
        if len(call.args) != len(names):
            self.fail(
                call,
                f"{name}() takes {len(names)} argument(s) ({', '.join(names) or 'none'}); "
                f"got {len(call.args)}",
                subgroup_form(name),
            )
        val: ir.Expr | None = None
        lane: ir.Expr | None = None
        narrow: ir.Scalar | None = None
        if names and names[0] == "cond":
            val = self.x.condition(call.args[0])
            t = I32 if op is SubgroupOp.BALLOT else BOOL
        elif names:
            val = self.x.expr(call.args[0])
            if op in _ARITH or op in _SCANS:
                val = tr.cast(val, tr.arith_type(val.type))  # bools add up as ints
            narrow = val.type if tr.is_narrow(val.type) else None
            if narrow is not None:  # computed in 32 bits, converted back below
                val = tr.cast(val, tr.wide(narrow))
            t = val.type
        else:
            t = BOOL
        if len(names) == 2:
            lane = self.x.expr(call.args[1])
            if lane.type.is_float:
                self.fail(
                    call.args[1],
                    f"the {names[1]} of {name}() must be an int, but this is a float",
                    "int(...) to convert",
                )
            lane = tr.cast(lane, I32)
        ctx = self.ctx
        result = ctx.hidden("sg")
        ctx.declare(result, t, call)
        stmt = ir.Subgroup(op, t, result, val, lane, ctx.source.position(call)[0])
        if narrow is not None:
            return [stmt], tr.cast(ir.LocalRef(t, result), narrow)  # wraps / rounds back
        return [stmt], ir.LocalRef(t, result)


def missing_features(kernel: ir.Kernel, target) -> tuple[str, int, str] | None:
    """(feature, file line, function name) of the first subgroup use `target` cannot run."""
    from .. import passes

    def lacks(feature: str) -> bool:
        return not getattr(target, feature, False)

    for st in passes.walk_stmts(kernel.body):
        if isinstance(st, ir.Subgroup):
            needs = OP_FEATURES[st.op]
            if st.type.bits == 64:  # named first: the more specific reason
                needs = ("subgroup_extended_types", *needs)
            for feature in needs:
                if lacks(feature):
                    return feature, st.line, f"subgroup_{st.op.value}"
        for e in passes.stmt_exprs(st):
            for x in passes.walk_exprs(e):
                if isinstance(x, ir.SubgroupValue) and lacks("subgroup_basic"):
                    name = next(n for n, w in SUBGROUP_VALUES.items() if w == x.what)
                    return "subgroup_basic", x.line, name
    return None
