"""Argument contract (SPEC §5.2–5.3): check every argument against a compiled kernel's
parameters before anything runs, and describe how each list reaches the device.

Errors name the parameter and say what was expected and what was given. The per-element work
for Python lists happens in C (`Buffer.pack_list`), straight into mapped memory.
"""

from __future__ import annotations

import array
import math
from typing import TYPE_CHECKING, Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument, VulkanOutOfMemory
from ..runtime import formats, transfer

if TYPE_CHECKING:
    from ..compiler.ir_types import ListType, Param, Scalar

# compiler.ir_types is imported inside the functions that test types, not here: `import
# cthreads.gpu` loads this module and must not load the compiler (issue 19). A parameter that
# reaches these functions came from a signature check, so ir_types is loaded by then and the
# import is a lookup (never compiler.ir: a warm launch does not load it).

FLOAT32_MAX = formats.FLOAT32_MAX
FLOAT16_MAX = formats.FLOAT16_MAX


def type_name(t: Scalar | ListType) -> str:
    """The user-facing spelling of a parameter type, with its device meaning: `list[u8]
    (uint8)`, `f64 (float64)`, `int (int32)`, `bool`."""
    from ..compiler.ir_types import ListType

    if isinstance(t, ListType):
        fmt = formats.of(t.elem)
        return f"list[{fmt.name}] ({fmt.dtype})"
    fmt = formats.of(t)
    return fmt.name if fmt.kind == "bool" else f"{fmt.name} ({fmt.dtype})"


def describe(value: Any) -> str:
    """How an argument looks to the user, for error messages."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "shape"):
        kind = "numpy array" if type(value).__module__.startswith("numpy") else type(value).__name__
        return f"{kind} of {dtype}"
    if isinstance(value, memoryview):
        return f"memoryview of {_format_name(value.format, value.itemsize)}"
    if isinstance(value, array.array):
        return f"array.array('{value.typecode}') of {_format_name(value.typecode, value.itemsize)}"
    if isinstance(value, bytearray):
        return "bytearray (uint8)"
    if isinstance(value, bytes):
        return "bytes (read-only uint8)"
    if isinstance(value, (list, tuple)) and value:
        return f"{type(value).__name__} of {type(value[0]).__name__}"
    return type(value).__name__


def _format_name(fmt: str, itemsize: int) -> str:
    """The element type of a buffer-protocol format, numpy-style (`float32`, `uint8`)."""
    code = fmt.lstrip("@=<>!")
    if code in ("e", "f", "d"):
        return f"float{8 * itemsize}"
    if code == "?":
        return "bool"
    if len(code) == 1 and code in "bhilqn":
        return f"int{8 * itemsize}"
    if len(code) == 1 and code in "BHILQN":
        return f"uint{8 * itemsize}"
    return f"format {fmt!r}"


def _convert_hint(value: Any, formats: tuple, dtype_name: str) -> str:
    """How to give a buffer the element type a list parameter needs, by the buffer's kind."""
    np_name = dtype_name.split()[0]
    if isinstance(value, array.array):
        code = "B" if formats[0] == "?" else formats[0]
        return f"build it as array.array('{code}', ...) ({np_name})"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"view it as {np_name}, e.g. numpy.frombuffer(buf, numpy.{np_name})"
    return (
        f"convert it explicitly, e.g. arr.astype(numpy.{np_name}); "
        "cthreads never converts arrays silently"
    )


class ListArg:
    """One list argument, checked: how to move it to the device and back."""

    __slots__ = ("index", "param", "value", "count", "nbytes", "pack", "view", "memory")

    def __init__(
        self,
        index: int,
        param: Param,
        value: Any,
        count: int,
        nbytes: int,
        pack: str,
        view: memoryview | None,
        memory: memoryview | None = None,
    ) -> None:
        self.index = index
        self.param = param
        self.value = value
        self.count = count  # elements
        self.nbytes = nbytes
        self.pack = pack  # native pack code
        self.view = view  # byte view to copy through; None for Python lists and residents
        self.memory = memory  # byte view of the caller's buffer (None for lists)


