"""`Target`: what the compiler may assume about the device, as plain data.

The compiler never imports the runtime; launch builds a `Target` from the device's limits and
features and passes it in. `Target.key()` goes into the SPIR-V cache key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Target:
    max_push_constants_size: int = 128  # bytes; Vulkan guarantees at least 128
    max_workgroup_size: tuple[int, int, int] = (1024, 1024, 64)
    max_workgroup_invocations: int = 1024
    storage_8bit: bool = True  # storageBuffer8BitAccess + shaderInt8 (list[bool] is one byte each)
    float64: bool = False
    int64: bool = False
    float16: bool = False  # shaderFloat16 (f16 values)
    int16: bool = False  # shaderInt16 (i16/u16 values)
    storage_16bit: bool = False  # storageBuffer16BitAccess (f16/i16/u16 list elements)
    int64_atomics: bool = False  # shaderBufferInt64Atomics (atomics on i64/u64 lists)
    subgroup_size: int = 32
    # shaderSignedZeroInfNanPreserveFloat32: ask the driver to keep IEEE NaN/inf/-0.0 meaning
    # (without it drivers may fold 0.0 * x to 0.0 and x / x to 1.0)
    nan_inf_preserve: bool = False
    # maxComputeSharedMemorySize: bytes of workgroup shared arrays per kernel (Vulkan: >= 16384)
    max_shared_memory: int = 16384
    # shaderBufferFloat32AtomicAdd (VK_EXT_shader_atomic_float): native float atomic_add on lists;
    # without it (and always on shared arrays) codegen uses a compare-exchange loop
    atomic_float32_add: bool = False
    # Vulkan 1.1 subgroup operation classes supported in compute shaders
    # (VkPhysicalDeviceSubgroupProperties.supportedOperations); BASIC is guaranteed
    subgroup_basic: bool = True
    subgroup_arithmetic: bool = False
    subgroup_ballot: bool = False
    subgroup_shuffle: bool = False
    subgroup_vote: bool = False
    # shaderSubgroupExtendedTypes (Vulkan 1.2): subgroup operations on i64/u64/f64 values
    # (narrow values are widened to 32 bits and need nothing)
    subgroup_extended_types: bool = False
    # GLSL.std.450 Fma is fused (one rounding) — GPU hardware; lavapipe splits it into a multiply
    # and an add. Where it is fused, float32 `/` gets one correction step that makes it correctly
    # rounded (Vulkan lets OpFDiv be 2.5 ULP off; lavapipe's OpFDiv is already exact).
    fused_fma: bool = False

    def key(self) -> str:
        """A stable text form for cache keys."""
        return ",".join(f"{k}={v}" for k, v in sorted(asdict(self).items()))


DEFAULT_TARGET = Target()
