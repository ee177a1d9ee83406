"""Which kernels get the 4-wide element-wise form (16-byte list accesses), decided on the IR.

A grid-stride kernel qualifies when every access to every list it writes is indexed by exactly
the logical global index: `GlobalIdx.x` itself, or a local assigned from it once at top level and
never reassigned, with every access after that assignment. Then each written element is touched
only by the invocation that owns its index, so one invocation may run four consecutive logical
invocations, read each list once as a vec4 and write it back as one (codegen_vec.py). Read-only
lists that are all read at the global index are vectorized too; a read-only list also read
elsewhere (a stencil's neighbours, a gather) keeps its guarded scalar loads in every lane.

Also required: 32-bit element types (no list[bool]: one byte each), and no loop with a
data-dependent trip count (a `while` that converges, a loop with `break`/`return`): such bodies
are compute-bound and divergent, and four of them in a row per invocation cost parallelism for
nothing.
"""

from __future__ import annotations


from .. import ir
from ...record import Record
from .usage import Usage

WIDTH = 4  # logical invocations per block: 4 x 32-bit = one 16-byte access


class VecPlan(Record):
    """The lists a vectorized kernel accesses (all at the global index), split by use."""

    lists: tuple[int, ...]  # every accessed list, ascending
    reads: frozenset[int]  # loaded at least once (read once per block as a vec4)
    writes: frozenset[int]  # stored at least once (written back per block)


def plan(kernel: ir.Kernel, usage: Usage, observes: bool) -> VecPlan | None:
    """The vector plan for `kernel`, or None when it must keep the scalar form."""
    if observes or usage.barrier:
        return None
    accessed = usage.loads | usage.stores
    if not accessed:
        return None
    for i in accessed:
        t = kernel.params[i].type
        if not isinstance(t, ir.ListType) or t.elem.is_bool or t.elem.bits != 32:
            return None
    aliases = _global_aliases(kernel)
    if aliases is None:
        return None
    names, first = aliases
    off: set[int] = set()  # lists accessed at some other index somewhere
    # Accesses before the alias assignment would see the local's initial value, not the index.
    for pos, s in enumerate(kernel.body):
        ok = names if pos > first else frozenset()
        if not _stmt_ok(s, ok, off):
            return None
    if off & usage.stores:
        return None  # a written list must be touched only at each invocation's own index
    vec = accessed - off  # read-only lists read elsewhere keep guarded scalar loads (stencils)
    if not vec:
        return None
    return VecPlan(tuple(sorted(vec)), frozenset(usage.loads & vec), frozenset(usage.stores))


def _global_aliases(kernel: ir.Kernel) -> tuple[frozenset[str], int] | None:
    """Locals equal to the global index wherever they are read after their one assignment:
    (names, position of the first such assignment). None if a candidate is assigned twice."""
    top: dict[str, int] = {}
    for pos, s in enumerate(kernel.body):
        if type(s) is ir.Assign and _is_gid(s.value) and s.name not in top:
            top[s.name] = pos
    if not top:
        return frozenset(), len(kernel.body)
    counts: dict[str, int] = {}
    _count_assigns(kernel.body, counts)
    names = frozenset(n for n in top if counts.get(n, 0) == 1)
    if not names:
        return frozenset(), len(kernel.body)
    return names, max(top[n] for n in names)


def _is_gid(e: ir.Expr) -> bool:
    return type(e) is ir.Builtin and e.kind is ir.BuiltinKind.GLOBAL_ID and e.axis == 0


def _count_assigns(stmts: tuple[ir.Stmt, ...], counts: dict[str, int]) -> None:
    for s in stmts:
        t = type(s)
        if t is ir.Assign:
            counts[s.name] = counts.get(s.name, 0) + 1
        elif t is ir.If:
            _count_assigns(s.then, counts)
            _count_assigns(s.orelse, counts)
        elif t is ir.Loop:
            _count_assigns(s.body, counts)
            _count_assigns(s.step, counts)


def _index_ok(e: ir.Expr, names: frozenset[str]) -> bool:
    return _is_gid(e) or (type(e) is ir.LocalRef and e.name in names)


def _stmt_ok(s: ir.Stmt, names: frozenset[str], off: set[int]) -> bool:
    """False for a statement that rules the form out; lists accessed at an index other than
    the global one are added to `off`."""
    t = type(s)
    if t is ir.Assign:
        return _expr_ok(s.value, names, off)
    if t is ir.Store:
        if not _index_ok(s.index, names):
            off.add(s.list_index)
        return _expr_ok(s.index, names, off) and _expr_ok(s.value, names, off)
    if t is ir.If:
        return (
            _expr_ok(s.cond, names, off)
            and all(_stmt_ok(x, names, off) for x in s.then)
            and all(_stmt_ok(x, names, off) for x in s.orelse)
        )
    if t is ir.Loop:
        return (
            _counted(s)
            and _expr_ok(s.cond, names, off)
            and all(_stmt_ok(x, names, off) for x in s.body)
            and all(_stmt_ok(x, names, off) for x in s.step)
        )
    return t in (ir.Return, ir.Break, ir.Continue)


def _counted(loop: ir.Loop) -> bool:
    """A `for k in range(...)` loop with a constant bound: `k <op> const` as the condition,
    `k = k + const` as the whole step, `k` not assigned in the body, and no early exit."""
    c = loop.cond
    if not (type(c) is ir.Compare and type(c.lhs) is ir.LocalRef and type(c.rhs) is ir.Const):
        return False
    k = c.lhs.name
    if len(loop.step) != 1:
        return False
    s = loop.step[0]
    if type(s) is not ir.Assign:
        return False
    v = s.value
    if not (
        s.name == k
        and type(v) is ir.Binary
        and v.op in (ir.BinOp.ADD, ir.BinOp.SUB)
        and type(v.lhs) is ir.LocalRef
        and v.lhs.name == k
        and type(v.rhs) is ir.Const
    ):
        return False
    counts: dict[str, int] = {}
    _count_assigns(loop.body, counts)
    return k not in counts and not _exits(loop.body)


def _exits(stmts: tuple[ir.Stmt, ...]) -> bool:
    for s in stmts:
        t = type(s)
        if t is ir.Break or t is ir.Return:
            return True
        if t is ir.If and (_exits(s.then) or _exits(s.orelse)):
            return True
        if t is ir.Loop and _exits(s.body):
            return True
    return False


def _expr_ok(e: ir.Expr, names: frozenset[str], off: set[int]) -> bool:
    t = type(e)
    if t is ir.Load:
        if not _index_ok(e.index, names):
            off.add(e.list_index)
        return _expr_ok(e.index, names, off)
    if t is ir.Unary or t is ir.Cast:
        return _expr_ok(e.operand, names, off)
    if t is ir.Binary or t is ir.Compare:
        return _expr_ok(e.lhs, names, off) and _expr_ok(e.rhs, names, off)
    if t is ir.Select:
        return all(_expr_ok(x, names, off) for x in (e.cond, e.if_true, e.if_false))
    if t is ir.Call:
        return all(_expr_ok(a, names, off) for a in e.args)
    return True
