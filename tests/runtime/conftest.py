"""Fixtures for runtime tests: the default device and the shaders of `shaders/` as pipelines.

These tests use only GLSL shaders compiled at build time, never the cthreads compiler.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from devicehelp import QueueGate

from cthreads import runtime
from cthreads.errors import GpuUseAfterDestroy


@pytest.fixture
def device():
    if not runtime.available():
        pytest.skip("no Vulkan device")
    return runtime.get_device()


# name -> push-constant layout (struct format) of each shader
PUSH = {
    "saxpy": "<QQIf",
    "fill_u32": "<QII",
    "add_i32": "<QIi",
    "copy_u8": "<QQII",
    "copy_u32": "<QQI",
    "scale_spec": "<QI",
    "spin": "<QII",
    "gate": "<QII",
}


class Kernels:
    """Pipelines for the test shaders on one device, made once per device generation."""

    def __init__(self, dev):
        self.dev = dev
        self._pipes = {}

    def pipe(self, name, spec=None):
        key = (name, tuple(sorted((spec or {}).items())))
        if key not in self._pipes:
            size = (struct.calcsize(PUSH[name]) + 3) // 4 * 4
            self._pipes[key] = self.dev.pipeline(runtime.load_shader(name), size, spec)
        return self._pipes[key]

    def dispatch(self, name, n, *args, spec=None, groups=None):
        push = struct.pack(PUSH[name], *args)
        if groups is None:
            groups = (max(1, -(-n // 64)), 1, 1)
        return ("dispatch", self.pipe(name, spec), push, groups)


_kernels: dict[int, Kernels] = {}


@pytest.fixture
def kernels(device):
    k = _kernels.get(id(device))
    if k is None or k.dev is not device:
        _kernels.clear()
        k = _kernels[id(device)] = Kernels(device)
    return k


class Gate(QueueGate):
    """Holds the queue busy until `open()`: the `gate` shader polls a host-visible flag.

    Deterministic on any device (a fast GPU finishes a merely slow kernel at once). The
    `device` fixture opens every gate a test left closed, so no test leaves the queue blocked.
    `polls` and the invocation count bound it if the flag is never seen (lavapipe: about a
    minute; its loops end after ~65,535 iterations per invocation, so n makes the length)."""

    def __init__(self, device, n=1 << 16, polls=1 << 24):
        super().__init__(n, polls, device=device)
        _gates.append(self)

    def open(self):
        """Let the kernel end (also while the device is being shut down: teardown waits for
        it, so the flag is set through a store that works then)."""
        try:
            super().open()
        except GpuUseAfterDestroy:  # destroyed meanwhile: nothing left to open
            pass

    def saw_it(self) -> bool:
        """Whether the kernel read the open flag (it did not end on its safety net)."""
        out = np.zeros(2, np.uint32)
        self.flag.read_into(out)
        return bool(out[1])


_gates: list[Gate] = []


@pytest.fixture(autouse=True)
def _no_leftovers():
    """After each test: open the gates it left closed, and drop an injected submit error (and
    a failure the background thread met but nobody reported) so it cannot fail the next."""
    yield
    gates, _gates[:] = list(_gates), []
    for gate in gates:
        gate.open()
    dev = runtime.lifecycle._device
    if dev is not None and dev.alive:
        dev._dev._inject_submit_error(0)
        try:
            dev.submit([])  # reports (and so clears) an unreported background failure
            dev.wait_idle()
        except Exception:  # noqa: BLE001 - whatever it was, it stays with this test
            runtime.shutdown()
