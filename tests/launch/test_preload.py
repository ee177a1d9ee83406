"""launch/preload.py's thread (issue 19): what a compile step waits for is always a started
thread. (The cold and warm process behaviour is tests/launch/test_warm_path.py's.)"""

from __future__ import annotations

import threading

from cthreads.launch import preload


def test_only_a_started_thread_is_published(monkeypatch):
    # prepare() compiles on several threads while another opens the device and starts the
    # import: a compile thread that joined the thread before start() got RuntimeError (seen
    # on the H200, 2026-12-03)
    published_before_start = []

    class Spy(threading.Thread):
        def start(self) -> None:
            published_before_start.append(preload._thread)  # what a wait() now would join
            super().start()

    monkeypatch.setattr(preload, "_thread", None)
    monkeypatch.setattr(preload, "_MODULES", ("cthreads_test_no_such_module",))
    monkeypatch.setattr(preload, "_cache_is_empty", lambda: True)
    monkeypatch.setattr(preload.threading, "Thread", Spy)
    preload.start_if_cold()
    assert published_before_start == [None]
    assert isinstance(preload._thread, Spy) and preload._thread.ident is not None
    preload.wait()  # (the failed import ends the thread; the compile step raises it itself)
    assert not preload._thread.is_alive()
    preload.start_if_cold()  # once per process
    assert len(published_before_start) == 1
