"""Launch: `gpu()`, `prepare()`/`compile()`, `GpuJob` — where the compiler's output meets the
runtime's device (SPEC §3, §5, §6)."""

from __future__ import annotations

from . import completion, session
from .dispatch import gpu
from .gpujob import GpuJob
from .preparing import compile, prepare


def shutdown() -> None:
    """Release the device (SPEC §9); the next `prepare()`/`gpu()` starts again. Jobs still
    pending fail their waiters with `GpuUseAfterDestroy`."""
    completion.stop_watchers()
    session.shutdown()


__all__ = ["GpuJob", "compile", "gpu", "prepare", "shutdown"]
