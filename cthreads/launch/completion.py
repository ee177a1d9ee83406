"""One completion thread per device (`watcher_for`): waits on the device's timeline and fires
callbacks for jobs whose work has finished, so `await job` never blocks an event loop.

Callbacks run on this thread and must only hand off (e.g. `loop.call_soon_threadsafe`).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from typing import Any

Callback = Callable[[BaseException | None], None]

_watchers: dict[int, CompletionWatcher] = {}


def watcher_for(device: Any) -> CompletionWatcher:
    """The completion thread of `device`, started on first use."""
    watcher = _watchers.get(id(device))
    if watcher is None or watcher._device is not device:
        watcher = _watchers[id(device)] = CompletionWatcher(device)
    return watcher


def completion_future(device: Any, value: int) -> Any:
    """An asyncio future of the running loop, resolved (or failed) once `value` completed on
    `device`: what `await job` and `await stream` wait on without blocking the loop."""
    # asyncio (with ssl and socket, ~16-24 ms) loads on the first await, not with
    # `import cthreads.gpu` (issue 19); a program that awaits has imported it already.
    import asyncio

    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def resolve(error: BaseException | None) -> None:
        def settle() -> None:
            if future.done():
                return
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass  # the loop was closed meanwhile: nobody is awaiting any more

    watcher_for(device).watch(value, resolve)
    return future


def stop_watchers() -> None:
    """Stop completion threads (device shutdown): pending awaits fail cleanly."""
    for watcher in list(_watchers.values()):
        watcher.stop()
    _watchers.clear()


class CompletionWatcher:
    def __init__(self, device: Any) -> None:
        self._device = device
        self._heap: list[tuple[int, int, Callback]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="cthreads-completion", daemon=True)
        self._thread.start()

    def watch(self, value: int, callback: Callback) -> None:
        """Call `callback(None)` once the device timeline reaches `value` (or `callback(error)`
        if waiting fails, e.g. the device was lost or shut down)."""
        with self._cond:
            if self._stopped:
                callback(_stopped_error())
                return
            heapq.heappush(self._heap, (value, next(self._order), callback))
            self._cond.notify()

    def stop(self) -> None:
        """Fail every pending callback and end the thread (device shutdown)."""
        with self._cond:
            self._stopped = True
            pending, self._heap = self._heap, []
            self._cond.notify()
        for _, _, cb in pending:
            cb(_stopped_error())

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                target = self._heap[0][0]
            error: BaseException | None = None
            try:
                # A bounded wait keeps stop() responsive without a busy loop.
                self._device.wait(target, 0.1)
                reached = self._device.completed()
            except BaseException as exc:  # noqa: BLE001 - delivered to the waiters
                error, reached = exc, None
            ready: list[Callback] = []
            with self._cond:
                while self._heap and (error is not None or self._heap[0][0] <= reached):
                    ready.append(heapq.heappop(self._heap)[2])
            for cb in ready:
                cb(error)
            if error is not None:
                with self._cond:
                    self._stopped = True
                return


def _stopped_error() -> BaseException:
    from ..errors import GpuUseAfterDestroy

    return GpuUseAfterDestroy(
        "the device was shut down while this job was pending",
        hint="its results are lost; launch again after prepare()",
    )
