"""Residency: `GpuArena` keeps lists and arrays on the device across launches (SPEC §7)."""

from .arena import GpuArena, lookup

__all__ = ["GpuArena", "lookup"]
