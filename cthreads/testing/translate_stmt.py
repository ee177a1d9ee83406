"""Statements and the whole kernel: signature, locals, control flow, list stores, barriers.

`translate(fn)` returns a cached `Translation` whose `factory(**launch)` builds the function the
emulator calls once per invocation (a generator when the kernel has barriers).
"""

from __future__ import annotations

import ast
import math
import types
import weakref

from . import semantics as S
from .translate import (
    _ZERO,
    EXPLICIT,
    SCALARS,
    Lit,
    Translation,
    _adapts,
    parse_kernel,
    widening,
    wrapped,
)
from .translate_memory import MemoryTranslator
from .translate_subgroup import SUBGROUP_OPS, SubgroupTranslator, uses_subgroups
from .translate_tiles import TILE_RUNTIME, TILE_TAGS, TileTranslator

_cache: weakref.WeakKeyDictionary[types.FunctionType, dict] = weakref.WeakKeyDictionary()


class KernelTranslator(SubgroupTranslator, MemoryTranslator, TileTranslator):
    def __init__(self, func, tree, filename, line0, given=None):
        super().__init__(func, tree, filename, line0, given)
        from .translate_calls import callee

        self.uses_sg = uses_subgroups(tree, lambda f: callee(self, f))
        self.sg_loops = []
        self.shared_sizes = []
        self.private: set[str] = set()  # the local arrays among `shared` (translate_memory.py)
        self.tiles = set()  # tile locals (translate_tiles.py)
        self.lines: list[tuple[int, str, int]] = []  # (indent, text, kernel line)
        self.has_barrier = False
        self.loop_depth = 0

    def emit(self, indent: int, text: str, node: ast.AST) -> None:
        self.lines.append((indent, text, getattr(node, "lineno", 0) + self.line0))

    # -------------------------------------------------------------------------- signature

    def signature(self) -> list[tuple[str, str]]:
        args = self.tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise self.error(self.tree, "kernel parameters must be plain positional parameters")
        params = []
        for a in args.args:
            if a.arg.startswith("_ct_"):
                raise self.error(
                    a, f"names starting with `_ct_` are reserved by the emulator (`{a.arg}`)"
                )
            t = self.annotation(a.annotation, a, allow_list=True)
            if t.startswith("list["):
                self.lists[a.arg] = t[5:-1]
            else:
                self.scalars[a.arg] = t
            params.append((a.arg, t))
        return params

    def annotation(self, ann, node, allow_list=False) -> str:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            ann = ast.parse(ann.value, mode="eval").body
        if isinstance(ann, ast.Name) and ann.id in SCALARS:
            return ann.id
        if isinstance(ann, ast.Name) and ann.id in EXPLICIT:
            return EXPLICIT[ann.id]
        if (
            allow_list
            and isinstance(ann, ast.Subscript)
            and isinstance(ann.value, ast.Name)
            and ann.value.id in ("list", "List")
            and isinstance(ann.slice, ast.Name)
            and (ann.slice.id in EXPLICIT or ann.slice.id in SCALARS)
        ):
            elem = ann.slice.id
            return f"list[{EXPLICIT.get(elem, elem)}]"
        what = "int, float, bool or list[int/float/bool]" if allow_list else "int, float or bool"
        got = ast.unparse(ann) if ann is not None else "no annotation"
        raise self.error(node, f"annotation must be {what}; got {got}")

    # ------------------------------------------------------------------------- statements

    def block(self, body: list[ast.stmt], indent: int) -> None:
        start = len(self.lines)
        for st in body:
            method = getattr(self, "s_" + type(st).__name__, None)
            if method is None:
                raise self.error(
                    st, f"`{type(st).__name__}` statements are not supported in kernels"
                )
            method(st, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass", body[0] if body else self.tree)

    def declare(self, name: str, t: str, node: ast.AST) -> None:
        if name.startswith("_ct_"):
            raise self.error(
                node, f"names starting with `_ct_` are reserved by the emulator (`{name}`)"
            )
        if name in self.lists or name in self.shared:
            what = "list parameter" if name in self.lists else self.array_kind(name)
            raise self.error(node, f"cannot assign to {what} `{name}` (assign its elements)")
        old = self.scalars.get(name)
        if old is None:
            self.scalars[name] = self.locals[name] = t
        elif old != t:
            raise self.error(node, f"`{name}` is {old}; it cannot become {t}")

    def convert(self, code: str, src: str, dst: str, node: ast.AST, what: str) -> str:
        """Assignment conversion: same type, or widening (bool -> int -> float)."""
        if src == dst:
            return code
        if (src, dst) in (("int", "float"), ("bool", "float"), ("bool", "int")):
            return self.coerce(code, src, dst)
        if isinstance(code, Lit) and _adapts(code, src, dst):
            return self.coerce(code, src, dst)  # a literal takes the target's type
        if dst != "bool" and widening(src, dst):
            return self.coerce(code, src, dst)
        raise self.error(node, f"cannot store a {src} in {what} of type {dst} (convert explicitly)")

    def s_Expr(self, st: ast.Expr, indent: int) -> None:
        v = st.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return  # docstring
        if isinstance(v, ast.Call):
            from .translate_calls import callee

            what = callee(self, v.func)
            if what == "barrier":
                if v.args or v.keywords:
                    raise self.error(st, "barriers take no arguments")
                self.has_barrier = self.observes_workgroup = True
                self.emit(indent, f"yield {st.lineno + self.line0}", st)
                return
            if what is not None and what.startswith("atomic_"):
                self.atomic(v, what, st, indent)
                return
            if what in SUBGROUP_OPS:
                raise self.error(st, f"{what}() alone has no effect (assign its value)")
            if what == "tile_store":
                self.tile_store(v, indent)
                return
            if what == "copy16":
                self.copy16(v, st, indent)
                return
        code, _ = self.expr(v)
        self.emit(indent, code, st)

    def s_Pass(self, st, indent):
        self.emit(indent, "pass", st)

    def s_AnnAssign(self, st: ast.AnnAssign, indent: int) -> None:
        if not isinstance(st.target, ast.Name):
            raise self.error(st, "only simple names can be annotated (`x: int = ...`)")
        t = self.annotation(st.annotation, st)
        name = st.target.id
        if st.value is None:
            self.declare(name, t, st)
            return
        what = self.memory_call(st.value)
        if what in ("shared", "local"):
            raise self.error(st, f"a {what} array takes no annotation")
        if what in SUBGROUP_OPS:
            code, tv = self.subgroup_op(st.value, what, st, indent)
        elif what is not None:
            code, tv = self.atomic(st.value, what, st, indent)
        else:
            code, tv = self.expr(st.value)  # the value cannot see the new name (Python rule)
        self.declare(name, t, st)
        self.emit(indent, f"{name} = {self.convert(code, tv, t, st, f'`{name}`')}", st)

    def memory_call(self, node: ast.expr) -> str | None:
        """'shared', 'local' or 'atomic_*' when `node` calls one of them."""
        if not isinstance(node, ast.Call):
            return None
        from .translate_calls import callee

        what = callee(self, node.func)
        if what in SUBGROUP_OPS or what in TILE_TAGS:
            return what
        return (
            what
            if what is not None and (what in ("shared", "local") or what.startswith("atomic_"))
            else None
        )

    def s_Assign(self, st: ast.Assign, indent: int) -> None:
        what = self.memory_call(st.value)
        if what in TILE_TAGS or (what is None and self.is_tile_value(st.value)):
            self.tile_assign(st, what, indent)
            return
        if what in ("shared", "local"):
            self.shared_decl(st, st.value, indent, private=what == "local")
            return
        if what in SUBGROUP_OPS:
            code, tv = self.subgroup_op(st.value, what, st, indent)
        elif what is not None:
            code, tv = self.atomic(st.value, what, st, indent)
        else:
            code, tv = self.expr(st.value)
        if len(st.targets) > 1:
            tmp = self.tmp()
            self.emit(indent, f"{tmp} = {code}", st)
            code = tmp
        for target in st.targets:
            self.store(target, code, tv, st, indent)

    def store(self, target, code: str, tv: str, st, indent: int) -> None:
        if isinstance(target, ast.Name):
            if target.id not in self.scalars:
                self.declare(target.id, tv, st)
            t = self.scalars[target.id]
            self.emit(
                indent, f"{target.id} = {self.convert(code, tv, t, st, f'`{target.id}`')}", st
            )
        elif isinstance(target, ast.Subscript) and self.array(target.value) is not None:
            arr = self.array(target.value)
            value = self.element_value(arr, code, tv, st, indent)  # Python: the value first
            idx = self.tmp()
            self.emit(indent, f"{idx} = {self.index(target.slice)}", st)
            self.write_element(arr, idx, value, st, indent)
        else:
            raise self.error(st, "assign to a local name or a list element (`xs[i] = ...`)")

    def element_value(self, arr, code: str, tv: str, st, indent: int) -> str:
        """A temporary holding `code` converted to the element type of list/array `arr`."""
        name, _, _, elem = arr
        if name in self.lists:
            self.written.add(name)
        value = self.tmp()
        self.emit(indent, f"{value} = {self.convert(code, tv, elem, st, f'`{name}[...]`')}", st)
        return value

    def write_element(self, arr, idx: str, value: str, st, indent: int) -> None:
        """`arr[idx] = value` where `idx` is in range; an out-of-range write is only counted."""
        name, data, length, _ = arr
        self.emit(indent, f"if 0 <= {idx} < {length}: {data}[{idx}] = {value}", st)
        self.emit(indent, f"else: _ct_oob_w({name!r}, {idx})", st)

    def s_AugAssign(self, st: ast.AugAssign, indent: int) -> None:
        target = st.target
        binop = ast.BinOp(left=target, op=st.op, right=st.value)
        ast.copy_location(binop, st)
        if isinstance(target, ast.Name) and target.id in self.tiles:  # acc += t, acc *= s
            assign = ast.copy_location(ast.Assign([target], binop), st)
            self.tile_assign(assign, None, indent)
            return
        if isinstance(target, ast.Name):
            code, tv = self.expr(ast.fix_missing_locations(binop))
            self.store(target, code, tv, st, indent)
            return
        arr = self.array(target.value) if isinstance(target, ast.Subscript) else None
        if arr is None:
            raise self.error(st, "augmented assignment needs a local name or a list element")
        name = arr[0]
        idx = self.tmp()  # Python evaluates the index once
        self.emit(indent, f"{idx} = {self.index(target.slice)}", st)
        if name in self.lists:
            self.read.add(name)
        self.scalars[idx] = "int"
        cur = ast.copy_location(
            ast.Subscript(
                value=target.value, slice=ast.Name(id=idx, ctx=ast.Load()), ctx=ast.Load()
            ),
            st,
        )
        binop.left = cur
        code, tv = self.expr(ast.fix_missing_locations(binop))
        del self.scalars[idx]
        self.write_element(arr, idx, self.element_value(arr, code, tv, st, indent), st, indent)

    def s_If(self, st: ast.If, indent: int) -> None:
        self.emit(indent, f"if {self.truth(st.test)}:", st)
        self.block(st.body, indent + 1)
        if st.orelse:
            self.emit(indent, "else:", st)
            self.block(st.orelse, indent + 1)

    def s_While(self, st: ast.While, indent: int) -> None:
        if st.orelse:
            raise self.error(st, "`while ... else` is not supported in kernels")
        self.loop(st, indent, f"while {self.truth(st.test)}:")

    def s_For(self, st: ast.For, indent: int) -> None:
        it = st.iter
        ok = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
        if (
            st.orelse
            or not ok
            or not isinstance(st.target, ast.Name)
            or it.keywords
            or not 1 <= len(it.args) <= 3
        ):
            raise self.error(
                st, "kernels loop with `for name in range(stop)`, `range(start, stop[, step])`"
            )
        bounds = []
        for a in it.args:
            code, t = self.expr(a)
            if t == "float":
                raise self.error(a, "range() arguments must be ints")
            bounds.append(self.coerce(code, t, "int"))
        var = st.target.id
        if var not in self.scalars:
            self.declare(var, "int", st)
        elif self.scalars[var] != "int":
            raise self.error(st, f"loop variable `{var}` is {self.scalars[var]}, not int")
        self.loop(st, indent, f"for {var} in _ct_range({', '.join(bounds)}):")

    def loop(self, st: ast.While | ast.For, indent: int, header: str) -> None:
        """Emit a loop `header` and its body, counting iterations where subgroup code needs it."""
        counter = self.loop_counter(st, indent)
        self.emit(indent, header, st)
        self.loop_depth += 1
        if counter:
            self.emit(indent + 1, f"{counter} += 1", st)
        self.block(st.body, indent + 1)
        self.loop_depth -= 1
        if counter:
            self.sg_loops.pop()

    def s_Break(self, st, indent):
        if not self.loop_depth:
            raise self.error(st, "`break` outside a loop")
        self.emit(indent, "break", st)

    def s_Continue(self, st, indent):
        if not self.loop_depth:
            raise self.error(st, "`continue` outside a loop")
        self.emit(indent, "continue", st)

    def s_Return(self, st: ast.Return, indent: int) -> None:
        if st.value is not None and not (
            isinstance(st.value, ast.Constant) and st.value.value is None
        ):
            raise self.error(st, "kernels return nothing (a bare `return` ends this invocation)")
        self.emit(indent, "return", st)

    # ------------------------------------------------------------------------------ whole

    def build(self) -> Translation:
        params = self.signature()
        self.block(self.tree.body, 2)
        scalar_params = [p for p, t in params if not t.startswith("list[")]
        list_params = [p for p, t in params if t.startswith("list[")]
        fargs = [f"_ct_L_{p}" for p in list_params] + [f"_ct_n_{p}" for p in list_params]
        fargs += [f"_ct_h_{p}" for p in list_params]  # shapes (x.shape[k]), padded to 3 axes
        fargs += scalar_params + ["_ct_bdx", "_ct_bdy", "_ct_bdz", "_ct_gdx", "_ct_gdy", "_ct_gdz"]
        fargs += ["_ct_oob_r", "_ct_oob_w", "_ct_sgs=32"]  # subgroup size (translate_subgroup.py)
        inv_args = "_ct_gx, _ct_gy, _ct_gz, _ct_tx, _ct_ty, _ct_tz, _ct_bx, _ct_by, _ct_bz"
        inv_args += "".join(f", {p}={p}" for p in scalar_params)
        out = [(0, f"def _ct_factory({', '.join(fargs)}):", 0)]
        workgroup = [(n, c) for n, c in self.shared_sizes if n not in self.private]
        for name, code in self.shared_sizes:  # sizes once per launch; arrays once per workgroup
            out.append((1, f"_ct_Z_{name} = _ct_size({name!r}, {code})", 0))
            if name not in self.private:
                out.append((1, f"_ct_S_{name} = None", 0))
        out.append((1, f"def _ct_inv({inv_args}):", 0))
        local = [n for n, _ in self.shared_sizes if n in self.private]  # in declaration order
        for name in local:  # local arrays: fresh and zero-filled in every invocation
            out.append((2, f"_ct_S_{name} = [{_ZERO[self.shared[name]]}] * _ct_Z_{name}", 0))
        for name, t in self.locals.items():  # every local starts at zero (see docs/reliability.md)
            if name not in scalar_params:
                out.append((2, f"{name} = {_ZERO[t]}", 0))
        if self.has_subgroup:
            out.append((2, "_ct_li = _ct_tx + _ct_bdx * (_ct_ty + _ct_bdy * _ct_tz)", 0))
            out.append((2, "_ct_sg_size, _ct_sg_lane = _ct_sgs, _ct_li % _ct_sgs", 0))
            out.append((2, "_ct_sg_id = _ct_li // _ct_sgs", 0))
            out.append((2, "_ct_sg_count = -(-(_ct_bdx * _ct_bdy * _ct_bdz) // _ct_sgs)", 0))
        out += self.lines
        if self.has_barrier or self.has_subgroup:  # a generator even if no yield is reached
            out.append((2, "if False: yield 0", 0))
        out.append((1, "def _ct_new_group():", 0))
        names = ", ".join(f"_ct_S_{n}" for n, _ in workgroup)
        if names:
            out.append((2, f"nonlocal {names}", 0))
        for name, _ in workgroup:
            out.append((2, f"_ct_S_{name} = [{_ZERO[self.shared[name]]}] * _ct_Z_{name}", 0))
        out.append((2, "return None", 0))
        out.append((1, "_ct_inv.new_group = _ct_new_group", 0))
        sizes = ", ".join(f"{n!r}: _ct_Z_{n}" for n, _ in self.shared_sizes)
        out.append((1, f"_ct_inv.shared_sizes = {{{sizes}}}", 0))
        out.append((1, f"_ct_inv.local_arrays = {local!r}", 0))
        out.append((1, "return _ct_inv", 0))
        source = "\n".join("    " * ind + text for ind, text, _ in out) + "\n"
        line_map = {i + 1: line for i, (_, _, line) in enumerate(out)}
        tr = Translation(
            name=self.tree.name,
            params=params,
            written=set(self.written),
            read=set(self.read),
            has_barrier=self.has_barrier,
            observes_workgroup=self.observes_workgroup,
            uses_approx=self.uses_approx,
            source=source,
            line_map=line_map,
            filename=self.filename,
            shared={n: t for n, t in self.shared.items() if n not in self.private},
            shapes=dict(self.shapes),
            has_subgroup=self.has_subgroup,
        )
        namespace = runtime_namespace()
        code = compile(source, f"<cthreads.emulate {self.tree.name}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own generated code, from the kernel's AST
        tr.factory = namespace["_ct_factory"]
        return tr


def _range(*args: int) -> range:
    if len(args) == 3 and args[2] == 0:
        raise S.KernelUndefined("range() step is 0 (the loop would never end on the device)")
    return range(*args)


def _shared_size(name: str, size: int) -> int:
    if size < 1:
        raise S.EmulationError(f"array `{name}` has size {size}; it must be at least 1")
    return size


def runtime_namespace() -> dict:
    """The helpers generated code calls (all named `_ct_*`)."""
    ns = {
        "_ct_f": S.f32,
        "_ct_i2f": lambda x: S.f32(float(x)),
        "_ct_int": int,
        "_ct_bool": bool,
        "_ct_abs": abs,
        "_ct_iabs": S.iabs,
        "_ct_fmin": S.fmin,
        "_ct_fmax": S.fmax,
        "_ct_f2i": S.f2i,
        "_ct_idiv": S.idiv,
        "_ct_imod": S.imod,
        "_ct_shl": S.shl,
        "_ct_ipow": S.ipow,
        "_ct_fpow": S.fpow,
        "_ct_fdiv": S.fdiv,
        "_ct_ffloordiv": S.ffloordiv,
        "_ct_fmodpy": S.fmod_py,
        "_ct_range": _range,
        "_ct_size": _shared_size,
        "_ct_same_bits": S.same_f32_bits,
        "_ct_w": S.wrap_to,
        "_ct_h": S.f16,
        "_ct_dbl": float,
        "_ct_f2w": S.f2w,
        "_ct_wdiv": S.wdiv,
        **TILE_RUNTIME,
        "_ct_wmod": S.wmod,
        "_ct_wpow": S.wpow,
        "_ct_fdiv64": S.fdiv64,
        "_ct_ffloordiv64": S.ffloordiv64,
        "_ct_fmodpy64": S.fmodpy64,
        "_ct_nan": math.nan,
        "_ct_inf": math.inf,
        "__builtins__": {},
    }
    for name, (_, _, impl) in S.MATH.items():
        ns[f"_ct_m_{name}"] = impl
    for name, (_, _, impl) in S.MATH64.items():
        ns[f"_ct_d_{name}"] = impl
    return ns


def translate(fn) -> Translation:
    """Translate once per function object and constants (again if its code object changes)."""
    from .names import constants_key, kernel_constants, kernel_function

    func, given = kernel_function(fn), kernel_constants(fn)
    per_func = _cache.setdefault(func, {})  # two variants of one function differ in constants
    hit = per_func.get(constants_key(given))
    if hit is not None and hit[0] is func.__code__:
        return hit[1]
    tree, filename, line0 = parse_kernel(func)
    result = KernelTranslator(func, tree, filename, line0, given).build()
    per_func[constants_key(given)] = (func.__code__, result)
    return result


__all__ = ["Translation", "translate", "wrapped"]
