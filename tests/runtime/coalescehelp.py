"""Shared helpers of the coalescing tests (test_coalescing*.py): a keep object to watch, a
polling wait, a gated busy queue and a counter buffer to read back."""

from __future__ import annotations

import time

import numpy as np
from conftest import Gate

VK_ERROR_OUT_OF_DEVICE_MEMORY = -2
VK_ERROR_DEVICE_LOST = -4


class Token:
    """A keep object we can watch with a weakref."""


def _eventually(pred, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.001)
    return pred()


def _busy(device, kernels):
    """Put a kernel in flight that runs until the returned gate is opened (conftest.Gate):
    the queue is busy for certain, on any device, until then. Returns (its value, the gate)."""
    gate = Gate(device)
    return gate.value, gate


def _counter(device, n=256, start=0):
    buf = device.buffer(4 * n)
    buf.write(np.full(n, start, np.int32))
    return buf


def _read(buf, n=256):
    out = np.empty(n, np.int32)
    buf.read_into(out)
    return out
