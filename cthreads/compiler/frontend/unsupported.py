"""What to tell users about Python constructs outside the kernel language.

One entry per `ast` node class: the message (what is not supported) and `allowed` (what to
write instead). Nodes not listed get a generic message; nothing is ever dropped silently.
"""

from __future__ import annotations

import ast

STATEMENTS_ALLOWED = (
    "assignments, augmented assignments, if/elif/else, while, for ... in range(...), break, "
    "continue, return, pass, __sync_threads() / Barrier.arrive_and_wait()"
)
VALUES_ALLOWED = "int, float and bool values; list parameters only as x[i] or len(x)"
FUNCTIONS_ALLOWED = (
    "abs, min, max, int, float, bool, len, pow, the math functions (math.sqrt, math.sin, "
    "math.floor, ...), __sync_threads(), Barrier.arrive_and_wait(), and from cthreads.gpu: "
    "shared(type, size), atomic_add/min/max/and/or/xor/exchange/compare_exchange, copy16"
)
_ONE_INVOCATION = "if not (condition): return  (ends this invocation)"
_LOOP = "a `for i in range(...)` loop that writes each element into a list parameter"

_TABLE: dict[str, tuple[str, str]] = {
    # statements
    "Assert": ("`assert` cannot be checked on the device", _ONE_INVOCATION),
    "Raise": ("kernels cannot raise exceptions", _ONE_INVOCATION),
    "Try": (
        "`try` is not supported in kernels (nothing on the device raises)",
        "check values with `if` before using them",
    ),
    "TryStar": (
        "`try` is not supported in kernels (nothing on the device raises)",
        "check values with `if` before using them",
    ),
    "With": ("`with` blocks are not supported in kernels", STATEMENTS_ALLOWED),
    "AsyncWith": ("`async with` is not supported in kernels", STATEMENTS_ALLOWED),
    "AsyncFor": ("`async for` is not supported in kernels", "for i in range(...)"),
    "Global": (
        "`global` is not supported in kernels",
        "read module-level int/float/bool constants directly; write results into list parameters",
    ),
    "Nonlocal": ("`nonlocal` is not supported in kernels", "write results into list parameters"),
    "FunctionDef": (
        "nested function definitions are not supported in kernels",
        "write the code inline (device functions are not supported yet)",
    ),
    "AsyncFunctionDef": (
        "nested function definitions are not supported in kernels",
        "write the code inline",
    ),
    "ClassDef": (
        "class definitions are not supported in kernels",
        "define classes outside the kernel",
    ),
    "Import": (
        "`import` inside a kernel is not supported",
        "import at module level (`import math`, `from math import sqrt`)",
    ),
    "ImportFrom": (
        "`import` inside a kernel is not supported",
        "import at module level (`import math`, `from math import sqrt`)",
    ),
    "Delete": (
        "`del` is not supported in kernels",
        "nothing: locals live for one invocation; list lengths are fixed",
    ),
    "Match": ("`match` is not supported in kernels", "if/elif/else"),
    "TypeAlias": ("`type` aliases are not supported in kernels", "define them at module level"),
    # expressions
    "Lambda": ("lambda is not supported in kernels", "write the expression inline"),
    "NamedExpr": (
        "the walrus operator `:=` is not supported in kernels",
        "a separate assignment statement before the expression",
    ),
    "ListComp": ("list comprehensions are not supported in kernels", _LOOP),
    "SetComp": ("set comprehensions are not supported in kernels", _LOOP),
    "DictComp": ("dict comprehensions are not supported in kernels", _LOOP),
    "GeneratorExp": ("generator expressions are not supported in kernels", _LOOP),
    "List": (
        "list displays are not supported in kernels (lists exist only as parameters)",
        "pass the list as a list[int]/list[float]/list[bool] parameter",
    ),
    "Tuple": ("tuples are not supported in kernels", VALUES_ALLOWED),
    "Set": ("sets are not supported in kernels", VALUES_ALLOWED),
    "Dict": ("dicts are not supported in kernels", VALUES_ALLOWED),
    "JoinedStr": (
        "f-strings are not supported in kernels (there are no strings on the device)",
        VALUES_ALLOWED,
    ),
    "FormattedValue": ("f-strings are not supported in kernels", VALUES_ALLOWED),
    "Starred": (
        "starred expressions (`*x`) are not supported in kernels",
        "pass each value separately",
    ),
    "Slice": (
        "slices are not supported in kernels",
        "one element at a time: x[i] inside a for loop",
    ),
    "Await": ("`await` is not supported in kernels", STATEMENTS_ALLOWED),
    "Yield": ("a kernel cannot `yield`", "write results into a list parameter"),
    "YieldFrom": ("a kernel cannot `yield`", "write results into a list parameter"),
}


# Assignment targets that are expressions the language has but cannot assign to.
_TARGETS: dict[str, tuple[str, str]] = {
    "Attribute": (
        "attribute assignment is not supported in kernels",
        "assign to a local or a list element x[i]",
    ),
    "Starred": ("starred assignment is not supported in kernels", "a, b = b, a"),
}


def describe_target(node: ast.AST) -> tuple[str, str]:
    """(message, allowed) for an assignment target outside the language."""
    return _TARGETS.get(type(node).__name__) or describe(node)


def describe(node: ast.AST) -> tuple[str, str]:
    """(message, allowed) for an unsupported node."""
    name = type(node).__name__
    if name in _TABLE:
        return _TABLE[name]
    if isinstance(node, ast.stmt):
        return f"`{name}` statements are not supported in kernels", STATEMENTS_ALLOWED
    return f"`{name}` expressions are not supported in kernels", VALUES_ALLOWED
