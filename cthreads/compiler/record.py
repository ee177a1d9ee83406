"""`Record`: a frozen record class written out by hand, for the types a warm launch loads.

Generating a dataclass's methods costs ~1 ms per class at import on the CI machine (issue 19),
and a warm launch loads every module these records live in (compiler/artifact.py, target.py).
A record keeps dataclass behaviour: keyword or positional construction with defaults, equality
and hashing by fields, a field-by-field repr, attributes that cannot be assigned, pickling.
"""

from __future__ import annotations

from typing import Any


class Record:
    """A frozen record: subclasses list `_fields` (in order) and `_defaults` (for the last ones)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} arguments")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields or name in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated `{name}`")
            values[name] = value
        for name in fields:
            if name not in values:
                if name not in self._defaults:
                    raise TypeError(f"{type(self).__name__}() missing argument `{name}`")
                values[name] = self._defaults[name]
            object.__setattr__(self, name, values[name])

    def _values(self) -> tuple:
        return tuple(getattr(self, n) for n in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field `{name}` of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field `{name}` of a frozen {type(self).__name__}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"

    def replace(self, **changes: Any) -> Record:
        """A copy with `changes` (field=value) applied, as `dataclasses.replace` gives."""
        values = dict(zip(self._fields, self._values()))
        for name in changes:
            if name not in values:
                raise TypeError(f"{type(self).__name__} has no field `{name}`")
        values.update(changes)
        return type(self)(**values)

    def __reduce__(self) -> tuple:
        return (type(self), self._values())
