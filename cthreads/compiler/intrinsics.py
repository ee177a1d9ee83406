"""The table of math intrinsics a kernel may call, shared by frontend, codegen, emulator and docs.

Each entry names the Python spelling (`math.sin`, `sin` imported from math, or a builtin such as
`abs`), the argument and result types, and the GLSL.std.450 instruction (or a codegen recipe
name starting with '@' when there is no single instruction).
"""

from __future__ import annotations

from ..record import Record


class Intrinsic(Record):
    name: str  # IR `Call.name`
    arity: int
    args: str  # 'f' = float args (ints are promoted), 'n' = numeric (int or float, same type)
    result: str  # 'f' float, 'i' int, 'b' bool, 'same' = type of the (promoted) arguments
    glsl: str  # GLSL.std.450 instruction name, or '@recipe' implemented by codegen
    doc: str


def _f(name: str, glsl: str, doc: str, arity: int = 1) -> Intrinsic:
    return Intrinsic(name, arity, "f", "f", glsl, doc)


INTRINSICS: dict[str, Intrinsic] = {
    i.name: i
    for i in [
        _f("sqrt", "Sqrt", "square root"),
        _f("exp", "Exp", "e**x"),
        _f("exp2", "Exp2", "2**x"),
        _f("log", "Log", "natural logarithm (one argument)"),
        _f("log2", "Log2", "base-2 logarithm"),
        _f("log10", "@log10", "base-10 logarithm (log2(x) * log10(2))"),
        _f("sin", "Sin", "sine"),
        _f("cos", "Cos", "cosine"),
        _f("tan", "Tan", "tangent"),
        _f("asin", "Asin", "arc sine"),
        _f("acos", "Acos", "arc cosine"),
        _f("atan", "Atan", "arc tangent"),
        _f("atan2", "Atan2", "atan2(y, x)", arity=2),
        _f("sinh", "Sinh", "hyperbolic sine"),
        _f("cosh", "Cosh", "hyperbolic cosine"),
        _f("tanh", "Tanh", "hyperbolic tangent"),
        _f("asinh", "Asinh", "inverse hyperbolic sine"),
        _f("acosh", "Acosh", "inverse hyperbolic cosine"),
        _f("atanh", "Atanh", "inverse hyperbolic tangent"),
        _f("pow", "Pow", "math.pow(x, y) (float)", arity=2),
        _f("fabs", "FAbs", "absolute value as float"),
        _f("copysign", "@copysign", "magnitude of x with the sign of y", arity=2),
        _f("degrees", "Degrees", "radians to degrees"),
        _f("radians", "Radians", "degrees to radians"),
        _f("hypot", "@hypot", "sqrt(x*x + y*y)", arity=2),
        _f("fmod", "@fmod", "C fmod: remainder with the sign of x", arity=2),
        _f("fma", "Fma", "x*y + z (math.fma, Python 3.13)", arity=3),
        Intrinsic(
            "floor", 1, "f", "i", "Floor", "largest integer <= x, as int (Python math.floor)"
        ),
        Intrinsic("ceil", 1, "f", "i", "Ceil", "smallest integer >= x, as int (Python math.ceil)"),
        Intrinsic("trunc", 1, "f", "i", "Trunc", "x rounded toward zero, as int (math.trunc)"),
        Intrinsic("isnan", 1, "f", "b", "@isnan", "x is NaN"),
        Intrinsic("isinf", 1, "f", "b", "@isinf", "x is +-inf"),
        Intrinsic("isfinite", 1, "f", "b", "@isfinite", "x is neither NaN nor inf"),
        Intrinsic("abs", 1, "n", "same", "@abs", "absolute value (int wraps at -2**31)"),
    ]
}
