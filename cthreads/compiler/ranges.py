"""Value ranges of int32 expressions, to drop bounds checks that can never fail.

Every shared-array access is guarded on the device (SPEC §5.6: an out-of-range read gives zero,
an out-of-range write is skipped). In a tiled kernel the indexes are built from `ThreadIdx`,
loop counters of `range(...)` with constant bounds and constants, so the guard is provably
dead, yet it costs a compare and two selects per access in the innermost loop.
`shared_accesses_in_range(kernel)` runs an interval analysis over the structured IR and returns
the `SharedLoad`/`SharedStore` nodes whose index is inside the array on every path;
`tile_offset_ranges(kernel)` the interval of every tile load's and store's offset, from which
codegen_tiles.py drops the parts of a tile's guard that cannot fail (issue 18: the guards of
`wide`'s fragment loads were ~2/3 of its inner loop's instructions).

The analysis is flow-sensitive over the structured statements: an assignment sets a local's
interval, `if` arms are analysed apart and joined, a loop iterates to a post-fixpoint (bounds
that keep moving are widened to the int32 limits) and its condition narrows the loop counter
inside the body. Any int32 result that could wrap, and anything it does not model (parameters,
list loads, casts, calls), is the full int32 range, so it can only fail to prove, never prove
wrongly. A node object reached twice (shared sub-trees) is proven only if every visit proves it.
"""

from __future__ import annotations

from . import ir
from .semantics import INT_MAX, INT_MIN

Interval = tuple[int, int]
TOP: Interval = (INT_MIN, INT_MAX)
_WIDEN_AFTER = 3  # loop iterations before moving bounds are widened


def _fit(lo: int, hi: int) -> Interval:
    """The interval, or TOP when the exact result leaves int32 (the device wraps)."""
    return (lo, hi) if INT_MIN <= lo <= hi <= INT_MAX else TOP


def _join(a: Interval, b: Interval) -> Interval:
    return (min(a[0], b[0]), max(a[1], b[1]))


class _NoFixpoint(Exception):
    pass


