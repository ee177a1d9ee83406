"""Codegen takes SPIR-V enumerants from the generated grammar, never as hand-typed numbers.

A typed number (`2` for MemoryAccess.Aligned, `0x8 | 0x40 | 0x100` for barrier semantics) hides
which enumerant it means and survives a wrong guess silently; `grammar.py` names every one. The
check reads the codegen sources (ast) for the operand positions that take an enumerant.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cthreads.compiler.spirv as spirv_pkg

SPIRV = Path(spirv_pkg.__file__).parent
CODEGEN = sorted(SPIRV.glob("codegen*.py"))
# Instructions whose trailing operands are (or, through a constant id, carry) enumerants.
_CONTROL = {"LoopMerge", "SelectionMerge"}  # LoopControl / SelectionControl
_MEMORY = {"Load", "Store"}  # MemoryAccess, then the alignment in bytes (a literal is right)
_SCOPED = {"ControlBarrier", "MemoryBarrier"}  # Scope and MemorySemantics ids


def _module_numbers(trees) -> set[str]:
    """Module-level names bound to a number (`ALIGNED = 2`), across all codegen modules (they
    import each other's)."""
    return {
        t.id
        for tree in trees
        for node in tree.body
        if isinstance(node, ast.Assign) and _int_literal(node.value, set())
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _int_literal(node: ast.AST, numbers: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in numbers
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.BinOp):
        return _int_literal(node.left, numbers) and _int_literal(node.right, numbers)
    return isinstance(node, ast.UnaryOp) and _int_literal(node.operand, numbers)


def _opcode(call: ast.Call) -> tuple[int, str] | None:
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "Op":
            return i, a.attr
    return None


def _hand_typed(tree: ast.AST, numbers: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (oc := _opcode(node)):
            i, name = oc
            rest = node.args[i + 1 :]
            if name in _CONTROL:
                bad = [a for a in rest if _int_literal(a, numbers)]
            elif name in _MEMORY:
                bad = [a for a in rest[:-1] if _int_literal(a, numbers)]
            elif name in _SCOPED or name.startswith("Atomic"):
                bad = [
                    a
                    for a in rest
                    if isinstance(a, ast.Call) and a.args and _int_literal(a.args[0], numbers)
                ]
            else:
                bad = []
            found += [f"line {a.lineno}: Op.{name} operand {ast.unparse(a)}" for a in bad]
    return found


@pytest.mark.parametrize("path", CODEGEN, ids=lambda p: p.name)
def test_no_hand_typed_spirv_numbers(path):
    assert CODEGEN, "no codegen modules found"
    trees = [ast.parse(p.read_text()) for p in CODEGEN]
    found = _hand_typed(ast.parse(path.read_text()), _module_numbers(trees))
    assert not found, f"{path.name}: use the grammar's names (spirv/grammar.py): {found}"


def test_the_check_sees_hand_typed_numbers():
    """The check itself: the forms the codegen once used are caught."""
    src = (
        "ALIGNED = 2\n"
        "BARRIER = 0x8 | 0x40\n"
        "self.ins(Op.LoopMerge, merge, cont, 0)\n"
        "self.ins(Op.ControlBarrier, sc, sc, self.ki(BARRIER))\n"
        "self.op(Op.Load, t, ptr, ALIGNED, 4)\n"
    )
    tree = ast.parse(src)
    found = _hand_typed(tree, _module_numbers([tree]))
    assert len(found) == 3, found
