"""One walk over a kernel body recording what codegen must set up before emitting it.

Which lists are loaded, stored or measured, which scalar parameters and builtins are read,
whether a barrier, shared arrays or atomics occur: codegen declares only what is used and loads every parameter once.
`barriers_ordering_lists` says which barriers must also order list memory.
"""

from __future__ import annotations

from .. import ir


class Usage:
    """What one kernel body uses (a plain class: dataclass code generation costs ~1 ms per
    class at the compiler's import, issue 19)."""

    def __init__(self) -> None:
        self.loads: set[int] = set()  # list param indices read
        self.stores: set[int] = set()  # list param indices written
        self.lens: set[int] = set()  # lists whose length is needed (bounds or len())
        self.shapes: set[tuple[int, int]] = set()  # (list, axis) of x.shape[axis]
        self.scalars: set[int] = set()  # scalar params read (ParamRef)
        self.builtins: set[tuple[ir.BuiltinKind, int]] = set()
        self.barrier = False
        self.shared = False  # the kernel declares workgroup shared arrays
        self.atomics = False
        self.subgroup = False  # subgroup operations or builtins (codegen_subgroup.py)
        self.tiles = False  # cooperative matrix statements (codegen_tiles.py)
        # shared float arrays updated by atomics: stored as int32 bits (compare-exchange needs
        # ints)
        self.shared_int_view: set[int] = set()

    @property
    def observes_workgroup(self) -> bool:
        """True when the body can tell the physical workgroup shape (SPEC §4)."""
        return (
            self.barrier
            or self.shared
            or self.subgroup
            or self.tiles
            or any(k is not ir.BuiltinKind.GLOBAL_ID for k, _ in self.builtins)
        )


def scan(kernel: ir.Kernel) -> Usage:
    u = Usage()
    u.shared = any(not a.private for a in kernel.shared)  # local arrays live per invocation
    _stmts(kernel.body, u)
    for i in list(u.shared_int_view):
        if not kernel.shared[i].elem.is_float:
            u.shared_int_view.discard(i)
    u.lens |= u.loads | u.stores
    return u


def _stmts(stmts: tuple[ir.Stmt, ...], u: Usage) -> None:
    for s in ir.walk_stmts(stmts):
        t = type(s)
        if t is ir.Store:
            u.stores.add(s.list_index)
        elif t is ir.Barrier:
            u.barrier = True
        elif t is ir.Subgroup:
            u.subgroup = True
        elif t in ir.TILE_STMTS:
            u.tiles = True
            if t is ir.TileLoad and not s.shared:
                u.loads.add(s.array)
            elif t is ir.TileStore and not s.shared:
                u.stores.add(s.array)
        elif t is ir.Atomic:
            u.atomics = True
            if s.shared:
                u.shared_int_view.add(s.array)
            else:
                u.loads.add(s.array)
                u.stores.add(s.array)
        for e in ir.stmt_exprs(s):
            _expr(e, u)


def _expr(e: ir.Expr, u: Usage) -> None:
    t = type(e)
    if t is ir.Const or t is ir.LocalRef:
        return
    if t is ir.ParamRef:
        u.scalars.add(e.index)
    elif t is ir.SubgroupValue:
        u.subgroup = True
    elif t is ir.Builtin:
        u.builtins.add((e.kind, e.axis))
    elif t is ir.ListLen:
        u.lens.add(e.list_index)
    elif t is ir.ListShape:
        u.shapes.add((e.list_index, e.axis))
    elif t is ir.Load:
        u.loads.add(e.list_index)
    for child in ir.children(e):
        _expr(child, u)


def barriers_ordering_lists(kernel: ir.Kernel, written: set[int]) -> dict[int, ir.Barrier]:
    """The barriers (`{id(node): node}`) that must also order list memory (SPEC §8 promises
    workgroup memory only; list ordering is kept where it can matter): those that an access to
    a list the kernel writes (`written`: Usage.stores) may precede, written before them in
    the body or anywhere in a loop around them. Elsewhere (a matmul reads A and B and writes C
    after its K loop) a barrier orders shared memory alone, which lets the driver keep global
    loads in flight across it."""
    if not written:
        return {}
    found: dict[int, ir.Barrier] = {}

    def reads(e: ir.Expr) -> bool:
        return any(type(x) is ir.Load and x.list_index in written for x in ir.walk_exprs(e))

    def reaches(stmts) -> bool:
        for s in ir.walk_stmts(stmts):
            t = type(s)
            if t is ir.Store and s.list_index in written:
                return True
            if t in (ir.TileLoad, ir.TileStore, ir.Atomic) and not s.shared and s.array in written:
                return True
            if any(reads(e) for e in ir.stmt_exprs(s)):
                return True
        return False

    def visit(stmts, seen: bool, looped: bool) -> bool:
        for s in stmts:
            if type(s) is ir.Barrier:
                if seen or looped:
                    found[id(s)] = s
            elif type(s) is ir.If:
                seen = seen or reads(s.cond)
                then, orelse = visit(s.then, seen, looped), visit(s.orelse, seen, looped)
                seen = then or orelse
            elif type(s) is ir.Loop:
                inside = reaches((s,))  # its condition, body and step, every iteration
                visit(s.body, seen, looped or inside)
                visit(s.step, seen, looped or inside)
                seen = seen or inside
            else:
                seen = seen or reaches((s,))
        return seen

    try:
        visit(kernel.body, False, False)
    except RecursionError:  # (nesting deeper than Python's stack: every barrier orders lists)
        return {id(s): s for s in ir.walk_stmts(kernel.body) if type(s) is ir.Barrier}
    return found
