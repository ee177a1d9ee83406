"""Element formats: the one table of how a kernel's element type lives in memory.

Every list element type has a kernel-language name (`f32`, `i32`, `u8`, ...), a native pack
code (what `Buffer.pack_list` / `unpack_into_list` in native/pack.c take), a size in bytes, the
buffer-protocol formats of arrays that hold it as they are, and the numpy dtype name users are
told to pass. Launch (argument checks, the launch plan) and residency (arena binding) both read
this table; it sits in runtime, the bottom package, so neither imports the other for it.
"""

from __future__ import annotations

from typing import Any

from ..record import Record


class ElementFormat(Record):
    kind: str  # the IR scalar kind: 'float', 'int', 'uint', 'bool'
    bits: int  # the IR scalar width (bool is 32 in the IR, one byte in memory)
    name: str  # kernel-language name: 'float', 'int', 'bool', 'f64', 'u8', ...
    pack: str  # native pack code
    itemsize: int  # bytes per element in a device buffer
    buffer_formats: tuple[str, ...]  # buffer-protocol format codes an array may have as it is
    dtype: str  # the numpy dtype name users should pass


# One row per element type. 'C' is uint8's pack code ('B' is list[bool]'s: a uint8 array, which
# has format 'B', serves list[bool] and list[u8] alike: see `serves`).
FORMATS: tuple[ElementFormat, ...] = (
    ElementFormat("float", 32, "float", "f", 4, ("f",), "float32"),
    ElementFormat("int", 32, "int", "i", 4, ("i", "l"), "int32"),
    ElementFormat("bool", 32, "bool", "B", 1, ("?", "B"), "bool (or uint8)"),
    ElementFormat("float", 64, "f64", "d", 8, ("d",), "float64"),
    ElementFormat("int", 64, "i64", "q", 8, ("q", "l"), "int64"),
    ElementFormat("uint", 32, "u32", "I", 4, ("I", "L"), "uint32"),
    ElementFormat("uint", 64, "u64", "Q", 8, ("Q", "L"), "uint64"),
    ElementFormat("float", 16, "f16", "e", 2, ("e",), "float16"),
    ElementFormat("int", 8, "i8", "b", 1, ("b",), "int8"),
    ElementFormat("uint", 8, "u8", "C", 1, ("B",), "uint8"),
    ElementFormat("int", 16, "i16", "h", 2, ("h",), "int16"),
    ElementFormat("uint", 16, "u16", "H", 2, ("H",), "uint16"),
)

BY_TYPE: dict[tuple[str, int], ElementFormat] = {(f.kind, f.bits): f for f in FORMATS}
BY_PACK: dict[str, ElementFormat] = {f.pack: f for f in FORMATS}
PACK_SIZE: dict[str, int] = {f.pack: f.itemsize for f in FORMATS}

# (buffer format, itemsize) -> pack code of an array bound as it is. A format code names one
# size on one platform ('l' is 4 or 8 bytes), so the itemsize is part of the key; a uint8 array
# ('B') binds as bool's 'B', which serves list[u8] too.
BUFFER_PACK: dict[tuple[str, int], str] = {}
for _f in FORMATS:
    for _code in _f.buffer_formats:
        BUFFER_PACK.setdefault((_code, _f.itemsize), "B" if _code == "B" else _f.pack)

# ranges of the int scalar and element types (int32 is the default `int`)
INT_RANGES: dict[tuple[str, int], tuple[int, int]] = {
    ("int", 32): (-(2**31), 2**31 - 1),
    ("int", 64): (-(2**63), 2**63 - 1),
    ("uint", 32): (0, 2**32 - 1),
    ("uint", 64): (0, 2**64 - 1),
    ("int", 8): (-128, 127),
    ("uint", 8): (0, 255),
    ("int", 16): (-32768, 32767),
    ("uint", 16): (0, 65535),
}
FLOAT32_MAX = 3.4028234663852886e38
FLOAT16_MAX = 65504.0  # a finite value within this stays finite rounded to float16

_BUILTIN = {int: ("int", 32), float: ("float", 32), bool: ("bool", 32)}


def of(elem: Any) -> ElementFormat:
    """The format of an IR element type (anything with `.kind` and `.bits`); KeyError if none."""
    return BY_TYPE[elem.kind, elem.bits]


def of_user_type(t: Any) -> ElementFormat | None:
    """The format of a user-given element type: `int`, `float`, `bool` or an explicit type of
    cthreads.gpu (`u8`, `f16`, ...); else None."""
    key = (
        _BUILTIN.get(t)
        if isinstance(t, type)
        else (getattr(t, "kind", None), getattr(t, "bits", None))
    )
    return BY_TYPE.get(key) if key is not None else None  # type: ignore[arg-type]


def serves(pack: str, fmt: ElementFormat) -> bool:
    """Whether memory packed as `pack` can serve a list of format `fmt` as it is."""
    return pack == fmt.pack or (pack == "B" and fmt.pack == "C")


def accepted_packs(fmt: ElementFormat) -> str:
    """The pack codes of resident memory a list of `fmt` accepts (see `serves`), its own code
    first (the C launcher takes a DeviceArray, whose type must match exactly, only with that)."""
    return "CB" if fmt.pack == "C" else fmt.pack
