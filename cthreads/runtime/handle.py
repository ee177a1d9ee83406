"""`GpuDevice`: a device of this process as a light handle, and the current device of a thread.

A handle is a description (index, name, type, UUID, memory) plus a way to open the device: it
opens on first use (`open()`, a launch, an allocation), and there is one handle per (Vulkan
index, logical number), so handles compare by identity. `with handle:` makes it the current
device of the running thread (a `contextvars` variable: each thread and each asyncio task has
its own, nested blocks restore the outer one); launches, arrays and arenas made without
`device=` go to the current device, else to the default one. `resolve()` turns what a user
passes as `device=` into a handle.
"""

from __future__ import annotations

import contextvars
import os
import threading
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..forwarding import forwarded
from . import lifecycle
from .info import DeviceInfo
from .visibility import uuid_matches

# the current device of this thread / task (None: the default device)
current: contextvars.ContextVar[GpuDevice | None] = contextvars.ContextVar(
    "cthreads_device", default=None
)
# the tokens of the `with` blocks entered in this context, innermost last
_tokens: contextvars.ContextVar[tuple] = contextvars.ContextVar(
    "cthreads_device_tokens", default=()
)

_handles: dict[tuple[int, int], GpuDevice] = {}
_handles_lock = threading.Lock()


class GpuDevice:
    """One device this process can use (`cthreads.gpu.devices()`, `cthreads.gpu.device(...)`).

    `index` is its place in `devices()` (None for a device the visibility rules hide but that
    was asked for by name or UUID), `name`, `type` ('discrete', 'integrated', 'virtual',
    'cpu'), `uuid` (on NVIDIA the CUDA UUID), `memory` (bytes of device memory), `logical`
    (0, or the number of an extra logical device on the same physical one), `info` the full
    `DeviceInfo`. Nothing is opened until it is used; `with device:` makes it the current
    device of this thread."""

    __slots__ = ("__weakref__", "_dev", "index", "info", "logical", "session")

    def __init__(self, info: DeviceInfo, index: int | None, logical: int) -> None:
        self.info = info
        self.index = index
        self.logical = logical
        self._dev: Any = None
        self.session: Any = None  # its launch state (launch/session.py), made on first launch

    # -- description ---------------------------------------------------------------------
    name = forwarded("info")
    type = forwarded("info")
    uuid = forwarded("info")
    memory = forwarded("info")

    @property
    def is_default(self) -> bool:
        """Whether this is the process's default device (where launches go outside `with`)."""
        return lifecycle.is_default(self.info, self.logical)

    @property
    def is_open(self) -> bool:
        dev = self._dev
        return dev is not None and dev.alive

    def __repr__(self) -> str:
        where = f" #{self.index}" if self.index is not None else ""
        extra = f", logical {self.logical}" if self.logical else ""
        gib = self.memory / 2**30
        return (
            f"<GpuDevice{where} {self.name!r} ({self.type}, {gib:.1f} GiB, "
            f"uuid {self.uuid or '?'}{extra})>"
        )

    # -- use -----------------------------------------------------------------------------
    def open(self) -> Any:
        """The open runtime device (`cthreads.runtime.Device`), opened now if needed."""
        dev = self._dev
        if dev is not None and dev.alive:
            return dev
        dev = self._dev = lifecycle.open_device(self.info, self.logical)
        return dev

    def __enter__(self) -> GpuDevice:  # noqa: PYI034 - typing.Self needs Python 3.11
        token = current.set(self)
        _tokens.set((*_tokens.get(), token))
        return self

    def __exit__(self, *exc: object) -> None:
        tokens = _tokens.get()
        _tokens.set(tokens[:-1])
        current.reset(tokens[-1])


def handle_for(info: DeviceInfo, index: int | None, logical: int = 0) -> GpuDevice:
    """The one handle of (`info`, `logical`), made on first request."""
    key = (info.index, logical)
    with _handles_lock:
        h = _handles.get(key)
        if h is None or h.info != info:  # (a device description that changed: a new handle)
            h = _handles[key] = GpuDevice(info, index, logical)
        elif h.index is None and index is not None:
            h.index = index
        return h


def listed() -> list[GpuDevice]:
    """Every visible device as a handle, in order (`cthreads.gpu.devices()`)."""
    return [handle_for(info, k) for k, info in enumerate(lifecycle.visible_devices())]


