"""Explicit scalar type annotations of the kernel language: `f16`, `f32`, `f64`, `i8`, `i16`,
`i32`, `i64`, `u8`, `u16`, `u32`, `u64`.

Use them as parameter annotations (`x: f64`, `xs: list[f64]`), local annotations
(`acc: i64 = 0`) and explicit casts (`f64(x)`, `u32(v)`). Plain `int`, `float` and `bool`
keep meaning int32, float32 and bool. Called on the host, each converts the way the device
does (ints wrap, floats round; float -> int truncates and saturates), so kernels read the same
when run as Python.
"""

from __future__ import annotations

import math
import struct


class ScalarType:
    """A device scalar type usable as an annotation and as a cast (`f64(x)`)."""

    __gpu_builtin__ = "scalar-type"
    __slots__ = ("bits", "kind", "name")

    def __init__(self, name: str, kind: str, bits: int) -> None:
        self.name, self.kind, self.bits = name, kind, bits

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name

    def __call__(self, value=0):
        if self.kind == "float":
            v = float(value)
            if self.bits < 64:  # round to float32 / float16 (ties to even); overflow gives +-inf
                code = "<f" if self.bits == 32 else "<e"
                try:
                    return struct.unpack(code, struct.pack(code, v))[0]
                except OverflowError:
                    return math.copysign(math.inf, v)
            return v
        lo = 0 if self.kind == "uint" else -(1 << (self.bits - 1))
        hi = (1 << self.bits) - 1 + lo
        if isinstance(value, float):  # truncates and saturates, NaN -> 0 (as on the device)
            if math.isnan(value):
                return 0
            return hi if value >= hi else lo if value <= lo else int(value)
        v = int(value) & ((1 << self.bits) - 1)
        if self.kind == "int" and v >= 1 << (self.bits - 1):
            v -= 1 << self.bits
        return v


f16 = ScalarType("f16", "float", 16)
f32 = ScalarType("f32", "float", 32)
f64 = ScalarType("f64", "float", 64)
i8 = ScalarType("i8", "int", 8)
i16 = ScalarType("i16", "int", 16)
i32 = ScalarType("i32", "int", 32)
i64 = ScalarType("i64", "int", 64)
u8 = ScalarType("u8", "uint", 8)
u16 = ScalarType("u16", "uint", 16)
u32 = ScalarType("u32", "uint", 32)
u64 = ScalarType("u64", "uint", 64)

SCALAR_TYPES = {t.name: t for t in (f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64)}

__all__ = [
    "SCALAR_TYPES",
    "ScalarType",
    "f16",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
]
