"""The CUDA driver API, reached through ctypes (issue 17): only what the exchange needs.

`libcuda.so.1` is opened at the first call that needs it (`driver()`), never at import and never
for a device that is not NVIDIA's (`interop.cuda_capable` decides that from Vulkan facts alone).
No CUDA toolkit is needed to build or run cthreads: the few structs below are the driver ABI.

`context_for(device)` finds the CUDA device whose UUID is the Vulkan device's deviceUUID (they are
equal on NVIDIA) and retains its primary context, the one torch, CuPy and JAX use, so pointers
are valid in all of them. `Mapping` imports an 'export' buffer's fd into that context and keeps
the imported memory and its device pointer alive until `close()`; `Semaphore` imports an
exported Vulkan timeline semaphore and queues signals and waits of it on a CUDA stream.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from typing import Any

from .. import config
from ..errors import GpuInvalidArgument

CUDA_LIBRARY_ENV = "CTHREADS_CUDA_LIBRARY"  # another path to libcuda.so.1 (tests, odd installs)

_OPAQUE_FD = 1  # CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
_DEDICATED = 1  # CUDA_EXTERNAL_MEMORY_DEDICATED: our export allocations are dedicated ones
_ATTR_DEVICE_ORDINAL = 9  # CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
_TIMELINE_FD = 9  # CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD (CUDA 11.2+)


class _Win32(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_void_p), ("name", ctypes.c_void_p)]


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("win32", _Win32), ("nvSciBufObject", ctypes.c_void_p)]


class _MemoryHandleDesc(ctypes.Structure):  # CUDA_EXTERNAL_MEMORY_HANDLE_DESC
    _fields_ = [
        ("type", ctypes.c_int),
        ("handle", _Handle),
        ("size", ctypes.c_ulonglong),
        ("flags", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 16),
    ]


class _BufferDesc(ctypes.Structure):  # CUDA_EXTERNAL_MEMORY_BUFFER_DESC
    _fields_ = [
        ("offset", ctypes.c_ulonglong),
        ("size", ctypes.c_ulonglong),
        ("flags", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 16),
    ]


class _SemaphoreHandleDesc(ctypes.Structure):  # CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC (96 bytes)
    _fields_ = [
        ("type", ctypes.c_int),
        ("handle", _Handle),  # (the same union as memory's: fd, win32, an NvSci pointer)
        ("flags", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 16),
    ]


class _Fence(ctypes.Structure):
    _fields_ = [("value", ctypes.c_ulonglong)]


class _NvSciSync(ctypes.Union):
    _fields_ = [("fence", ctypes.c_void_p), ("reserved", ctypes.c_ulonglong)]


class _SignalMutex(ctypes.Structure):
    _fields_ = [("key", ctypes.c_ulonglong)]


class _WaitMutex(ctypes.Structure):
    _fields_ = [("key", ctypes.c_ulonglong), ("timeoutMs", ctypes.c_uint)]


def _semaphore_params(name: str, mutex: type, padding: int) -> type:
    """CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS and _WAIT_PARAMS (144 bytes each, a 72-byte inner
    block): one layout, whose inner keyed-mutex member differs, and with it the reserved words
    that pad the inner block to 72 bytes."""
    inner_fields = [
        ("fence", _Fence),
        ("nvSciSync", _NvSciSync),
        ("keyedMutex", mutex),
        ("reserved", ctypes.c_uint * padding),
    ]
    inner = type(f"{name}Inner", (ctypes.Structure,), {"_fields_": inner_fields})
    fields = [("params", inner), ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]
    return type(name, (ctypes.Structure,), {"_fields_": fields})


_SignalParams = _semaphore_params("_SignalParams", _SignalMutex, 12)
_WaitParams = _semaphore_params("_WaitParams", _WaitMutex, 10)


_P = ctypes.c_void_p
_U64 = ctypes.c_uint64
# name -> argtypes; the first name found of each tuple is bound (the _v2 ABI where there is one)
_SIGNATURES: list[tuple[tuple[str, ...], list]] = [
    (("cuInit",), [ctypes.c_uint]),
    (("cuGetErrorName",), [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
    (("cuDeviceGetCount",), [ctypes.POINTER(ctypes.c_int)]),
    (("cuDeviceGet",), [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
    (("cuDeviceGetUuid_v2", "cuDeviceGetUuid"), [ctypes.c_char_p, ctypes.c_int]),
    (("cuDevicePrimaryCtxRetain",), [ctypes.POINTER(_P), ctypes.c_int]),
    (("cuCtxPushCurrent_v2",), [_P]),
    (("cuCtxPopCurrent_v2",), [ctypes.POINTER(_P)]),
    (("cuImportExternalMemory",), [ctypes.POINTER(_P), ctypes.POINTER(_MemoryHandleDesc)]),
    (("cuExternalMemoryGetMappedBuffer",), [ctypes.POINTER(_U64), _P, ctypes.POINTER(_BufferDesc)]),
    (("cuDestroyExternalMemory",), [_P]),
    (("cuMemFree_v2",), [_U64]),
    (("cuMemcpyDtoDAsync_v2",), [_U64, _U64, ctypes.c_size_t, _P]),
    (("cuStreamSynchronize",), [_P]),
    (("cuPointerGetAttribute",), [_P, ctypes.c_int, _U64]),
]
# bound where the driver has them (CUDA 10+; timeline semaphores CUDA 11.2+): the GPU-side
# hand-off needs them, the exchange itself does not (handoff.py falls back to host waits)
_SEMAPHORE_SIGNATURES: list[tuple[tuple[str, ...], list]] = [
    (("cuImportExternalSemaphore",), [ctypes.POINTER(_P), ctypes.POINTER(_SemaphoreHandleDesc)]),
    (
        ("cuSignalExternalSemaphoresAsync",),
        [ctypes.POINTER(_P), ctypes.POINTER(_SignalParams), ctypes.c_uint, _P],
    ),
    (
        ("cuWaitExternalSemaphoresAsync",),
        [ctypes.POINTER(_P), ctypes.POINTER(_WaitParams), ctypes.c_uint, _P],
    ),
    (("cuDestroyExternalSemaphore",), [_P]),
]

_lock = threading.Lock()
_driver: Any = None
_contexts: dict[str, Context] = {}


class _Driver:
    """The bound entry points (attribute per short name: `cuMemFree`, ...)."""

    def __init__(self, lib: Any) -> None:
        self.semaphores = True  # whether every _SEMAPHORE_SIGNATURES entry point is there
        for names, argtypes in _SIGNATURES + _SEMAPHORE_SIGNATURES:
            for name in names:
                fn = getattr(lib, name, None)
                if fn is not None:
                    break
            else:
                if (names, argtypes) in _SEMAPHORE_SIGNATURES:
                    self.semaphores = False
                    continue
                raise GpuInvalidArgument(
                    f"the CUDA driver library has no {names[0]}: it is older than the exchange "
                    "with CUDA needs (CUDA 10 or later)",
                    hint="update the NVIDIA driver",
                )
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
            short = names[0].removesuffix("_v2")
            setattr(self, short, fn)

    def check(self, result: int, what: str) -> None:
        if result == 0:
            return
        name = ctypes.c_char_p()
        self.cuGetErrorName(result, ctypes.byref(name))
        text = name.value.decode() if name.value else f"CUresult {result}"
        raise GpuInvalidArgument(
            f"CUDA {what} failed ({text})",
            hint="the exchange with CUDA needs the NVIDIA driver's libcuda.so.1 and the GPU "
            "visible to CUDA (CUDA_VISIBLE_DEVICES)",
        )


def loaded() -> bool:
    """Whether libcuda was opened by this module (tests: nothing opens it elsewhere)."""
    return _driver is not None


def driver() -> _Driver:
    """The CUDA driver API, loaded and initialised on first use."""
    global _driver
    if _driver is not None:
        return _driver
    with _lock:
        if _driver is None:
            name = config.cuda_library()
            try:
                lib = ctypes.CDLL(name)
            except OSError as exc:
                raise GpuInvalidArgument(
                    f"cannot exchange memory with CUDA: {name} could not be loaded ({exc})",
                    hint="install the NVIDIA driver (it ships libcuda.so.1) or point "
                    f"{CUDA_LIBRARY_ENV} at it",
                ) from None
            drv = _Driver(lib)
            drv.check(drv.cuInit(0), "cuInit")
            _driver = drv
    return _driver


class Context:
    """The primary context of the CUDA device matching one Vulkan device (by UUID)."""

    def __init__(self, drv: _Driver, ordinal: int, handle: Any) -> None:
        self.drv = drv
        self.ordinal = ordinal
        self.handle = handle

    def __enter__(self) -> _Driver:
        self.drv.check(self.drv.cuCtxPushCurrent(self.handle), "cuCtxPushCurrent")
        return self.drv

    def __exit__(self, *exc: object) -> None:
        popped = _P()
        self.drv.cuCtxPopCurrent(ctypes.byref(popped))

    def pointer_ordinal(self, ptr: int) -> int | None:
        """The CUDA device ordinal that `ptr` lives on, or None when CUDA does not know it."""
        out = ctypes.c_int(-1)
        with self as drv:
            r = drv.cuPointerGetAttribute(ctypes.byref(out), _ATTR_DEVICE_ORDINAL, ptr)
        return out.value if r == 0 else None

    def copy(self, dst: int, src: int, nbytes: int, stream: int | None) -> None:
        """Queue a device-to-device copy on `stream` (None: the legacy default stream)."""
        with self as drv:
            drv.check(drv.cuMemcpyDtoDAsync(dst, src, nbytes, stream or None), "cuMemcpyDtoDAsync")

    def synchronize(self, stream: int | None) -> None:
        """Wait on the host until the work queued on `stream` finished."""
        with self as drv:
            drv.check(drv.cuStreamSynchronize(stream or None), "cuStreamSynchronize")


def context_for(device: Any) -> Context:
    """The CUDA context of the CUDA device whose UUID is `device`'s (a runtime Device)."""
    uuid = device.info.uuid.replace("-", "")
    ctx = _contexts.get(uuid)
    if ctx is not None:
        return ctx
    drv = driver()
    with _lock:
        ctx = _contexts.get(uuid)
        if ctx is not None:
            return ctx
        count = ctypes.c_int(0)
        drv.check(drv.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        seen = []
        for ordinal in range(count.value):
            dev = ctypes.c_int()
            drv.check(drv.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
            raw = ctypes.create_string_buffer(16)
            drv.check(drv.cuDeviceGetUuid(raw, dev), "cuDeviceGetUuid")
            got = raw.raw.hex()
            seen.append(got)
            if got == uuid:
                handle = _P()
                drv.check(
                    drv.cuDevicePrimaryCtxRetain(ctypes.byref(handle), dev),
                    "cuDevicePrimaryCtxRetain",
                )
                ctx = _contexts[uuid] = Context(drv, ordinal, handle)
                return ctx
    raise GpuInvalidArgument(
        f"no CUDA device has the UUID of Vulkan device {device.name!r} ({uuid}); CUDA sees "
        f"{len(seen)} device(s): {', '.join(seen) or 'none'}",
        hint="CUDA_VISIBLE_DEVICES may hide it: make the GPU cthreads uses visible to CUDA",
    )


def _import_fd(drv: Any, name: str, desc: Any) -> Any:
    """Import the exported fd in `desc` with the driver call `name`; its CUDA handle. The fd is
    closed here when the import fails: CUDA owns it only once the import succeeded."""
    ext = _P()
    r = getattr(drv, name)(ctypes.byref(ext), ctypes.byref(desc))
    if r != 0:
        os.close(desc.handle.fd)
        drv.check(r, name)
    return ext


class Mapping:
    """An 'export' buffer's memory imported into CUDA: `ptr` is its device pointer there."""

    def __init__(self, ctx: Context, buffer: Any) -> None:
        self.ctx = ctx
        self.ptr = 0
        self._ext = None
        fd = buffer.export_fd()
        desc = _MemoryHandleDesc(type=_OPAQUE_FD, size=buffer.memory_size, flags=_DEDICATED)
        desc.handle.fd = fd
        with ctx as drv:
            ext = self._ext = _import_fd(drv, "cuImportExternalMemory", desc)
            ptr = _U64()
            bdesc = _BufferDesc(offset=0, size=buffer.capacity, flags=0)
            r = drv.cuExternalMemoryGetMappedBuffer(ctypes.byref(ptr), ext, ctypes.byref(bdesc))
            if r != 0:
                drv.cuDestroyExternalMemory(ext)
                self._ext = None
                drv.check(r, "cuExternalMemoryGetMappedBuffer")
        self.ptr = ptr.value

    def close(self) -> None:
        """Unmap and drop the import (idempotent); the Vulkan side keeps its memory."""
        ext, self._ext = self._ext, None
        if ext is None:
            return
        with self.ctx as drv:
            if self.ptr:
                drv.cuMemFree(self.ptr)
            drv.cuDestroyExternalMemory(ext)
        self.ptr = 0


def _destroy_semaphore(ctx: Context, ext: Any) -> None:
    try:
        with ctx as drv:
            drv.cuDestroyExternalSemaphore(ext)
    except Exception:  # noqa: BLE001 - a finalizer: the CUDA context may be gone
        pass


class Semaphore:
    """An exported Vulkan timeline semaphore (its fd) imported into CUDA: `signal` / `wait`
    queue a value on a CUDA stream (None: the legacy default stream); nothing waits on the
    host."""

    def __init__(self, ctx: Context, fd: int) -> None:
        self.ctx = ctx
        self._ext = None
        if not ctx.drv.semaphores:
            os.close(fd)
            raise GpuInvalidArgument(
                "the CUDA driver has no cuImportExternalSemaphore: it is older than CUDA 11.2",
                hint="update the NVIDIA driver",
            )
        desc = _SemaphoreHandleDesc(type=_TIMELINE_FD, flags=0)
        desc.handle.fd = fd
        with ctx as drv:
            ext = _import_fd(drv, "cuImportExternalSemaphore", desc)
        self._ext = ext
        # dropped with its device's hand-off state (that device was shut down: waited idle)
        weakref.finalize(self, _destroy_semaphore, ctx, ext).atexit = False

    def signal(self, value: int, stream: int | None) -> None:
        self._queue("cuSignalExternalSemaphoresAsync", _SignalParams(), value, stream)

    def wait(self, value: int, stream: int | None) -> None:
        self._queue("cuWaitExternalSemaphoresAsync", _WaitParams(), value, stream)

    def _queue(self, name: str, params: Any, value: int, stream: int | None) -> None:
        params.params.fence.value = value
        with self.ctx as drv:
            fn = getattr(drv, name)
            drv.check(fn(ctypes.byref(self._ext), ctypes.byref(params), 1, stream or None), name)
