"""Residency: `GpuArena` keeps lists and arrays on the device across launches (SPEC §7);
`DeviceArray` is device memory with a shape and an element type (issue 15)."""

from .arena import GpuArena, lookup
from .device_array import DeviceArray

__all__ = ["DeviceArray", "GpuArena", "lookup"]
