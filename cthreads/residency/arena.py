"""`GpuArena` (SPEC §7): named lists and arrays kept on the device across launches.

Launches find resident objects by identity plus length (`lookup`), so they skip allocation,
upload and download. A Python list's element format is fixed when it is bound (launches never
repack it): `bind()` packs int32 / float32 / bool by its values, `bind_as(t, ...)` packs
element type `t` (`u8`, `f16`, `i64`, ...) for kernels taking `list[t]`. Ordering rides on the
device timeline: `sync()` waits for the last launch that wrote a buffer; a re-`bind()` waits
for launches still reading the old contents.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from .. import runtime
from ..runtime import formats, transfer
from ..errors import GpuArgumentTypeError, GpuInvalidArgument, GpuUseAfterDestroy

# Launch sits above residency (it finds resident objects through `resident_of`), so the few
# launch helpers an arena borrows (write-back, buffer allocation) are imported where used.

# id(obj) -> Resident for every object bound in any arena (one slot per object). Launches
# resolve arguments through `resident_of` (Python) and native/launch.c `resident_record` (C,
# which is handed this dict and the record types when a launcher is built).
RECORDS: dict[int, Resident] = {}
# Item 0 is replaced by a new int at every change of RECORDS (bind and _unregister, the only
# places that change it): the C launcher reuses the record it last found for an argument, with no
# dict look-up, while item 0 is still the int object it saw then (native/launch.c).
RECORDS_CHANGES: list[int] = [0]
_lock = threading.RLock()


# Resident.hazard bits: what makes a launch leave the C launcher for dispatch._launch, which
# words the error (native/launch.c reads the field)
READ_ONLY = 1  # a read-only buffer: refused for a list the kernel writes
OVERLAPS = 2  # shares bytes with another resident buffer: refused next to a written list


# The record protocol: what a launch reads from the device-side record of a list argument.
# `obj` the host object it serves, `generation` the device generation it lives on, `pack` its
# element format (runtime/formats.py pack code), `count` elements, `buffer` the native Buffer,
# `hazard` (READ_ONLY | OVERLAPS), and `last_use` / `last_write`, the timeline values a launch
# sets (RECORD_FIELDS). They are slots of each record type: the C launcher finds their offsets
# once and reads and writes them there, with no attribute look-up per launch (issue 14; it
# declines a type without them); the general path also reads
# `name`, `nbytes`, `view` (None, or a byte view of the host object) and calls `check_alive()`,
# and a job's write-back calls `download()`. A type listed in SELF_RECORD_TYPES is its own
# record: its instances carry these fields themselves (`obj` is the instance) and are not in
# RECORDS, so the registry does not keep them alive.
RECORD_FIELDS = ("obj", "generation", "pack", "count", "buffer", "last_use", "last_write", "hazard")
SELF_RECORD_TYPES: list[type] = []  # filled by such a type's module when it loads


def resident_of(value: Any) -> Any:
    """The device-side record serving list argument `value` (the record protocol above), or
    None: `value` itself when its type is a self-record type, else its arena binding."""
    if type(value) in SELF_RECORD_TYPES:
        return value
    res = RECORDS.get(id(value))
    return res if res is not None and res.obj is value else None


class Resident:
    """One bound object's device copy (RECORD_FIELDS among its slots: the C launcher's record
    protocol). A plain class: a dataclass's code generation costs ~1 ms at import, issue 19."""

    __slots__ = (
        "arena_ref", "name", "obj", "count", "nbytes", "pack", "view", "buffer", "device",
        "generation", "last_write", "last_use", "explicit", "hazard", "synced", "span",
    )  # fmt: skip

    def __init__(
        self,
        arena_ref: Any,
        name: str,
        obj: Any,
        count: int,
        nbytes: int,
        pack: str,
        view: memoryview | None,
        buffer: Any,
        device: Any,
        generation: int,
    ) -> None:
        self.arena_ref = arena_ref  # weakref.ref of the arena: the registry must not keep it
        self.name = name
        self.obj = obj
        self.count = count
        self.nbytes = nbytes
        self.pack = pack  # runtime/formats.py pack code: 'f' float32, 'i' int32, 'B' bool ...
        self.view = view  # byte view for buffer objects; None for Python lists
        self.buffer = buffer
        self.device = device
        self.generation = generation
        self.last_write = 0  # timeline value of the newest launch that writes it
        self.last_use = 0  # timeline value of the newest launch that touches it
        self.explicit = False  # a Python list packed as the type given to bind_as()
        self.hazard = 0  # READ_ONLY | OVERLAPS
        self.synced = 0  # the last_write whose contents the host object holds (bind, download)
        self.span: tuple | None = None  # [start, end) host addresses of a buffer object

    @property
    def arena(self) -> GpuArena | None:
        return self.arena_ref()

    @property
    def kind(self) -> str:
        return formats.BY_PACK[self.pack].name

    def check_alive(self) -> None:
        if not self.device.alive:
            raise GpuUseAfterDestroy(
                f"`{self.name}` was bound on a device that has since been shut down "
                "(shutdown() or prepare(force=True))",
                hint="bind it again in a new GpuArena",
            )

    def download(self) -> None:
        """Copy the device contents into the bound Python object (after its writers finish)."""
        from ..launch.binding import check_length

        self.check_alive()
        if self.view is None:
            check_length(self.name, self.obj, self.count, "arena.bind()", "its download")
        elif self.view.readonly:
            return  # no launch may write it (dispatch refuses), and the host could not take it
        if self.hazard & OVERLAPS and self.last_write == self.synced:
            # unwritten since the host had it: its old bytes would land on the memory it shares
            # with another bound buffer, over what a launch wrote there
            return
        self.device.wait(self.last_write)
        source = self.buffer
        staging = None
        # Mapped device memory is read directly only on unified memory (CPU devices, iGPUs):
        # over PCIe (resizable BAR) a copy into host-cached memory is orders of magnitude faster.
        if not (source.host_visible and self.device.info.type in ("cpu", "integrated")):
            staging = self.device.buffer(self.nbytes, usage="download")
            value = self.device.submit(
                [("copy", source, staging, self.nbytes, 0, 0)], keep=(source, staging)
            )
            self.device.wait(value)
            source = staging
        try:
            if self.view is None:
                source.unpack_into_list(self.obj, self.pack)
            else:
                transfer.read_into(source, self.view)
            self.synced = self.last_write
        finally:
            if staging is not None:
                staging.release()

    def upload(self) -> None:
        """Copy the bound object's current host contents to the device buffer."""
        self.check_alive()
        if self.buffer.host_visible:
            self.device.wait(self.last_use)  # no torn reads by launches still in flight
            _fill(self.buffer, self)
            self.synced = self.last_write
            return
        staging = self.device.buffer(self.nbytes, usage="upload")
        try:
            _fill(staging, self)
            # Queue-ordered after every earlier launch, so no wait is needed.
            self.last_use = self.last_write = self.synced = self.device.submit(
                [("copy", staging, self.buffer, self.nbytes, 0, 0)], keep=(staging, self.buffer)
            )
        finally:
            staging.release()


