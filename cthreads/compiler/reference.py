"""The kernel-language reference (docs/reference.md), generated from the compiler's own tables.

Types, operators, builtins, math functions, atomics, subgroup operations and the constructs the
compiler refuses are all read from the tables the frontend and codegen use, so the reference
cannot drift from the code: `tests/docs/test_reference.py` fails when docs/reference.md differs
from `render()`.

    python -m cthreads.compiler.reference > docs/reference.md
"""

from __future__ import annotations

from .frontend import copies, memory, names, operators, signature, subgroup, unsupported
from .intrinsics import INTRINSICS
from .ir import BuiltinKind

_HEADER = """# Kernel language reference

Generated from the compiler's own tables by `python -m cthreads.compiler.reference`; a test
keeps this page equal to what the compiler accepts. The meaning of each operation is in
[language.md](language.md); shared memory, atomics, subgroups and 2-D launches are explained
with examples in [language-extensions.md](language-extensions.md).
"""

_ARGS = {"f": "float (ints are promoted)", "n": "int or float"}
_RESULT = {"f": "float", "i": "int", "b": "bool", "same": "the argument's type"}


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(out)


def _types() -> str:
    scalars = sorted(signature._SCALARS.items())
    rows = [(f"`{name}`", str(t), "parameter, local") for name, t in scalars]
    rows += [(f"`list[{name}]`", f"list[{t}]", "parameter") for name, t in scalars]
    return "## Types\n\n" + _table(("annotation", "device type", "where"), rows)


def _operators() -> str:
    text = operators._OP_TEXT
    rows = [(f"`{text[node]}`", op.value) for node, op in operators._BINOPS.items()]
    cmp = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}
    rows += [(f"`{cmp[node]}`", op.value) for node, op in operators._CMPOPS.items()]
    rows += [
        ("`and`, `or`, `not`", "boolean (short-circuit)"),
        ("`-x`, `~x`", "negation, bitwise not"),
    ]
    return "## Operators\n\n" + _table(("operator", "IR operation"), rows)


def _indices() -> str:
    rows = [(f"`{k.value}.x/.y/.z`", k.name.lower().replace("_", " ")) for k in BuiltinKind]
    return "## Index builtins\n\n" + _table(("name", "meaning"), rows)


def _builtins() -> str:
    rows = [(f"`{name}`",) for name in names.BUILTIN_FUNCS]
    return "## Builtin functions\n\n" + _table(("name",), rows)


def _math() -> str:
    rows = []
    for name, fn in sorted(INTRINSICS.items()):
        glsl = fn.glsl if not fn.glsl.startswith("@") else f"recipe ({fn.glsl[1:]})"
        rows.append((f"`{name}`", str(fn.arity), _ARGS[fn.args], _RESULT[fn.result], glsl, fn.doc))
    head = ("function", "arguments", "argument type", "result", "GLSL.std.450", "meaning")
    return (
        "## Math functions\n\nAs `math.f(x)`, imported names (`from math import sqrt`), or bare "
        "`sqrt`/`floor` as in cthreads-gpu.\n\n" + _table(head, rows)
    )


def _atomics() -> str:
    rows = []
    for name, op in memory.ATOMIC_OPS.items():
        args = "xs, i, expected, new" if name == "atomic_compare_exchange" else "xs, i, v"
        types = "int" if op in memory._INT_ONLY else "int, float"
        rows.append((f"`{name}({args})`", types))
    return (
        "## Shared memory and atomics\n\n`name = shared(type, size)` at the top level of a "
        "kernel: " + memory._SIZE_ALLOWED + ". `name = local(type, size)` declares a "
        "per-invocation array the same way (at most "
        + str(memory.MAX_LOCAL_BYTES)
        + " bytes of local arrays per kernel). Atomics work on list parameters and shared "
        "arrays and return the old value; they stand alone or are the value of an "
        "assignment.\n\n" + _table(("atomic", "element types"), rows) + "\n\n"
        f"`{copies.COPY_SIGNATURE}`, a statement, copies {copies.COPY_BYTES} bytes (elements of 2, 4 or 8 bytes, "
        "one type on both sides) from a list parameter into a shared array, element by element "
        "under the out-of-range rule; one 16-byte load where in range and aligned."
    )


def _subgroups() -> str:
    rows = [
        (f"`{name}()`", what, "subgroup_basic") for name, what in subgroup.SUBGROUP_VALUES.items()
    ]
    for name, (op, args) in subgroup.SUBGROUP_OPS.items():
        feats = subgroup.OP_FEATURES.get(op, ("subgroup_basic",))
        rows.append((f"`{name}({', '.join(args)})`", op.value, ", ".join(feats)))
    caps = ", ".join(f"`{f}` → {c}" for f, c in subgroup.FEATURE_CAPABILITY.items())
    return (
        "## Subgroup operations\n\nEach needs a device feature (`python -m cthreads.gpu info`); "
        f"its SPIR-V capability: {caps}.\n\n"
        + _table(("name", "operation", "device feature"), rows)
    )


def _refused() -> str:
    rows = [
        (f"`{node}`", msg, allowed) for node, (msg, allowed) in sorted(unsupported._TABLE.items())
    ]
    return (
        "## Refused constructs\n\nEach is a compile error (`GpuCompileError`) at the construct's "
        "file:line:col, never dropped. Statements allowed: "
        + unsupported.STATEMENTS_ALLOWED
        + ".\n\n"
        + _table(("Python construct", "message", "write instead"), rows)
    )


def render() -> str:
    """The whole reference page as markdown."""
    parts = [
        _HEADER,
        _types(),
        _operators(),
        _indices(),
        _builtins(),
        _math(),
        _atomics(),
        _subgroups(),
        _refused(),
    ]
    return "\n\n".join(p.strip() for p in parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
