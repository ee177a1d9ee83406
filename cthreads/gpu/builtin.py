"""How the kernel language's host functions are marked for the compiler.

The frontend recognises a call to `atomic_add`, `subgroup_ballot`, ... by the function's
`__gpu_builtin__` tag (its name), not by where it was imported from; `tagged` sets it once.
"""

from __future__ import annotations

from collections.abc import Callable


def tagged(*functions: Callable) -> dict[str, Callable]:
    """Tag each function with its own name and return them by name, in the order given."""
    table = {f.__name__: f for f in functions}
    for name, f in table.items():
        f.__gpu_builtin__ = name  # type: ignore[attr-defined]
    return table
