"""The IR's value types: `Scalar` (a device scalar type and its width), the named scalars
(`I32`, `F32`, `BOOL`, ...), `ListType` (a list parameter's element type) and `Param` (a kernel
parameter).

Split out of ir.py so the types, which every layer above the frontend reads, sit apart from the
node kinds; ir.py re-exports every name here, so `ir.I32` and `from .ir import Scalar` still work.
Decorating a kernel and a warm launch (a kernel read back from the disk cache) need only these:
they load this module, never ir.py and its ~40 node classes (issue 19).
"""

from __future__ import annotations

from ..record import Record


class Scalar(Record):
    """A scalar type: `kind` is 'int', 'uint', 'float' or 'bool'; `bits` its width on the device
    (bool values are 32-bit in registers and push constants; see `ListType.storage_bits`)."""

    kind: str
    bits: int = 32

    def __str__(self) -> str:
        if self.kind == "bfloat":
            return "bf16"
        return (
            "bool"
            if self.kind == "bool"
            else f"{self.kind[0] if self.kind != 'uint' else 'u'}{self.bits}"
        )

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"


# one value per kind and width (records compare by value, so the names are conveniences)
I8, I16, I32, I64 = (Scalar("int", bits) for bits in (8, 16, 32, 64))
U8, U16, U32, U64 = (Scalar("uint", bits) for bits in (8, 16, 32, 64))
F16, F32, F64 = (Scalar("float", bits) for bits in (16, 32, 64))
BOOL = Scalar("bool", 32)
# bfloat16: only the element type of "a" / "b" matrix tiles (frontend/tiles.py), never a value or
# list element type (its data lives in list[u16] as bit patterns); is_float is False on purpose,
# so no scalar rule of the language applies to it by accident
BF16 = Scalar("bfloat", 16)

# The explicit scalar types of `cthreads.gpu.types`, by the name they are imported as ("f16", ...).
EXPLICIT: dict[str, Scalar] = {
    str(t): t for t in (F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64)
}


class ListType(Record):
    """A list parameter's element type. `list[bool]` is stored one byte per element (numpy bool /
    uint8); int and float elements use their own width."""

    elem: Scalar

    @property
    def storage_bits(self) -> int:
        return 8 if self.elem.is_bool else self.elem.bits

    def __str__(self) -> str:
        return f"list[{self.elem}]"


class Param(Record):
    """A kernel parameter. For lists, `reads`/`writes` say whether the body loads/stores it."""

    name: str
    type: Scalar | ListType
    reads: bool = False
    writes: bool = False

    @property
    def is_list(self) -> bool:
        return isinstance(self.type, ListType)
