"""One visitor idiom in the frontend and the codegen (docs/internals.md, "How the frontend and
codegen are organised"): a node class `X` is handled by a method `visit_X` of the one visitor
class of its layer; families of constructs are mixins of that class, never helper objects that
hold a back reference to it or module functions that take it as their first argument."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cthreads.compiler.frontend as frontend
from cthreads.compiler import ir
from cthreads.compiler.spirv import codegen
from cthreads.compiler.spirv.codegen_expr import CodegenError

FRONTEND = Path(frontend.__file__).parent
SPIRV = Path(codegen.__file__).parent
VISITOR_MODULES = sorted(
    [p for p in FRONTEND.glob("*.py") if p.name != "typerules.py"] + list(SPIRV.glob("codegen*.py"))
)
VISITORS = ("ExprLowerer", "StmtLowerer", "Codegen")


def _nodes(base: type) -> list[type]:
    out, todo = [], [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            # the IR's own node kinds (tests define throwaway kinds of their own)
            if sub.__module__ == base.__module__:
                out.append(sub)
    return out


@pytest.mark.parametrize("base", [ir.Expr, ir.Stmt], ids=lambda b: b.__name__)
def test_codegen_visits_every_ir_node(base):
    missing = [
        t.__name__ for t in _nodes(base) if not hasattr(codegen.Codegen, f"visit_{t.__name__}")
    ]
    assert _nodes(base) and not missing, f"Codegen lacks visit_ methods for {missing}"


def test_codegen_rejects_unknown_ir_and_honours_overrides():
    class Strange(ir.Expr):
        type: ir.Scalar = ir.I32

    with pytest.raises(CodegenError, match="unknown expression node Strange"):
        codegen.Codegen.visitor(Strange, ir.Expr, "expression")
    with pytest.raises(CodegenError, match="unknown statement node Const"):  # an expression
        codegen.Codegen.visitor(ir.Const, ir.Stmt, "statement")

    class Mine(codegen.Codegen):
        def visit_Const(self, e):
            return -1

    assert Mine.visitor(ir.Const, ir.Expr, "expression") is Mine.visit_Const
    assert Mine.VISITORS is not codegen.Codegen.VISITORS  # one cache per class


def _mentions_visitor(node: ast.arg) -> bool:
    text = ast.unparse(node.annotation) if node.annotation else ""
    return any(v in text for v in VISITORS) or node.arg in ("exprs", "stmts")


@pytest.mark.parametrize("path", VISITOR_MODULES, ids=lambda p: p.name)
def test_no_helper_objects_or_functions_taking_the_visitor(path):
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.args.args:
            args = node.args.args
            first = args[1] if args[0].arg in ("self", "cls") and len(args) > 1 else args[0]
            if args[0].arg in ("self", "cls") and node.name != "__init__":
                continue  # a method's own arguments are its business
            if _mentions_visitor(first) or (node.name != "__init__" and first.arg in ("s", "x")):
                found.append(f"line {node.lineno}: {node.name}({first.arg})")
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute):
            target = node.targets[0]
            if target.attr in ("DISPATCH", "STMTS") or (
                isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).endswith("Lowerer")
            ):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
    assert not found, f"{path.name}: make these visit_ methods or mixins of the visitor: {found}"
