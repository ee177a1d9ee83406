"""The IR's expression node kinds (pure, typed values): constants, locals, parameters, builtins,
list and shared-array loads, operators, selects, casts and math calls.

Part of the IR of ir.py, which re-exports every name here (import them from `ir`); the contract
the frontend, passes and codegen keep is written there once.
"""

from __future__ import annotations

from ..record import Record, field
from enum import Enum

from .ir_types import Scalar


class Expr(Record):
    type: Scalar


class Const(Expr):
    """A literal: Python int (already wrapped to the type's range), float or bool. `exact` keeps
    a literal's Python value (before float32 rounding), so `x * 0.1` with an f64 `x` uses the
    double 0.1; it takes no part in equality."""

    value: int | float | bool
    exact: int | float | None = field(default=None, compare=False, repr=False)


class LocalRef(Expr):
    """Read of a local variable (scalar parameters that the kernel assigns become locals)."""

    name: str


class ParamRef(Expr):
    """Read of a scalar parameter that the kernel never assigns (`index` into `Kernel.params`)."""

    index: int


class BuiltinKind(Enum):
    GLOBAL_ID = "GlobalIdx"  # BlockIdx * BlockDim + ThreadIdx
    LOCAL_ID = "ThreadIdx"
    WORKGROUP_ID = "BlockIdx"
    WORKGROUP_SIZE = "BlockDim"
    NUM_WORKGROUPS = "GridDim"


class Builtin(Expr):
    """A logical index builtin (type I32), `axis` 0..2 for .x/.y/.z."""

    kind: BuiltinKind
    axis: int


class SubgroupValue(Expr):
    """A subgroup builtin (I32): `what` is 'size' (SubgroupSize), 'lane'
    (SubgroupLocalInvocationId), 'id' (SubgroupId) or 'count' (NumSubgroups)."""

    what: str
    line: int = field(default=0, compare=False)


class ListLen(Expr):
    """`len(list_param)` as I32 (number of elements)."""

    list_index: int


class ListShape(Expr):
    """`x.shape[axis]` as I32: the extent of axis 0..2 of the array passed for list parameter
    `list_index` (a 1-D list or array: shape[0] == len). Passed per launch in the parameter block."""

    list_index: int
    axis: int


class Load(Expr):
    """`params[list_index][index]`; out of range reads give zero (false, 0, 0.0)."""

    list_index: int
    index: Expr


class SharedLoad(Expr):
    """`shared[array][index]` of a shared or local array (`Kernel.shared`); out of range reads
    give zero."""

    array: int
    index: Expr


class UnOp(Enum):
    NEG = "neg"  # int (wrapping) or float
    NOT = "not"  # bool -> bool
    INVERT = "invert"  # int bitwise ~


class Unary(Expr):
    op: UnOp
    operand: Expr


class BinOp(Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"  # float only (the frontend casts int operands of `/` to float)
    FLOORDIV = "floordiv"  # Python `//`: int rounds toward -inf; float = floor(a / b)
    MOD = "mod"  # Python `%`: result has the sign of the divisor (int and float)
    POW = "pow"  # float: GLSL pow with Python sign rules handled by codegen; int: exact loop
    MIN = "min"
    MAX = "max"
    BIT_AND = "bit_and"  # int, or bool (non-short-circuit `&`)
    BIT_OR = "bit_or"
    BIT_XOR = "bit_xor"
    SHL = "shl"  # int; shift count taken modulo 32 (documented)
    SHR = "shr"  # int: arithmetic shift right
    AND = "and"  # bool, operands pure so evaluation order is free
    OR = "or"


class Binary(Expr):
    op: BinOp
    lhs: Expr
    rhs: Expr


class CmpOp(Enum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


class Compare(Expr):
    """`lhs op rhs` -> BOOL; float comparisons are ordered (NaN compares false except `!=`)."""

    op: CmpOp
    lhs: Expr
    rhs: Expr


class Select(Expr):
    """`a if cond else b`; both arms already have `type`."""

    cond: Expr
    if_true: Expr
    if_false: Expr


class Cast(Expr):
    """Conversion to `type`: float->int truncates toward zero (Python `int()`), int->float rounds
    to nearest, x->bool is `x != 0`, bool->int/float gives 0/1."""

    operand: Expr


class Call(Expr):
    """A math intrinsic by name, e.g. 'sqrt', 'sin', 'exp', 'floor', 'ceil', 'fabs', 'abs',
    'copysign', 'isnan', 'isinf', 'atan2', 'trunc', 'fma'. `intrinsics.py` in the compiler lists
    the names, their types and their GLSL.std.450 counterparts; frontend and codegen both use it."""

    name: str
    args: tuple[Expr, ...]
