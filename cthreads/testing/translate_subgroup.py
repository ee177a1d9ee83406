"""Subgroup operations in the emulator: translation (a mixin of `KernelTranslator`) and the
workgroup scheduler that runs them.

A subgroup is `subgroup_size` consecutive invocations of a workgroup, by local linear index
(`ThreadIdx.x + BlockDim.x * (ThreadIdx.y + BlockDim.y * ThreadIdx.z)`); the last one is partial
when the workgroup size is not a multiple. Kernels using subgroup operations become generators:
`s = subgroup_add(x)` turns into `s = yield (key, 'add', x, None)`. The scheduler advances the
invocations of a workgroup (in increasing index) until each waits at a subgroup operation or a
barrier or has returned, then, per subgroup, serves the operation instance that comes first in
program order among the waiting ones: every invocation waiting at that same instance takes part
(the *active* invocations), the others wait for their own turn. An instance is the statement
plus the iteration number of every enclosing loop, so invocations that take different branches
run an operation separately and meet again afterwards (maximal reconvergence, the behaviour of
structured control flow on SIMT hardware; Vulkan leaves non-uniform cases to the device).
"""

from __future__ import annotations

import ast
import math

from ..compiler.frontend.subgroup import SUBGROUP_OPS as LANGUAGE_OPS
from . import semantics as S
from .translate import NARROW, WIDE_INTS, narrow_wrap

SUBGROUP_VALUES = {
    "subgroup_size": "_ct_sg_size",
    "subgroup_lane": "_ct_sg_lane",
    "subgroup_id": "_ct_sg_id",
    "num_subgroups": "_ct_sg_count",
}
# result type ('arith': the argument's, widened as arithmetic does; 'same': the argument's
# as it is) -> the operations giving it
_RESULTS = {
    "arith": ("add", "min", "max", "inclusive_add", "exclusive_add"),
    "same": ("broadcast", "broadcast_first", "shuffle", "shuffle_xor"),
    "int": ("ballot",),
    "bool": ("elect", "all", "any"),
}
# name -> (argument count, result type); the argument lists are the language's (the frontend's)
SUBGROUP_OPS = {
    f"subgroup_{op}": (len(LANGUAGE_OPS[f"subgroup_{op}"][1]), result)
    for result, ops in _RESULTS.items()
    for op in ops
}
SUBGROUP_TAGS = frozenset(SUBGROUP_VALUES) | frozenset(SUBGROUP_OPS)
_COND = ("subgroup_ballot", "subgroup_all", "subgroup_any")
DEFAULT_SUBGROUP_SIZE = 32


def uses_subgroups(tree: ast.FunctionDef, callee) -> bool:
    """Whether the kernel calls a subgroup function anywhere (before translating it)."""
    return any(isinstance(n, ast.Call) and callee(n.func) in SUBGROUP_TAGS for n in ast.walk(tree))


class SubgroupTranslator:
    """Mixin for translate_stmt.KernelTranslator."""

    has_subgroup = False
    sg_loops: list

    def subgroup_value(self, node: ast.Call, what: str) -> tuple[str, str]:
        if node.args or node.keywords:
            raise self.error(node, f"{what}() takes no arguments")
        self.has_subgroup = True
        return SUBGROUP_VALUES[what], "int"

    def loop_counter(self, st: ast.AST, indent: int) -> str | None:
        """Before a loop of a subgroup kernel: a counter of its iterations (part of the
        instance key); the caller increments it first thing in the body."""
        if not self.uses_sg:
            return None
        var = self.tmp()
        self.emit(indent, f"{var} = 0", st)
        self.sg_loops.append(((st.lineno, st.col_offset), var))
        return var

    def subgroup_op(self, call: ast.Call, what: str, st: ast.AST, indent: int) -> tuple[str, str]:
        """Emit the yield for one operation; returns (variable holding the result, type)."""
        nargs, result = SUBGROUP_OPS[what]
        if call.keywords or len(call.args) != nargs:
            raise self.error(call, f"{what}() takes {nargs} positional argument(s)")
        self.has_subgroup = True
        codes = []
        value_t = "bool"
        for i, a in enumerate(call.args):
            if i == 0 and what in _COND:
                code, t = self.truth(a), "bool"
            else:
                code, t = self.expr(a)
            if i == 0:
                if result == "arith" and t == "bool":
                    code, t = self.coerce(code, t, "int"), "int"
                if result in ("arith", "same") and t in NARROW:  # the compiler's widening
                    w = "float" if t == "f16" else "int"
                    code, value_t, t = self.coerce(code, t, w), t, w
                else:
                    value_t = t
            elif t == "float":
                raise self.error(a, f"the lane of {what}() must be an int")
            else:
                code = self.coerce(code, t, "int")
            v = self.tmp()
            self.emit(indent, f"{v} = {code}", st)
            codes.append(v)
        key = []
        for pos, var in self.sg_loops:
            key += [repr(pos), var]
        key.append(repr((call.lineno, call.col_offset)))
        value = codes[0] if codes else "None"
        lane = codes[1] if len(codes) > 1 else "None"
        out = self.tmp()
        # the op, with the value type when it is not int/float ('add/u32'): wrapping and rounding
        op = what[9:] + (f"/{t}" if result == "arith" and t in ("f64", *WIDE_INTS) else "")
        self.emit(indent, f"{out} = yield (({', '.join(key)},), {op!r}, {value}, {lane})", st)
        t = {"arith": value_t, "same": value_t, "int": "int", "bool": "bool"}[result]
        return (narrow_wrap(out, t) if t in NARROW else out), t


