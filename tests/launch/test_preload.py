"""launch/preload.py's thread (issue 19): what a compile step waits for is always a started
thread; it imports the compiler in a cold process, and in a warm one only what a launch from
the kernel cache needs, then collects the young generations where collection is on. (The cold and warm process behaviour is tests/launch/test_warm_path.py's.)"""

from __future__ import annotations

import threading

import pytest

from cthreads.launch import preload


@pytest.fixture
def fresh(monkeypatch):
    """preload as in a process that has not opened a device yet, its imports and collections
    recorded instead of done."""
    done: list[tuple] = []
    monkeypatch.setattr(preload, "_thread", None)
    monkeypatch.setattr(preload, "_imported", threading.Event())
    monkeypatch.setattr(preload, "_MODULES", ("cthreads_test_no_such_module",))
    monkeypatch.setattr(preload, "_import", lambda modules: done.append(("import", modules)))
    monkeypatch.setattr(
        preload.gc,
        "collect",
        lambda gen=2: done.append(("collect", gen, threading.current_thread())),
    )
    return done


def test_only_a_started_thread_is_published(monkeypatch, fresh):
    # prepare() compiles on several threads while another opens the device and starts the
    # import: a compile thread that joined the thread before start() got RuntimeError (seen
    # on the H200, 2026-12-03)
    published_before_start = []

    class Spy(threading.Thread):
        def start(self) -> None:
            published_before_start.append(preload._thread)  # what a wait() now would join
            super().start()

    monkeypatch.setattr(preload, "_cache_is_empty", lambda: True)
    monkeypatch.setattr(preload.threading, "Thread", Spy)
    preload.start()
    assert published_before_start == [None]
    assert isinstance(preload._thread, Spy) and preload._thread.ident is not None
    preload._join()
    assert not preload._thread.is_alive()
    preload.start()  # once per process
    assert len(published_before_start) == 1


@pytest.mark.parametrize("cold", [True, False])
def test_the_thread_imports_what_the_first_launch_will_and_when_warm_collects_the_young(
    monkeypatch, fresh, cold
):
    monkeypatch.setattr(preload, "_cache_is_empty", lambda: cold)
    monkeypatch.setattr(preload.gc, "isenabled", lambda: True)
    preload.start()
    preload._join()
    thread = preload._thread
    assert thread is not None and thread is not threading.current_thread()
    if cold:  # (its first compile collects anyway)
        assert fresh == [("import", preload._MODULES)]
    else:
        assert fresh == [("import", preload._WARM_MODULES), ("collect", 1, thread)]


def test_with_collection_off_the_thread_only_imports(monkeypatch, fresh):
    monkeypatch.setattr(preload, "_cache_is_empty", lambda: False)
    monkeypatch.setattr(preload.gc, "isenabled", lambda: False)
    preload.start()
    preload._join()
    assert fresh == [("import", preload._WARM_MODULES)]


def test_a_compile_waits_for_the_imports_not_for_the_collection(monkeypatch, fresh):
    # (a warm prepare() compiles while the device opens: the collection is not its business)
    release = threading.Event()
    monkeypatch.setattr(preload, "_cache_is_empty", lambda: False)
    monkeypatch.setattr(preload.gc, "isenabled", lambda: True)
    monkeypatch.setattr(preload.gc, "collect", lambda gen=2: release.wait(10))
    preload.start()
    try:
        preload.wait(10)
        assert fresh == [("import", preload._WARM_MODULES)]
        assert preload._thread.is_alive()  # still collecting
    finally:
        release.set()
    preload._join()
    assert not preload._thread.is_alive()
