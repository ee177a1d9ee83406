"""`forwarded`: a read-only attribute that is a member object's attribute of the same name.

Facades such as `GpuDevice` (its `DeviceInfo`) and `KernelBuild` (its `CompiledKernel`) show
some fields of the record they wrap; one descriptor says so instead of a property per field.
Imports nothing, so every layer may use it.
"""

from __future__ import annotations

from typing import Any


class forwarded:  # noqa: N801 - used like `property`
    """`name = forwarded("info")` in a class body reads `self.info.name`; `doc` documents it."""

    def __init__(self, member: str, doc: str | None = None) -> None:
        self.member = member
        self.name = ""
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.member), self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"{self.name!r} is read-only (it is {self.member}.{self.name})")
