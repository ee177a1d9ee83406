"""The element types and shapes a `DeviceArray` holds (residency/device_array.py): the names
users write ('f32', numpy dtypes, cthreads.gpu types), their list element types and pack codes
(runtime/formats.py), and the checks of a user-given dtype and shape, worded for the user.
"""

from __future__ import annotations

from typing import Any

from ..errors import GpuArgumentTypeError
from ..runtime import formats
from ..runtime.extents import extent_items, nonnegative

# kernel-language name -> (numpy dtype name, (kind, bits) of the list element type), from the
# one table of element types (runtime/formats.py); a DeviceArray spells int and float by width
# ('i32', 'f32') and holds bool as numpy bool.
_WIDTH_NAMES = {"int": "i32", "float": "f32"}
_ELEMENTS = {
    _WIDTH_NAMES.get(f.name, f.name): ("bool" if f.kind == "bool" else f.dtype, (f.kind, f.bits))
    for f in formats.FORMATS
}
_BY_NUMPY = {np_name: (name, key) for name, (np_name, key) in _ELEMENTS.items()}
_KIND_NAMES = {key: name for name, (_, key) in _ELEMENTS.items()}
_ACCEPTED = "f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool (or those numpy dtypes)"


def _pack_of(key: tuple[str, int]) -> tuple[str, int]:
    """(native pack code, bytes per element) of the list element type `key` = (kind, bits)."""
    fmt = formats.BY_TYPE[key]
    return fmt.pack, fmt.itemsize


def _element(dtype: Any) -> tuple[str, tuple[str, int], Any]:
    """(kernel-language name, (kind, bits), numpy dtype) of a user-given element type."""
    import numpy

    name = None
    if isinstance(dtype, str) and dtype in _ELEMENTS:
        name = dtype
    elif hasattr(dtype, "kind") and hasattr(dtype, "bits") and not isinstance(dtype, numpy.dtype):
        # a cthreads.gpu type (f16, u8, ...)
        name = _KIND_NAMES.get((dtype.kind, dtype.bits))
    if name is None:
        try:
            np_dtype = numpy.dtype(dtype)
        except TypeError:
            np_dtype = None
        if np_dtype is not None and np_dtype.isnative and np_dtype.name in _BY_NUMPY:
            name = _BY_NUMPY[np_dtype.name][0]
    if name is None:
        raise GpuArgumentTypeError(
            f"`dtype`: DeviceArray elements are {_ACCEPTED}; got {dtype!r}",
            param="dtype",
            expected=_ACCEPTED,
            got=repr(dtype),
            hint="e.g. DeviceArray(n, 'f32') or DeviceArray(n, numpy.float32)",
        )
    np_name, key = _ELEMENTS[name]
    return name, key, numpy.dtype(np_name)


def _shape(shape: Any) -> tuple[int, ...]:
    items = extent_items(shape)
    if items is None:
        raise GpuArgumentTypeError(
            f"`shape` expects an int or a tuple of ints; got {shape!r}",
            param="shape",
            expected="an int or a tuple of ints",
            got=repr(shape),
            hint="e.g. DeviceArray((rows, cols), 'f32')",
        )
    return nonnegative(items, "shape")
