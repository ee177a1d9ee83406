"""cthreads.runtime: the Vulkan runtime as a thin typed layer over `cthreads._native`.

Devices, pooled buffers, pipelines and stream-ordered submission; device choice policy
(which devices are visible, which is the default, the `GpuDevice` handles of several open
devices) and the pipeline-cache file live here, the mechanism in C. Importing this never touches Vulkan.
"""

from __future__ import annotations

from . import native as _native_access
from .device import Device
from .info import DeviceInfo
from .lifecycle import (
    available,
    current_generation,
    default_device_info,
    device_name,
    get_device,
    init,
    list_devices,
    shutdown,
    validation_messages,
    visible_devices,
)
from .shaders import load_shader

if _native_access.built():
    Buffer = _native_access.module().Buffer
    Pipeline = _native_access.module().Pipeline
else:  # placeholders so type annotations and isinstance checks still work

    class Buffer:  # type: ignore[no-redef]
        """Unavailable: the native extension is not built."""

    class Pipeline:  # type: ignore[no-redef]
        """Unavailable: the native extension is not built."""


__all__ = [
    "Buffer",
    "Device",
    "DeviceInfo",
    "Pipeline",
    "available",
    "current_generation",
    "default_device_info",
    "device_name",
    "get_device",
    "init",
    "list_devices",
    "load_shader",
    "shutdown",
    "validation_messages",
    "visible_devices",
]
