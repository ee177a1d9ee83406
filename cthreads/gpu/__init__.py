"""The public `cthreads.gpu` API (SPEC §1): kernels, launch, jobs, residency, probes, errors.

A face only: everything lives in `cthreads.gpu.kernel`, `cthreads.launch`,
`cthreads.residency` and `cthreads.runtime`. Importing it never touches Vulkan.
"""

from __future__ import annotations

from .. import runtime as _runtime
from ..errors import (
    CThreadsGPUError,
    GpuArgumentTypeError,
    GpuCompileError,
    GpuDeviceLost,
    GpuInternalCompilerError,
    GpuInvalidArgument,
    GPUNotAvailable,
    GpuTimeout,
    GpuUseAfterDestroy,
    VulkanInitFailed,
    VulkanLoaderNotFound,
    VulkanNoDevice,
    VulkanNotBuiltError,
    VulkanOutOfMemory,
)
from ..launch import GpuJob, compile, gpu, prepare
from ..launch import shutdown as _shutdown
from ..launch.stream import Stream
from ..residency import DeviceArray, GpuArena
from .devices import GpuDevice, current_device, device, devices, split
from .atomics import (
    atomic_add,
    atomic_and,
    atomic_compare_exchange,
    atomic_exchange,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xor,
)
from .copies import copy16
from .tuning import autotune
from .indices import BlockDim, BlockIdx, GlobalIdx, GridDim, ThreadIdx
from .kernel import Gpu, GpuKernel
from .shared import local, shared
from .subgroup import (
    num_subgroups,
    subgroup_add,
    subgroup_all,
    subgroup_any,
    subgroup_ballot,
    subgroup_broadcast,
    subgroup_broadcast_first,
    subgroup_elect,
    subgroup_exclusive_add,
    subgroup_id,
    subgroup_inclusive_add,
    subgroup_lane,
    subgroup_max,
    subgroup_min,
    subgroup_shuffle,
    subgroup_shuffle_xor,
    subgroup_size,
)
from .tiles import (
    MatrixShape,
    bf16,
    from_bf16,
    tile_fill,
    tile_load,
    tile_mma,
    tile_store,
    to_bf16,
)
from .types import f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64


def available() -> bool:
    """Whether a Vulkan compute device can be used. Never raises."""
    return _runtime.available()


def device_name() -> str:
    """Name of the device kernels run on; raises the §9 error if there is none."""
    return _runtime.device_name()


def matrix_shapes() -> list[MatrixShape]:
    """The matrix tile shapes the device's matrix units run (VK_KHR_cooperative_matrix,
    subgroup scope): `MatrixShape(m, n, k, a, b, c, result)` each, types as names ("f16",
    "f32", "i8", ...); an empty list on a device without them (lavapipe). Raises the §9 error
    if there is no device."""
    from ..compiler.target import matrix_shapes as _shapes

    info = _runtime.default_device_info()
    return [MatrixShape(*s) for s in _shapes({"cooperative_matrix": info.cooperative_matrix})]


def init() -> None:
    """Open the default device now (normally done by `prepare()`/`gpu()`); raises §9 errors."""
    _runtime.init()


def shutdown() -> None:
    """Release every open device; the next `prepare()`/`gpu()` starts again."""
    _shutdown()


__all__ = [
    "BlockDim",
    "BlockIdx",
    "CThreadsGPUError",
    "DeviceArray",
    "GPUNotAvailable",
    "GlobalIdx",
    "Gpu",
    "GpuArena",
    "GpuArgumentTypeError",
    "GpuCompileError",
    "GpuDevice",
    "GpuDeviceLost",
    "GpuInternalCompilerError",
    "GpuInvalidArgument",
    "GpuJob",
    "GpuKernel",
    "MatrixShape",
    "PipelineExecutable",
    "PipelineStatistic",
    "GpuTimeout",
    "GpuUseAfterDestroy",
    "GridDim",
    "Stream",
    "ThreadIdx",
    "VulkanInitFailed",
    "VulkanLoaderNotFound",
    "VulkanNoDevice",
    "VulkanNotBuiltError",
    "VulkanOutOfMemory",
    "atomic_add",
    "atomic_and",
    "atomic_compare_exchange",
    "atomic_exchange",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_xor",
    "autotune",
    "available",
    "bf16",
    "compile",
    "copy16",
    "current_device",
    "device",
    "device_name",
    "devices",
    "f16",
    "f32",
    "f64",
    "from_bf16",
    "gpu",
    "i8",
    "i16",
    "i32",
    "i64",
    "init",
    "local",
    "matrix_shapes",
    "pipeline_statistics",
    "num_subgroups",
    "prepare",
    "shared",
    "shutdown",
    "split",
    "subgroup_add",
    "subgroup_all",
    "subgroup_any",
    "subgroup_ballot",
    "subgroup_broadcast",
    "subgroup_broadcast_first",
    "subgroup_elect",
    "subgroup_exclusive_add",
    "subgroup_id",
    "subgroup_inclusive_add",
    "subgroup_lane",
    "subgroup_max",
    "subgroup_min",
    "subgroup_shuffle",
    "subgroup_shuffle_xor",
    "subgroup_size",
    "tile_fill",
    "tile_load",
    "tile_mma",
    "tile_store",
    "to_bf16",
    "u8",
    "u16",
    "u32",
    "u64",
]

# loaded on first use: its dataclasses cost ~2 ms of `import cthreads.gpu` (issue 19) for a
# report only benchmarks ask for
_LAZY = {"PipelineExecutable", "PipelineStatistic", "pipeline_statistics"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import statistics

        return getattr(statistics, name)
    raise AttributeError(f"module 'cthreads.gpu' has no attribute {name!r}")