def default_handle() -> GpuDevice:
    """The handle of the default device (CTHREADS_DEVICE, else the first visible)."""
    info = lifecycle.default_device_info()
    seen = [i.index for i in lifecycle.visible_devices()]
    return handle_for(info, seen.index(info.index) if info.index in seen else None)


def find(spec: Any, logical: int = 0, param: str = "device") -> GpuDevice:
    """The handle `spec` names: a `GpuDevice`, an int (its index in `devices()`), or a string:
    digits (the same), a UUID or unique prefix (`GPU-...` as nvidia-smi prints it) or a
    case-insensitive part of a name (the first visible match, else any usable device: asking
    for a software device by name is how to get one on a machine with a GPU)."""
    if isinstance(spec, GpuDevice):
        if logical and logical != spec.logical:
            return handle_for(spec.info, spec.index, logical)
        return spec
    if type(logical) is not int or logical < 0:
        raise GpuInvalidArgument(
            f"`logical` must be an int >= 0; got {logical!r}",
            param="logical",
            expected="0, 1, 2, ...",
            got=repr(logical),
        )
    seen = lifecycle.visible_devices()
    listing = "; ".join(f"{k}: {i.name} ({i.type}, {i.uuid})" for k, i in enumerate(seen))
    if (
        isinstance(spec, int)
        and not isinstance(spec, bool)
        or isinstance(spec, str)
        and spec.strip().isdigit()
    ):
        k = int(spec)
        if not 0 <= k < len(seen):
            raise GpuInvalidArgument(
                f"`{param}`: there is no device {k}; this process sees {len(seen)} "
                f"(devices: {listing or 'none'})",
                param=param,
                expected=f"an index from 0 to {len(seen) - 1}" if seen else "a visible device",
                got=repr(spec),
                hint="cthreads.gpu.devices() lists them (CTHREADS_VISIBLE_DEVICES and "
                "CUDA_VISIBLE_DEVICES choose which are visible)",
            )
        return handle_for(seen[k], k, logical)
    if not isinstance(spec, str):
        raise GpuArgumentTypeError.expecting(
            param,
            spec,
            "a cthreads.gpu device, an index, a UUID or a part of a name",
            expected="GpuDevice, int or str",
            hint="e.g. device=cthreads.gpu.devices()[1] or device=1",
        )
    usable = [i for i in lifecycle.list_devices() if i.usable]
    by_uuid = uuid_matches(usable, spec)
    if by_uuid is not None and len(by_uuid) > 1:
        raise GpuInvalidArgument(
            f"`{param}`: UUID prefix {spec!r} matches {len(by_uuid)} devices",
            param=param,
            got=repr(spec),
            hint="give more of the UUID",
        )
    hits = by_uuid or [i for i in usable if spec.strip().lower() in i.name.lower()]
    if not hits:
        raise GpuInvalidArgument(
            f"`{param}`: {spec!r} names no usable device (devices: {listing or 'none'})",
            param=param,
            got=repr(spec),
            hint="pass an index, a UUID (GPU-...) or a part of a name from cthreads.gpu.devices()",
        )
    order = [i.index for i in seen]
    hits.sort(key=lambda i: (i.index not in order, order.index(i.index) if i.index in order else 0))
    info = hits[0]
    return handle_for(info, order.index(info.index) if info.index in order else None, logical)


def resolve(spec: Any, param: str = "device") -> GpuDevice | None:
    """What a `device=` argument names (None stays None: the current device, else the default)."""
    if spec is None:
        return current.get()
    if type(spec) is GpuDevice:
        return spec
    return find(spec, param=param)


def runtime_device(spec: Any = None, param: str = "device") -> Any:
    """The open runtime device for a `device=` argument: named, else the current device of
    this thread, else the default device."""
    h = resolve(spec, param)
    return lifecycle.get_device() if h is None else h.open()


def forget_sessions() -> None:
    """After shutdown: each handle's launch state is made anew on its next launch (which
    device is the default may have changed). No lock: it runs under the runtime's lock, and
    in the child of a fork (where a thread that no longer exists may hold `_handles_lock`)."""
    for h in list(_handles.values()):
        h.session = None
        h._dev = None


def _after_fork_in_child() -> None:
    global _handles_lock
    _handles_lock = threading.Lock()


lifecycle.on_shutdown(forget_sessions)
os.register_at_fork(after_in_child=_after_fork_in_child)