def _fill(buf: Any, res: Resident) -> None:
    if res.view is None:
        try:
            buf.pack_list(res.obj, res.pack)
        except (GpuInvalidArgument, TypeError, ValueError, OverflowError) as exc:
            raise type(exc)(f"`{res.name}`: {exc}") from None
    else:
        transfer.write(buf, res.view)


def _set_shape(res: Resident) -> None:
    """Fill `res.hazard` and `res.span` from its view, and flag every pair of resident
    buffers that share bytes (the fast paths then step aside; dispatch decides)."""
    from ..launch.aliasing import buffer_span, overlap

    view = res.view
    res.hazard &= ~READ_ONLY
    if view is None:
        return
    if view.readonly:
        res.hazard |= READ_ONLY
    res.span = buffer_span(view)
    for other in list(RECORDS.values()):
        if other is not res and other.span is not None and overlap(res.span, other.span):
            other.hazard |= OVERLAPS
            res.hazard |= OVERLAPS


def _unregister(res: Resident) -> None:
    """Remove `res` from the registry (its buffer is released by the caller, or with the
    record); buffers it overlapped are looked at again."""
    if RECORDS.get(id(res.obj)) is res:
        del RECORDS[id(res.obj)]
        RECORDS_CHANGES[0] += 1
    if res.hazard & OVERLAPS:
        from ..launch.aliasing import overlap

        others = [r for r in list(RECORDS.values()) if r.hazard & OVERLAPS]
        for r in others:
            if not any(o is not r and overlap(r.span, o.span) for o in others):
                r.hazard &= ~OVERLAPS


def _forget_arena(slots: dict[str, Resident]) -> None:
    """The finalizer of an arena dropped without release(): unregister its objects (they can
    be bound again) and let go of its records. A record's buffer returns to the pool when the
    record goes, so a job still pending on it (which holds it) downloads first; the pool reuses
    memory only once the device passed its last use. No lock and no wait: it may run inside
    the garbage collector, on any thread."""
    for res in list(slots.values()):
        _unregister(res)
    slots.clear()


def _written(res: Resident) -> int:
    return res.last_write


def lookup(obj: Any) -> Resident | None:
    """The resident record of `obj` if some arena has it bound (see `resident_of`)."""
    return resident_of(obj)


