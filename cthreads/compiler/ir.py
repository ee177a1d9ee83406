"""The typed, structured IR between the frontend (Python `ast`) and SPIR-V codegen.

Plain frozen records (target.py's `Record`: dataclass behaviour without its import cost).
Expressions are pure (no side effects) and carry their type; statements keep the structured
control flow SPIR-V needs (if / loop / break / continue / return). The
frontend resolves every Python rule here (int `/` -> float, `//` and `%` floor semantics, `**`,
chained comparisons, range loops), so codegen only maps typed ops to instructions.

Contract (frontend produces, passes keep, codegen consumes):
- every `Expr.type` is a `Scalar`; list values never appear as expressions, only as `ListParam`
  indices in `Load` / `Store` / `ListLen`;
- `Binary` operands have equal types (the frontend inserts `Cast`); comparison operands too;
- index expressions of `Load`/`Store` are `I32`; out-of-range indexes are legal IR: codegen makes
  reads return zero and drops writes (SPEC §5.6), so the frontend adds no bounds checks;
- `Builtin` values are *logical* (SPEC §4): codegen maps them to the physical dispatch (grid-stride
  loops, base offsets) so the kernel cannot tell how it was launched;
- workgroup shared arrays and per-invocation local arrays (`Kernel.shared`, `SharedArray.private`)
  are reached only through `SharedLoad`/`SharedStore` and (shared ones) `Atomic` (by their index
  into `Kernel.shared`); their out-of-range indexes are legal IR too;
- atomics have side effects, so they are statements (`Atomic`), never expressions: the old value
  goes into a local. Expressions stay pure.
- subgroup operations depend on which invocations run them together, so they are statements too
  (`Subgroup`, result into a local); the subgroup builtins (`SubgroupValue`) are expressions.

Where the rest lives (every name is importable from here as before): the expression node kinds
(`Const`, `Binary`, `Load` ...) in ir_exprs.py; the value types (`Scalar`, `I32` ..., `ListType`)
in ir_types.py; traversal (`children`, `stmt_exprs`, `blocks`,
`walk_*`, `map_*`, which follow each node kind's field declarations, so a new node kind needs no
edit in the passes, the range analysis, codegen's usage scan or the printer) in ir_walk.py.
This module owns the statement node kinds and the kernel.
"""

from __future__ import annotations

from ..record import Record, field
from enum import Enum

from .ir_exprs import (  # noqa: F401 - re-exported
    Binary,
    BinOp,
    Builtin,
    BuiltinKind,
    Call,
    Cast,
    CmpOp,
    Compare,
    Const,
    Expr,
    ListLen,
    ListShape,
    Load,
    LocalRef,
    ParamRef,
    Select,
    SharedLoad,
    SubgroupValue,
    Unary,
    UnOp,
)
from .ir_types import (  # noqa: F401 - re-exported: ir is where the IR's names are imported from
    BF16,
    BOOL,
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    ListType,
    Param,
    Scalar,
)
from .ir_walk import (  # noqa: F401 - re-exported
    blocks,
    children,
    map_children,
    map_expr,
    map_stmts,
    stmt_exprs,
    walk_exprs,
    walk_stmts,
)


# ------------------------------------------------------------------------------- statements


class Stmt(Record):
    pass


class Assign(Stmt):
    """`local = value` (declares on first assignment; `Kernel.locals` lists every local's type)."""

    name: str
    value: Expr


class Store(Stmt):
    """`params[list_index][index] = value`; an out-of-range index writes nothing."""

    list_index: int
    index: Expr
    value: Expr


class SharedStore(Stmt):
    """`shared[array][index] = value` (a shared or local array); an out-of-range index writes
    nothing."""

    array: int
    index: Expr
    value: Expr


class Copy16(Stmt):
    """`copy16(...)`: `count` elements (16 bytes) of list `src` from `src_offset` into shared
    array `dst` from `dst_offset` (both offsets constants or locals). `body` is its meaning,
    the element copies with their own guards; codegen runs them unless one 16-byte load can do
    the same (all in range, the source address 16-byte aligned). The body's loads and stores
    are also what marks `src` read and `dst` written for the usage scans, so passes keep them."""

    dst: int
    dst_offset: Expr
    src: int
    src_offset: Expr
    count: int
    body: tuple[Stmt, ...]


class AtomicOp(Enum):
    ADD = "add"
    MIN = "min"
    MAX = "max"
    AND = "and"  # int only
    OR = "or"
    XOR = "xor"
    EXCHANGE = "exchange"
    COMPARE_EXCHANGE = "compare_exchange"  # stores `value` where the element equals `comparator`


