"""`Stream` (issue 16, items 1-2): an ordered sequence of launches and copies on one device.

A stream remembers the newest timeline value queued on it, so `synchronize()`, `done()` and
`await stream` mean "all work queued on this stream so far". `gpu(..., stream=s)`,
`kernel[grid](..., stream=s)` and the `DeviceArray` copies take it; `with s:` makes it the
default stream of the calling thread (a stack: blocks nest and restore on exit). Launches and
copies without `stream=` go to the device's default stream, whose meaning does not change
(SPEC §5.5). `s.wait(job)` and `after=[job, ...]` order later work after jobs of any stream of
the same device.

Mechanism (docs/streams.md, "How streams run"; native/lane.c): each stream is submitted on a
*lane* (round-robin over lanes 1..3; lane 0 is the default stream), a queue of its own where
the device's compute family has several, and joined back to the device's one timeline, so a
job's value, `synchronize()` and the memory pool keep one integer per submission. `wait(job)`,
`after=` and the implicit rule of the launch path (a launch waits for the last write of the
arrays it reads and the last use of the arrays it writes) become waits on the device, never
host waits. Lanes overlap in device time where they have distinct queues (not on lavapipe).
A stream's copies go to the device's copy engines (a transfer-only queue family, the *copy
lane*) where it has one, overlapping kernels on the compute queue; stream order holds across
the two queues (native/lane.c, docs/streams.md).

The launch paths stay as fast as before: they test `SCOPED[0]` (how many `with stream:` blocks
are open in any thread) and the two keywords, and only then look at the thread's stack.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Generator
from typing import Any

from .. import runtime
from ..errors import GpuArgumentTypeError, GpuInvalidArgument, GpuTimeout, GpuUseAfterDestroy

# `with stream:` blocks open in any thread (a one-element list: the launch paths bind it once
# and read an int). Changed under _SCOPE_LOCK; read without it (a stale read only costs the
# thread-local lookup, never a wrong stream: the stack itself is per thread).
SCOPED = [0]
_SCOPE_LOCK = threading.Lock()
_local = threading.local()


def current_stream() -> Stream | None:
    """The calling thread's default stream (the innermost `with stream:`), None outside one."""
    if not SCOPED[0]:
        return None
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class Stream:
    """An ordered sequence of launches and copies on one device.

    >>> s = Stream()
    >>> gpu(kernel, n, x, y, stream=s)     # queued on s
    >>> with s:                            # the thread's default stream inside the block
    ...     gpu(kernel, n, y, x)
    >>> s.synchronize()                    # every launch and copy queued on s finished
    """

    def __init__(self, device: Any = None) -> None:
        if device is None:
            device = runtime.get_device()
        elif not isinstance(device, runtime.Device):
            raise GpuArgumentTypeError.expecting(
                "device",
                device,
                "None (the default device) or a cthreads device",
                expected="None or a runtime Device",
                hint="write Stream() for the default device",
            )
        elif not device.alive:
            raise GpuUseAfterDestroy(
                f"cannot make a Stream on device {device.name!r}: it was shut down",
                hint="write Stream() to use the device in use now",
            )
        self._device = device
        self._lane = _next_lane()  # the native lane its work is submitted on (1..LANES-1)
        self._last = 0  # the newest timeline value queued on this stream
        self._after = 0  # later work on it starts after this value (wait(job))
        self._lock = threading.Lock()  # two threads queueing on one stream keep the maximum

    # -- what is queued -------------------------------------------------------------------------
    @property
    def device(self) -> str:
        """The name of the stream's device."""
        return self._device.name

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait until every launch and copy queued on this stream so far finished (GIL
        released). `timeout` (seconds) raises `GpuTimeout`, the work staying queued."""
        value = self._last
        if value and not self._device.wait(value, timeout):
            raise GpuTimeout(
                f"the work queued on {self!r} did not finish within {timeout} s",
                hint="it is still queued: synchronize again, or await the stream",
            )

    def done(self) -> bool:
        """Whether every launch and copy queued on this stream so far finished."""
        value = self._last
        return not value or self._device.completed() >= value

    def __await__(self) -> Generator[Any, None, None]:
        """`await stream`: synchronize() without blocking the event loop."""
        value = self._last
        if value and self._device.completed() < value:
            from .completion import completion_future

            yield from completion_future(self._device, value).__await__()

    def wait(self, job: Any) -> None:
        """Later launches and copies on this stream start after `job` (a `GpuJob` of any
        stream of this device) finished; the host does not wait."""
        check_job(job, self._device, "job")
        # later submits on this stream's lane wait on the device for this value (native/lane.c)
        value = job._value
        if value > self._after:
            with self._lock:
                if value > self._after:
                    self._after = value

    # -- `with stream:` ---------------------------------------------------------------------------
    def __enter__(self) -> Stream:  # noqa: PYI034 - typing.Self needs Python 3.11
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        with _SCOPE_LOCK:
            SCOPED[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _local.stack
        # the innermost block exits first; a stack left unbalanced by a generator that
        # never resumed still drops exactly this stream's innermost entry
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break
        with _SCOPE_LOCK:
            SCOPED[0] -= 1

    def __repr__(self) -> str:
        if not self._device.alive:
            state = "shut down"
        else:
            try:
                state = "done" if self.done() else "running"
            except Exception:  # noqa: BLE001 - a repr never raises (a lost device says so)
                state = "failed"
        return f"<Stream on {self._device.name!r} {state}>"

    # -- for the launch paths -------------------------------------------------------------------
    def _note(self, value: int) -> None:
        """Record that work ending at timeline `value` was queued on this stream."""
        if value > self._last:
            with self._lock:
                if value > self._last:
                    self._last = value


# Lanes 1..LANES-1 of a device (native/lane.c) carry the streams: a new stream takes the next
# one round-robin, so up to LANES-1 streams get a lane (and, on devices with several compute
# queues, a queue) of their own; more streams share lanes (their work then runs in the order
# it was queued on the shared lane). Lane 0 is the default stream.
LANES = 4
_lane_counter = itertools.count()


def _next_lane() -> int:
    return 1 + next(_lane_counter) % (LANES - 1)


def after_value(s: Stream, after: tuple) -> int:
    """The timeline value work queued on `s` now must start after: s.wait()'s and after='s."""
    value = s._after
    for job in after:
        if job._value > value:
            value = job._value
    return value


def check_stream(stream: Any, device: Any) -> Stream:
    """`stream=` of a launch or copy on `device`, checked: a Stream of that device."""
    if type(stream) is not Stream and not isinstance(stream, Stream):
        raise GpuArgumentTypeError.expecting(
            "stream",
            stream,
            "a cthreads.gpu.Stream",
            expected="Stream",
            hint="make one with s = Stream(), or leave stream= out for the default stream",
        )
    if stream._device is not device:
        raise GpuInvalidArgument(
            f"`stream` belongs to {_device_words(stream._device, device)}; this launch runs "
            f"on {device.name!r}",
            param="stream",
            expected=f"a Stream of {device.name!r}",
            got=f"a Stream of {stream._device.name!r}",
            hint="make a new Stream() on the device in use",
        )
    return stream


def resolve_stream(stream: Any, device: Any) -> Stream | None:
    """The stream a launch or copy goes to: `stream=`, else the thread's `with` stream (if it
    is one of `device`'s; a `with` stream of a shut-down device is an error: its user meant
    it), else None (the device's default stream)."""
    if stream is None:
        stream = current_stream()
        if stream is None:
            return None
    return check_stream(stream, device)


def check_after(after: Any, device: Any) -> tuple:
    """`after=` of a launch: a GpuJob or a list/tuple of them, all of `device`."""
    from .gpujob import GpuJob

    if isinstance(after, GpuJob):
        jobs: tuple = (after,)
    elif isinstance(after, (list, tuple)):
        jobs = tuple(after)
    else:
        raise GpuArgumentTypeError.expecting(
            "after",
            after,
            "a GpuJob or a list of GpuJobs",
            expected="list of GpuJob",
            hint="pass the jobs gpu() returned: after=[job1, job2]",
        )
    for job in jobs:
        check_job(job, device, "after")
    return jobs


def check_job(job: Any, device: Any, param: str) -> None:
    """A job that later work waits for: a GpuJob of `device` (this generation)."""
    from .gpujob import GpuJob

    if not isinstance(job, GpuJob):
        raise GpuArgumentTypeError.expecting(
            param,
            job,
            "a GpuJob (what gpu() returns)",
            expected="GpuJob",
            hint="host work (cthreads.Job) has no device timeline: join() it first",
        )
    if job._device is not device:
        raise GpuInvalidArgument(
            f"`{param}` holds a job of {_device_words(job._device, device)}; this work runs on "
            f"{device.name!r} (waiting on another device's jobs is not supported yet)",
            param=param,
            expected=f"a job of {device.name!r}",
            got=f"a job of {getattr(job._device, 'name', '?')!r}",
            hint="join() that job on the host first, then launch",
        )


def _device_words(other: Any, device: Any) -> str:
    """How the device of a stream or job compares with `device`, in words."""
    alive = getattr(other, "alive", False)
    if not alive or getattr(other, "generation", None) != device.generation:
        return (
            f"device {getattr(other, 'name', '?')!r} as it was before a shutdown (generation "
            f"{getattr(other, 'generation', '?')}; now {device.generation})"
        )
    return f"another device, {other.name!r}"


__all__ = [
    "LANES",
    "SCOPED",
    "Stream",
    "after_value",
    "check_after",
    "check_job",
    "check_stream",
    "current_stream",
]
