"""`kernel.compile(chip=...)`: compile for a device profile without launching (issue 15).

`chip=None` is the present device (described without opening it, as `prepare()` does), or the
shipped `portable` profile when there is none (no Vulkan, no usable device). A name or a path
resolves through `cthreads.compiler.profiles`. Compiling goes through the launch's own path
(`session.compiled_for`: the same cache, the same errors), so what this returns is what a launch
on that device runs.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ..compiler import profiles
from ..compiler.build import KernelBuild, make
from ..errors import GPUNotAvailable


def present_profile() -> tuple[str, dict[str, Any]] | None:
    """(device name, profile) of the device launches would use, or None without one."""
    from .. import runtime

    try:
        info = runtime.default_device_info()
    except GPUNotAvailable:
        return None
    return info.name, profiles.profile_of(info)


def compile_for(kernel: Any, chip: Any = None) -> KernelBuild:
    """`kernel` compiled for `chip` (see the module docstring); raises the kernel's
    `GpuCompileError` where the profile lacks something it uses, `GpuInvalidArgument` naming
    `chip` for a profile that cannot be found or read."""
    from ..launch.session import compiled_for

    if chip is None:
        present = present_profile()
        if present is not None:
            label, profile = present
            _, _, target = profiles.load(profile)
        else:
            label, profile, target = profiles.load(profiles.PORTABLE)
    else:
        label, profile, target = profiles.load(chip)
    compiled = compiled_for(kernel, target)
    width = _physical_width(profile)
    if kernel._physical_width:  # an autotune variant's workgroup_size choice
        width = min(kernel._physical_width, target.max_workgroup_invocations)
    return make(label, profile, target, compiled, width)


def _physical_width(profile: dict[str, Any]) -> int:
    """The workgroup width a launch on this device picks (launch's own rule, fed the profile's
    limits in place of an open device's)."""
    from ..launch.session import physical_workgroup

    limits = dict(profile.get("limits", {}))
    return physical_workgroup(SimpleNamespace(info=SimpleNamespace(limits=limits)))
