"""Shared and local arrays and atomics in the emulator's translation (a mixin of `KernelTranslator`).

`tile = shared(float, N)` becomes a per-workgroup Python list (`_ct_S_tile`, rebound by the
factory's `new_group()` before each workgroup runs, zero-filled) of `_ct_Z_tile` elements, the
size evaluated once per launch (it may read `BlockDim`); `acc = local(float, N)` the same, but
made afresh (zero-filled) at the start of every invocation. Atomics run as plain read-modify-write:
the emulator runs one invocation at a time, so they are sequential by construction.
`copy16(dst, do, src, so)` is its element copies, each with the out-of-range rule of `dst[i] = src[j]`.
"""

from __future__ import annotations

import ast

from .translate import _ZERO, ExprTranslator, wrapped
from .translate_types import TYPE_INFO

_INT_ONLY = {"atomic_and": "&", "atomic_or": "|", "atomic_xor": "^"}


class MemoryTranslator(ExprTranslator):
    shared_sizes: list[tuple[str, str]]  # (name, size code) in declaration order

    private: set[str]  # the local arrays among `shared`

    def array_kind(self, name: str) -> str:
        return "local array" if name in self.private else "shared array"

    def shared_decl(self, st: ast.Assign, call: ast.Call, indent: int, private: bool) -> None:
        what = "local" if private else "shared"
        kind = f"{what} array"
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise self.error(st, f"declare a {kind} as `name = {what}(float, 64)`")
        name = st.targets[0].id
        if indent != 2:
            raise self.error(st, f"{kind} `{name}` must be declared at the top level of the kernel")
        if name in self.scalars or name in self.lists or name in self.shared:
            raise self.error(st, f"`{name}` is already defined; a {kind} needs a new name")
        if name.startswith("_ct_"):
            raise self.error(
                st, f"names starting with `_ct_` are reserved by the emulator (`{name}`)"
            )
        if call.keywords or len(call.args) != 2:
            raise self.error(call, f"{what}() takes two positional arguments: {what}(type, size)")
        elem = self.annotation(call.args[0], call)
        for n in ast.walk(call.args[1]):
            if isinstance(n, ast.Name) and n.id in self.scalars:
                raise self.error(call.args[1], f"the size of a {kind} must be a constant")
        code, t = self.expr(call.args[1])
        if t != "int":
            raise self.error(call.args[1], f"the size of a {kind} must be an int")
        self.shared[name] = elem
        self.shared_sizes.append((name, code))
        if private:
            self.private.add(name)
        else:
            self.observes_workgroup = True

    def atomic(self, call: ast.Call, what: str, st: ast.AST, indent: int) -> tuple[str, str]:
        """Emit an atomic update; returns (variable holding the old value, element type)."""
        want = 4 if what == "atomic_compare_exchange" else 3
        if call.keywords or len(call.args) != want:
            raise self.error(call, f"{what}() takes {want} positional arguments")
        arr = self.array(call.args[0])
        if arr is None or arr[0] in self.private:
            raise self.error(call, f"{what}() updates a list parameter or a shared array")
        name, data, length, elem = arr
        if elem in ("f64", "f16", "i8", "u8", "i16", "u16"):
            raise self.error(call, f"{what}() does not work on {elem} elements")
        if elem == "bool" or (elem == "float" and what in _INT_ONLY):
            raise self.error(call, f"{what}() does not work on {elem} elements")
        if name in self.lists:
            self.read.add(name)
            self.written.add(name)
        idx = self.tmp()
        self.emit(indent, f"{idx} = {self.index(call.args[1])}", st)
        vals = []
        for a in call.args[2:]:
            code, t = self.expr(a)
            v = self.tmp()
            self.emit(indent, f"{v} = {self.convert(code, t, elem, st, f'`{name}[...]`')}", st)
            vals.append(v)
        old = self.tmp()
        new = _new_value(what, elem, old, vals)
        self.emit(
            indent, f"if 0 <= {idx} < {length}: {old} = {data}[{idx}]; {data}[{idx}] = {new}", st
        )
        self.emit(indent, f"else: {old} = _ct_oob_r({name!r}, {idx}, {_ZERO[elem]})", st)
        return old, elem

    def copy16(self, call: ast.Call, st: ast.AST, indent: int) -> None:
        """Emit `copy16(dst, dst_offset, src, src_offset)`: 16 // itemsize element copies."""
        if call.keywords or len(call.args) != 4:
            raise self.error(call, "copy16() takes 4 positional arguments")
        dst, src = self.array(call.args[0]), self.array(call.args[2])
        if dst is None or dst[0] in self.lists or dst[0] in self.private:
            raise self.error(call.args[0], "copy16() writes into a shared array")
        if src is None or src[0] not in self.lists:
            raise self.error(call.args[2], "copy16() reads a list parameter")
        elem = src[3]
        size = TYPE_INFO[elem][1] // 8 if elem != "bool" else 0
        if size not in (2, 4, 8):
            raise self.error(call.args[2], f"copy16() does not work on {elem} elements")
        if dst[3] != elem:
            raise self.error(call.args[0], f"copy16() needs a shared array of {elem}")
        self.read.add(src[0])
        offsets = []
        for node in (call.args[1], call.args[3]):  # evaluated once, left to right
            v = self.tmp()
            self.emit(indent, f"{v} = {self.index(node)}", st)
            offsets.append(v)
        for j in range(16 // size):
            idx = self.tmp()
            self.emit(indent, f"{idx} = {offsets[0]} + {j}", st)
            self.write_element(dst, idx, self.load(src, f"{offsets[1]} + {j}"), st, indent)


def _new_value(what: str, elem: str, old: str, vals: list[str]) -> str:
    v = vals[0]
    if what == "atomic_add":
        if elem in ("i64", "u32", "u64"):
            return f"_ct_w({old} + {v}, {elem!r})"
        return wrapped(f"{old} + {v}") if elem == "int" else f"_ct_f({old} + {v})"
    if what == "atomic_min":
        return f"_ct_fmin({old}, {v})"
    if what == "atomic_max":
        return f"_ct_fmax({old}, {v})"
    if what in _INT_ONLY:
        return f"({old} {_INT_ONLY[what]} {v})"
    if what == "atomic_exchange":
        return v
    expected, new = vals
    same = f"_ct_same_bits({old}, {expected})" if elem == "float" else f"{old} == {expected}"
    return f"({new} if {same} else {old})"
