"""Per-kernel compile-time constants and the variants of an `@autotune` kernel (issue 16).

`@Gpu(constants={"TILE": 16})` binds names the body reads as compile-time constants, the way
module-level constants are read, but per kernel. `@autotune(TILE=[8, 16], workgroup_size=[64,
128], key=["n"])` declares a `Space` of choices; each point of it (a *variant*) is a `GpuKernel`
of its own: the same function and source with the chosen values as constants and the chosen
workgroup size. Its source key hashes those values, so each variant is compiled, cached on disk
and prepared (pipeline, launch plan, C launcher) separately and lazily, by the launch session
that already keys everything by source key.
"""

from __future__ import annotations

import itertools
import numbers
import threading
import types
from typing import TYPE_CHECKING, Any

from ..errors import GpuInvalidArgument

if TYPE_CHECKING:
    from .kernel import GpuKernel

WORKGROUP = "workgroup_size"  # the one choice that is not a constant of the body


def _is_value(value: Any) -> bool:
    """A compile-time constant is an int, float or bool (numpy scalars of those too)."""
    return isinstance(value, numbers.Real) and not isinstance(value, type)


def check_constants(kernel_name: str, constants: Any, params: tuple) -> dict[str, object]:
    """`@Gpu(constants=...)` checked: a dict of identifiers to ints, floats or bools, none of
    them a parameter name. Returns a plain dict (of Python numbers)."""
    if constants is None:
        return {}
    if not isinstance(constants, dict):
        raise TypeError(
            f"@Gpu(constants=...) of kernel `{kernel_name}` takes a dict of names to ints, "
            f"floats or bools (constants={{'TILE': 16}}); got {type(constants).__name__}"
        )
    names = {p.name for p in params}
    out: dict[str, object] = {}
    for name, value in constants.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(
                f"@Gpu(constants=...) of kernel `{kernel_name}`: {name!r} is not a name the "
                f"body could read; the keys are identifiers (e.g. 'TILE')"
            )
        if name in names:
            raise TypeError(
                f"@Gpu(constants=...) of kernel `{kernel_name}`: `{name}` is also a parameter "
                f"of the kernel; a constant may not shadow a parameter (rename one of them)"
            )
        if not _is_value(value):
            raise TypeError(
                f"@Gpu(constants=...) of kernel `{kernel_name}`: `{name}` is "
                f"{type(value).__name__} {value!r}; a compile-time constant is an int, float or "
                f"bool"
            )
        out[name] = _plain(value)
    return out


def _plain(value: Any) -> object:
    """numpy scalars as the Python number they hold (reprs and JSON stay plain)."""
    if isinstance(value, bool) or type(value) in (int, float):
        return value
    if isinstance(value, numbers.Integral):
        return bool(value) if str(getattr(value, "dtype", "")) == "bool" else int(value)
    return float(value)


