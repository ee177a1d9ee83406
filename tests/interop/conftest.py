"""Fixtures of the CUDA exchange tests: `nvidia` is the CUDA context of the GPU cthreads runs
on, or a skip that says what is missing (an NVIDIA device, its external memory, libcuda)."""

from __future__ import annotations

import ctypes

import pytest

from cthreads.runtime import get_device


@pytest.fixture
def nvidia():
    from cthreads.interop import cuda, cuda_capable

    device = get_device()
    if not cuda_capable(device):
        pytest.skip(
            f"needs an NVIDIA GPU whose Vulkan driver lists VK_KHR_external_memory_fd; "
            f"cthreads runs on {device.name!r}"
        )
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        pytest.skip(f"no CUDA driver library here ({exc})")
    # from here on a failure is a failure: the GPU and its CUDA driver are both present
    return cuda.context_for(device)
