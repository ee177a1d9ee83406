"""Testing tools for cthreads kernels: `emulate()` runs a `@Gpu` kernel as plain Python with the
device's semantics (the oracle); `kernelgen` and `differential` (need hypothesis) fuzz the compiler
against it. See docs/reliability.md.
"""

from __future__ import annotations

from .emulate import emulate, kernel_workgroup
from .semantics import EmulationError, KernelUndefined

__all__ = ["EmulationError", "KernelUndefined", "emulate", "kernel_workgroup"]