class _Analysis:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.wg = kernel.workgroup_size
        self.sizes = [s.size for s in kernel.shared]
        self.verdict: dict[int, bool] = {}  # id(node) -> proven on every visit so far
        self.nodes: dict[int, object] = {}  # keeps visited nodes alive (stable ids)
        self.offsets: dict[int, Interval] = {}  # id(tile access) -> its offset, every visit
        # invocations of a workgroup: a subgroup id is below it (a subgroup has >= 1 lane)
        self.invocations = self.wg[0] * self.wg[1] * self.wg[2]

    # ---------------------------------------------------------------- expressions
    def value(self, e: ir.Expr, env: dict[str, Interval]) -> Interval:
        self.visit_expr(e, env)
        return self.interval(e, env)

    def interval(self, e: ir.Expr, env: dict[str, Interval]) -> Interval:
        if e.type != ir.I32:
            return TOP
        if isinstance(e, ir.Const):
            return (int(e.value), int(e.value))
        if isinstance(e, ir.LocalRef):
            return env.get(e.name, TOP)
        if isinstance(e, ir.Builtin):
            size = self.wg[e.axis]
            if e.kind is ir.BuiltinKind.LOCAL_ID:
                return (0, size - 1)
            if e.kind is ir.BuiltinKind.WORKGROUP_SIZE:
                return (size, size)
            return TOP
        if isinstance(e, ir.SubgroupValue):
            # Vulkan: a subgroup has 1 to 128 lanes, a workgroup at least one subgroup
            return {
                "id": (0, self.invocations - 1),
                "count": (1, self.invocations),
                "lane": (0, 127),
                "size": (1, 128),
            }.get(e.what, TOP)
        if isinstance(e, ir.Select):
            a, b = self.interval(e.if_true, env), self.interval(e.if_false, env)
            return (min(a[0], b[0]), max(a[1], b[1]))
        if isinstance(e, ir.Binary):
            return self.binary(e.op, self.interval(e.lhs, env), self.interval(e.rhs, env))
        return TOP

    @staticmethod
    def binary(op: ir.BinOp, a: Interval, b: Interval) -> Interval:
        (a0, a1), (b0, b1) = a, b
        if op is ir.BinOp.ADD:
            return _fit(a0 + b0, a1 + b1)
        if op is ir.BinOp.SUB:
            return _fit(a0 - b1, a1 - b0)
        if op is ir.BinOp.MUL:
            corners = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
            return _fit(min(corners), max(corners))
        if op is ir.BinOp.FLOORDIV and b0 > 0:  # Python floor division by a positive divisor
            corners = (a0 // b0, a0 // b1, a1 // b0, a1 // b1)
            return _fit(min(corners), max(corners))
        if op is ir.BinOp.MOD and b0 > 0:  # the result takes the divisor's sign
            return (0, b1 - 1) if a0 < 0 or a1 >= b0 else (a0, a1)
        if op is ir.BinOp.MIN:
            return (min(a0, b0), min(a1, b1))
        if op is ir.BinOp.MAX:
            return (max(a0, b0), max(a1, b1))
        if op is ir.BinOp.BIT_AND and (a0 >= 0 or b0 >= 0):
            return (0, min(x[1] for x in (a, b) if x[0] >= 0))
        return TOP

    def visit_expr(self, e: ir.Expr, env: dict[str, Interval]) -> None:
        """Judge every shared load inside `e` (its operands too)."""
        if isinstance(e, ir.SharedLoad):
            self.judge(e, e.array, e.index, env)
        for child in ir.children(e):
            self.visit_expr(child, env)

    def judge(self, node: object, array: int, index: ir.Expr, env: dict[str, Interval]) -> None:
        lo, hi = self.interval(index, env)
        ok = 0 <= lo and hi < self.sizes[array]
        self.nodes[id(node)] = node
        self.verdict[id(node)] = self.verdict.get(id(node), True) and ok

    # ---------------------------------------------------------------- conditions
    def narrow(self, cond: ir.Expr, env: dict[str, Interval]) -> dict[str, Interval]:
        """`env` where `cond` is known true (only `local <op> expr` and `and` are used)."""
        if isinstance(cond, ir.Binary) and cond.op is ir.BinOp.AND:
            return self.narrow(cond.rhs, self.narrow(cond.lhs, env))
        if not isinstance(cond, ir.Compare) or cond.lhs.type != ir.I32:
            return env
        op, lhs, rhs = cond.op, cond.lhs, cond.rhs
        flip = {ir.CmpOp.LT: ir.CmpOp.GT, ir.CmpOp.LE: ir.CmpOp.GE}
        if not isinstance(lhs, ir.LocalRef) and isinstance(rhs, ir.LocalRef):
            op = flip.get(op) or {v: k for k, v in flip.items()}.get(op, op)
            lhs, rhs = rhs, lhs
        if not isinstance(lhs, ir.LocalRef):
            return env
        (lo, hi), (r0, r1) = env.get(lhs.name, TOP), self.interval(rhs, env)
        if op is ir.CmpOp.LT:
            hi = min(hi, r1 - 1)
        elif op is ir.CmpOp.LE:
            hi = min(hi, r1)
        elif op is ir.CmpOp.GT:
            lo = max(lo, r0 + 1)
        elif op is ir.CmpOp.GE:
            lo = max(lo, r0)
        elif op is ir.CmpOp.EQ:
            lo, hi = max(lo, r0), min(hi, r1)
        hi = max(hi, lo)  # (lo > hi: the condition never holds, nothing here is reached)
        return {**env, lhs.name: (lo, hi)}

    # ---------------------------------------------------------------- statements
    def block(self, stmts: tuple[ir.Stmt, ...], env: dict[str, Interval], jumps: list) -> dict:
        for s in stmts:
            env = self.stmt(s, env, jumps)
        return env

    def stmt(self, s: ir.Stmt, env: dict[str, Interval], jumps: list) -> dict[str, Interval]:
        if isinstance(s, ir.Assign):
            return {**env, s.name: self.value(s.value, env)}
        if isinstance(s, ir.SharedStore):
            self.judge(s, s.array, s.index, env)
        if isinstance(s, (ir.TileLoad, ir.TileStore)):
            seen = self.offsets.get(id(s))
            now = self.interval(s.offset, env)
            self.nodes[id(s)] = s
            self.offsets[id(s)] = now if seen is None else _join(seen, now)
        if isinstance(s, ir.If):
            self.visit_expr(s.cond, env)
            then = self.block(s.then, self.narrow(s.cond, env), jumps)
            orelse = self.block(s.orelse, env, jumps)
            return _join_envs(then, orelse)
        if isinstance(s, ir.Loop):
            return self.loop(s, env)
        if isinstance(s, (ir.Break, ir.Continue)):
            jumps.append(env)  # the state a jump carries to the loop's step / exit
            return env
        for e in ir.stmt_exprs(s):
            self.visit_expr(e, env)
        return env

    def loop(self, s: ir.Loop, entry: dict[str, Interval]) -> dict[str, Interval]:
        head = entry
        for round_ in range(64):
            self.visit_expr(s.cond, head)
            jumps: list = []
            end = self.block(s.body, self.narrow(s.cond, head), jumps)
            for j in jumps:  # a `continue` runs the step; a `break` skips it (joined: safe)
                end = _join_envs(end, j)
            after = self.block(s.step, end, [])
            new = _join_envs(entry, after)
            if all(_within(new.get(k, TOP), head.get(k, TOP)) for k in new):
                return _join_envs(head, end)  # post-fixpoint: the exit sees head or a break
            if round_ >= _WIDEN_AFTER:
                new = {k: _widen(head.get(k, TOP), v) for k, v in new.items()}
            head = new
        raise _NoFixpoint  # (not expected: widening converges within two more rounds)


def _within(a: Interval, b: Interval) -> bool:
    return b[0] <= a[0] and a[1] <= b[1]


def _widen(old: Interval, new: Interval) -> Interval:
    return (INT_MIN if new[0] < old[0] else old[0], INT_MAX if new[1] > old[1] else old[1])


def _join_envs(a: dict[str, Interval], b: dict[str, Interval]) -> dict[str, Interval]:
    # a local missing on one side is not assigned on that path: it could hold anything
    return {k: _join(a.get(k, TOP), b.get(k, TOP)) for k in a.keys() | b.keys()}


def _analysed(kernel: ir.Kernel) -> _Analysis | None:
    analysis = _Analysis(kernel)
    try:
        analysis.block(kernel.body, {}, [])
    except _NoFixpoint:
        return None
    return analysis


def shared_accesses_in_range(kernel: ir.Kernel) -> dict[int, object]:
    """The kernel's SharedLoad / SharedStore nodes whose index is always in range, as
    `{id(node): node}` (check `proven.get(id(n)) is n`: IR nodes compare by value, and equal
    nodes elsewhere in the body may not be in range)."""
    analysis = _analysed(kernel)
    if analysis is None:
        return {}
    return {k: analysis.nodes[k] for k, ok in analysis.verdict.items() if ok}


def tile_offset_ranges(kernel: ir.Kernel) -> dict[int, tuple[object, Interval]]:
    """`{id(node): (node, (lo, hi))}`: the offset of each TileLoad / TileStore lies in
    [lo, hi] on every path (TOP where nothing is known; check the node's identity as above)."""
    analysis = _analysed(kernel)
    if analysis is None:
        return {}
    return {k: (analysis.nodes[k], iv) for k, iv in analysis.offsets.items()}
