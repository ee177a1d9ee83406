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
    (`0.0`, `float(False)`, `(3 - 3)`) out of products and float locals there. A read the
    driver can prove out of range (`xs[len(xs)]`: its bounds check folds, the read is a
    constant zero) counts as that zero too (#17): see `known_zero_reads`."""
    if expr.strip("()") in ("0.0", "-0.0"):
        return "0.5"
    folded = known_zero_reads(expr)
    if constant(folded) and "**" not in folded and "<<" not in folded:  # cheap to evaluate
        try:
            value = eval(folded, {"math": __import__("math"), "min": min, "max": max, "abs": abs})
        except (ArithmeticError, ValueError, TypeError):
            return expr
        return "0.5" if value == 0 else expr
    return expr


# the zero an out-of-range read of each list gives (int lists: 0)
_LIST_ZEROS = {"xs": 0.0, "out_f": 0.0, "ds": 0.0, "fs": False, "out_b": False}


def known_zero_reads(expr: str) -> str:
    """`expr` with each list read whose index may be provably out of range replaced by the zero
    it reads there: a read `xs[e]` whose index `e` names `len(xs)` (`xs[len(xs)]`,
    `xs[(len(xs) + 2)]`, `xs[max(len(xs), c0)]`), except the in-range form `xs[(e) % len(xs)]`.
    The device's bounds check is `uint(e) < len(xs)`, which LLVM folds to false for such
    indexes, leaving a constant zero that lavapipe then folds into `0 * x` (#17). Other
    out-of-range reads (`xs[i + 3]`, `xs[(-7) & 255]`) depend on run-time lengths and stay."""
    if "len(" not in expr or "[" not in expr:
        return expr
    tree = ast.parse(expr, mode="eval")

    class _Reads(ast.NodeTransformer):
        def visit_Subscript(self, node):
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and _past_end(node.slice, node.value.id):
                return ast.Constant(_LIST_ZEROS.get(node.value.id, 0))
            return node

    return ast.unparse(_Reads().visit(tree))


def _past_end(index: ast.expr, name: str) -> bool:
    """Whether `index` may be proven out of range of list `name` by the driver's compiler."""
    if (
        isinstance(index, ast.BinOp)
        and isinstance(index.op, ast.Mod)
        and _is_len(index.right, name)
        and not any(_is_len(n, name) for n in ast.walk(index.left))
    ):
        return False  # `(e) % len(xs)`: in range for any e
    return any(_is_len(n, name) for n in ast.walk(index))


def _is_len(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == name
    )


def constant(expr: str) -> bool:
    """Whether the compiler can fold `expr` to a constant (it names no runtime value)."""
    return all(
        node.id in _CONST_NAMES
        for node in ast.walk(ast.parse(expr, mode="eval"))
        if isinstance(node, ast.Name)
    )


__all__ = [
    "AVOID",
    "KNOWN_DEVIATIONS",
    "avoid_known_deviations",
    "constant",
    "known_zero_reads",
    "not_zero_constant",
]
