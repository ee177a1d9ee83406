"""`Job`: the host-side handle for work that runs elsewhere (a thread, a device).

The state machine (pending -> running -> done) and the waiting vocabulary (`start`, `join`,
`done`, `result`, `await`) live here; subclasses such as `GpuJob` say how to start, how to wait
and what to do once finished.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from typing import Any


class Job:
    """A handle for one unit of work.

    `Job(fn, *args)` runs `fn(*args)` on a Python thread when started; subclasses override
    `_launch`, `_wait` and `_finish` to run elsewhere.
    """

    def __init__(self, fn: Callable[..., Any] | None = None, *args: Any) -> None:
        self._fn = fn
        self._args = args
        self._state = "pending"
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._finished = threading.Event()

    # -- the vocabulary -----------------------------------------------------------------------
    def start(self) -> Job:
        """Start the work; calling it again is harmless. Returns the job."""
        if self._state == "pending":
            self._state = "running"
            self._launch()
        return self

    def done(self) -> bool:
        """Whether the work has finished."""
        return self._state == "done" or self._poll()

    def join(self, timeout: float | None = None) -> None:
        """Start if needed, then block this thread until the work is finished (or `timeout`
        seconds passed: `TimeoutError`, the job stays pending)."""
        self.start()
        self._wait(timeout)
        self._complete()

    def result(self) -> Any:
        """The work's return value (after `join`/`await`); re-raises the work's exception."""
        if self._error is not None:
            raise self._error
        return self._result

    def __await__(self) -> Generator[Any, None, Any]:
        import asyncio

        self.start()
        if not self.done():
            loop = asyncio.get_running_loop()
            yield from loop.run_in_executor(None, self._wait, None).__await__()
        self._complete()
        return self.result()

    def __repr__(self) -> str:
        state = "done" if self.done() else self._state
        return f"<{type(self).__name__} {state}>"

    # -- what subclasses override ---------------------------------------------------------------
    def _launch(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cthreads-job", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self._fn is not None:
                self._result = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever joins
            self._error = exc
        finally:
            self._finished.set()

    def _poll(self) -> bool:
        return self._finished.is_set()

    def _wait(self, timeout: float | None) -> None:
        if not self._finished.wait(timeout):
            raise TimeoutError(f"job did not finish within {timeout} s; it is still running")

    def _complete(self) -> None:
        self._state = "done"
        if self._thread is not None:
            self._thread.join()
            self._thread = None
