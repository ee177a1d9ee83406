"""`Target`: what the compiler may assume about the device, as plain data.

The compiler never imports the runtime: a device is described to it as a *profile*, a plain dict
(`type`, `limits`, `features`, as `python -m cthreads.gpu info --json` writes them), and
`target_from_profile` is the one place that turns a profile into a `Target`; launch passes the
present device's description through it, `kernel.compile(chip=...)` a shipped or saved profile
(compiler/profiles.py). `Target.key()` goes into the SPIR-V cache key.

`Target` is a frozen record (cthreads/record.py), not a dataclass: a warm launch builds one per
device and its 23 fields cost ~2-3 ms of dataclass code generation at import (issue 19).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..record import Record


# -- Target ----------------------------------------------------------------------------------


class Target(Record):
    """What the compiler may assume about one device (see the module docstring). A frozen
    record (`Record` above), not a dataclass: a warm launch builds one per device and its
    23 fields cost ~2-3 ms of dataclass code generation at import (issue 19)."""

    _defaults: dict[str, Any] = {
        "max_push_constants_size": 128,  # bytes; Vulkan guarantees at least 128
        "max_workgroup_size": (1024, 1024, 64),
        "max_workgroup_invocations": 1024,
        # storageBuffer8BitAccess + shaderInt8 (list[bool] is one byte each)
        "storage_8bit": True,
        "float64": False,
        "int64": False,
        "float16": False,  # shaderFloat16 (f16 values)
        "int16": False,  # shaderInt16 (i16/u16 values)
        "storage_16bit": False,  # storageBuffer16BitAccess (f16/i16/u16 list elements)
        "int64_atomics": False,  # shaderBufferInt64Atomics (atomics on i64/u64 lists)
        "subgroup_size": 32,
        # minSubgroupSize (VkPhysicalDeviceSubgroupSizeControlProperties, Vulkan 1.3): no
        # subgroup is smaller, which bounds subgroup_id() (compiler/ranges.py); 1 if unknown
        "min_subgroup_size": 1,
        # shaderSignedZeroInfNanPreserveFloat32: ask the driver to keep IEEE NaN/inf/-0.0
        # meaning (without it drivers may fold 0.0 * x to 0.0 and x / x to 1.0)
        "nan_inf_preserve": False,
        # maxComputeSharedMemorySize: bytes of workgroup shared arrays per kernel (>= 16384)
        "max_shared_memory": 16384,
        # shaderBufferFloat32AtomicAdd (VK_EXT_shader_atomic_float): native float atomic_add on
        # lists; without it (and always on shared arrays) codegen uses a compare-exchange loop
        "atomic_float32_add": False,
        # Vulkan 1.1 subgroup operation classes supported in compute shaders
        # (VkPhysicalDeviceSubgroupProperties.supportedOperations); BASIC is guaranteed
        "subgroup_basic": True,
        "subgroup_arithmetic": False,
        "subgroup_ballot": False,
        "subgroup_shuffle": False,
        "subgroup_vote": False,
        # shaderSubgroupExtendedTypes (Vulkan 1.2): subgroup operations on i64/u64/f64 values
        # (narrow values are widened to 32 bits and need nothing)
        "subgroup_extended_types": False,
        # GLSL.std.450 Fma is fused (one rounding) — GPU hardware; lavapipe splits it into a
        # multiply and an add. Where it is fused, float32 `/` gets one correction step that
        # makes it correctly rounded (Vulkan lets OpFDiv be 2.5 ULP off; lavapipe's is exact).
        "fused_fma": False,
        # VK_KHR_cooperative_matrix, subgroup scope: the (M, N, K, A, B, C, Result) combinations
        # the device lists (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR), types as names
        # ("f16", "f32", "i8", "u8", "i32", "u32", "bf16"); empty: no matrix units (tile
        # kernels refused)
        "matrix_shapes": (),
        # the 4-wide form of element-wise kernels (codegen_vec.py): where it pays, on GPUs (H200
        # saxpy: 1.13-1.26 x the scalar form above 2^20 elements); CPU devices keep the scalar
        # one (lavapipe: slower at every size, and its pipeline takes twice as long to create,
        # issue 19). CTHREADS_NO_VECTORIZE / CTHREADS_VECTORIZE override it (compile.py)
        "vector_form": True,
    }
    _fields = tuple(_defaults)
    __slots__ = (*_fields, "_key")  # _key: key()'s text, made once

    max_push_constants_size: int
    max_workgroup_size: tuple[int, int, int]
    max_workgroup_invocations: int
    storage_8bit: bool
    float64: bool
    int64: bool
    float16: bool
    int16: bool
    storage_16bit: bool
    int64_atomics: bool
    subgroup_size: int
    min_subgroup_size: int
    nan_inf_preserve: bool
    max_shared_memory: int
    atomic_float32_add: bool
    subgroup_basic: bool
    subgroup_arithmetic: bool
    subgroup_ballot: bool
    subgroup_shuffle: bool
    subgroup_vote: bool
    subgroup_extended_types: bool
    fused_fma: bool
    matrix_shapes: tuple[tuple[int, int, int, str, str, str, str], ...]
    vector_form: bool

    def key(self) -> str:
        """A stable text form for cache keys (fields sorted by name; made once per Target)."""
        try:
            return self._key
        except AttributeError:
            pass
        text = ",".join(f"{k}={getattr(self, k)}" for k in sorted(self._fields))
        object.__setattr__(self, "_key", text)
        return text


DEFAULT_TARGET = Target()


# Target fields read from the profile's features by a naming rule: `float64` from
# `shader_float64`, ...; the subgroup operation classes under their own names
_SHADER_TYPES = ("float64", "int64", "float16", "int16")
_SUBGROUP_FEATURES = (
    "subgroup_arithmetic",
    "subgroup_ballot",
    "subgroup_shuffle",
    "subgroup_vote",
    "subgroup_extended_types",
)


def target_from_profile(profile: Mapping[str, Any]) -> Target:
    """The compile target for a device profile: a mapping with `type` (a Vulkan device type:
    "cpu", "discrete", ...), `limits` and `features` (the keys `cthreads.runtime.DeviceInfo`
    and `info --json` use). A missing limit or feature takes the value Vulkan guarantees.

    Raises `ValueError` naming the entry when a value has the wrong form (a profile written by
    hand); compiler/profiles.py turns that into the caller's `GpuInvalidArgument`."""
    limits = _section(profile, "limits")
    feats = _section(profile, "features")

    def limit(key: str, default: int) -> int:
        value = limits.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"limits.{key} must be a non-negative integer; got {value!r}")
        return value

    def feature(key: str, default: bool = False) -> bool:
        value = feats.get(key, default)
        if not isinstance(value, bool):
            raise ValueError(f"features.{key} must be true or false; got {value!r}")
        return value

    wg = limits.get("max_compute_work_group_size", (1024, 1024, 64))
    if (
        not isinstance(wg, (list, tuple))
        or len(wg) != 3
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in wg)
    ):
        raise ValueError(
            f"limits.max_compute_work_group_size must be three positive integers; got {wg!r}"
        )
    device_type = profile.get("type", "other")
    if not isinstance(device_type, str):
        raise ValueError(f"type must be a Vulkan device type name; got {device_type!r}")
    return Target(
        max_push_constants_size=limit("max_push_constants_size", 128),
        # a tuple whatever the source (JSON gives lists): Target.key() must not tell them apart
        max_workgroup_size=tuple(wg),
        max_workgroup_invocations=limit("max_compute_work_group_invocations", 1024),
        storage_8bit=feature("storage_buffer_8bit", True),
        # (keyword order is evaluation order: the first wrong entry is the one reported)
        **{name: feature(f"shader_{name}") for name in _SHADER_TYPES},
        storage_16bit=feature("storage_buffer_16bit"),
        int64_atomics=feature("shader_buffer_int64_atomics"),
        subgroup_size=limit("subgroup_size", 32),
        min_subgroup_size=max(1, limit("min_subgroup_size", 1)),
        nan_inf_preserve=feature("float32_nan_inf_preserve"),
        max_shared_memory=limit("max_compute_shared_memory_size", 16384),
        atomic_float32_add=feature("atomic_float32_add"),
        subgroup_basic=feature("subgroup_basic", True),
        **{name: feature(name) for name in _SUBGROUP_FEATURES},
        # GPUs have a hardware fused multiply-add; CPU devices (lavapipe) do not fuse Fma
        fused_fma=device_type != "cpu",
        matrix_shapes=matrix_shapes(profile),
        vector_form=device_type != "cpu",
    )


