"""Several devices in one process (issue 20): `devices()`, `device(...)` and `split(n, devices)`.

A face over cthreads/runtime/handle.py (the `GpuDevice` handles and the current device of a
thread) and runtime/visibility.py (which devices a process sees: `CTHREADS_VISIBLE_DEVICES`,
`CUDA_VISIBLE_DEVICES`). Listing devices opens none; a device opens on its first use.

>>> parts = split(n, devices())                  # one contiguous range per device
>>> jobs = [gpu(k, p.stop - p.start, x[p.slice], y[p.slice], device=p.device) for p in parts]
>>> for job in jobs: job.join()
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..runtime.handle import GpuDevice, current, default_handle, find, listed


def devices() -> list[GpuDevice]:
    """Every device this process sees, in order (index 0 first), none opened: each a
    `GpuDevice` with `index`, `name`, `type`, `uuid`, `memory`. `CTHREADS_VISIBLE_DEVICES`,
    else `CUDA_VISIBLE_DEVICES` (NVIDIA devices, by UUID) choose which and in which order;
    software devices (lavapipe) are listed only when no GPU is (docs/scale.md)."""
    return listed()


def device(spec: Any = None, *, logical: int = 0) -> GpuDevice:
    """One device, as a light handle (opened on first use): `spec` is an index in `devices()`,
    a UUID or a unique prefix of one (`GPU-...`, as `nvidia-smi -L` prints it), a part of a name
    (case-insensitive; the first visible match, else any usable device: how to ask for
    lavapipe on a machine with a GPU), or a `GpuDevice`; None is the current device (`with
    device:`), else the default one. `logical=k` (k >= 1) is an extra logical device on the
    same physical device: its own VkDevice, queue and submission thread (for tests, and to
    try several devices where there is one GPU). `with device(...):` makes it the current
    device of this thread (or asyncio task); nested blocks restore the outer one."""
    if spec is None and not logical:
        return current.get() or default_handle()
    if spec is None:
        spec = current.get() or default_handle()
    return find(spec, logical=logical, param="spec")


def current_device() -> GpuDevice:
    """The device launches go to here without `device=`: the innermost `with device:` of this
    thread, else the default device."""
    return current.get() or default_handle()


class Part(NamedTuple):
    """One device's share of `split()`: indexes `start` to `stop` (exclusive) on `device`."""

    device: GpuDevice
    start: int
    stop: int

    @property
    def slice(self) -> slice:
        """`slice(start, stop)`, to cut the matching piece of a host array."""
        return slice(self.start, self.stop)

    def __len__(self) -> int:  # type: ignore[override]
        return self.stop - self.start


def split(n: int, devices: Iterable[Any] | int | None = None) -> list[Part]:
    """Indexes 0..n-1 cut into one contiguous range per device, in order: a list of
    `Part(device, start, stop)`, the first `n % k` ranges one longer (numpy.array_split's
    sizes). `devices`: handles or anything `device()` takes (default: every device of
    `devices()`; an int k: the first k of them). Ranges may be empty when n < k."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise GpuInvalidArgument(
            f"`n` must be an int >= 0 (the number of indexes to split); got {n!r}",
            param="n",
            expected="an int >= 0",
            got=repr(n),
        )
    if devices is None:
        chosen = listed()
    elif isinstance(devices, int) and not isinstance(devices, bool):
        every = listed()
        if not 1 <= devices <= len(every):
            raise GpuInvalidArgument(
                f"`devices`: cannot split over {devices} device(s); this process sees "
                f"{len(every)}",
                param="devices",
                expected=f"1 to {len(every)}",
                got=repr(devices),
            )
        chosen = every[:devices]
    else:
        try:
            chosen = [find(d, param="devices") for d in devices]
        except TypeError:
            raise GpuArgumentTypeError.expecting(
                "devices",
                devices,
                "a list of devices or a count",
                expected="a list of GpuDevice (or indexes), or an int",
            ) from None
    if not chosen:
        raise GpuInvalidArgument(
            "`devices` is empty: there is nothing to split over",
            param="devices",
            hint="pass cthreads.gpu.devices() (see CTHREADS_VISIBLE_DEVICES)",
        )
    k = len(chosen)
    base, extra = divmod(n, k)
    parts: list[Part] = []
    start = 0
    for i, dev in enumerate(chosen):
        stop = start + base + (1 if i < extra else 0)
        parts.append(Part(dev, start, stop))
        start = stop
    return parts


__all__ = ["GpuDevice", "Part", "current_device", "device", "devices", "split"]
