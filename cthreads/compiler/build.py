"""`KernelBuild`: one kernel compiled for one device profile, for looking at without launching.

What `kernel.compile(chip=...)` returns: the SPIR-V, its disassembly (made on first use: it runs
`spirv-dis`), the cache key, the Target and profile it was built for, and `contract`, the launch
contract as plain data: parameters with their types, which lists are read and written, the
logical and the physical workgroup size, the parameter block's layout, and the device limits a
launch splits its dispatches by. The physical workgroup width is the launch's choice (an input
here), so the contract is what a launch on that device uses.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from ..forwarding import forwarded
from .artifact import CompiledKernel
from .target import Target


@dataclass(frozen=True, eq=False)
class KernelBuild:
    chip: str  # the profile's name as given, its path, or the present device's name
    compiled: CompiledKernel
    target: Target
    contract: dict[str, Any]
    profile: dict[str, Any] = field(repr=False)

    name = forwarded("compiled")
    spirv = forwarded(
        "compiled", "The SPIR-V module (bytes, little-endian words), validated by spirv-val."
    )
    cache_key = forwarded(
        "compiled", "The key of this build in the on-disk cache (a launch on that device uses it)."
    )

    @functools.cached_property
    def asm(self) -> str:
        """The module as `spirv-dis` text (what `compile --spvasm` writes)."""
        from .spirv.tools import disassemble

        return disassemble(self.compiled.spirv)

    def __repr__(self) -> str:
        c = self.contract
        where = "in a buffer" if c["push"]["in_buffer"] else "in push constants"
        return (
            f"<KernelBuild {self.name} for {self.chip!r}: {len(self.spirv)} bytes of SPIR-V, "
            f"workgroup {c['physical_workgroup_size']}, {c['push']['size']}-byte parameter block "
            f"{where}, cache key {self.cache_key}>"
        )


def make(
    chip: str,
    profile: dict[str, Any],
    target: Target,
    compiled: CompiledKernel,
    physical_width: int,
) -> KernelBuild:
    """Assemble the build; `physical_width` is the workgroup width a launch on the device uses
    for kernels that do not observe their workgroup (ignored for those that do)."""
    base = compiled.contract()
    names = [p.name for p in compiled.params]
    limits = profile.get("limits", {})
    wg = tuple(compiled.workgroup_size) if compiled.observes_workgroup else (physical_width, 1, 1)
    push = compiled.push
    contract = {
        "name": compiled.name,
        "chip": chip,
        "params": base["params"],
        "workgroup_size": tuple(compiled.workgroup_size),
        "observes_workgroup": compiled.observes_workgroup,
        "physical_workgroup_size": wg,
        "elements_per_invocation": compiled.elements_per_invocation,
        "push": {
            "size": push.size,
            "push_constant_bytes": push.push_size,
            "in_buffer": push.in_buffer,
            "fields": [
                {
                    "role": f.role,
                    "param": None if f.param is None else names[f.param],
                    "offset": f.offset,
                    "format": f.fmt,
                }
                for f in sorted(push.fields, key=lambda f: f.offset)
            ],
        },
        "limits": {
            "max_push_constants_size": target.max_push_constants_size,
            "max_compute_work_group_invocations": target.max_workgroup_invocations,
            "max_compute_work_group_size": tuple(target.max_workgroup_size),
            "max_compute_shared_memory_size": target.max_shared_memory,
            **{
                key: (tuple(limits[key]) if isinstance(limits[key], list) else limits[key])
                for key in ("max_compute_work_group_count", "max_storage_buffer_range")
                if key in limits
            },
        },
    }
    return KernelBuild(chip, compiled, target, contract, profile)
