"""Matrix tiles (cooperative matrices): `a = tile_load(xs, off, ld, 16, 16, use="a")`, ...

A tile is held by a whole subgroup, so every tile operation is a statement (`ir.Tile*`), like the
subgroup operations: the value of an assignment to a plain name (`acc = tile_mma(a, b, acc)`,
`acc = acc * 0.5`, `acc = acc + other`) or, for `tile_store`, a line of its own. A tile name keeps
the type of its first assignment (use, element type, shape) and is never part of an ordinary
expression. Shapes and element types are checked against the device's list when compiling for a
target (compile.py, `matrix_shape_error`); here only what holds on every device.

bfloat16 operands: numpy has no bf16, so its data lives in `list[u16]` (and u16 shared arrays) as
bit patterns; a tile loaded from one with use "a" or "b" holds bf16 (integer tiles of 16 bits do
not exist), and `tile_fill(bf16, ...)` names the type (`ir.BF16`, a tile element type only).

Packed loads: `tile_load(ws, ..., elem=f16)` reads a tile whose elements lie packed in the u32 or
u64 words of `ws` (offset and stride count words), so data can be copied a word at a time.
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import I32, TileType
from . import typerules as tr
from .signature import type_from_node

TILE_NAMES = frozenset(("tile_fill", "tile_load", "tile_store", "tile_mma"))
OPERAND_TYPES = (ir.F16, ir.BF16, ir.I8, ir.U8)
ACCUMULATOR_TYPES = (ir.F32, ir.F16, ir.I32, ir.U32)
_FORMS = {
    "tile_fill": 'acc = tile_fill(f32, 16, 16, 0.0) (type, rows, cols, value, use="acc")',
    "tile_load": 'a = tile_load(xs, offset, stride, 16, 16, use="a", col_major=False, elem=None)',
    "tile_store": "tile_store(xs, offset, stride, acc, col_major=False) on a line of its own",
    "tile_mma": "acc = tile_mma(a, b, acc)",
}
_PARAMS = {
    "tile_fill": (("elem", "rows", "cols", "value", "use"), 3),
    "tile_load": (("xs", "offset", "stride", "rows", "cols", "use", "col_major", "elem"), 5),
    "tile_store": (("xs", "offset", "stride", "tile", "col_major"), 4),
    "tile_mma": (("a", "b", "c"), 3),
}
_DEFAULT_USE = {"tile_fill": "acc", "tile_load": "a"}


def allowed_types(use: str) -> tuple[ir.Scalar, ...]:
    return ACCUMULATOR_TYPES if use == "acc" else OPERAND_TYPES


def tile_elem(list_elem: ir.Scalar, use: str) -> ir.Scalar:
    """The element type of a `use` tile read from a list of `list_elem`: u16 bits are bf16."""
    return ir.BF16 if list_elem == ir.U16 and use != "acc" else list_elem


def _floating(elem: ir.Scalar) -> bool:
    return elem.is_float or elem == ir.BF16


def _fill_type(node: ast.expr):
    """The element type tile_fill's first argument names (`bf16` is a tile-only type)."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return ir.BF16 if name == "bf16" else type_from_node(node)


def _names(types) -> str:
    return ", ".join(str(t) for t in types)