# ------------------------------------------------------------------------------ scheduler


def _zero(v):
    return type(v)(0) if isinstance(v, (bool, int, float)) else 0


def _fminmax(values: list[float], pick) -> float:
    """Float subgroup_min/max as codegen_subgroup defines them on every device: NaN when any
    lane holds NaN (#21; the H200 gave NaN), else the least / greatest value, -0.0 below 0.0."""
    if any(math.isnan(v) for v in values):
        return math.nan
    r = pick(values)
    if r == 0.0:  # a tie of zeros: min takes -0.0 if any lane has it, max +0.0
        want = -1.0 if pick is min else 1.0
        return math.copysign(0.0, want if any(math.copysign(1.0, v) == want for v in values
                                              if v == 0.0) else -want)  # fmt: skip
    return r


def compute(op: str, part: list[tuple[int, object, object]], size: int) -> list:
    """Results for the participants `part` = [(lane, value, lane argument)] in lane order."""
    op, _, t = op.partition("/")  # t: 'f64', 'i64', 'u32', 'u64' or '' (int / float)
    vals = [v for _, v, _ in part]
    n = len(part)
    is_float = bool(vals) and isinstance(vals[0], float)
    if op in ("add", "inclusive_add", "exclusive_add"):
        zero = 0.0 if is_float else 0
        inclusive, acc = [], None
        for v in vals:  # in lane order, rounding after each addition
            if acc is None:
                acc = v
            elif is_float:
                acc = acc + v if t == "f64" else S.f32(acc + v)
            else:
                acc = S.wrap_to(acc + v, t or "int")
            inclusive.append(acc)
        if op == "add":
            return [acc] * n
        if op == "exclusive_add":
            return [zero, *inclusive[:-1]]
        return inclusive
    if op in ("min", "max"):
        pick = min if op == "min" else max
        r = _fminmax(vals, pick) if is_float else pick(vals)
        return [r] * n
    if op == "ballot":
        return [sum(1 for v in vals if v)] * n
    if op == "elect":
        return [True] + [False] * (n - 1)
    if op == "all":
        return [all(vals)] * n
    if op == "any":
        return [any(vals)] * n
    if op == "broadcast_first":
        return [vals[0]] * n
    by_lane = {lane: v for lane, v, _ in part}

    def read(target: int, like):
        return by_lane[target] if 0 <= target < size and target in by_lane else _zero(like)

    if op == "broadcast":  # the lane of the first active invocation counts
        target = part[0][2]
        return [read(target, v) for v in vals]
    if op == "shuffle":
        return [read(arg, v) for _, v, arg in part]
    if op == "shuffle_xor":
        return [read(lane ^ arg, v) for lane, v, arg in part]
    raise AssertionError(op)


def run_workgroups(inv, groups, wg, state, size: int, groups_fn, members_fn, undefined) -> None:
    """Run every workgroup of a kernel with subgroup operations (and perhaps barriers)."""
    for group in groups_fn(groups):
        members = members_fn(group, wg)
        inv.new_group()
        gens = [inv(*ids) for ids in members]
        count = len(members)
        send: list = [None] * count
        ready = list(range(count))
        done: list[int] = []
        at_sg: dict[int, tuple] = {}
        at_barrier: dict[int, int] = {}
        while True:
            for k in sorted(ready):
                state[:] = members[k]
                try:
                    got = gens[k].send(send[k])
                except StopIteration:
                    done.append(k)
                    continue
                if isinstance(got, tuple):
                    at_sg[k] = got
                else:
                    at_barrier[k] = got
            ready = []
            if at_sg:
                for first in range(0, count, size):
                    waiting = [k for k in range(first, min(first + size, count)) if k in at_sg]
                    if not waiting:
                        continue
                    key = min(at_sg[k][0] for k in waiting)
                    part = [k for k in waiting if at_sg[k][0] == key]
                    op = at_sg[part[0]][1]
                    results = compute(
                        op, [(k - first, at_sg[k][2], at_sg[k][3]) for k in part], size
                    )
                    for k, r in zip(part, results):
                        send[k] = r
                        del at_sg[k]
                        ready.append(k)
                continue
            if not at_barrier:
                break
            waiting = sorted(at_barrier)
            if done:
                raise undefined(
                    f"barrier at line {at_barrier[waiting[0]]} is reached by {len(waiting)} "
                    f"invocation(s) while {len(done)} returned (e.g. GlobalIdx.x="
                    f"{members[done[0]][0]}); a barrier must be reached by every invocation of "
                    "the workgroup"
                )
            lines = set(at_barrier.values())
            if len(lines) > 1:
                raise undefined(
                    f"invocations of one workgroup wait at different barriers (lines {sorted(lines)})"
                )
            ready = waiting
            send = [None] * count
            at_barrier = {}


def default_subgroup_size() -> int:
    """The default device's subgroup size (without opening it), else 32."""
    try:
        from ..runtime.lifecycle import default_device_info

        return int(default_device_info().limits.get("subgroup_size", DEFAULT_SUBGROUP_SIZE))
    except Exception:  # noqa: BLE001 - no Vulkan, no device: the documented fallback
        return DEFAULT_SUBGROUP_SIZE
