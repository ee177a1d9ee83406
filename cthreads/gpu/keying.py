"""What a kernel's source key is made of, read without the frontend (issue 19).

A warm launch (the kernel's SPIR-V already in the disk cache) needs the source key and nothing
the compiler knows: no `ast`, no IR. The key must still change with every module constant the
body reads, so instead of walking the body's syntax tree (frontend/constants.py) this reads the
names its code objects mention (`co_names`: globals and attribute names; `co_freevars`: closure
cells) and resolves them as Python would: cells, then globals, then builtins, attributes only
through modules. That set is a superset of what the body reads (an attribute name that happens
to name a global is counted too), so the key over it changes whenever a value lowering uses
changes. Lowering then takes its values from this same snapshot (`pin`), so a constant changed
between the key and a compile never produces SPIR-V stored under a key it does not match.
"""

from __future__ import annotations

import builtins
import types

MISSING = object()  # an unbound name
# Attribute chains through modules (`cfg.sub.N`) are followed this deep; a module reached again
# along the same chain (a cycle of imports) is not re-entered.
_MAX_DEPTH = 8
_NOT_NUMBERS = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    str,
    bytes,
    tuple,
    list,
    dict,
)


def read_source(fn) -> tuple[tuple[str, ...], int] | None:
    """(the `def` block's lines with decorators, its first line in the file), or None when Python
    has no source (exec'd strings, the plain REPL): the text `KernelSource` holds.

    `inspect.getsourcelines` finds where the block ends by tokenizing it (~1 ms a kernel, and
    ~9 ms for tokenize's regular expressions the first time, on the CI machine); the code
    object already says where the body's last instruction ends, so that is read first
    (`_block_from_code`) and inspect is asked only where that is not certain."""
    found = _block_from_code(fn)
    if found is not None:
        return found
    import inspect  # (loaded by cthreads.launch already)

    try:
        lines, lnum = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    return tuple(lines), max(lnum, 1)


_OPENERS = ("@", "def ", "def\t", "async ")
_CLOSERS = (")", "]", "}")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block_from_code(fn) -> tuple[tuple[str, ...], int] | None:
    """The block from the file's lines and the code objects' positions, or None when unsure.

    The block runs from `co_firstlineno` (the first decorator) to the last line any
    instruction of the function (or of a code object nested in it) covers, plus the lines
    after it that are blank or indented deeper than the `def` (trailing comments, a closing
    bracket of the last statement). Unsure, and left to inspect: no positions (Python 3.10),
    no lines, a first line that is not a decorator or `def`, a triple quote after the last
    instruction (a string constant may end there), a line after the block that starts with
    a closing bracket or ends in a backslash."""
    import linecache

    code = fn.__code__
    if not hasattr(code, "co_positions"):
        return None
    linecache.checkcache(code.co_filename)  # as inspect does: a file edited since is reread
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines) or not lines[start].lstrip().startswith(_OPENERS):
        return None
    last = 0
    stack = [code]
    while stack:
        c = stack.pop()
        for pos in c.co_positions():
            end = pos[1]
            if end is not None and end > last:
                last = end
        stack.extend(k for k in c.co_consts if isinstance(k, type(code)))
    if not start < last <= len(lines):
        return None
    indent = _indent(lines[start])
    stop = last
    while stop < len(lines):
        line = lines[stop]
        if line.strip() and _indent(line) <= indent:
            if line.lstrip().startswith(_CLOSERS):
                return None
            break
        stop += 1
    while stop > last and not lines[stop - 1].strip():
        stop -= 1  # trailing blank lines are not part of the block
    tail = lines[last - 1 : stop]
    if any('"""' in t or "'''" in t or t.rstrip().endswith("\\") for t in tail):
        return None
    return tuple(lines[start:stop]), start + 1


def is_number(value: object) -> bool:
    """Whether a kernel freezes `value` as a constant: a real number that is not a type (what
    frontend/constants.py keeps), decided without importing `numbers` for the common cases."""
    t = type(value)
    if t is int or t is float or t is bool:
        return True
    if isinstance(value, _NOT_NUMBERS) or not hasattr(t, "__float__"):
        return False  # (every `numbers.Real` converts to float)
    import numbers  # numpy scalars and other registered reals

    return isinstance(value, numbers.Real)


def module_values(fn) -> dict[str, object]:
    """`{name or dotted path: value}` for every number the body of `fn` may read from outside:
    a superset of frontend/constants.py's `collect_constants` (see the module docstring)."""
    code = fn.__code__
    names: set[str] = set()
    stack = [code]
    while stack:  # the function and the code objects nested in it (comprehensions, lambdas)
        c = stack.pop()
        names.update(c.co_names)
        names.update(c.co_freevars)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    cells: dict[str, object] = {}
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # a cell not yet filled: unbound
            cells[name] = MISSING
    glob = fn.__globals__
    b = glob.get("__builtins__", builtins)
    builtin = b if isinstance(b, dict) else vars(b)
    ordered = sorted(names)
    out: dict[str, object] = {}

    def visit(path: str, value: object, chain: tuple) -> None:
        if is_number(value):
            out[path] = value
        elif isinstance(value, types.ModuleType) and len(chain) < _MAX_DEPTH:
            if value in chain:
                return
            for attr in ordered:
                try:
                    sub = getattr(value, attr, MISSING)
                except Exception:  # a module __getattr__ that fails: lowering reports it
                    continue
                if sub is not MISSING:
                    visit(f"{path}.{attr}", sub, (*chain, value))

    for name in ordered:
        if name in cells:
            value = cells[name]
        elif name in glob:
            value = glob[name]
        else:
            value = builtin.get(name, MISSING)
        if value is not MISSING:
            visit(name, value, ())
    return out


def key_part(values: dict[str, object]) -> list[tuple[str, str, str]]:
    """The snapshot as it goes into the source key (values by type and repr)."""
    return sorted((k, type(v).__name__, repr(v)) for k, v in values.items())


def pin(collected: dict[str, object], snapshot: dict[str, object]) -> dict[str, object]:
    """The constants lowering found (`collected`), with the values the key was made from."""
    return {path: snapshot.get(path, value) for path, value in collected.items()}
