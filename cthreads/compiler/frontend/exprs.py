"""Expression lowering: Python `ast` expressions -> typed IR expressions.

One `visit_<Node>` per supported construct; anything else is a located compile error. This
module has the leaves (constants, names, module attributes, index builtins, list elements);
operators live in `operators.py`, calls in `calls.py`.
"""

from __future__ import annotations

import ast
import numbers
import types

from .. import ir
from ..ir import BOOL, I32, BinOp, UnOp
from . import typerules as tr
from .calls import CallLowering
from .context import Context
from .names import MISSING, chain_root, dotted_path, gpu_tag
from .operators import INT_RANGE as _INT_RANGE
from .operators import OperatorLowering
from .signature import python_type_name
from .source import Located
from .subgroup import SubgroupValues
from .tiles import tile_in_expression
from .unsupported import FUNCTIONS_ALLOWED, VALUES_ALLOWED, describe

_AXES = {"x": 0, "y": 1, "z": 2}


class ExprLowerer(CallLowering, SubgroupValues, OperatorLowering, Located):
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.source = ctx.source
        self.kernel_name = ctx.kernel_name

    def refuse_whole_list(self, node: ast.AST, name: str, consequence: str, allowed: str) -> None:
        """Fail where `name` is a list parameter used whole (as a value, as an assignment
        target): lists exist in kernels only through their elements and their length."""
        p = self.ctx.param(name)
        if p is not None and p.is_list:
            self.fail(
                node, f"`{name}` is a {python_type_name(p.type)} parameter{consequence}", allowed
            )

    def expr(self, node: ast.expr) -> ir.Expr:
        visit = getattr(self, "visit_" + type(node).__name__, None)
        if visit is None:
            message, allowed = describe(node)
            self.fail(node, message, allowed)
        try:
            result = visit(node)
        except tr.TypeMixError as exc:
            self.fail(node, exc.message, exc.allowed)
        if not tr.is_legacy(result.type):
            self.ctx.note_type(result.type, node)
        return result

    def condition(self, node: ast.expr) -> ir.Expr:
        """A test (`if`, `while`, `not`, `x if c else y`): Python truthiness, as BOOL."""
        if isinstance(node, ast.BoolOp):
            op = BinOp.AND if isinstance(node.op, ast.And) else BinOp.OR
            result = self.condition(node.values[0])
            for value in node.values[1:]:
                result = ir.Binary(BOOL, op, result, self.condition(value))
            return result
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ir.Unary(BOOL, UnOp.NOT, self.condition(node.operand))
        return tr.truthy(self.expr(node))

    # ----------------------------------------------------------------------- leaves

    def visit_Constant(self, node: ast.Constant) -> ir.Expr:
        v = node.value
        if isinstance(v, bool):
            return tr.const(v)
        if isinstance(v, int):
            if not tr.INT_MIN <= v <= tr.INT_MAX:
                self.fail(node, f"int literal {v} does not fit in a 32-bit int", _INT_RANGE)
            return tr.const(v)
        if isinstance(v, float):
            if not tr.fits_f32(v):
                self.fail(
                    node,
                    f"float literal {v!r} is outside the float32 range (about 3.4e38)",
                    "a smaller magnitude, or math.inf",
                )
            return tr.const(v)
        what = {str: "strings", bytes: "bytes", complex: "complex numbers", type(None): "None"}.get(
            type(v), "this constant"
        )
        self.fail(
            node,
            f"{what} are not supported in kernel expressions"
            if what != "None"
            else "None is not a value in kernels",
            VALUES_ALLOWED,
        )

    def visit_Name(self, node: ast.Name) -> ir.Expr:
        name, ctx = node.id, self.ctx
        if name in ctx.shared:
            arr = ctx.shared_arrays[ctx.shared[name]]
            self.fail(
                node,
                f"`{name}` is a {arr.kind} ({tr.type_name(arr.elem)}[{arr.size}], line {arr.line}) "
                "and cannot be used as a single value",
                f"an element `{name}[i]`, or `len({name})`",
            )
        if name in ctx.tiles:
            tile_in_expression(self, node, name)
        p = ctx.param(name)
        self.refuse_whole_list(
            node,
            name,
            " and cannot be used as a single value",
            f"an element `{name}[i]`, or `len({name})`",
        )
        if name in ctx.py_locals:
            info = ctx.locals.get(name)
            if info is not None:
                return ir.LocalRef(info.type, name)
            if p is not None:
                return ir.ParamRef(p.type, ctx.param_index[name])
            self.fail(
                node,
                f"local `{name}` is used before it is assigned",
                f"assign `{name}` above this line (e.g. `{name} = 0`)",
            )
        return self.static_value(node, ctx.env.lookup(name), name)

    def static_value(self, node: ast.expr, value: object, path: str) -> ir.Expr:
        """A free name or module attribute read by value: numbers become constants."""
        if value is MISSING:
            self.unknown_name(node, path)
        if isinstance(value, bool):
            return tr.const(value)
        if isinstance(value, numbers.Integral):
            v = int(value)
            if not tr.INT_MIN <= v <= tr.INT_MAX:
                self.fail(node, f"`{path}` is {v}, which does not fit in a 32-bit int", _INT_RANGE)
            return tr.const(v)
        if isinstance(value, numbers.Real):
            v = float(value)
            if not tr.fits_f32(v):
                self.fail(
                    node,
                    f"`{path}` is {v!r}, outside the float32 range",
                    "a value within about +-3.4e38",
                )
            return tr.const(v)
        tag = gpu_tag(value)
        if tag == "index":
            self.fail(
                node,
                f"`{path}` is an index builtin; read one component",
                f"{path}.x, {path}.y or {path}.z",
            )
        if tag in ("sync_threads", "Barrier", "Barrier-instance"):
            self.fail(
                node,
                f"`{path}` cannot be used as a value",
                "__sync_threads() or Barrier.arrive_and_wait() as a statement",
            )
        if isinstance(value, types.ModuleType):
            self.fail(
                node,
                f"module `{path}` cannot be used as a value",
                f"one of its functions or constants, e.g. {path}.<name>",
            )
        if isinstance(value, (list, tuple, dict, set, frozenset, str, bytes)) or hasattr(
            value, "__array__"
        ):
            self.fail(
                node,
                f"`{path}` is a module-level {type(value).__name__}; kernels read only int, float and bool constants from outside",
                "pass it as a list parameter (list[int], list[float] or list[bool])",
            )
        if callable(value):
            self.fail(
                node,
                f"`{path}` is a function; kernels can only call supported functions",
                FUNCTIONS_ALLOWED,
            )
        self.fail(
            node,
            f"`{path}` is a {type(value).__name__} object, which kernels cannot use",
            VALUES_ALLOWED,
        )

    def unknown_name(self, node: ast.AST, path: str) -> None:
        if path in ("GlobalIdx", "ThreadIdx", "BlockIdx", "BlockDim", "GridDim"):
            self.fail(node, f"name `{path}` is not defined", f"from cthreads.gpu import {path}")
        self.fail(
            node,
            f"name `{path}` is not defined",
            "parameters, locals assigned above, and module-level int/float/bool constants",
        )

    def resolve_static(self, node: ast.expr) -> object:
        """The object a free name or a module attribute chain denotes (MISSING if unbound)."""
        if isinstance(node, ast.Name):
            return self.ctx.env.lookup(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve_static(node.value)
            if base is MISSING:
                return MISSING
            return self.ctx.env.attribute(base, node.attr, dotted_path(node) or "")
        return MISSING

    def is_static(self, node: ast.expr) -> bool:
        """A name chain rooted at a free (non-local) name: resolved at compile time."""
        root = chain_root(node)
        return (
            isinstance(root, ast.Name)
            and root.id not in self.ctx.py_locals
            and dotted_path(node) is not None
        )

    def visit_Attribute(self, node: ast.Attribute) -> ir.Expr:
        if not self.is_static(node):
            root = chain_root(node)
            p = self.ctx.param(root.id) if isinstance(root, ast.Name) else None
            if p is not None and p.is_list:
                if node.attr == "shape":
                    self.fail(
                        node,
                        f"`{ast.unparse(node)}` is not a value; read one extent at a time",
                        f"{root.id}.shape[0], {root.id}.shape[1] or {root.id}.shape[2]",
                    )
                self.fail(
                    node,
                    f"lists have no attributes or methods in kernels (`{ast.unparse(node)}`)",
                    f"{root.id}[i], len({root.id}) and {root.id}.shape[k]",
                )
            self.fail(
                node,
                f"attribute access `.{node.attr}` is not supported on kernel values",
                VALUES_ALLOWED,
            )
        path = dotted_path(node) or node.attr
        base = self.resolve_static(node.value)
        if base is MISSING:
            self.unknown_name(node.value, dotted_path(node.value) or "")
        if gpu_tag(base) == "index":
            if node.attr not in _AXES:
                self.fail(
                    node, f"`{path}`: index builtins have components .x, .y and .z", "x, y or z"
                )
            return ir.Builtin(I32, ir.BuiltinKind(base.name), _AXES[node.attr])
        value = self.ctx.env.attribute(base, node.attr, path)
        if value is MISSING:
            if isinstance(base, types.ModuleType):
                self.fail(
                    node,
                    f"module `{dotted_path(node.value)}` has no attribute `{node.attr}`",
                    VALUES_ALLOWED,
                )
            self.fail(
                node,
                f"attribute `.{node.attr}` of `{dotted_path(node.value)}` cannot be read in a kernel",
                VALUES_ALLOWED,
            )
        return self.static_value(node, value, path)

    # --------------------------------------------------------------------- lists

    def list_param(self, node: ast.expr, context: str, what: str = "list parameters") -> int:
        """The parameter index of a list parameter named by `node` (the `x` of `x[i]`)."""
        if isinstance(node, ast.Name):
            p = self.ctx.param(node.id)
            if p is not None and p.is_list:
                return self.ctx.param_index[node.id]
            if node.id in self.ctx.py_locals:
                t = self.expr(node).type  # raises "used before assigned" where that applies
                self.fail(
                    node,
                    f"`{node.id}` is {tr.a_type(t)}; only {what} can be {context}",
                    "a list parameter x[i]",
                )
        if isinstance(node, ast.Subscript):
            self.fail(
                node,
                "nested indexing is not supported: kernel lists are one-dimensional",
                "a flat list indexed as x[row * width + col]",
            )
        if self.is_static(node):
            self.expr(node)  # reports what the name is (module-level list, function, ...)
        self.fail(node, f"only {what} can be {context}", "a list parameter x[i]")

    def array_ref(
        self, node: ast.expr, context: str, atomic: bool = False, local_ok: bool = False
    ) -> tuple[str, int]:
        """('shared', array index) for a shared array (or, with `local_ok`, a local array),
        else ('list', parameter index). Local arrays take element accesses and len() only."""
        if isinstance(node, ast.Name) and node.id in self.ctx.shared:
            index = self.ctx.shared[node.id]
            arr = self.ctx.shared_arrays[index]
            if arr.private and not local_ok:
                self.fail(
                    node,
                    f"`{node.id}` is a local array (line {arr.line}); only list parameters and "
                    f"shared arrays can be {context}",
                    f"a shared array: `{node.id} = shared({tr.type_name(arr.elem)}, {arr.size})`",
                )
            return "shared", index
        shared = self.ctx.shared or atomic
        what = "list parameters and shared arrays" if shared else "list parameters"
        return "list", self.list_param(node, context, what)

    def index(self, node: ast.expr) -> ir.Expr:
        if isinstance(node, ast.Slice):
            self.fail(node, *describe(node))
        if isinstance(node, ast.Tuple):
            self.fail(
                node,
                "multi-dimensional indexing x[i, j] is not supported",
                "a flat list indexed as x[i * width + j]",
            )
        value = self.expr(node)
        if value.type.is_float:
            self.fail(
                node,
                "list index must be an int, but this is a float",
                "int(...) to convert (it truncates toward zero)",
            )
        if isinstance(value, ir.Const) and value.value < 0:
            self.fail(
                node,
                f"negative index {value.value}: kernel lists do not count from the end",
                "len(x) - 1 for the last element (negative indexes read 0 and writes to them are dropped)",
            )
        return tr.cast(value, I32)

    def element_index(self, node: ast.expr, space: str, li: int) -> ir.Expr:
        """The index of an element access of list `li` or array `li` (`space` from array_ref).
        A local array's index that is a constant outside it is a compile error (its size is
        part of the kernel, and a register tile indexed past its end is always a mistake)."""
        index = self.index(node)
        arr = self.ctx.shared_arrays[li] if space == "shared" else None
        if arr is not None and arr.private:
            from .. import passes

            value = passes.map_expr(index, passes.fold_expr)
            if isinstance(value, ir.Const) and not 0 <= value.value < arr.size:
                self.fail(
                    node,
                    f"index {value.value} is outside local array `{arr.name}` "
                    f"({tr.type_name(arr.elem)}[{arr.size}], line {arr.line})",
                    f"an index from 0 to {arr.size - 1}",
                )
        return index

    def visit_Subscript(self, node: ast.Subscript) -> ir.Expr:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return self.list_shape(node)
        space, li = self.array_ref(node.value, "indexed", local_ok=True)
        if space == "shared":
            elem = self.ctx.shared_arrays[li].elem
            return ir.SharedLoad(elem, li, self.element_index(node.slice, space, li))
        elem = self.ctx.params[li].type.elem  # type: ignore[union-attr]
        return ir.Load(elem, li, self.index(node.slice))

    def list_shape(self, node: ast.Subscript) -> ir.Expr:
        """`x.shape[k]`: the extent of axis k (0, 1 or 2, a compile-time int) of list `x`."""
        base = node.value.value  # type: ignore[attr-defined]
        if isinstance(base, ast.Name) and base.id in self.ctx.shared:
            arr = self.ctx.shared_arrays[self.ctx.shared[base.id]]
            self.fail(node, f"{arr.kind} `{base.id}` has no shape", f"len({base.id})")
        li = self.list_param(base, "asked for .shape")
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            self.fail(
                node, "`.shape` takes one axis: x.shape[0], x.shape[1] or x.shape[2]", "x.shape[k]"
            )
        k = self.expr(node.slice)
        if not isinstance(k, ir.Const) or not k.type.is_int or isinstance(k.value, bool):
            self.fail(
                node.slice,
                "the axis of `.shape[...]` must be an int known when the kernel is compiled",
                "a literal axis: x.shape[0], x.shape[1] or x.shape[2]",
            )
        if not 0 <= k.value <= 2:
            self.fail(
                node.slice,
                f"axis {k.value} is out of range: kernels see at most 3 extents per list",
                "x.shape[0], x.shape[1] or x.shape[2] (len(x) is the total element count)",
            )
        return ir.ListShape(I32, li, int(k.value))

    def visit_Call(self, node: ast.Call) -> ir.Expr:
        return self.call_value(node)
