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

Each value is an interval with a residue (v = r mod m): the residue proves a tile offset
aligned and keeps a stepped loop counter to the values it takes (`range(0, 32, 16)`: 0 and
16, so the last fragment of a block is seen to fit), and `subgroup_id()` is bounded by the
target's minimum subgroup size. Together they leave `wide`'s inner loop with no guard at all.

The analysis is flow-sensitive over the structured statements: an assignment sets a local's
interval, `if` arms are analysed apart and joined, a loop iterates to a post-fixpoint (bounds
that keep moving are widened to the int32 limits) and its condition narrows the loop counter
inside the body. Any int32 result that could wrap, and anything it does not model (parameters,
list loads, casts, calls), is the full int32 range, so it can only fail to prove, never prove
wrongly. A node object reached twice (shared sub-trees) is proven only if every visit proves it.
"""

from __future__ import annotations

from math import gcd

from . import ir
from .semantics import INT_MAX, INT_MIN

Interval = tuple[int, int]
# A value the analysis knows: lo <= v <= hi and v = r (mod m); m = 0 means v = r exactly, m = 1
# nothing beyond the bounds. The residue proves alignment (a tile offset a multiple of two
# words) and tightens a loop counter: `for ks in range(0, 32, 16)` is 0 or 16, not 0 .. 31.
Value = tuple[int, int, int, int]
TOP: Interval = (INT_MIN, INT_MAX)
_UNKNOWN: Value = (*TOP, 1, 0)  # nothing known: int32's whole range, any residue
_WIDEN_AFTER = 3  # loop iterations before moving bounds are widened


def _exact(c: int) -> Value:
    return (c, c, 0, c)


def _make(lo: int, hi: int, m: int, r: int) -> Value:
    """A Value from bounds that may leave int32 (then the full range: the result may wrap,
    and of the residue only its power-of-two part survives a wrap modulo 2**32) and a
    residue; the bounds are moved in to the nearest values of the residue class."""
    if lo < INT_MIN or hi > INT_MAX:
        low_bits = m & -m  # the largest power of two dividing m (0 for an exact value)
        return (INT_MIN, INT_MAX, low_bits, r % low_bits) if low_bits > 1 else _UNKNOWN
    if m == 0:
        return (r, r, 0, r) if lo <= r <= hi else (lo, hi, 1, 0)
    r %= m
    if lo > INT_MIN:
        lo += (r - lo) % m
    if hi < INT_MAX:
        hi -= (hi - r) % m
    return (lo, max(lo, hi), m, r)


def _join(a: Value, b: Value) -> Value:
    m = gcd(a[2], b[2], abs(a[3] - b[3]))
    return _make(min(a[0], b[0]), max(a[1], b[1]), m, a[3] if m == 0 else a[3] % m)


def _residue_within(a: Value, b: Value) -> bool:
    """Every value of a's residue class is in b's."""
    if b[2] == 0:
        return a[2] == 0 and a[3] == b[3]
    return a[2] % b[2] == 0 and (a[3] - b[3]) % b[2] == 0


class _NoFixpoint(Exception):
    pass


class _Analysis:
    def __init__(self, kernel: ir.Kernel, min_subgroup_size: int = 1) -> None:
        self.wg = kernel.workgroup_size
        self.sizes = [s.size for s in kernel.shared]
        self.verdict: dict[int, bool] = {}  # id(node) -> proven on every visit so far
        self.nodes: dict[int, object] = {}  # keeps visited nodes alive (stable ids)
        self.offsets: dict[int, Value] = {}  # id(tile access) -> its offset, every visit
        # a workgroup's invocations, and at most how many subgroups hold them: Vulkan makes a
        # subgroup at least minSubgroupSize lanes (1 where the device does not say; NVIDIA 32)
        self.invocations = self.wg[0] * self.wg[1] * self.wg[2]
        self.min_subgroup = max(1, min_subgroup_size)
        self.subgroups = -(-self.invocations // self.min_subgroup)

    # ---------------------------------------------------------------- expressions
    def value(self, e: ir.Expr, env: dict[str, Value]) -> Value:
        self.visit_expr(e, env)
        return self.interval(e, env)

    def interval(self, e: ir.Expr, env: dict[str, Value]) -> Value:
        if e.type != ir.I32:
            return _UNKNOWN
        if isinstance(e, ir.Const):
            return _exact(int(e.value))
        if isinstance(e, ir.LocalRef):
            return env.get(e.name, _UNKNOWN)
        if isinstance(e, ir.Builtin):
            size = self.wg[e.axis]
            if e.kind is ir.BuiltinKind.LOCAL_ID:
                return (0, size - 1, 1, 0)
            if e.kind is ir.BuiltinKind.WORKGROUP_SIZE:
                return _exact(size)
            return _UNKNOWN
        if isinstance(e, ir.SubgroupValue):
            # Vulkan: a subgroup has minSubgroupSize to 128 lanes, a workgroup >= 1 subgroup
            bounds = {
                "id": (0, self.subgroups - 1),
                "count": (1, self.subgroups),
                "lane": (0, 127),
                "size": (self.min_subgroup, 128),
            }.get(e.what)
            return _UNKNOWN if bounds is None else (*bounds, 1, 0)
        if isinstance(e, ir.Select):
            return _join(self.interval(e.if_true, env), self.interval(e.if_false, env))
        if isinstance(e, ir.Binary):
            return self.binary(e.op, self.interval(e.lhs, env), self.interval(e.rhs, env))
        return _UNKNOWN

    @staticmethod
    def binary(op: ir.BinOp, a: Value, b: Value) -> Value:
        (a0, a1, am, ar), (b0, b1, bm, br) = a, b
        if op is ir.BinOp.ADD:
            return _make(a0 + b0, a1 + b1, gcd(am, bm), ar + br)
        if op is ir.BinOp.SUB:
            return _make(a0 - b1, a1 - b0, gcd(am, bm), ar - br)
        if op is ir.BinOp.MUL:
            corners = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
            return _make(min(corners), max(corners), gcd(am * bm, am * br, bm * ar), ar * br)
        if op is ir.BinOp.FLOORDIV and b0 > 0:  # Python floor division by a positive divisor
            corners = (a0 // b0, a0 // b1, a1 // b0, a1 // b1)
            m, r = 1, 0
            if bm == 0 and am % br == 0 and ar % br == 0:  # an exact multiple: stays one
                m, r = am // br, ar // br
            return _make(min(corners), max(corners), m, r)
        if op is ir.BinOp.MOD and b0 > 0:  # the result takes the divisor's sign
            lo, hi = (0, b1 - 1) if a0 < 0 or a1 >= b0 else (a0, a1)
            m, r = 1, 0
            if bm == 0:  # a constant divisor keeps the residue modulo gcd(m, divisor)
                m = gcd(am, br)
                r, m = (ar % m, m) if m != br else (ar % br, 0)
            return _make(lo, hi, m, r)
        if op in (ir.BinOp.MIN, ir.BinOp.MAX):  # one of the two: their joined residue
            _, _, m, r = _join(a, b)
            if op is ir.BinOp.MIN:
                return _make(min(a0, b0), min(a1, b1), m, r)
            return _make(max(a0, b0), max(a1, b1), m, r)
        if op is ir.BinOp.BIT_AND and (a0 >= 0 or b0 >= 0):
            return (0, min(x[1] for x in (a, b) if x[0] >= 0), 1, 0)
        return _UNKNOWN

    def visit_expr(self, e: ir.Expr, env: dict[str, Value]) -> None:
        """Judge every shared load inside `e` (its operands too)."""
        if isinstance(e, ir.SharedLoad):
            self.judge(e, e.array, e.index, env)
        for child in ir.children(e):
            self.visit_expr(child, env)

    def judge(self, node: object, array: int, index: ir.Expr, env: dict[str, Value]) -> None:
        lo, hi, _, _ = self.interval(index, env)
        ok = 0 <= lo and hi < self.sizes[array]
        self.nodes[id(node)] = node
        self.verdict[id(node)] = self.verdict.get(id(node), True) and ok

    # ---------------------------------------------------------------- conditions
    def narrow(self, cond: ir.Expr, env: dict[str, Value]) -> dict[str, Value]:
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
        (lo, hi, m, r), (r0, r1, _, _) = env.get(lhs.name, _UNKNOWN), self.interval(rhs, env)
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
        # (lo > hi: the condition never holds, nothing here is reached; _make keeps lo <= hi)
        return {**env, lhs.name: _make(lo, max(hi, lo), m, r)}

    # ---------------------------------------------------------------- statements
    def block(self, stmts: tuple[ir.Stmt, ...], env: dict[str, Value], jumps: list) -> dict:
        for s in stmts:
            env = self.stmt(s, env, jumps)
        return env

    def stmt(self, s: ir.Stmt, env: dict[str, Value], jumps: list) -> dict[str, Value]:
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

    def loop(self, s: ir.Loop, entry: dict[str, Value]) -> dict[str, Value]:
        head = entry
        for round_ in range(64):
            self.visit_expr(s.cond, head)
            jumps: list = []
            end = self.block(s.body, self.narrow(s.cond, head), jumps)
            for j in jumps:  # a `continue` runs the step; a `break` skips it (joined: safe)
                end = _join_envs(end, j)
            after = self.block(s.step, end, [])
            new = _join_envs(entry, after)
            if all(_within(new.get(k, _UNKNOWN), head.get(k, _UNKNOWN)) for k in new):
                return _join_envs(head, end)  # post-fixpoint: the exit sees head or a break
            if round_ >= _WIDEN_AFTER:
                new = {k: _widen(head.get(k, _UNKNOWN), v) for k, v in new.items()}
            head = new
        raise _NoFixpoint  # (not expected: widening converges within two more rounds)


def _within(a: Value, b: Value) -> bool:
    return b[0] <= a[0] and a[1] <= b[1] and _residue_within(a, b)


def _widen(old: Value, new: Value) -> Value:
    # bounds that moved go to the int32 limits; the residue needs no widening (each change
    # replaces m by a proper divisor, or an exact value by a class, so it settles)
    lo = INT_MIN if new[0] < old[0] else old[0]
    hi = INT_MAX if new[1] > old[1] else old[1]
    joined = _join(old, new)
    return (lo, hi, joined[2], joined[3])


def _join_envs(a: dict[str, Value], b: dict[str, Value]) -> dict[str, Value]:
    # a local missing on one side is not assigned on that path: it could hold anything
    return {k: _join(a.get(k, _UNKNOWN), b.get(k, _UNKNOWN)) for k in a.keys() | b.keys()}


def _analysed(kernel: ir.Kernel, min_subgroup_size: int) -> _Analysis | None:
    analysis = _Analysis(kernel, min_subgroup_size)
    try:
        analysis.block(kernel.body, {}, [])
    except _NoFixpoint:
        return None
    return analysis


def shared_accesses_in_range(kernel: ir.Kernel, min_subgroup_size: int = 1) -> dict[int, object]:
    """The kernel's SharedLoad / SharedStore nodes whose index is always in range, as
    `{id(node): node}` (check `proven.get(id(n)) is n`: IR nodes compare by value, and equal
    nodes elsewhere in the body may not be in range). `min_subgroup_size`: the target's
    (`Target.min_subgroup_size`), which bounds `subgroup_id()`."""
    analysis = _analysed(kernel, min_subgroup_size)
    if analysis is None:
        return {}
    return {k: analysis.nodes[k] for k, ok in analysis.verdict.items() if ok}


def tile_offset_ranges(
    kernel: ir.Kernel, min_subgroup_size: int = 1
) -> dict[int, tuple[object, Interval, int]]:
    """`{id(node): (node, (lo, hi), multiple)}`: the offset of each TileLoad / TileStore lies
    in [lo, hi] and is a multiple of `multiple` on every path (TOP and 1 where nothing is
    known; 0: the offset is 0; check the node's identity as above)."""
    analysis = _analysed(kernel, min_subgroup_size)
    if analysis is None:
        return {}
    out = {}
    for k, (lo, hi, m, r) in analysis.offsets.items():
        multiple = gcd(m, r)  # every value m * q + r is a multiple of gcd(m, r)
        out[k] = (analysis.nodes[k], (lo, hi), multiple)
    return out
