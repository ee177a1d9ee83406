"""Matrix tiles in the emulator's translation (a mixin of `KernelTranslator`).

A tile's operations take the same arguments in every invocation of a subgroup (the language's
rule, cthreads/gpu/tiles.py), so each emulated invocation holds the whole tile itself as a
`tiles.Tile` and computes it with the documented exact arithmetic of `cthreads.gpu.tiles`: the
results are those of the subgroup's shared tile, and a store writes the same values from every
invocation. A tile that does not fit (or is misaligned) is reported like any out-of-range access
(`oob='raise'`: IndexError naming the list and the tile's offset; `oob='device'`: zeros / no
write, as on the device).
"""

from __future__ import annotations

import ast

from ..gpu import tiles as T
from .translate import ExprTranslator

TILE_TAGS = frozenset(T.TILE_FUNCTIONS)
_ELEM = {"float": "f32", "int": "i32"}
_PARAMS = {
    "tile_fill": ("elem", "rows", "cols", "value", "use"),
    "tile_load": ("xs", "offset", "stride", "rows", "cols", "use", "col_major", "elem"),
    "tile_store": ("xs", "offset", "stride", "tile", "col_major"),
    "tile_mma": ("a", "b", "c"),
}


def _fill(use, elem, rows, cols, value):
    return T.fill(use, elem, rows, cols, value)


def _load(data, length, name, elem, offset, stride, rows, cols, use, col_major, oob_r, want):
    if elem == "u16" and use != "acc":
        elem = "bf16"  # bf16 bit patterns (frontend/tiles.py: tile_elem)
    word = None
    if want is not None and want != elem:  # elem=: packed in the list's words
        word, elem = elem, want
    t = T.load(data, length, elem, offset, stride, rows, cols, use, col_major, word)
    if t is None:
        oob_r(name, offset, 0)  # raises unless oob='device'
        t = T.fill(use, elem, rows, cols, 0)
    return t


def _store(data, length, name, offset, stride, tile, col_major, oob_w, elem):
    conv = (lambda v: int(v)) if elem not in ("f16", "f32") else (lambda v: float(v))
    if not T.store(data, length, offset, stride, tile, col_major, conv):
        oob_w(name, offset)


def _mma(a, b, c):
    if a.use != "a" or b.use != "b" or c.use != "acc":
        raise T_error(f"tile_mma(a, b, c) takes tiles of use a, b, acc; got {a}, {b}, {c}")
    if a.cols != b.rows or a.rows != c.rows or b.cols != c.cols:
        raise T_error(f"tile shapes do not chain: {a}, {b}, {c}")
    return T.mma(a, b, c)


def T_error(message: str):
    from .semantics import EmulationError

    return EmulationError(message)


TILE_RUNTIME = {
    "_ct_tfill": _fill,
    "_ct_tload": _load,
    "_ct_tstore": _store,
    "_ct_tmma": _mma,
    "_ct_tscale": T.scale,
    "_ct_tadd": T.add,
}


class TileTranslator(ExprTranslator):
    tiles: set[str]

    def tile_args(self, call: ast.Call, what: str) -> dict[str, ast.expr]:
        names = _PARAMS[what]
        if len(call.args) > len(names):
            raise self.error(call, f"{what}() takes at most {len(names)} arguments")
        got = dict(zip(names, call.args))
        for kw in call.keywords:
            if kw.arg not in names or kw.arg in got:
                raise self.error(call, f"{what}(): unexpected argument `{kw.arg}`")
            got[kw.arg] = kw.value
        return got

    def is_tile_value(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tiles
        if isinstance(node, ast.BinOp):
            return self.is_tile_value(node.left) or self.is_tile_value(node.right)
        return False

    def _tile_name(self, node: ast.expr, what: str) -> str:
        if not isinstance(node, ast.Name) or node.id not in self.tiles:
            raise self.error(node, f"{what}: `{ast.unparse(node)}` is not a tile")
        return node.id

    def _const_text(self, node: ast.expr | None, default):
        if node is None:
            return repr(default)
        if isinstance(node, ast.Constant):
            return repr(node.value)
        return self.expr(node)[0]

    def _elem_of(self, node: ast.expr) -> str:
        if getattr(node, "id", getattr(node, "attr", None)) == "bf16":
            return "bf16"  # a tile element type only, not an annotation
        t = self.annotation(node, node)
        return _ELEM.get(t, t)

    def tile_assign(self, st: ast.Assign, what: str | None, indent: int) -> None:
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise self.error(st, "a tile is assigned to one plain name")
        name = st.targets[0].id
        if name in self.scalars or name in self.lists or name in self.shared:
            raise self.error(st, f"`{name}` already holds a value that is not a tile")
        self.observes_workgroup = True
        v = st.value
        if what == "tile_fill":
            a = self.tile_args(v, what)
            elem = self._elem_of(a["elem"])
            value = self.expr(a["value"])[0] if "value" in a else "0"
            code = (
                f"_ct_tfill({self._const_text(a.get('use'), 'acc')}, {elem!r}, "
                f"{self.expr(a['rows'])[0]}, {self.expr(a['cols'])[0]}, {value})"
            )
        elif what == "tile_load":
            a = self.tile_args(v, what)
            arr = self.array(a["xs"])
            if arr is None:
                raise self.error(v, "tile_load() reads a list parameter or a shared array")
            src, data, length, elem = arr
            want = self._elem_of(a["elem"]) if "elem" in a else None
            if src in self.lists:
                self.read.add(src)
            code = (
                f"_ct_tload({data}, {length}, {src!r}, {_ELEM.get(elem, elem)!r}, "
                f"{self.index(a['offset'])}, {self.index(a['stride'])}, "
                f"{self.expr(a['rows'])[0]}, {self.expr(a['cols'])[0]}, "
                f"{self._const_text(a.get('use'), 'a')}, "
                f"{self._const_text(a.get('col_major'), False)}, _ct_oob_r, {want!r})"
            )
        elif what == "tile_mma":
            a = self.tile_args(v, what)
            args = ", ".join(self._tile_name(a[k], what) for k in ("a", "b", "c"))
            code = f"_ct_tmma({args})"
        elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult):
            left = isinstance(v.left, ast.Name) and v.left.id in self.tiles
            tile, factor = (v.left, v.right) if left else (v.right, v.left)
            code = f"_ct_tscale({self._tile_name(tile, 'tile * s')}, {self.expr(factor)[0]})"
        elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add | ast.Sub):
            x = self._tile_name(v.left, "tile + tile")
            y = self._tile_name(v.right, "tile + tile")
            code = f"_ct_tadd({x}, {y}, {isinstance(v.op, ast.Sub)})"
        else:
            raise self.error(st, "this operation is not defined on tiles")
        self.tiles.add(name)
        self.emit(indent, f"{name} = {code}", st)

    def tile_store(self, call: ast.Call, indent: int) -> None:
        a = self.tile_args(call, "tile_store")
        arr = self.array(a["xs"])
        if arr is None:
            raise self.error(call, "tile_store() writes a list parameter or a shared array")
        dst, data, length, elem = arr
        if dst in self.lists:
            self.written.add(dst)
        tile = self._tile_name(a["tile"], "tile_store")
        self.observes_workgroup = True
        self.emit(
            indent,
            f"_ct_tstore({data}, {length}, {dst!r}, {self.index(a['offset'])}, "
            f"{self.index(a['stride'])}, {tile}, {self._const_text(a.get('col_major'), False)}, "
            f"_ct_oob_w, {_ELEM.get(elem, elem)!r})",
            call,
        )