class TileLowering:
    """Mixin of stmts.StmtLowerer: the tile statements."""

    # ---------------------------------------------------------------- recognition
    def tile_value(self, node: ast.expr) -> bool:
        """Whether assigning `node` is a tile statement (a tile call, or arithmetic on tiles)."""
        if isinstance(node, ast.Call):
            kind, _ = self.x.callee(node)
            return kind == "tile"
        if isinstance(node, ast.BinOp):
            return self._is_tile(node.left) or self._is_tile(node.right)
        return self._is_tile(node)

    def _is_tile(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.ctx.tiles

    # -------------------------------------------------------------------- helpers
    def _args(self, call: ast.Call, name: str) -> dict[str, ast.expr]:
        names, required = _PARAMS[name]
        form = _FORMS[name]
        got: dict[str, ast.expr] = {}
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                self.fail(arg, "starred arguments (`*x`) are not supported in kernels", form)
        if len(call.args) > len(names):
            self.fail(call, f"{name}() takes at most {len(names)} arguments", form)
        got.update(zip(names, call.args))
        for kw in call.keywords:
            if kw.arg not in names:
                self.fail(kw, f"{name}() has no argument `{kw.arg}`", form)
            if kw.arg in got:
                self.fail(kw, f"{name}() got `{kw.arg}` twice", form)
            got[kw.arg] = kw.value
        missing = [n for n in names[:required] if n not in got]
        if missing:
            self.fail(call, f"{name}() needs `{missing[0]}`", form)
        return got

    def _constant(self, node: ast.expr, what: str, form: str):
        from .. import passes

        value = passes.map_expr(self.x.expr(node), passes.fold_expr)
        if not isinstance(value, ir.Const):
            self.fail(node, f"{what} must be known when compiling", form)
        return value.value

    def _dim(self, node: ast.expr, what: str, form: str) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            self.fail(node, f"the {what} of a tile is an int", form)
        v = self._constant(node, f"the {what} of a tile", form)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            self.fail(node, f"the {what} of a tile must be a positive int; got {v!r}", form)
        return v

    def _use(self, node: ast.expr | None, name: str) -> str:
        if node is None:
            return _DEFAULT_USE[name]
        if not (isinstance(node, ast.Constant) and node.value in ("a", "b", "acc")):
            self.fail(node, 'use= is "a", "b" or "acc" (a string literal)', _FORMS[name])
        return node.value

    def _flag(self, node: ast.expr | None, name: str) -> bool:
        if node is None:
            return False
        v = self._constant(node, "col_major", _FORMS[name])
        if not isinstance(v, bool):
            self.fail(node, "col_major is True or False", _FORMS[name])
        return v

    def _int(self, node: ast.expr, what: str, form: str) -> ir.Expr:
        v = self.x.expr(node)
        if not v.type.is_int and not v.type.is_bool:
            self.fail(node, f"the {what} of a tile access must be an int", form)
        return tr.cast(v, I32)

    def _tile(self, node: ast.expr, name: str, use: str | None = None) -> tuple[str, TileType]:
        form = _FORMS[name]
        if not isinstance(node, ast.Name) or node.id not in self.ctx.tiles:
            self.fail(node, f"`{ast.unparse(node)}` is not a tile (assign one above first)", form)
        t = self.ctx.tiles[node.id]
        if use is not None and t.use != use:
            self.fail(
                node,
                f'`{node.id}` is a {t} tile; {name}() needs a use="{use}" tile here',
                form,
            )
        return node.id, t

    def _array(self, node: ast.expr, name: str) -> tuple[bool, int, ir.Scalar, str]:
        space, index = self.x.array_ref(node, f"read by {name}()")
        if space == "shared":
            arr = self.ctx.shared_arrays[index]
            return True, index, arr.elem, f"shared array `{arr.name}`"
        p = self.ctx.params[index]
        return False, index, p.type.elem, f"`{p.name}`"  # type: ignore[union-attr]

    def _line(self, node: ast.AST) -> int:
        return self.ctx.source.position(node)[0]

    def _bind(self, target: ast.expr, t: TileType, node: ast.AST) -> str:
        """The tile local `target` names, declared with type `t` on first assignment."""
        ctx = self.ctx
        if not isinstance(target, ast.Name):
            self.fail(target, "a tile is assigned to a plain name", "acc = tile_mma(a, b, acc)")
        name = target.id
        if name in ctx.locals or ctx.param(name) is not None or name in ctx.shared:
            self.fail(
                target,
                f"`{name}` already holds a value that is not a tile; a tile needs a name of its own",
                "a new name, e.g. acc2 = ...",
            )
        old = ctx.tiles.get(name)
        if old is not None and old != t:
            self.fail(
                node,
                f"`{name}` is a {old} tile (a tile keeps the type of its first assignment); "
                f"this is a {t} tile",
                "a new name for a tile of another use, element type or shape",
            )
        ctx.tiles[name] = t
        return name

    # ----------------------------------------------------------------- statements
    def tile_assign(self, node: ast.Assign) -> list[ir.Stmt]:
        if len(node.targets) != 1:
            self.fail(node, "a tile is assigned to one name", "acc = tile_mma(a, b, acc)")
        target, value = node.targets[0], node.value
        line = self._line(value)
        if isinstance(value, ast.Call):
            _, name = self.x.callee(value)
            if name == "tile_store":
                self.fail(value, "tile_store() has no value", _FORMS[name])
            args = self._args(value, name)
            if name == "tile_fill":
                return self._fill(target, value, args, line)
            if name == "tile_load":
                return self._load(target, value, args, line)
            return self._mma(target, value, args, line)
        if isinstance(value, ast.BinOp):
            return self._arith(target, value, line)
        if not isinstance(target, ast.Name):
            tile_in_expression(self, value, value.id)  # `x[0] = acc`
        self.fail(
            value,
            "a tile cannot be copied (its registers are spread over the subgroup)",
            "keep using the tile's own name, or `t2 = t * 1` for a new accumulator",
        )

    def tile_statement(self, call: ast.Call) -> list[ir.Stmt]:
        """`tile_store(...)` on a line of its own (other tile calls there have no effect)."""
        _, name = self.x.callee(call)
        if name != "tile_store":
            self.fail(call, f"`{name}()` alone has no effect", _FORMS[name])
        args = self._args(call, name)
        form = _FORMS[name]
        tile, t = self._tile(args["tile"], name)
        shared, index, elem, shown = self._array(args["xs"], name)
        if tile_elem(elem, t.use) != t.elem:
            self.fail(
                args["xs"],
                f"{shown} holds {elem} elements; the tile `{tile}` holds {t.elem}",
                "a list or shared array of the tile's element type",
            )
        offset = self._int(args["offset"], "offset", form)
        stride = self._int(args["stride"], "stride", form)
        col = self._flag(args.get("col_major"), name)
        return [ir.TileStore(tile, shared, index, offset, stride, col, self._line(call))]

    def _check_elem(self, node: ast.AST, use: str, elem: ir.Scalar, form: str) -> None:
        if elem not in allowed_types(use):
            what = "accumulator" if use == "acc" else f'use="{use}"'
            self.fail(
                node,
                f"{what} tiles hold {_names(allowed_types(use))} elements; this is {elem}",
                form,
            )
        if not tr.is_legacy(elem) and elem != ir.BF16:  # bf16: the list's u16 was noted
            self.ctx.note_type(elem, node)

    def _fill(self, target, call, args, line) -> list[ir.Stmt]:
        form = _FORMS["tile_fill"]
        elem = _fill_type(args["elem"])
        if not isinstance(elem, ir.Scalar):
            self.fail(args["elem"], "the first argument of tile_fill() is an element type", form)
        use = self._use(args.get("use"), "tile_fill")
        self._check_elem(args["elem"], use, elem, form)
        rows = self._dim(args["rows"], "rows", form)
        cols = self._dim(args["cols"], "cols", form)
        vnode = args.get("value")
        vtype = ir.F32 if elem == ir.BF16 else elem  # a bf16 fill converts an f32 (codegen)
        value = tr.const(0, vtype) if vnode is None else self.x.expr(vnode)
        value = self.coerce(vnode or call, value, vtype, f"an element of a {elem} tile")
        name = self._bind(target, TileType(use, elem, rows, cols), call)
        return [ir.TileFill(name, value, line)]

    def _load(self, target, call, args, line) -> list[ir.Stmt]:
        form = _FORMS["tile_load"]
        use = self._use(args.get("use"), "tile_load")
        shared, index, word, shown = self._array(args["xs"], "tile_load")
        elem = tile_elem(word, use)
        if args.get("elem") is not None:
            elem = self._packed_elem(args["elem"], word, shown, form)
        self._check_elem(args.get("elem") or args["xs"], use, elem, form)
        offset = self._int(args["offset"], "offset", form)
        stride = self._int(args["stride"], "stride", form)
        rows = self._dim(args["rows"], "rows", form)
        cols = self._dim(args["cols"], "cols", form)
        col = self._flag(args.get("col_major"), "tile_load")
        line_bytes = (rows if col else cols) * elem.bits // 8
        if line_bytes % (word.bits // 8):
            self.fail(
                call,
                f"a {'column' if col else 'row'} of this tile is {line_bytes} bytes, not a whole "
                f"number of {shown}'s {word} words",
                "a tile whose rows (columns, col_major) fill whole words",
            )
        name = self._bind(target, TileType(use, elem, rows, cols), call)
        return [ir.TileLoad(name, shared, index, offset, stride, col, line)]

    def _packed_elem(self, node: ast.expr, word: ir.Scalar, shown: str, form: str) -> ir.Scalar:
        """The element type `elem=` names: the array's own, or one packed in its u32/u64 words."""
        elem = _fill_type(node)
        if not isinstance(elem, ir.Scalar):
            self.fail(node, "elem= is an element type (f16, bf16, i8, u8, ...)", form)
        if elem != tile_elem(word, "a") and word not in (ir.U32, ir.U64):
            self.fail(
                node,
                f"elem={elem} reads tile elements packed in u32 or u64 words; {shown} holds {word}",
                "a list[u32] / list[u64] (or shared u32 / u64 array) of the packed data, or no elem=",
            )
        return elem

    def _mma(self, target, call, args, line) -> list[ir.Stmt]:
        form = _FORMS["tile_mma"]
        a, ta = self._tile(args["a"], "tile_mma", "a")
        b, tb = self._tile(args["b"], "tile_mma", "b")
        c, tc = self._tile(args["c"], "tile_mma", "acc")
        if ta.elem != tb.elem:
            self.fail(call, f"`{a}` holds {ta.elem} and `{b}` {tb.elem}; they must match", form)
        if ta.cols != tb.rows or ta.rows != tc.rows or tb.cols != tc.cols:
            self.fail(
                call,
                f"shapes do not chain: a is {ta.rows}x{ta.cols}, b {tb.rows}x{tb.cols}, "
                f"c {tc.rows}x{tc.cols} (a M x K, b K x N, c M x N)",
                form,
            )
        if _floating(ta.elem) != tc.elem.is_float:
            self.fail(
                call,
                f"{ta.elem} operands accumulate into "
                f"{'f32 or f16' if _floating(ta.elem) else 'i32 or u32'}; `{c}` holds {tc.elem}",
                form,
            )
        name = self._bind(target, tc, call)
        return [ir.TileMma(name, a, b, c, line)]

    def _arith(self, target, node: ast.BinOp, line) -> list[ir.Stmt]:
        form = "acc = acc * s, acc = s * acc, acc = acc + other, acc = acc - other"
        left, right = self._is_tile(node.left), self._is_tile(node.right)
        if isinstance(node.op, ast.Mult) and left != right:
            tnode, snode = (node.left, node.right) if left else (node.right, node.left)
            src, t = self._acc(tnode, form)
            factor = self.coerce(snode, self.x.expr(snode), t.elem, f"a {t.elem} tile factor")
            return [ir.TileScale(self._bind(target, t, node), src, factor, line)]
        if isinstance(node.op, ast.Add | ast.Sub) and left and right:
            x, tx = self._acc(node.left, form)
            y, ty = self._acc(node.right, form)
            if tx != ty:
                self.fail(
                    node, f"`{x}` is a {tx} tile and `{y}` a {ty} tile; they must match", form
                )
            sub = isinstance(node.op, ast.Sub)
            return [ir.TileAdd(self._bind(target, tx, node), x, y, sub, line)]
        self.fail(node, "this operation is not defined on tiles", form)

    def _acc(self, node: ast.expr, form: str) -> tuple[str, TileType]:
        name = node.id  # type: ignore[attr-defined]
        t = self.ctx.tiles[name]
        if t.use != "acc":
            self.fail(
                node, f"`{name}` is a {t} tile; scaling and adding work on accumulators", form
            )
        return name, t


def _shape_text(shape: tuple) -> str:
    m, n, k, a, b, c, r = shape
    acc = c if c == r else f"{c}->{r}"
    return f"{m}x{n}x{k} {a}x{b}->{acc}"


def matrix_shape_error(kernel: ir.Kernel, shapes: tuple) -> tuple[int, str, str, str] | None:
    """(line, call name, message, allowed) for the first tile statement whose shape or types the
    device's list `shapes` ((M, N, K, A, B, C, Result), Target.matrix_shapes) lacks; None if all
    fit. A load or fill is checked for its own use (an "a" tile needs some M x K with that
    element type), a multiply-add for the whole combination."""
    from .. import passes

    listed = "; ".join(_shape_text(s) for s in shapes)
    allowed = (
        f"a shape this device lists (M x N x K, A x B -> accumulator): {listed}"
        if shapes
        else 'compile for a device with matrix units (e.g. `kernel.compile(chip="nvidia-h200")`), '
        "or run the kernel with cthreads.testing.emulate()"
    )
    for st in passes.walk_stmts(kernel.body):
        if isinstance(st, ir.TileFill | ir.TileLoad):
            name = "tile_fill" if isinstance(st, ir.TileFill) else "tile_load"
            t = kernel.tiles[st.tile]
            e = str(t.elem)
            if not shapes:
                return (
                    st.line,
                    name,
                    "this device has no matrix units that kernels can use (no subgroup-scope "
                    "VK_KHR_cooperative_matrix shapes; `cthreads.gpu.matrix_shapes()` is empty), "
                    "so tile operations cannot run on it",
                    allowed,
                )
            if t.use == "a":
                ok = any(s[0] == t.rows and s[2] == t.cols and s[3] == e for s in shapes)
                what = f'a {t.rows}x{t.cols} (M x K) {e} "a" tile'
            elif t.use == "b":
                ok = any(s[2] == t.rows and s[1] == t.cols and s[4] == e for s in shapes)
                what = f'a {t.rows}x{t.cols} (K x N) {e} "b" tile'
            else:
                ok = any(s[0] == t.rows and s[1] == t.cols and e in (s[5], s[6]) for s in shapes)
                what = f"a {t.rows}x{t.cols} (M x N) {e} accumulator"
            if not ok:
                return st.line, name, f"this device's matrix units have no {what}", allowed
        elif isinstance(st, ir.TileMma):
            ta, tb, tc = (kernel.tiles[n] for n in (st.a, st.b, st.c))
            want = (
                ta.rows,
                tb.cols,
                ta.cols,
                str(ta.elem),
                str(tb.elem),
                str(tc.elem),
                str(tc.elem),
            )
            if want not in shapes:
                return (
                    st.line,
                    "tile_mma",
                    f"this device's matrix units have no {_shape_text(want)} multiply-add",
                    allowed,
                )
    return None


def tile_in_expression(lowerer, node: ast.AST, name: str) -> None:
    """The error for a tile (or a tile call) inside an ordinary expression."""
    lowerer.fail(
        node,
        f"`{name}` is a tile, held by the whole subgroup; it is not a value an expression can use",
        "tile_store() it into a list or shared array and read the elements there",
    )