class Atomic(Stmt):
    """An atomic read-modify-write of one element of a list parameter (`shared=False`, `array`
    indexes `Kernel.params`) or of a shared array (`shared=True`, `array` indexes
    `Kernel.shared`). `value` (and `comparator`) have the element type; the old value goes into
    local `result` (None: discarded). Out of range: no effect, the old value reads as zero.
    Relaxed memory order (no ordering with other memory accesses; barriers order them)."""

    op: AtomicOp
    shared: bool
    array: int
    index: Expr
    value: Expr
    comparator: Expr | None = None
    result: str | None = None


class SubgroupOp(Enum):
    ADD = "add"  # reductions: int (wrapping) or float
    MIN = "min"
    MAX = "max"
    INCLUSIVE_ADD = "inclusive_add"  # prefix sums over lower lanes
    EXCLUSIVE_ADD = "exclusive_add"
    BROADCAST = "broadcast"  # value of lane `lane` (uniform: the first active one's lane counts)
    BROADCAST_FIRST = "broadcast_first"
    BALLOT = "ballot"  # bool -> I32: how many active invocations have it true
    ELECT = "elect"  # -> BOOL, true in the lowest active lane
    ALL = "all"  # bool -> BOOL
    ANY = "any"
    SHUFFLE = "shuffle"  # value of lane `lane` (per invocation)
    SHUFFLE_XOR = "shuffle_xor"  # value of lane `lane_id ^ lane`


class Subgroup(Stmt):
    """A subgroup operation over the active invocations of the subgroup (SPIR-V
    OpGroupNonUniform*, Subgroup scope); the result (of `type`) goes into local `result`.
    `value` is None for ELECT; `lane` is the lane / xor mask of BROADCAST and SHUFFLE*.
    A statement, not an expression: which invocations take part depends on control flow, so it
    must not be speculated or evaluated for both arms of a select. A lane that is inactive or
    outside the subgroup reads as zero. `line` is the kernel's file line (for messages)."""

    op: SubgroupOp
    type: Scalar
    result: str
    value: Expr | None = None
    lane: Expr | None = None
    line: int = field(default=0, compare=False)


class TileType(Record):
    """A matrix tile a subgroup holds cooperatively (SPV_KHR_cooperative_matrix, Subgroup
    scope): `use` 'a' (the M x K left operand), 'b' (the K x N right operand) or 'acc' (an
    M x N accumulator), `rows` x `cols` elements of `elem`. Tiles are never expressions: they
    live in tile locals (`Kernel.tiles`) that the Tile* statements read and write."""

    use: str
    elem: Scalar
    rows: int
    cols: int

    def __str__(self) -> str:
        return f"tile[{self.use}, {self.elem}, {self.rows}x{self.cols}]"


class TileFill(Stmt):
    """`tile = tile_fill(...)`: every element `value` (of the tile's element type; f32 for a bf16
    tile, which codegen converts)."""

    tile: str
    value: Expr
    line: int = field(default=0, compare=False)


class _TileAccess(Record):
    """What a tile load and a tile store both name: the tile (`tile`), the array (`shared`:
    a shared array, else `array` indexes `Kernel.params`), the element offset and the row (or,
    `col_major`, column) stride. Not a Stmt itself: TileLoad and TileStore are the nodes."""

    tile: str
    shared: bool
    array: int
    offset: Expr
    stride: Expr
    col_major: bool = False
    line: int = field(default=0, compare=False)


class TileLoad(_TileAccess, Stmt):
    """`tile = tile_load(xs, offset, stride, ...)`: element (r, c) from `xs[offset + r * stride
    + c]` (row-major) or `xs[offset + c * stride + r]` (`col_major`); `xs` a list parameter
    (`shared=False`, `array` indexes `Kernel.params`) or a shared array. The whole tile must be
    inside the array, with `offset` and `stride` aligned (tiles.py): otherwise every element
    reads zero."""


class TileStore(_TileAccess, Stmt):
    """`tile_store(xs, offset, stride, tile)`: the inverse of TileLoad; a tile that would not
    fit (or is misaligned) writes nothing."""


class TileMma(Stmt):
    """`result = tile_mma(a, b, c)`: result = a @ b + c (OpCooperativeMatrixMulAddKHR)."""

    result: str
    a: str
    b: str
    c: str
    line: int = field(default=0, compare=False)


