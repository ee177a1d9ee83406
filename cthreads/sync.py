"""Host-side synchronization names of SPEC §8: `Barrier(parties)` and `__sync_threads()`.

On the host `Barrier` is an ordinary thread barrier. Inside `@Gpu` kernels the compiler maps
`Barrier.arrive_and_wait()` (on the class) and `__sync_threads()` to a workgroup barrier; both
raise `RuntimeError` when host Python calls them in that device-only form.
"""

from __future__ import annotations

import threading
import types

_DEVICE_ONLY = (
    "{what} is a workgroup barrier and only works inside a @Gpu kernel launched with gpu(); "
    "it was called from ordinary Python (for example by calling the kernel function directly). "
    "On the host, use a Barrier(parties) instance: barrier.arrive_and_wait()"
)


def __sync_threads() -> None:
    """Workgroup barrier (CUDA `__syncthreads`): valid only inside `@Gpu` kernels.

    Raises:
        RuntimeError: always, when called from host Python.
    """
    raise RuntimeError(_DEVICE_ONLY.format(what="__sync_threads()"))


# The compiler recognises these objects by this tag (it never imports this module's names).
__sync_threads.__gpu_builtin__ = "sync_threads"  # type: ignore[attr-defined]


def _class_arrive_and_wait(*args: object, **kwargs: object) -> None:
    raise RuntimeError(_DEVICE_ONLY.format(what="Barrier.arrive_and_wait() on the class"))


class _HostOrDevice:
    """`Barrier.arrive_and_wait`: a bound method on an instance (host thread barrier); on the
    class itself the device-only form, which raises on the host with a helpful message."""

    def __init__(self, fn):
        self._fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, objtype=None):
        if obj is None:
            return _class_arrive_and_wait
        return types.MethodType(self._fn, obj)


class Barrier(threading.Barrier):
    """A thread barrier for `parties` host threads (an ordinary `threading.Barrier`).

    Inside a `@Gpu` kernel write `Barrier.arrive_and_wait()` (on the class, no instance): the
    compiler turns it into a workgroup barrier. `Barrier(n)` inside a kernel is a compile error.
    """

    __gpu_builtin__ = "Barrier"

    def __init__(self, parties: int, action=None, timeout: float | None = None):
        if isinstance(parties, bool) or not isinstance(parties, int) or parties < 1:
            raise ValueError(
                f"Barrier(parties) needs a positive int number of threads; got {parties!r}"
            )
        super().__init__(parties, action, timeout)

    def _arrive_and_wait(self, timeout: float | None = None) -> None:
        """Block until all `parties` threads have arrived (raises `threading.BrokenBarrierError`
        if the barrier is broken or `timeout` expires)."""
        self.wait(timeout)

    arrive_and_wait = _HostOrDevice(_arrive_and_wait)


__all__ = ["Barrier", "__sync_threads"]
