"""For tests that need particular device features: the compile target of the device the tests
run on (None without Vulkan), opened once and shared; and `QueueGate`, which holds the device's
queue busy until the test opens it (work launched meanwhile cannot finish: no timing involved)."""

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


class QueueGate:
    """Put the `gate` shader (shaders/gate.comp: polls a host-visible flag) on the queue of
    `device` (default: the default device); everything launched after it waits in stream order until `open()`. A
    context manager opens it on exit, so a failing test never leaves the queue blocked."""

    def __init__(self, n: int = 1 << 16, polls: int = 1 << 24, device: Any = None):
        import struct

        import numpy as np

        from cthreads import runtime

        self.device = dev = device if device is not None else runtime.get_device()
        pipe = dev.pipeline(runtime.load_shader("gate"), 16)
        # Device-local memory the host maps where there is some (NVIDIA: the BAR): host writes
        # land in GPU memory, which the polling loads see; system memory was not seen.
        self.flag = dev.buffer(8)
        if not self.flag.host_visible:
            self.flag = dev.buffer(8, usage="upload")
        self.flag.write(np.zeros(2, np.uint32))
        push = struct.pack("<QII", self.flag.address, n, polls)
        self.value = dev.submit([("dispatch", pipe, push, (n // 64, 1, 1))], keep=(self.flag, pipe))
        assert not dev.wait(self.value, timeout=0)  # on the queue now, and closed

    def open(self) -> None:
        self.device._dev._poke_u32(self.flag, 0, 1)

    def __enter__(self) -> QueueGate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()
        self.device.wait(self.value, timeout=120)


def use_launcher(kernel: Any, native: bool) -> None:
    """Make the next launch of `kernel` build its C launcher anew (`native`), or none (then
    every launch takes the general Python path)."""
    from cthreads.launch import plan, session

    plan.NATIVE = native
    kernel._fast_launch = None
    prep = session.state.prepared.get(kernel.source_key)
    if prep is not None:
        prep.fast = None