def _describe_shape(name: str, obj: Any) -> tuple[str, int, int, memoryview | None]:
    """(pack code, element count, bytes, byte view or None) of a bindable object."""
    if isinstance(obj, list):
        first = obj[0]
        if isinstance(first, bool):
            pack = "B"
        elif isinstance(first, int):
            # An int-led list may still hold floats: decided when packing (see bind()).
            pack = "i"
        else:
            pack = "f"
        size = 1 if pack == "B" else 4
        return pack, len(obj), len(obj) * size, None
    view = memoryview(obj)
    fmt = view.format.lstrip("@=<")
    if (fmt, view.itemsize) not in formats.BUFFER_PACK:
        dtype = getattr(obj, "dtype", fmt)
        raise GpuArgumentTypeError(
            f"`{name}`: cannot bind an array of {dtype}: arenas hold float16/32/64, "
            "int8/16/32/64, uint8/16/32/64 and bool data",
            param=name,
            expected="float16/32/64, int8/16/32/64, uint8/16/32/64 or bool",
            got=str(dtype),
            hint="convert it explicitly, e.g. arr.astype(numpy.float32)",
        )
    if not view.c_contiguous:
        raise GpuInvalidArgument(
            f"`{name}`: cannot bind a non-contiguous array",
            param=name,
            expected="C-contiguous",
            got="non-contiguous",
            hint="pass numpy.ascontiguousarray(arr)",
        )
    flat = view.cast("B")
    return formats.BUFFER_PACK[fmt, view.itemsize], view.nbytes // view.itemsize, view.nbytes, flat


def _typed_shape(
    name: str, obj: Any, pack: str, count: int, nbytes: int, fmt: formats.ElementFormat
) -> tuple[str, int, int, bool]:
    """(pack code, count, bytes, explicit) of `obj` bound with `bind_as` (`fmt` from
    formats.of_user_type): a list takes the type; an array must already have it."""
    dtype_name = fmt.dtype
    if isinstance(obj, list):
        return fmt.pack, count, count * fmt.itemsize, True
    if formats.serves(pack, fmt):
        return pack, count, nbytes, False
    got = getattr(obj, "dtype", formats.BY_PACK[pack].name)
    raise GpuArgumentTypeError(
        f"`{name}`: bind_as() was given {dtype_name} elements but the array holds {got}",
        param=name,
        expected=dtype_name,
        got=str(got),
        hint=f"convert it explicitly, e.g. arr.astype(numpy.{dtype_name.split()[0]})",
    )