class TileScale(Stmt):
    """`result = src * factor`: every element times `factor` (of the element type)."""

    result: str
    src: str
    factor: Expr
    line: int = field(default=0, compare=False)


class TileAdd(Stmt):
    """`result = lhs + rhs` (`subtract`: lhs - rhs), element-wise, tiles of one type."""

    result: str
    lhs: str
    rhs: str
    subtract: bool = False
    line: int = field(default=0, compare=False)


TILE_STMTS = (TileFill, TileLoad, TileStore, TileMma, TileScale, TileAdd)


# Structured nesting (docs/language.md, "Limits"). Mesa's llvmpipe (lavapipe) keeps at most 80
# nested selections per shader and silently ignores the conditions of deeper ones (results are
# wrong, no error); spirv-val refuses more than 1023. So an `if`/`elif` chain of ELIF_FLATTEN
# conditions or more is emitted flat (codegen_stmt: each link a selection of its own behind a
# "done" flag, two levels however long the chain), and the frontend refuses statements nested
# more than MAX_NESTING levels (if/while/for blocks; a flat chain counts two), which leaves room
# for the selections codegen adds itself (bounds-checked list accesses, the grid-stride loop).
ELIF_FLATTEN = 8
MAX_NESTING = 64


class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


def elif_chain(s: If) -> tuple[list[tuple[Expr, tuple[Stmt, ...]]], tuple[Stmt, ...]]:
    """`if a: A elif b: B ... else: E` (an else holding only an If continues the chain) as
    ([(a, A), (b, B), ...], E), walked without recursion."""
    links = [(s.cond, s.then)]
    while len(s.orelse) == 1 and isinstance(s.orelse[0], If):
        s = s.orelse[0]
        links.append((s.cond, s.then))
    return links, s.orelse


class Loop(Stmt):
    """`while cond: body` with `step` run after each iteration and on `continue` (for-range
    loops put their increment there). `cond` is evaluated before every iteration. `unroll`: a
    hint only (the meaning is the same either way)."""

    cond: Expr
    body: tuple[Stmt, ...]
    step: tuple[Stmt, ...] = ()
    unroll: bool = False  # ask the driver to unroll (SPIR-V Unroll): see frontend/loops.py


class Break(Stmt):
    pass


class Continue(Stmt):
    pass


class Return(Stmt):
    """Ends this invocation (not the whole dispatch)."""


class Barrier(Stmt):
    """Workgroup execution + workgroup memory barrier (SPEC §8)."""


# ---------------------------------------------------------------------------------- kernel


class SharedArray(Record):
    """An array declared in the body, `size` elements of `elem`: a workgroup shared array
    (`tile = shared(float, 256)`: one per workgroup, zero-filled when the workgroup starts) or,
    with `private`, a local array (`acc = local(float, 64)`: one per invocation, zero-filled
    when the invocation starts, never seen by another one). Both kinds are reached the same way
    (`SharedLoad`/`SharedStore` by their index into `Kernel.shared`); only atomics and tiles
    are limited to shared ones, and only shared ones observe the workgroup."""

    name: str
    elem: Scalar
    size: int
    line: int = 0  # file line of the declaration (for messages)
    private: bool = False

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"

    @property
    def kind(self) -> str:
        """How messages name it: 'shared array' or 'local array'."""
        return "local array" if self.private else "shared array"


class Kernel(Record):
    """One compiled function. `workgroup_size` is the logical shape (default (64, 1, 1));
    `observes_workgroup` is True when the body uses ThreadIdx/BlockIdx/BlockDim/GridDim or a
    barrier or a shared array or a subgroup operation/builtin, which pins the physical shape to the logical one (SPEC §4)."""

    name: str
    params: tuple[Param, ...]
    locals: dict[str, Scalar] = field(hash=False, compare=False, default_factory=dict)
    body: tuple[Stmt, ...] = ()
    workgroup_size: tuple[int, int, int] = (64, 1, 1)
    observes_workgroup: bool = False
    filename: str = "<unknown>"
    firstlineno: int = 1
    shared: tuple[SharedArray, ...] = ()
    # explicit scalar types the kernel uses beyond int32/float32/bool: (str(type), first file
    # line), so a device lacking shaderFloat64/shaderInt64 gets an error naming the line
    type_lines: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    # tile locals (cooperative matrices) -> their type; empty for kernels without tiles
    tiles: dict[str, TileType] = field(hash=False, compare=False, default_factory=dict)
