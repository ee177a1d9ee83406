"""A `DeviceArray` seen by CUDA without a copy: `__cuda_array_interface__` and `__dlpack__`.

An array allocated exportable (`DeviceArray(..., exportable=True)` on a `cuda_capable` device) has its
memory imported into the CUDA context of the same GPU the first time CUDA asks for it; the
`cuda.Mapping` lives as long as the array (a finalizer closes it), and the registry below maps
its device pointer back to the array, so that a CUDA view of it passed to a launch is the array
itself again (imports.py).

Order: CUDA work queued after the exchange comes after every launch queued on the array (reads
too: CUDA may write it next). `__dlpack__(stream=s)` has stream s wait for them (handoff.py: on
the GPU where it can); `__cuda_array_interface__` names no consumer stream, so it waits on the
host and says `stream: None` (no further synchronisation needed).
Elsewhere the attributes are absent: `exportable()` raises AttributeError, so `hasattr` is False.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..errors import GpuInvalidArgument
from . import cuda, cuda_capable, handoff, why_not_capable

KDLCUDA = 2  # DLPack device type
# numpy kind -> DLPack type code (DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6)
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}

# device pointer -> weakref of the DeviceArray whose memory it is (live mappings only)
_BY_POINTER: dict[int, weakref.ref] = {}


def exportable(arr: Any) -> None:
    """Raise AttributeError unless CUDA can see `arr`'s memory (what makes hasattr False)."""
    if arr._released or not cuda_capable(arr._device) or arr.buffer.kind != "export":
        if arr._released:
            why = "it was released"
        elif cuda_capable(arr._device):
            why = "it was not allocated exportable: use DeviceArray(..., exportable=True)"
        else:
            why = why_not_capable(arr._device)
        raise AttributeError(f"this DeviceArray has no CUDA view: {why}")


def _close(mapping: cuda.Mapping, ptr: int) -> None:
    _BY_POINTER.pop(ptr, None)
    try:
        mapping.close()
    except Exception:  # noqa: BLE001 - a finalizer at exit: the CUDA context may be gone
        pass


def mapping(arr: Any) -> cuda.Mapping:
    """`arr`'s memory imported into CUDA (made on first use, kept until the array goes)."""
    m = arr._cuda
    if m is None:
        ctx = cuda.context_for(arr._device)
        m = cuda.Mapping(ctx, arr.buffer)
        arr._cuda = m
        _BY_POINTER[m.ptr] = weakref.ref(arr)
        fin = weakref.finalize(arr, _close, m, m.ptr)
        fin.atexit = False  # at exit the process's CUDA context goes anyway
    return m


def array_at(ptr: int, nbytes: int) -> Any:
    """The live DeviceArray whose whole memory is [ptr, ptr + nbytes), or None."""
    ref = _BY_POINTER.get(ptr)
    arr = ref() if ref is not None else None
    if arr is None or arr._released or arr.nbytes != nbytes:
        return None
    return arr


def _settle(arr: Any) -> None:
    """Our launches on `arr` finished: CUDA work queued from now on may read or write it."""
    arr._device.wait(arr.last_use)


def cuda_array_interface(arr: Any) -> dict:
    exportable(arr)
    m = mapping(arr)
    _settle(arr)
    return {
        "shape": tuple(arr.shape),
        "typestr": arr.dtype.str,
        "data": (m.ptr, False),
        "version": 3,
        "strides": None,
        "stream": None,
    }


def dlpack_device(arr: Any) -> tuple[int, int]:
    exportable(arr)
    return (KDLCUDA, mapping(arr).ctx.ordinal)


def dlpack(
    arr: Any,
    *,
    stream: Any = None,
    max_version: Any = None,
    dl_device: Any = None,
    copy: Any = None,
) -> Any:
    """The `__dlpack__` protocol: a capsule that keeps `arr` alive until deleted, versioned
    (DLPack 1.0) when the consumer's `max_version` allows it, else the 0.8 "dltensor"."""
    from .. import _native

    exportable(arr)
    m = mapping(arr)
    if copy:
        raise BufferError("a DeviceArray is exported without a copy only (copy=True refused)")
    if dl_device is not None and tuple(dl_device) != (KDLCUDA, m.ctx.ordinal):
        raise BufferError(f"a DeviceArray lives on cuda:{m.ctx.ordinal}; dl_device={dl_device}")
    if stream is not None and stream != -1 and not isinstance(stream, int):
        raise GpuInvalidArgument(
            f"`stream`: __dlpack__ takes a CUDA stream handle as an int; got {type(stream).__name__}",
            param="stream",
            expected="int or None",
            got=type(stream).__name__,
        )
    if stream is None or stream == -1:
        _settle(arr)  # (no stream named: the host wait serves whichever the consumer uses)
    else:  # the consumer's stream waits for our launches on arr
        handoff.ours_to_cuda(arr._device, m.ctx, arr.last_use, [stream])
    dt = arr.dtype
    code = _DL_CODES[dt.kind]
    versioned = max_version is not None and int(tuple(max_version)[0]) >= 1
    return _native.dlpack_capsule(
        arr,
        m.ptr,
        tuple(arr.shape),
        (code, dt.itemsize * 8, 1),
        (KDLCUDA, m.ctx.ordinal),
        versioned,
    )