class Space:
    """The declared choices of an `@autotune` kernel: names in declaration order, each with
    its tuple of values (the first is the default), and the `key=` parameters."""

    def __init__(self, names: tuple[str, ...], values: tuple[tuple, ...], key: tuple[str, ...]):
        self.names, self.values, self.key = names, values, key

    def first(self) -> dict[str, Any]:
        return {n: v[0] for n, v in zip(self.names, self.values)}

    def points(self) -> list[dict[str, Any]]:
        """Every variant, in declaration order (the first choices first)."""
        return [dict(zip(self.names, combo)) for combo in itertools.product(*self.values)]

    def describe(self) -> str:
        """The space as text, stable across processes (part of the tuned-choice record key)."""
        return repr([(n, list(v)) for n, v in zip(self.names, self.values)] + [list(self.key)])

    def check_pins(self, kernel_name: str, pins: Any) -> dict[str, Any]:
        """`pins=` of a launch checked against the space: a dict naming declared choices with
        one of their declared values. Raises `GpuInvalidArgument` naming `pins` and the name."""
        if not isinstance(pins, dict):
            raise GpuInvalidArgument(
                f"`pins` takes a dict of autotune names to values (pins={{'TILE': 16}}); got "
                f"{type(pins).__name__}",
                param="pins",
                expected="a dict",
                got=type(pins).__name__,
            )
        declared = dict(zip(self.names, self.values))
        for name, value in pins.items():
            if name not in declared:
                raise GpuInvalidArgument(
                    f"`pins` names `{name}`, which kernel `{kernel_name}` does not declare in "
                    f"@autotune (it declares {', '.join(self.names)})",
                    param="pins",
                    expected=f"one of {', '.join(self.names)}",
                    got=repr(name),
                    hint="pin only the names given to @autotune(...)",
                )
            if not any(_same(value, v) for v in declared[name]):
                raise GpuInvalidArgument(
                    f"`pins` gives `{name}`={value!r} for kernel `{kernel_name}`, which is not "
                    f"among its declared choices {list(declared[name])}",
                    param="pins",
                    expected=f"{name} in {list(declared[name])}",
                    got=repr(value),
                    hint=f"add {value!r} to @autotune({name}=[...]) or pin a declared value",
                )
        return {n: next(v for v in declared[n] if _same(pins[n], v)) for n in pins}


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same kind (True is not the choice 1, 16.0 is not 16)."""
    return type(_plain(a)) is type(b) and _plain(a) == b if _is_value(a) else a == b


def variant_of(kernel: GpuKernel, choices: dict[str, Any]) -> GpuKernel:
    """The `GpuKernel` of `kernel` (an `@autotune` one) at `choices` (a full point of its
    space), made once and kept on its tuner."""
    tuner = kernel._tuner
    point = tuple(choices[n] for n in tuner.space.names)
    made = tuner.variants.get(point)
    if made is not None:
        return made
    with tuner.lock:
        made = tuner.variants.get(point)
        if made is None:
            made = tuner.variants[point] = _make_variant(kernel, choices)
        return made


def _make_variant(kernel: GpuKernel, choices: dict[str, Any]) -> GpuKernel:
    from .kernel import GpuKernel, _workgroup
    from .meta import kernel_meta

    variant = object.__new__(GpuKernel)
    state = dict(kernel.__dict__)
    for derived in ("_tuner", "__gpu_kernel_meta__", "_python_face"):
        state.pop(derived, None)
    state.update(_bracket=None, _fast_launch=None)  # instance attributes (kernel.py)
    variant.__dict__.update(state)
    given = dict(kernel._given)
    given.update({k: v for k, v in choices.items() if k != WORKGROUP})
    variant._given = given
    variant._choices = dict(choices)
    if WORKGROUP in choices:
        variant._wg = _workgroup(choices[WORKGROUP])
        variant._explicit_wg = True
        variant._physical_width = variant._wg[0] if variant._wg[1:] == (1, 1) else None
    variant._constants = None
    variant._source_key = None
    variant._lowered = {}
    variant._lock = threading.Lock()
    variant.__gpu_kernel_meta__ = kernel_meta(variant)
    return variant


def pinned_variant(kernel: GpuKernel, pins: Any) -> GpuKernel:
    """`kernel` itself for a plain kernel (where `pins` must be empty), else its variant at
    `pins` with the first choice of every name not pinned."""
    tuner = kernel._tuner
    if tuner is None:
        if pins:
            names = ", ".join(f"`{n}`" for n in pins) if isinstance(pins, dict) else repr(pins)
            raise GpuInvalidArgument(
                f"`pins` names {names} but kernel `{kernel.name}` declares no autotune choices",
                param="pins",
                hint="declare them with @autotune(NAME=[...]) above @Gpu, or drop pins=",
            )
        return kernel
    chosen = tuner.space.first()
    if pins is not None:
        chosen.update(tuner.space.check_pins(kernel.name, pins))
    return variant_of(kernel, chosen)


class _Overlay(dict):
    """Module globals as a kernel with constants sees them when run as Python: its constants,
    then the module's current globals (read live: a name defined later is found)."""

    def __init__(self, given: dict[str, object], module: dict[str, Any]) -> None:
        super().__init__(given)
        self.module = module

    def __missing__(self, name: str) -> Any:
        return self.module[name]  # KeyError: Python goes on to the builtins


def python_face(kernel: GpuKernel) -> Any:
    """The kernel's function as plain Python with its `constants=` (and choices) bound, so
    calling the kernel runs it as ordinary Python (SPEC §2) although the names are defined
    nowhere in the module. Made once per kernel object."""
    face = kernel.__dict__.get("_python_face")
    if face is None:
        fn = kernel._fn
        face = types.FunctionType(
            fn.__code__,
            _Overlay(kernel._given, fn.__globals__),
            fn.__name__,
            fn.__defaults__,
            fn.__closure__,
        )
        face.__kwdefaults__ = fn.__kwdefaults__
        kernel.__dict__["_python_face"] = face
    return face