def check_scalar(param: Any, value: Any) -> int | float:
    """Check a scalar argument against its launch-plan entry (`plan.ParamPlan`: its `kind`,
    int range `lo`..`hi`, name and type); returns the value to put in the push constants."""
    kind = param.kind
    # Fast paths for the exact builtin types (every launch passes through here).
    t = type(value)
    if t is int and kind == "int" and param.lo <= value <= param.hi:
        return value
    if t is float and kind == "f32" and -FLOAT32_MAX <= value <= FLOAT32_MAX:
        return value
    if getattr(value, "shape", ()) != ():
        raise _array_for_scalar(param, value)  # before __float__/__index__ word it unnamed
    is_bool = isinstance(value, bool) or type(value).__name__ == "bool_"
    if kind == "bool":
        if is_bool:
            return int(bool(value))
        raise _type_error(param, value)
    if kind in ("f16", "f64"):
        if is_bool or isinstance(value, (complex, str, bytes)) or not hasattr(value, "__float__"):
            raise _type_error(param, value)
        v = _to_float(param, value)
        if kind == "f64":
            return v
        h = _f16(v)
        if math.isfinite(v) and math.isinf(h):
            raise GpuInvalidArgument(
                f"`{param.name}` expects f16 (float16); got {v!r}, which overflows float16 "
                f"(largest finite: {FLOAT16_MAX})",
                param=param.name,
                expected="float16",
                got=repr(v),
                hint="pass float('inf') explicitly if infinity is what you mean",
            )
        return h  # rounded to float16 here; the kernel's f32 -> f16 conversion is then exact
    int32 = (param.type.kind, param.type.bits) == ("int", 32)
    if kind in ("int", "u64") and not int32:  # the explicit int types (i64, u8, ...)
        if is_bool or isinstance(value, float) or not hasattr(value, "__index__"):
            raise _type_error(param, value)
        v = value.__index__()
        if not param.lo <= v <= param.hi:
            name = type_name(param.type)
            raise GpuInvalidArgument(
                f"`{param.name}` expects {name}; got {_show_int(v)}, outside [{param.lo}, {param.hi}]",
                param=param.name,
                expected=name,
                got=_show_int(v),
            )
        return v
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise GpuArgumentTypeError(
            f"`{param.name}` expects {type_name(param.type)}; got bool",
            param=param.name,
            expected=type_name(param.type),
            got="bool",
            hint=f"pass {'int(flag)' if int32 else 'float(flag)'} if you mean a number",
        )
    if int32:
        if not hasattr(value, "__index__") or isinstance(value, float):
            raise _type_error(param, value)
        v = value.__index__()
        if not param.lo <= v <= param.hi:
            raise GpuInvalidArgument(
                f"`{param.name}` expects int (int32); got {_show_int(v)}, outside "
                "[-2**31, 2**31 - 1]",
                param=param.name,
                expected="int32",
                got=_show_int(v),
                hint="device ints are 32-bit; pass a smaller value or split the work",
            )
        return v
    # float
    if (
        isinstance(value, float)
        or hasattr(value, "__float__")
        and not isinstance(value, (str, bytes))
    ):
        if isinstance(value, complex):
            raise _type_error(param, value)
        v = _to_float(param, value)
        if math.isfinite(v) and abs(v) > FLOAT32_MAX:
            got = _show_int(value) if isinstance(value, int) else repr(v)
            raise GpuInvalidArgument(
                f"`{param.name}` expects float (float32); got {got}, which overflows float32 "
                "(it would become inf on the device)",
                param=param.name,
                expected="float32",
                got=got,
                hint="pass float('inf') explicitly if infinity is what you mean",
            )
        return v
    raise _type_error(param, value)


def _show_int(v: int) -> str:
    """An int for a message: in full unless it is very long."""
    text = str(v)
    return text if len(text) <= 24 else f"an int of {len(text.lstrip('-'))} digits"


def _to_float(param: Param, value: Any) -> float:
    """float(value), with an int too large for any float worded as an argument error."""
    try:
        return float(value)
    except OverflowError:
        name = type_name(param.type)
        got = _show_int(value) if isinstance(value, int) else describe(value)
        target = name.split("(")[-1].rstrip(")")
        raise GpuInvalidArgument(
            f"`{param.name}` expects {name}; got {got}, which overflows {target}"
            + (" (it would become inf on the device)" if target == "float32" else ""),
            param=param.name,
            expected=name,
            got=got,
            hint="pass float('inf') explicitly if infinity is what you mean",
        ) from None


def _array_for_scalar(param: Param, value: Any) -> GpuArgumentTypeError:
    """An array (or buffer) passed for a scalar: numpy scalars and 0-d arrays are scalars, an
    array of any shape, one element included, is not."""
    name = type_name(param.type)
    shape = tuple(getattr(value, "shape", None) or ())
    got = f"{describe(value)} of shape {shape}"
    return GpuArgumentTypeError(
        f"`{param.name}` expects {name}; got {got}",
        param=param.name,
        expected=name,
        got=got,
        hint="pass a number: arr.item() or arr[0] for a one-element array (numpy scalars such "
        "as numpy.float32(1) are accepted)",
    )


def _f16(v: float) -> float:
    from ..gpu.types import f16

    return f16(v)


def _type_error(param: Param, value: Any) -> GpuArgumentTypeError:
    got = describe(value)
    return GpuArgumentTypeError(
        f"`{param.name}` expects {type_name(param.type)}; got {got}",
        param=param.name,
        expected=type_name(param.type),
        got=got,
    )