class GpuArena:
    """Keeps named lists/arrays resident on the device.

    >>> arena = GpuArena().bind(x=xs, y=ys)      # upload once
    >>> for _ in range(100): gpu(step, n, x_s, ys).join(download=False)
    >>> arena.sync("y")                          # download when the host needs to look
    """

    def __init__(self, *, device: Any = None) -> None:
        """`device=`: where its buffers live (a `GpuDevice`, an index in
        `cthreads.gpu.devices()`, a UUID or a part of a name); default: the current device
        (`with device:`) when the arena is made, else the default one. Kernels reading it must
        run there."""
        from ..runtime.handle import resolve

        self._handle = resolve(device)
        self._slots: dict[str, Resident] = {}
        self._released = False
        # dropped without release(): its buffers go back and its objects can be bound again
        self._finalizer = weakref.finalize(self, _forget_arena, self._slots)
        self._finalizer.atexit = False  # at exit the device goes anyway

    # -- SPEC §7 ------------------------------------------------------------------------------
    def bind(self, **named: Any) -> GpuArena:
        """Upload and register each `name=list_or_array`; rebinding a name re-uploads (a new
        length or object recreates its buffer). Returns the arena."""
        self._check_open("bind")
        return self._bind_all(named, None)

    def bind_as(self, elem: Any, **named: Any) -> GpuArena:
        """`bind()` with the element type given: Python lists are packed as `elem` (`u8`,
        `i16`, `f16`, `i64`, `u64`, `f64`, ... or `int`/`float`/`bool`), so that kernels taking
        `list[elem]` find them resident; numpy arrays must already have that dtype. Values that
        do not fit `elem` raise `GpuInvalidArgument` naming the list. Returns the arena."""
        self._check_open("bind_as")
        fmt = formats.of_user_type(elem)
        if fmt is None:
            raise GpuArgumentTypeError(
                f"bind_as() takes an element type (int, float, bool or a cthreads.gpu type such "
                f"as u8, f16, i64); got {elem!r}",
                expected="an element type",
                got=repr(elem),
            )
        return self._bind_all(named, fmt)

    def sync(self, *names: str) -> None:
        """Download the named resident objects (all when no name) into the bound objects."""
        self._check_open("sync")
        for name in names:
            if name not in self._slots:
                raise GpuInvalidArgument(
                    f"arena has no binding named `{name}`; bound: {self.names() or 'none'}",
                    param=name,
                )
        # one list resized since bind() loses only its own results: the others are synced.
        # Oldest writes first: where bound buffers share memory, the newest results land last.
        from ..launch.binding import write_back

        records = sorted((self._slots[n] for n in names or tuple(self._slots)), key=_written)
        write_back([(None, res) for res in records])

    def release(self) -> None:
        """Free every device buffer; later `bind`/`sync` raise `GpuInvalidArgument`."""
        with _lock:
            for res in list(self._slots.values()):
                self._drop(res)
            self._released = True
            self._finalizer.detach()

    def names(self) -> list[str]:
        """Names currently bound."""
        return list(self._slots)

    @property
    def nbytes(self) -> int:
        """Device bytes held by this arena."""
        return sum(r.nbytes for r in self._slots.values())

    def __contains__(self, name: object) -> bool:
        return name in self._slots

    def __enter__(self) -> GpuArena:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else f"{len(self._slots)} bound, {self.nbytes} bytes"
        return f"<GpuArena {state}>"

    # -- internals ----------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self._released:
            raise GpuInvalidArgument(
                f"cannot {what}: this GpuArena was released", hint="create a new GpuArena()"
            )
        for res in self._slots.values():
            res.check_alive()

    def _bind_all(self, named: dict, fmt: tuple | None) -> GpuArena:
        with _lock:
            created: list[Resident] = []
            try:
                for name, obj in named.items():
                    self._bind_one(name, obj, created, fmt)
            except BaseException:
                for res in created:  # all-or-nothing: earlier bindings stay as they were
                    self._drop(res)
                raise
        return self

    def _bind_one(
        self, name: str, obj: Any, created: list[Resident], fmt: tuple | None = None
    ) -> None:
        if not isinstance(obj, list):
            try:
                memoryview(obj)
            except TypeError:
                raise GpuArgumentTypeError(
                    f"`{name}`: arenas bind lists and buffers (numpy arrays); got {type(obj).__name__}",
                    param=name,
                ) from None
        if (
            isinstance(obj, list)
            and not obj
            or not isinstance(obj, list)
            and memoryview(obj).nbytes == 0
        ):
            raise GpuInvalidArgument(
                f"`{name}`: cannot bind an empty list", param=name, hint="bind at least one element"
            )
        other = RECORDS.get(id(obj))
        if other is not None and not other.device.alive:
            # its device was shut down: the old binding is dead (using it raises), so it must
            # not keep the object from being bound again
            _unregister(other)
            other = None
        if other is not None and (other.arena_ref() is not self or other.name != name):
            where = "this arena" if other.arena_ref() is self else "another arena"
            raise GpuInvalidArgument(
                f"`{name}`: this object is already bound as `{other.name}` in {where}",
                param=name,
                hint="bind a copy, or release the other binding first",
            )
        pack, count, nbytes, view = _describe_shape(name, obj)
        old = self._slots.get(name)
        explicit = False
        if fmt is not None:
            pack, count, nbytes, explicit = _typed_shape(name, obj, pack, count, nbytes, fmt)
        elif old is not None and old.explicit and old.obj is obj:
            pack, explicit = old.pack, True  # a plain re-bind keeps the bind_as() type
            nbytes = count * formats.PACK_SIZE[pack]
        if old is not None and old.obj is obj and old.count == count and old.pack == pack:
            old.view = view
            old.explicit = explicit
            _set_shape(old)  # writable then, read-only now (or back)
            old.upload()  # host edits become visible
            return
        from ..launch.binding import device_buffer_for

        device = runtime.get_device() if self._handle is None else self._handle.open()
        buffer = device_buffer_for(device, name, count, nbytes)
        res = Resident(
            weakref.ref(self), name, obj, count, nbytes, pack, view, buffer, device,
            device.generation,
        )  # fmt: skip
        res.explicit = explicit
        try:
            self._upload_new(res)
        except BaseException:
            buffer.release()
            raise
        if old is not None:
            self._drop(old)
        self._slots[name] = res
        RECORDS[id(obj)] = res
        RECORDS_CHANGES[0] += 1
        _set_shape(res)
        created.append(res)

    @staticmethod
    def _upload_new(res: Resident) -> None:
        try:
            res.upload()
        except GpuArgumentTypeError:
            if res.pack != "i" or res.view is not None or res.explicit:
                raise
            res.pack = "f"  # an int-led list that holds floats is a float list
            res.upload()

    def _drop(self, res: Resident) -> None:
        if self._slots.get(res.name) is res:
            del self._slots[res.name]
        _unregister(res)
        try:
            res.buffer.release()
        except GpuUseAfterDestroy:
            pass  # its device is gone, and the buffer with it
