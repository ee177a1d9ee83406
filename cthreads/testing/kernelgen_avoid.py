"""What the kernel generator (kernelgen.py) steers around: the CTHREADS_FUZZ_AVOID classes of
known, reported discrepancies, those added per device, and the constant-expression test the
generator uses to keep folded operands clear of them (docs/reliability.md).
"""

from __future__ import annotations

import ast
import os

# Known, reported discrepancy classes the generator can steer around so a campaign finds the
# next bug instead of the same one: CTHREADS_FUZZ_AVOID=intmod0,... (docs/reliability.md).
AVOID = {w.strip() for w in os.environ.get("CTHREADS_FUZZ_AVOID", "").split(",") if w.strip()}
# Driver deviations with their own regression tests (tests/testing/test_fuzz_regressions.py):
# campaigns on such a device steer around them so they find the next bug instead.
KNOWN_DEVIATIONS = {"llvmpipe": ("zeromul", "bcastfirstf")}


def avoid_known_deviations(device_name: str) -> list[str]:
    """Add the avoid classes known for `device_name` to AVOID; returns the ones added."""
    added = [c for key, classes in KNOWN_DEVIATIONS.items() if key in device_name for c in classes]
    AVOID.update(added)
    return added


_CONST_NAMES = {"True", "False", "math", "int", "float", "bool", "abs", "min", "max"}


def not_zero_constant(expr: str) -> str:
    """`zeromul`: lavapipe (Mesa 22.3) folds `0.0 * x` to 0.0 even for x = inf or NaN, despite
    NoContraction and SignedZeroInfNanPreserve; keep zeros the compiler folds to a constant
    (`0.0`, `float(False)`, `(3 - 3)`) out of products and float locals there."""
    if expr.strip("()") in ("0.0", "-0.0"):
        return "0.5"
    if constant(expr) and "**" not in expr and "<<" not in expr:  # cheap to evaluate
        try:
            value = eval(expr, {"math": __import__("math"), "min": min, "max": max, "abs": abs})
        except (ArithmeticError, ValueError):
            return expr
        return "0.5" if value == 0 else expr
    return expr


def constant(expr: str) -> bool:
    """Whether the compiler can fold `expr` to a constant (it names no runtime value)."""
    return all(
        node.id in _CONST_NAMES
        for node in ast.walk(ast.parse(expr, mode="eval"))
        if isinstance(node, ast.Name)
    )


__all__ = ["AVOID", "KNOWN_DEVIATIONS", "avoid_known_deviations", "constant", "not_zero_constant"]