def check_list(index: int, param: Param, value: Any) -> ListArg:
    """Check a list argument (Python list or C-contiguous buffer)."""
    from ..compiler.ir_types import ListType

    assert isinstance(param.type, ListType)
    fmt = formats.of(param.type.elem)
    pack, itemsize, accepted, dtype_name = fmt.pack, fmt.itemsize, fmt.buffer_formats, fmt.dtype
    if isinstance(value, list):
        if not value:
            raise GpuInvalidArgument.empty(
                param.name,
                type_name(param.type),
                "list",
                hint="kernels need at least one element per list parameter",
            )
        return ListArg(index, param, value, len(value), len(value) * itemsize, pack, None)
    if isinstance(value, (str, tuple, dict, set)) or not _has_buffer(value):
        raise _type_error(param, value)
    view = memoryview(value)
    code = view.format.lstrip("@=<")
    if code not in accepted or view.itemsize != itemsize:
        got = describe(value)
        raise GpuArgumentTypeError(
            f"`{param.name}` expects {type_name(param.type)}; got {got}",
            param=param.name,
            expected=dtype_name,
            got=got,
            hint=_convert_hint(value, accepted, dtype_name),
        )
    if not view.c_contiguous:
        raise GpuInvalidArgument.non_contiguous(
            param.name, "buffer", describe(value), hint="pass numpy.ascontiguousarray(arr)"
        )
    if view.nbytes == 0:
        raise GpuInvalidArgument.empty(param.name, type_name(param.type), describe(value))
    if param.writes and view.readonly:
        raise GpuInvalidArgument(
            f"`{param.name}` is written by the kernel but the {describe(value)} passed is read-only",
            param=param.name,
            expected="a writable buffer",
            got="read-only buffer",
            hint="pass a writable copy (e.g. bytearray(b))"
            if isinstance(value, bytes)
            else "pass a writable copy (e.g. arr.copy())",
        )
    flat = view.cast("B") if view.ndim != 1 or view.format != "B" else view
    return ListArg(index, param, value, view.nbytes // itemsize, view.nbytes, pack, flat, flat)


def cuda_arguments(plan: Any, args: tuple) -> bool:
    """Whether a list argument is a CUDA object (torch, CuPy, JAX, Numba): the launch then
    goes through cthreads/interop/imports.py, which stages it and calls the launch again."""
    if not plan.lists:
        return False
    if all(_is_host_container(args[p.index]) for p in plan.lists):
        return False  # (interop is imported only when some argument may be CUDA's: issue 19)
    from ..interop.imports import is_cuda_object

    return any(is_cuda_object(args[p.index]) for p in plan.lists)


# Argument types that hold host memory only: a launch on these alone never loads interop
# (2-3 ms of a process's first launch on the CI machine). numpy's array is named, not
# imported: binding does not import numpy.
_HOST_TYPES = frozenset({list, tuple, bytes, bytearray, memoryview, array.array})


def _is_host_container(value: Any) -> bool:
    t = type(value)
    return t in _HOST_TYPES or (t.__name__ == "ndarray" and t.__module__ == "numpy")


def _has_buffer(value: Any) -> bool:
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


def write_back(writebacks: list[tuple[ListArg | None, Any]]) -> None:
    """Copy a finished launch's results into the caller's objects: `(arg, source)` pairs, the
    source a download buffer or a GpuArena record. One list that cannot take its results (a
    Python list resized since the launch) loses only its own: every other list is written
    back first, then the first error is raised (later ones as notes)."""
    errors: list[BaseException] = []
    for arg, source in writebacks:
        try:
            if hasattr(source, "download"):  # resident in a GpuArena: it checks its length
                source.download()
            elif arg.view is None:
                check_length(arg.param.name, arg.value, arg.count, "gpu()", "join()")
                source.unpack_into_list(arg.value, arg.pack)
            else:
                transfer.read_into(source, arg.view)
        except Exception as exc:  # noqa: BLE001 - raised below, after the other lists
            errors.append(exc)
    if errors:
        first = errors[0]
        for other in errors[1:]:
            first.add_note(f"also: {other}")
        raise first.with_traceback(None)


def check_length(name: str, lst: list, count: int, since: str, until: str) -> None:
    """Refuse to write `count` results into a Python list whose length changed since `since`."""
    if len(lst) != count:
        raise GpuInvalidArgument(
            f"`{name}` length changed between {since} and {until}: it had {count} "
            f"elements then and has {len(lst)} now, so its results were not written back "
            "(every other list was)",
            param=name,
            expected=f"{count} elements",
            got=f"{len(lst)} elements",
            hint="do not resize a list while a launch that writes it is running: join() first",
        )


def device_buffer_for(
    device: Any, name: str, count: int, nbytes: int, usage: str = "device"
) -> Any:
    """A device buffer for the list called `name` ('export' usage: one CUDA can import);
    out of memory names the list, its size and the device's limit (SPEC §5.7)."""
    try:
        return device.buffer(nbytes, usage=usage)
    except VulkanOutOfMemory as exc:
        raise VulkanOutOfMemory(
            f"`{name}` ({count} elements, {nbytes} bytes) does not fit on the device: {exc}",
            vk_result=exc.vk_result,
        ) from None
