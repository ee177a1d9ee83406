"""What a CUDA object holds (issue 17): its pointer, shape, element type, writability and the
stream it was produced on, read from its `__cuda_array_interface__` (v3) or, lacking one, from
the DLPack capsule its `__dlpack__` returns (the DLManagedTensor ABI read through ctypes; the
capsule is consumed and its deleter runs once the copies that use the memory are done).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass, field
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument

_LEGACY_STREAM = 1  # CU_STREAM_LEGACY (also the CAI / DLPack value for it)


@dataclass
class Foreign:
    """What a CUDA object holds: where, how, and on which stream it was produced."""

    obj: Any
    ptr: int
    shape: tuple
    dtype: Any  # numpy dtype
    readonly: bool
    stream: int | None
    contiguous: bool
    keep: list = field(default_factory=list)  # a consumed DLPack capsule's owner

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n

    def label(self, ordinal: int | None = None) -> str:
        """`torch.float64 on cuda:0`; `cupy.ndarray of float64 on cuda:0` for others."""
        t = type(self.obj)
        top = t.__module__.split(".")[0]
        where = f" on cuda:{ordinal}" if ordinal is not None else " on a CUDA device"
        if top == "torch":
            return f"{self.obj.dtype} on {self.obj.device}"
        return f"{top}.{t.__name__} of {self.dtype.name}{where}"


def _torch_stream(obj: Any) -> int | None:
    """A torch tensor's producer stream: torch's current stream on its device (torch's CAI
    says nothing about streams)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    return int(torch.cuda.current_stream(obj.device).cuda_stream) or _LEGACY_STREAM


def _contiguous(shape: tuple, strides: Any, itemsize: int) -> bool:
    if strides is None:
        return True
    want = itemsize
    for dim, stride in zip(reversed(shape), reversed(tuple(strides))):
        if dim != 1 and stride != want:
            return False
        want *= dim
    return True


def _refused(name: str, obj: Any, exc: BaseException) -> GpuInvalidArgument:
    return GpuInvalidArgument(
        f"`{name}`: the CUDA object ({type(obj).__module__}.{type(obj).__name__}) refused to "
        f"describe its memory: {exc}",
        param=name,
        hint="for a torch tensor that requires grad, pass tensor.detach()",
    )


def describe(obj: Any, name: str) -> Foreign:
    """Read `obj`'s CUDA Array Interface (or, lacking one, its DLPack capsule). A JAX array
    names no stream its value is computed on (JAX runs on streams of its own), so it is waited
    for here, on the host, first: without that a kernel read a `jnp.arange` before JAX had
    written it (docs/interop.md's example on the H200, 2026-12-03)."""
    import numpy

    _wait_for_jax(obj, name)
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        cai = None
    except Exception as exc:  # noqa: BLE001 - worded with the parameter's name
        raise _refused(name, obj, exc) from None
    if cai is not None:
        if cai.get("mask") is not None:
            raise GpuInvalidArgument(
                f"`{name}` is a masked CUDA array; kernels take plain arrays",
                param=name,
                got="a CUDA array with a mask",
            )
        shape = tuple(int(d) for d in cai["shape"])
        dtype = numpy.dtype(cai["typestr"])
        ptr, readonly = cai["data"]
        stream = cai.get("stream") if int(cai.get("version", 0)) >= 3 else None
        if stream is None:
            stream = _torch_stream(obj)
        return Foreign(
            obj,
            int(ptr or 0),
            shape,
            dtype,
            bool(readonly),
            None if stream is None else int(stream),
            _contiguous(shape, cai.get("strides"), dtype.itemsize),
        )
    return _from_dlpack(obj, name)


def _wait_for_jax(obj: Any, name: str) -> None:
    if type(obj).__module__.split(".")[0] not in ("jax", "jaxlib"):
        return
    ready = getattr(obj, "block_until_ready", None)
    if ready is None:
        return
    try:
        ready()
    except Exception as exc:  # noqa: BLE001 - worded with the parameter's name
        raise _refused(name, obj, exc) from None


# ---- DLPack capsules (ctypes reading of the DLManagedTensor ABI) ---------------------------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManaged(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_DL_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}


class _Consumed:
    """A consumed DLPack capsule: its tensor's deleter runs when this goes (after the copies
    that read or write the memory are done)."""

    def __init__(self, address: int) -> None:
        self.address = address

    def __del__(self) -> None:
        managed = _DLManaged.from_address(self.address)
        if managed.deleter:
            _DELETER(managed.deleter)(self.address)


def _from_dlpack(obj: Any, name: str) -> Foreign:
    import numpy

    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_SetName.restype = ctypes.c_int
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_IsValid.restype = ctypes.c_int
    api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    try:
        # the legacy default stream: the producer orders its work before it (our copy runs
        # there and is waited for)
        capsule = obj.__dlpack__(stream=_LEGACY_STREAM)
    except Exception as exc:  # noqa: BLE001 - worded with the parameter's name
        raise _refused(name, obj, exc) from None
    if not api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise GpuInvalidArgument(
            f"`{name}`: its __dlpack__ returned no unversioned 'dltensor' capsule",
            param=name,
            hint="pass an object with __cuda_array_interface__ instead",
        )
    address = api.PyCapsule_GetPointer(capsule, b"dltensor")
    api.PyCapsule_SetName(capsule, b"used_dltensor")  # ours now: its destructor does nothing
    holder = _Consumed(address)
    t = _DLManaged.from_address(address).dl_tensor
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    kind = _DL_KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise GpuArgumentTypeError(
            f"`{name}`: DLPack element type (code {t.dtype.code}, {t.dtype.bits} bits, "
            f"{t.dtype.lanes} lanes) is not one kernels take",
            param=name,
        )
    dtype = numpy.dtype("bool" if kind == "b" else f"{kind}{t.dtype.bits // 8}")
    strides = None
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(ndim))
    return Foreign(
        obj,
        int(t.data or 0) + int(t.byte_offset),
        shape,
        dtype,
        False,
        _LEGACY_STREAM,
        _contiguous(shape, strides, dtype.itemsize),
        [holder],
    )
