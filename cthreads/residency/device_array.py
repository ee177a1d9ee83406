"""`DeviceArray` (issue 15, items 1 and 4): device memory with a shape and an element type.

Data stays on the device between launches; nothing moves to or from the host unless asked
(`from_numpy`, `copy_from`, `numpy`, `copy_to`, `__array__`). Launches take a `DeviceArray`
wherever a list parameter is, as a resident buffer whose record is the array itself
(dispatch._launch): it carries the same fields as an arena's `_Resident` (pack, count, nbytes,
buffer, generation, hazard, last_use, last_write, view=None) plus its shape. It is never put in
the arena registry, which would keep it alive.

Copies are stream-ordered (SPEC §5.5): an upload never races a queued launch that still
reads the array (a staging copy is queued behind it, or a direct write waits for `last_use`);
a download waits for the newest launch that writes the array (`last_write`) and for nothing
else when the buffer can be read where it lies.

Element types and shapes are checked in elements.py; the face CUDA sees (`__dlpack__`, ...) is
cuda_face.py's. Memory goes back to the pool on `release()` or when the array is collected; the pool reuses it
only once the device timeline passed its last use, and a queued launch holds the array (its
submission keeps its arguments), so neither can pull memory from under a running kernel.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from .. import interop
from ..errors import GpuArgumentTypeError, GpuInvalidArgument, GpuUseAfterDestroy
from ..runtime import transfer
from . import arena
from .cuda_face import CudaFace
from .elements import _ELEMENTS, _KIND_NAMES, _element, _pack_of, _shape

__all__ = ["DeviceArray", "_element", "_shape"]  # (the last two: interop.imports, tests)


def _stream_of(stream: Any, device: Any) -> Any:
    """The Stream a copy goes on (launch/stream.py; None: the device's default stream).
    Looked up per copy, as `device_buffer_for` is: residency loads before launch."""
    from ..launch.stream import resolve_stream

    return resolve_stream(stream, device)


def _release_buffer(buffer: Any) -> None:
    """The finalizer: back to the pool (no wait, no lock: it may run inside the collector)."""
    try:
        buffer.release()
    except GpuUseAfterDestroy:
        pass  # its device was shut down, and the memory with it


class DeviceArray(CudaFace):
    """Device memory with a shape and an element type (row-major).

    >>> x = DeviceArray.from_numpy(numpy.arange(n, dtype=numpy.float32))
    >>> y = DeviceArray(n, "f32")                     # zero-filled
    >>> for _ in range(100): gpu(saxpy, n, 2.0, x, y)  # nothing copied per launch
    >>> y.numpy()                                      # waits for the last launch writing y
    """

    # The record fields (arena.RECORD_FIELDS; `obj` is the array itself) are slots, as an
    # arena's records' are: the C launcher reads and writes them at offsets it finds once. The
    # instance keeps its __dict__ (CudaFace has one) for everything else.
    __slots__ = tuple(f for f in arena.RECORD_FIELDS if f != "obj")

    def __init__(
        self, shape: Any, dtype: Any = "f32", *, device: Any = None, exportable: bool = False
    ) -> None:
        """Zero-filled, on `device` (a `GpuDevice`, an index in `cthreads.gpu.devices()`, a UUID
        or a part of a name; default: the current device, `with device:`, else the default).
        `exportable=True` allocates memory CUDA can map (torch, CuPy, JAX see it without a
        copy: docs/interop.md); on other devices it changes nothing."""
        self._allocate(_shape(shape), dtype, device=device, exportable=exportable)
        self._zero()

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_numpy(
        cls, a: Any, *, stream: Any = None, device: Any = None, exportable: bool = False
    ) -> DeviceArray:
        """A new device array holding a copy of numpy array `a` (its shape and dtype), on
        `device` (as for `DeviceArray(...)`); a staging copy is queued on `stream` (default:
        the thread's `with` stream, else the device's default stream)."""
        import numpy

        if not isinstance(a, numpy.ndarray):
            raise GpuArgumentTypeError(
                f"`a`: from_numpy() takes a numpy array; got {type(a).__name__}",
                param="a",
                expected="numpy.ndarray",
                got=type(a).__name__,
                hint="wrap it: numpy.asarray(a), or use DeviceArray.from_bytes(data, shape, dtype)",
            )
        self = cls.__new__(cls)
        self._allocate(tuple(a.shape), a.dtype, what="`a`", device=device, exportable=exportable)
        try:
            self._upload(memoryview(numpy.ascontiguousarray(a)).cast("B"), stream)
        except BaseException:
            self.release()
            raise
        return self

    @classmethod
    def from_bytes(
        cls, data: Any, shape: Any, dtype: Any, *, stream: Any = None, device: Any = None
    ) -> DeviceArray:
        """A new device array of `shape` and `dtype` holding the bytes of `data` (any
        C-contiguous buffer: bytes, bytearray, memoryview, ...) in row-major order, on
        `device` (as for `DeviceArray(...)`)."""
        self = cls.__new__(cls)
        self._allocate(_shape(shape), dtype, device=device)
        try:
            self._upload(self._host_bytes(data, "data", writable=False, raw=True), stream)
        except BaseException:
            self.release()
            raise
        return self

    # -- copies -----------------------------------------------------------------------------------
    def to(self, device: Any) -> DeviceArray:
        """A copy of this array on `device` (as for `DeviceArray(...)`), through host memory
        (Vulkan devices share no memory), after the last launch writing it. The one way an
        array moves between devices: launches never copy one implicitly. On its own device
        already: a new copy there all the same."""
        self._check_alive("copy it to another device")
        return DeviceArray.from_numpy(self.numpy(), device=device)

    def numpy(self, *, stream: Any = None) -> Any:
        """A new host numpy array with the contents (after the last launch writing it and,
        with `stream=`, after the work queued on that stream so far)."""
        import numpy

        out = numpy.empty(self.shape, self._dtype)
        self._download(memoryview(out).cast("B") if out.nbytes else None, stream)
        return out

    def to_bytes(self) -> bytes:
        """The contents as bytes, row-major (after the last launch writing it)."""
        out = bytearray(self.nbytes)
        self._download(memoryview(out) if self.nbytes else None)
        return bytes(out)

    def copy_from(self, host: Any, *, stream: Any = None) -> None:
        """Overwrite the contents with `host`: a numpy array of this shape and dtype, or a
        C-contiguous buffer of exactly `nbytes` bytes. Queued launches still reading the
        array see the old contents. A staging copy is queued on `stream` (default: the
        thread's `with` stream, else the device's default stream)."""
        self._check_alive("copy_from")
        self._upload(self._host_bytes(host, "host", writable=False), stream)

    def copy_to(self, host: Any, *, stream: Any = None) -> None:
        """Copy the contents into `host`: a writable numpy array of this shape and dtype, or a
        writable C-contiguous buffer of exactly `nbytes` bytes (after the last launch writing
        it and, with `stream=`, after the work queued on that stream so far)."""
        self._check_alive("copy_to")
        view = self._host_bytes(host, "host", writable=True)
        self._download(view if self.nbytes else None, stream)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """numpy interop: `numpy.asarray(d)` is a host copy (never a view of device memory)."""
        if copy is False:
            raise ValueError(
                "a DeviceArray cannot be viewed as a numpy array without a copy (its memory is "
                "on the device); use numpy.asarray(d) or d.numpy()"
            )
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    # -- attributes -------------------------------------------------------------------------------
    @property
    def dtype(self) -> Any:
        """The element type as a numpy dtype."""
        return self._dtype

    @property
    def size(self) -> int:
        return self.count

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def device(self) -> str:
        """The name of the device that holds the array."""
        return self._device.name

    @property
    def device_address(self) -> int:
        """The buffer's device address (for the native layer; `nbytes` is its size)."""
        self._check_alive("device_address")
        return self.buffer.address

    @property
    def released(self) -> bool:
        return self._released

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        state = "released" if self._released else f"on {self._device.name!r}"
        return f"<DeviceArray shape={self.shape} dtype={self._dtype.name} {state}>"

    # -- lifetime ---------------------------------------------------------------------------------
    def release(self) -> None:
        """Give the memory back now (idempotent); later use raises `GpuUseAfterDestroy`.
        Launches already queued on it still complete: the pool reuses the memory only after."""
        if not self._released:
            self._released = True
            self._finalizer()

    def __enter__(self) -> DeviceArray:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- launch integration (dispatch._launch) ----------------------------------------------------
    def launch_record(self, param: Any) -> DeviceArray:
        """This array as the resident record of list parameter `param`, checked: alive, not
        empty, and of exactly the parameter's element type."""
        self._check_alive(f"be passed as `{param.name}`")
        elem = param.type.elem
        if (elem.kind, elem.bits) != self.key:
            from ..launch.binding import type_name

            want = _ELEMENTS[_KIND_NAMES[elem.kind, elem.bits]][0]
            raise GpuArgumentTypeError(
                f"`{param.name}` expects {type_name(param.type)}; got a DeviceArray of "
                f"{self._dtype.name}",
                param=param.name,
                expected=want,
                got=f"DeviceArray of {self._dtype.name}",
                hint=f"make a {want} array: DeviceArray.from_numpy(arr.numpy().astype(numpy.{want})) "
                "(device arrays are never converted at launch)",
            )
        if self.count == 0:
            raise GpuInvalidArgument.empty(param.name, "list", "DeviceArray")
        return self

    # -- internals --------------------------------------------------------------------------------
    def _allocate(
        self,
        shape: tuple[int, ...],
        dtype: Any,
        what: str = "",
        device: Any = None,
        exportable: bool = False,
    ) -> None:
        from ..launch.binding import device_buffer_for
        from ..runtime.handle import runtime_device

        self._released = True  # until the buffer exists (repr and release() stay safe)
        self.shape = shape
        name, self.key, self._dtype = _element(dtype)
        self.pack, itemsize = _pack_of(self.key)
        self.count = math.prod(shape)
        self.nbytes = self.count * itemsize
        self.hazard = 0
        self.view = None
        self.last_use = self.last_write = 0
        device = runtime_device(device)
        self._device = device
        self.generation = device.generation
        label = what or f"DeviceArray({shape}, {name!r})"
        # a zero-sized array still owns a (tiny) buffer, so that every array has an address
        self._cuda = None  # its CUDA mapping, made on first use (interop/exports.py)
        # exportable only when asked (interop.cuda_capable; no CUDA call): on NVIDIA export
        # memory is device-local only, so every copy of an exportable array goes through the
        # queue, where plain arrays live in memory the host maps (the BAR) and copy directly
        usage = "export" if exportable and interop.cuda_capable(device) else "device"
        self.buffer = device_buffer_for(
            device, label.strip("`"), self.count, max(self.nbytes, 4), usage=usage
        )
        self._finalizer = weakref.finalize(self, _release_buffer, self.buffer)
        self._finalizer.atexit = False  # at exit the device goes anyway
        self._released = False

    def _check_alive(self, what: str) -> None:
        if self._released:
            raise GpuUseAfterDestroy(
                f"cannot {what}: this DeviceArray {self.shape} of {self._dtype.name} was released",
                hint="allocate a new DeviceArray",
            )
        if not self._device.alive:
            raise GpuUseAfterDestroy(
                f"cannot {what}: this DeviceArray {self.shape} of {self._dtype.name} lived on a "
                "device that has since been shut down (shutdown() or prepare(force=True))",
                hint="allocate it again (DeviceArray.from_numpy(...)) after the device restarts",
            )

    def _direct(self) -> bool:
        """Whether the host reaches the buffer where it lies at memory speed (unified memory:
        CPU devices, iGPUs); over PCIe a copy through host-cached staging is much faster."""
        return self.buffer.host_visible and self._device.info.type in ("cpu", "integrated")

    def _zero(self) -> None:
        if self.nbytes == 0:
            return
        if self._direct():
            # the pool hands out memory only once the device is done with it: no wait
            self.buffer.write(bytes(self.nbytes))
            return
        self.last_use = self.last_write = self._device.submit(
            [("fill", self.buffer, 0, self.nbytes, 0)], keep=(self.buffer,)
        )

    def _host_bytes(self, host: Any, name: str, writable: bool, raw: bool = False) -> memoryview:
        """The flat bytes of a host object matching this array (numpy: dtype and shape, unless
        `raw`: from_bytes() takes any buffer's bytes)."""
        import numpy

        if isinstance(host, numpy.ndarray) and not raw:
            if host.dtype != self._dtype or host.shape != self.shape:
                raise GpuInvalidArgument(
                    f"`{name}` is a numpy array of {host.dtype} with shape {host.shape}; this "
                    f"DeviceArray holds {self._dtype.name} with shape {self.shape}",
                    param=name,
                    expected=f"{self._dtype.name}, shape {self.shape}",
                    got=f"{host.dtype}, shape {host.shape}",
                    hint=f"convert or reshape it: arr.astype(numpy.{self._dtype.name}).reshape({self.shape})",
                )
        try:
            view = memoryview(host)
        except TypeError:
            raise GpuArgumentTypeError.expecting(
                name,
                host,
                "a numpy array or a buffer (bytes, bytearray, memoryview)",
                expected="numpy array or buffer",
            ) from None
        if not view.c_contiguous:
            raise GpuInvalidArgument.non_contiguous(
                name, "buffer", type(host).__name__, hint="pass numpy.ascontiguousarray(arr)"
            )
        if writable and view.readonly:
            raise GpuInvalidArgument(
                f"`{name}` is read-only; copy_to() writes into it",
                param=name,
                expected="a writable buffer",
                got="read-only buffer",
                hint="pass a writable array (numpy.empty(d.shape, d.dtype)) or a bytearray",
            )
        if view.nbytes != self.nbytes:
            raise GpuInvalidArgument(
                f"`{name}` holds {view.nbytes} bytes; this DeviceArray {self.shape} of "
                f"{self._dtype.name} holds {self.nbytes}",
                param=name,
                expected=f"{self.nbytes} bytes",
                got=f"{view.nbytes} bytes",
            )
        return view.cast("B") if view.nbytes else view

    def _upload(self, view: memoryview, stream: Any = None) -> None:
        """Stream-ordered upload of `view` (exactly nbytes); a queued copy goes on `stream`."""
        device = self._device
        s = _stream_of(stream, device)
        if self.nbytes == 0:
            return
        if self.buffer.host_visible and (self._direct() or device.completed() >= self.last_use):
            # written where it lies: only once no queued launch still reads the old contents
            device.wait(self.last_use)
            transfer.write(self.buffer, view)
            return
        staging = device.buffer(self.nbytes, usage="upload")
        try:
            transfer.write(staging, view)
            # queued behind every earlier launch using the array: none of them sees the new
            # contents (on a stream's lane: a wait on the device for its last use)
            cmd = [("copy", staging, self.buffer, self.nbytes, 0, 0)]
            if s is None:
                value = device.submit(cmd, keep=(staging, self.buffer))
            else:
                after = self.last_use if self.last_use > s._after else s._after
                value = device.submit(cmd, keep=(staging, self.buffer), lane=s._lane, after=after)
                s._note(value)
            self.last_use = self.last_write = value
        finally:
            staging.release()  # reused only once that copy completed

    def _download(self, view: memoryview | None, stream: Any = None) -> None:
        """Copy the contents into `view` once the last launch writing the array (and, on a
        stream, the work queued on it so far and the jobs its wait() named) finished."""
        self._check_alive("read it")
        device = self._device
        s = _stream_of(stream, device)
        if view is None:
            return
        device.wait(self.last_write if s is None else max(self.last_write, s._last, s._after))
        source = self.buffer
        if self._direct() or (source.host_visible and device.last_value > device.completed()):
            # read where it lies: a staging copy would queue behind later, unrelated launches
            transfer.read_into(source, view)
            return
        staging = device.buffer(self.nbytes, usage="download")
        try:
            cmd = [("copy", source, staging, self.nbytes, 0, 0)]
            if s is None:
                value = device.submit(cmd, keep=(source, staging))
            else:  # on the stream's lane: its copy queue where the device has one (lane.c)
                value = device.submit(cmd, keep=(source, staging), lane=s._lane)
                s._note(value)
            device.wait(value)
            transfer.read_into(staging, view)
        finally:
            staging.release()


# Launches take a DeviceArray as its own resident record (arena.resident_of, the C launcher).
arena.SELF_RECORD_TYPES.append(DeviceArray)