MATRIX_TYPES = frozenset(("f16", "f32", "bf16", "i8", "u8", "i32", "u32"))
# component types a driver may list that tiles do not have (native/physdev.c names them; "other"
# is any it has no name for, e.g. fp8): such entries are left out, not errors
_OTHER_COMPONENTS = frozenset(("f64", "i16", "i64", "u16", "u64", "other"))


def matrix_shapes(
    profile: Mapping[str, Any],
) -> tuple[tuple[int, int, int, str, str, str, str], ...]:
    """The subgroup-scope cooperative matrix shapes of a profile's `cooperative_matrix` list
    (each {"m", "n", "k", "a", "b", "c", "result", "scope"}, as `info --json` writes them);
    entries of another scope are left out. Sorted, so the Target key does not depend on the
    driver's order."""
    entries = profile.get("cooperative_matrix", [])
    if not isinstance(entries, (list, tuple)):
        raise ValueError(f"cooperative_matrix must be a list; got {type(entries).__name__}")
    out = set()
    for e in entries:
        if not isinstance(e, Mapping):
            raise ValueError(f"cooperative_matrix entries are JSON objects; got {e!r}")
        if e.get("scope", "subgroup") != "subgroup":
            continue
        dims = [e.get(d) for d in ("m", "n", "k")]
        types = [e.get(t) for t in ("a", "b", "c", "result")]
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            raise ValueError(f"cooperative_matrix entry {e!r}: m, n, k must be positive integers")
        if all(t in MATRIX_TYPES | _OTHER_COMPONENTS for t in types) and not all(
            t in MATRIX_TYPES for t in types
        ):
            continue
        if not all(t in MATRIX_TYPES for t in types):
            raise ValueError(
                f"cooperative_matrix entry {e!r}: a, b, c, result must be among "
                f"{', '.join(sorted(MATRIX_TYPES))}"
            )
        out.add((*dims, *types))
    return tuple(sorted(out))


def _section(profile: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    if not isinstance(profile, Mapping):
        raise ValueError(f"a device profile is a JSON object; got {type(profile).__name__}")
    value = profile.get(name, {})
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a JSON object; got {type(value).__name__}")
    return value
