"""Fixtures for the several-devices tests: the default device, and a skip without Vulkan."""

from __future__ import annotations

import pytest

from cthreads import runtime


@pytest.fixture
def device():
    """The default runtime device (skips where there is no Vulkan device)."""
    if not runtime.available():
        pytest.skip("no Vulkan device")
    return runtime.get_device()
