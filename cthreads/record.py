"""`Record`: frozen records with dataclass behaviour, without a dataclass's import cost.

Generating a dataclass's methods costs ~1 ms per class at import on the CI machine (issue 19):
the IR's ~40 node kinds alone took ~40 ms of the compiler's import, the launch plan's and the
device description's ~7 ms of `import cthreads.gpu`. A record keeps dataclass behaviour:
keyword or positional construction with defaults, equality and hashing by fields, a
field-by-field repr, attributes that cannot be assigned, pickling, `replace`. Every package
may use it (it imports nothing of cthreads).
"""

from __future__ import annotations

from typing import Any


class Field:
    """A record field's options, as `dataclasses.field` takes them: `default` or
    `default_factory`, and whether it takes part in equality and hashing (`compare`) and in
    the repr (`repr`). (`hash=False` is accepted for dataclass habit: it follows `compare`.)"""

    __slots__ = ("default", "default_factory", "compare", "repr")
    _NONE = object()

    def __init__(
        self,
        default: Any = _NONE,
        default_factory: Any = None,
        compare: bool = True,
        repr: bool = True,  # noqa: A002 - dataclasses' name for it
        hash: bool | None = None,  # noqa: A002, ARG002 - as above
    ) -> None:
        self.default, self.default_factory = default, default_factory
        self.compare, self.repr = compare, repr


field = Field


class Record:
    """A frozen record. A subclass either lists `_fields` (in order) and `_defaults` (for the
    last ones) itself, or declares its fields as annotations (after those of its bases), each
    with an optional default or `field(...)`."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}
    _factories: dict[str, Any] = {}  # field -> default_factory
    _compared: tuple[str, ...] | None = None  # the fields equality and hashing use (None: all)
    _shown: tuple[str, ...] | None = None  # the fields the repr shows (None: all)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "_fields" in own:
            return  # listed by hand
        fields = dict.fromkeys(cls._fields)
        defaults, factories = dict(cls._defaults), dict(cls._factories)
        hidden = set(cls._fields) - set(cls._compared or cls._fields)
        unshown = set(cls._fields) - set(cls._shown or cls._fields)
        for name, note in own.get("__annotations__", {}).items():
            if name.startswith("_") or "ClassVar" in str(note):
                continue
            fields[name] = None
            spec = own.get(name, Field._NONE)
            if isinstance(spec, Field):
                delattr(cls, name)  # (the instance's own value is what is read)
                if spec.default_factory is not None:
                    factories[name] = spec.default_factory
                elif spec.default is not Field._NONE:
                    defaults[name] = spec.default
                if not spec.compare:
                    hidden.add(name)
                if not spec.repr:
                    unshown.add(name)
            elif spec is not Field._NONE:
                defaults[name] = spec
        cls._fields = tuple(fields)
        cls._defaults, cls._factories = defaults, factories
        cls._compared = tuple(n for n in cls._fields if n not in hidden) if hidden else None
        cls._shown = tuple(n for n in cls._fields if n not in unshown) if unshown else None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if kwargs or len(args) != len(fields):
            args = self._complete(args, kwargs)
        put = object.__setattr__
        for name, value in zip(fields, args):
            put(self, name, value)

    @classmethod
    def _complete(cls, args: tuple, kwargs: dict) -> tuple:
        """Every field's value, in order, from positional and keyword arguments and defaults."""
        fields = cls._fields
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} arguments")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields or name in values:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated `{name}`")
            values[name] = value
        out = []
        for name in fields:
            if name in values:
                out.append(values[name])
            elif name in cls._defaults:
                out.append(cls._defaults[name])
            elif name in cls._factories:
                out.append(cls._factories[name]())
            else:
                raise TypeError(f"{cls.__name__}() missing argument `{name}`")
        return tuple(out)

    def _values(self) -> tuple:
        """The values of the fields that equality and hashing use."""
        return tuple(getattr(self, n) for n in (self._compared or self._fields))

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
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in (self._shown or self._fields))
        return f"{type(self).__name__}({inner})"

    def replace(self, **changes: Any) -> Record:
        """A copy with `changes` (field=value) applied, as `dataclasses.replace` gives."""
        fields = self._fields
        for name in changes:
            if name not in fields:
                raise TypeError(f"{type(self).__name__} has no field `{name}`")
        return type(self)(*[changes[n] if n in changes else getattr(self, n) for n in fields])

    def __reduce__(self) -> tuple:
        return (type(self), tuple(getattr(self, n) for n in self._fields))


def fields_of(cls: type[Record]) -> tuple[tuple[str, str], ...]:
    """(name, annotation text) of each field of a record class, in order (what `dataclasses.
    fields` tells of a dataclass; annotations are strings under `from __future__ import
    annotations`)."""
    notes: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        notes.update(klass.__dict__.get("__annotations__", {}))
    return tuple((n, str(notes.get(n, ""))) for n in cls._fields)
