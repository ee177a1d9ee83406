"""`GpuJob` (SPEC §6): the handle `gpu()` returns.

It keeps the buffers and Python objects of its launch alive until the device finished, waits
(blocking with the GIL released, or through the completion thread for `await`), and writes
results back into the caller's lists and arrays on `join()`/`await`.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any

from ..errors import GpuTimeout
from ..job import Job
from .binding import ListArg, write_back
from .completion import completion_future


class GpuJob(Job):
    """A started device launch. `join()`/`await` wait and copy written lists back."""

    # Job's state as class defaults: a queued launch sets only what differs per job.
    _state = "running"
    _result = None
    _error = None
    _thread = None
    _lock: threading.Lock | None = None  # made on first _finish (most jobs never finish alone)
    _buffers: list[Any] | tuple = ()  # buffers to release when done: a queued launch has none
    _device_done = False  # a queued launch is not done (done() and join() set it)

    # The fast construction protocol: a queued job is exactly these attributes, the first ones
    # __init__ sets, in its argument order (the rest above are class defaults). They are slots
    # (the instance keeps its __dict__ for the rest): the C launcher (native/launch.c) is
    # handed this tuple, finds each slot's offset once, and makes a job as
    # a fresh object plus four stores, so that a queued launch runs no Python code of ours and
    # no attribute dict is written (issue 14); every attribute it leaves out costs nothing per
    # launch.
    QUEUED_FIELDS = ("_device", "_value", "_kernel_name", "_written")
    __slots__ = QUEUED_FIELDS
    # `_written`: what join copies back, in one of two spellings. The general path's
    # `(ListArg | None, source)` pairs as a list; the C launcher's arena records of the lists
    # it writes, as None (none), the one record or a tuple of them, so that a queued launch
    # makes and drops no list and no pairs (about 500 instructions, issue 14). `_writebacks`
    # reads either as the pairs.

    def __init__(
        self,
        device: Any,
        value: int,
        kernel_name: str,
        writebacks: list[tuple[ListArg, Any]],
        buffers: list[Any],
    ) -> None:
        # Job.__init__ is not called: a device job needs none of the host-thread machinery,
        # and a launch must stay cheap. QUEUED_FIELDS first (tests compare both jobs).
        self._device = device
        self._value = value
        self._kernel_name = kernel_name
        self._written = writebacks
        self._buffers = buffers
        self._device_done = value <= 0

    # -- SPEC §6 ------------------------------------------------------------------------------
    def start(self) -> GpuJob:
        """Already called by `gpu()`; calling it again is harmless."""
        return self

    def done(self) -> bool:
        """Whether the device finished this launch."""
        if not self._device_done:
            self._device_done = self._device.completed() >= self._value
        return self._device_done

    def join(self, download: bool = True, timeout: float | None = None) -> None:  # type: ignore[override]
        """Wait for the device; with `download=True` copy every list the kernel writes back
        into the same Python list / array objects. `download=False` waits only and discards
        the results of lists that are not resident. `timeout` (seconds) raises `GpuTimeout`
        and leaves the job pending."""
        if not self._device_done:
            if not self._device.wait(self._value, timeout):
                raise GpuTimeout(
                    f"kernel `{self._kernel_name}` did not finish within {timeout} s",
                    hint="the job is still pending: join again, or await it",
                )
            self._device_done = True
        self._finish(download)

    def result(self) -> None:
        """Always None: kernels return nothing; results arrive in the lists."""
        return

    @property
    def elapsed_ms(self) -> float | None:
        """Device time of this launch in milliseconds (None until done, or when the device
        has no timestamps)."""
        if not self.done():
            return None
        getter = getattr(self._device, "elapsed_ms", None)
        return getter(self._value) if getter else None

    def __await__(self) -> Generator[Any, None, None]:
        if not self.done():
            yield from completion_future(self._device, self._value).__await__()
            self._device_done = True
        self._finish(True)

    def __repr__(self) -> str:
        return f"<GpuJob {self._kernel_name} {'done' if self.done() else 'running'}>"

    # -- internals ----------------------------------------------------------------------------
    @property
    def _writebacks(self) -> list[tuple[ListArg | None, Any]]:
        """The `(arg, source)` pairs join writes back (binding.write_back), either spelling."""
        written = self._written
        if written is None:
            return []
        if type(written) is list:
            return written
        return [(None, r) for r in (written if type(written) is tuple else (written,))]

    def _finish(self, download: bool) -> None:
        lock = self._lock
        if lock is None:  # setdefault is atomic: two threads joining at once share one lock
            lock = self.__dict__.setdefault("_lock", threading.Lock())
        with lock:
            try:
                pairs = self._writebacks if download else None
                if pairs:
                    write_back(pairs)  # every list it can; then raises the first error
            except Exception:
                self._done()  # what could be written back was; the error is reported once
                raise
            # (an interrupt, Ctrl-C, leaves the job as it was: a later join() copies again)
            self._done()

    def _done(self) -> None:
        self._written = None
        self._state = "done"
        for buf in self._buffers:
            buf.release()
        self._buffers = []
