"""Exchange with CUDA libraries: torch, CuPy, JAX, Numba (SPEC §12, issue 17).

- `exports`: a `DeviceArray(..., exportable=True)` on an NVIDIA device is allocated exportable
  (Vulkan external memory, an fd) and exposes `__cuda_array_interface__` (v3) and `__dlpack__` /
  `__dlpack_device__` (kDLCUDA) over the same memory, imported into CUDA on first use.
- `imports`: a launch argument (or `DeviceArray.from_cuda`) may be a CUDA object; memory that
  CUDA allocated cannot be imported into Vulkan, so it travels device to device through CUDA
  into an exported staging array (and back for written parameters), never through the host;
  a CUDA view of a DeviceArray's own memory is used as it is.
- `describe`: what a CUDA object holds (its CUDA Array Interface or DLPack capsule, read).
- `handoff`: the order at each exchange: on the GPU through exported timeline semaphores
  imported into CUDA where the driver allows it (`handoff_mode()` says which, and why not).
- `cuda`: the driver API through ctypes, loaded at first use.

Whether a device can take part is decided from Vulkan facts only (`cuda_capable`), so nothing
here loads libcuda on lavapipe or another vendor's GPU.
"""

from __future__ import annotations

import weakref
from typing import Any

NVIDIA_VENDOR_ID = 0x10DE


_exports: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Device -> bool


def cuda_capable(device: Any) -> bool:
    """Whether `device` (a runtime Device) is an NVIDIA GPU whose memory CUDA can import: its
    driver lists VK_KHR_external_memory_fd and the opened device makes 'export' buffers
    (native/external.c). No CUDA call."""
    known = _exports.get(device)
    if known is None:
        info = device.info
        known = (
            info.vendor_id == NVIDIA_VENDOR_ID
            and bool(info.features.get("external_memory_fd"))
            and bool(device._dev.external()["memory_fd"])
        )
        _exports[device] = known
    return known


def why_not_capable(device: Any) -> str:
    """Why `device` cannot exchange memory with CUDA, in a user's words."""
    info = device.info
    if info.vendor_id != NVIDIA_VENDOR_ID:
        return f"cthreads runs on {info.name!r}, which is not an NVIDIA GPU, so CUDA cannot reach its memory"
    return f"the Vulkan driver of {info.name!r} does not list VK_KHR_external_memory_fd"


def handoff_mode(device: Any = None) -> tuple[str, str]:
    """How hand-offs with CUDA on `device` (default: the current one) wait: ("gpu", "") through
    exported timeline semaphores, or ("host", why not). On NVIDIA this loads libcuda."""
    from .handoff import mode

    return mode(device)
