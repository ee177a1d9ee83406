"""Hand-offs between CUDA streams and our queue (issue 17): who waits for whom, and where.

Mode "gpu": the device exports timeline semaphores (VK_KHR_external_semaphore_fd) and libcuda
imports them, so a hand-off is two queued operations and no host wait:
  CUDA -> ours: signal v on the producer's stream (`cuSignalExternalSemaphoresAsync`), then a
  submission on our queue 0 waits for v before the launch queued next (one semaphore per
  producer stream: each has one signaller, whose values then rise in the order they run).
  ours -> CUDA: a submission after the launch signals w on the outbound semaphore (only our
  queue signals it), then the consumer's stream waits for w (`cuWaitExternalSemaphoresAsync`).
Values rise per semaphore under one lock per device. Mode "host" (no such driver or extension,
libcuda refusing, a semaphore failing to import or a hand-off failing): the first slice's host
waits, `cuStreamSynchronize` and a wait on our timeline (an eighth producer stream and beyond
waits so too; or CTHREADS_CUDA_HANDOFF=host asked for it); `mode(device)` says which and why.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from .. import config
from ..errors import GpuInvalidArgument
from . import cuda, cuda_capable, why_not_capable

_STREAMS_MAX = 7  # inbound semaphores per device (native/external.c: CT_EXT_SEMS = 8, less ours)


class _Link:
    """One Vulkan semaphore imported into CUDA and the last value given out for it."""

    def __init__(self, device: Any, ctx: cuda.Context) -> None:
        self.index, fd = device._dev.export_semaphore()
        self.cuda = cuda.Semaphore(ctx, fd)
        self.value = 0


class _Gpu:
    """The semaphores of one device: `outbound` (we signal) and one `inbound` per stream."""

    def __init__(self, device: Any, ctx: cuda.Context) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self.outbound = _Link(device, ctx)
        self.inbound: dict[int | None, _Link] = {}


def _queue(device: Any, index: int, *, wait: int = 0, signal: int = 0) -> None:
    """One command-less submission on our queue 0 (native/external.c; tests replace it)."""
    device._dev.semaphore_submit(index, wait=wait, signal=signal)


def _reached(device: Any, value: int) -> bool:
    """Whether our timeline passed `value` already (then a hand-off has nothing to order)."""
    return value == 0 or device.completed() >= value


_lock = threading.Lock()
_state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Device -> _Gpu | str


def _setup(device: Any) -> _Gpu | str:
    """The device's semaphores, made at its first CUDA exchange; or why there are none."""
    if config.cuda_handoff() == "host":
        return "CTHREADS_CUDA_HANDOFF=host asks for host waits"
    if not cuda_capable(device):
        return why_not_capable(device)
    if not device._dev.external()["semaphore_fd"]:
        return (
            f"the Vulkan driver of {device.name!r} does not export timeline semaphores "
            "(VK_KHR_external_semaphore_fd, OPAQUE_FD)"
        )
    try:
        return _Gpu(device, cuda.context_for(device))
    except GpuInvalidArgument as exc:  # libcuda missing, too old, or refusing the import
        return f"CUDA could not take the semaphore: {exc}"


def _gpu(device: Any) -> _Gpu | None:
    got = _state.get(device)
    if got is None:
        with _lock:
            got = _state.get(device)
            if got is None:
                got = _state[device] = _setup(device)
    return got if isinstance(got, _Gpu) else None


def _fall_back(device: Any, exc: BaseException) -> None:
    with _lock:
        _state[device] = f"a hand-off failed, host waits from now on: {exc}"


def mode(device: Any = None) -> tuple[str, str]:
    """("gpu", "") where hand-offs with CUDA wait on the GPU, else ("host", why). On an NVIDIA
    device this sets the semaphores up (libcuda is loaded) if no exchange did yet."""
    if device is None:
        from .. import runtime

        device = runtime.get_device()
    if _gpu(device) is not None:
        return ("gpu", "")
    return ("host", _state[device])


def cuda_to_ours(device: Any, ctx: cuda.Context, stream: int | None) -> None:
    """Work queued on `stream` so far comes before our launches queued from now on."""
    g = _gpu(device)
    # (past _STREAMS_MAX streams, a new one waits on the host; the others keep their semaphores)
    if g is not None and (stream in g.inbound or len(g.inbound) < _STREAMS_MAX):
        try:
            with g.lock:
                link = g.inbound.get(stream)
                if link is None:
                    link = g.inbound[stream] = _Link(device, g.ctx)
                link.value += 1
                link.cuda.signal(link.value, stream)
                _queue(device, link.index, wait=link.value)
            return
        except GpuInvalidArgument as exc:
            _fall_back(device, exc)  # (a signal that went out is harmless: nothing waits)
    ctx.synchronize(stream)


def stamp(device: Any, arr: Any) -> None:
    """After `cuda_to_ours`, for an array handed back to the user (`from_cuda`): a timeline
    value behind the GPU-side wait becomes its last write, so a launch on a stream's lane
    (lanes wait on timeline values only, not on queue 0's other submissions) still comes
    after what CUDA queued. Nothing to do after a host wait."""
    if _gpu(device) is not None:
        value = device.submit([])
        arr.last_use = max(arr.last_use, value)
        arr.last_write = max(arr.last_write, value)


def ours_to_cuda(device: Any, ctx: cuda.Context, value: int, streams: list) -> None:
    """Our work up to timeline `value` comes before CUDA work queued on `streams` from now on
    (in mode "host": before any CUDA work)."""
    if _reached(device, value):
        return
    g = _gpu(device)
    if g is not None:
        try:
            with g.lock:
                link = g.outbound
                link.value += 1
                _queue(device, link.index, signal=link.value)
                for stream in dict.fromkeys(streams):
                    link.cuda.wait(link.value, stream)
            return
        except GpuInvalidArgument as exc:
            _fall_back(device, exc)
    device.wait(value)
