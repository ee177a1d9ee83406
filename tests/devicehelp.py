"""For tests that need particular device features: the compile target of the device the tests
run on (None without Vulkan), opened once and shared."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def device_target() -> Any:
    from cthreads.gpu import available

    if not available():
        return None
    from cthreads.launch import session

    return session.target_from_device(session._current_device())
