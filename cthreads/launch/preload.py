"""What a process does on a thread of its own while its first device opens (issue 19).

Opening a device is spent inside the driver with the GIL released (lavapipe ~45 ms, NVIDIA
~130 ms), so Python work done on a thread meanwhile costs the process nothing. Two things go
there. The imports a first launch makes: a cold process (the kernel cache is empty or
disabled) imports the compiler (~20 ms on the CI machine) before it can compile; a process
whose cache holds kernels imports only what a launch from the cache needs (the kernel cache,
the compile target: ~0.9 ms on lavapipe), never the compiler proper (it loads that on its first
cache miss, as before). Then, in a warm process, the garbage collector's young generations
(`gc.collect(1)`, where collection is enabled): what importing cthreads and the program left
there is otherwise collected by the first allocation past the threshold, which fell inside the
first launch (~1.3 ms on lavapipe, a quarter of it). A cold process does not: its first
compile allocates enough to collect several times anyway, and the larger collection after the
compiler's import only lengthened the open on the CI machine.

The compile step waits for the imports before it touches the compiler (not for the
collection: a warm `prepare()` compiles while the device opens), and fork() joins the thread
(`os.register_at_fork`): a child never inherits an import half done by a thread it lacks.
"""

from __future__ import annotations

import gc
import os
import sys
import threading

from .. import config

# the modules a first compile imports: the compile driver (codegen, validator), the frontend
# and the kernel cache
_MODULES = (
    "cthreads.compiler.compile",
    "cthreads.compiler.frontend.lower",
    "cthreads.compiler.cache",
)
# the modules a launch from the kernel cache imports (tests/launch/test_warm_path.py lists them)
_WARM_MODULES = ("cthreads.compiler.cache", "cthreads.compiler.target")
_FORK_WAIT_S = 10.0  # bounds fork()'s wait for the thread (never reached: it takes ms)

_thread: threading.Thread | None = None
_imported = threading.Event()  # set once the thread's imports have ended


def start() -> None:
    """Start the thread (once per process) as a device is about to open; called by the
    runtime just before it opens one (runtime/lifecycle.py `on_opening`)."""
    global _thread
    if _thread is not None:
        return
    cold = _MODULES[0] not in sys.modules and _cache_is_empty()
    modules = _MODULES if cold else _WARM_MODULES
    thread = threading.Thread(
        target=_work,
        args=(modules, not cold and gc.isenabled()),
        name="cthreads-preload",
        daemon=True,
    )
    thread.start()
    _thread = thread  # published once started: a compile thread may join it at once


def wait(timeout: float | None = None) -> None:
    """Until the imports of the thread started here (if any) have ended."""
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        _imported.wait(timeout)


def _join(timeout: float | None = None) -> None:
    """Until the thread started here (if any) has ended."""
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)


def _work(modules: tuple[str, ...], collect: bool) -> None:
    try:
        _import(modules)
    finally:
        _imported.set()
    if collect and gc.isenabled():  # (the program may have switched collection off since)
        gc.collect(1)


def _import(modules: tuple[str, ...]) -> None:
    import importlib

    # While this thread holds the GIL, the opening thread waits up to the switch interval
    # (5 ms) each time it comes back from the driver; with the default the open took ~20 ms
    # longer on the CI machine, with 0.2 ms it did not. Restored when the import ends.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        for name in modules:
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - the compile step imports it again and raises
                return
    finally:
        sys.setswitchinterval(interval)


def _cache_is_empty() -> bool:
    if not config.disk_cache_enabled():
        return True
    try:
        with os.scandir(config.cache_dir() / "spirv") as entries:
            return next(entries, None) is None
    except OSError:  # no cache directory yet
        return True


def _after_fork_in_child() -> None:
    global _thread, _imported
    _thread = None  # (joined before the fork; the child may start its own)
    _imported = threading.Event()


os.register_at_fork(before=lambda: _join(_FORK_WAIT_S), after_in_child=_after_fork_in_child)
