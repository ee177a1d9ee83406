"""What the driver says about a kernel's compiled code: `pipeline_statistics(kernel)`.

A fast kernel variant can lose its speed to the driver's register allocator (spilling to local
memory) or to an occupancy limit that no timing explains. Vulkan's
VK_KHR_pipeline_executable_properties lets the driver report, per executable of a pipeline,
statistics it names itself: register counts, spill sizes, shared memory, instruction counts
(NVIDIA, RADV, ANV and newer lavapipe each use their own names). This module turns that report
into values a benchmark can print next to its timing.

The report comes from a pipeline built for it alone, with the same SPIR-V and workgroup width
a launch uses but with statistics capture on (native/pipeline.c): capturing can cost the
driver compile time and memory per pipeline, so launch pipelines never ask for it, and nothing
is kept or cached, so each call compiles again. Devices without the extension (lavapipe of
Mesa 22.3) report nothing: the function returns None there, and a device's
`info.features["pipeline_statistics"]` (`cthreads.gpu.device()`) says in advance which case
applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import GpuInvalidArgument


@dataclass(frozen=True)
class PipelineStatistic:
    """One statistic of an executable: the driver's name and description, and its value
    (a bool, an int or a float, as the driver gives it)."""

    name: str
    description: str
    value: bool | int | float


@dataclass(frozen=True)
class PipelineExecutable:
    """One executable of a pipeline (a compute pipeline has one per compiled stage; some
    drivers report several, for instance one per subgroup size): its name, description,
    subgroup size (0 where the driver does not fix one) and statistics in the driver's order."""

    name: str
    description: str
    subgroup_size: int
    statistics: tuple[PipelineStatistic, ...]

    def __getitem__(self, name: str) -> bool | int | float:
        """The value of the statistic called `name` (exactly as the driver spells it)."""
        for s in self.statistics:
            if s.name == name:
                return s.value
        known = ", ".join(repr(s.name) for s in self.statistics) or "none"
        raise KeyError(f"executable {self.name!r} has no statistic {name!r} (it has {known})")

    def as_dict(self) -> dict[str, bool | int | float]:
        """The statistics as {name: value}."""
        return {s.name: s.value for s in self.statistics}


def executables(report: list[dict] | None) -> list[PipelineExecutable] | None:
    """The native report (`Device.pipeline_statistics`: dicts of name, description,
    subgroup_size, statistics) as `PipelineExecutable`s; None stays None."""
    if report is None:
        return None
    return [
        PipelineExecutable(
            name=e["name"],
            description=e["description"],
            subgroup_size=int(e["subgroup_size"]),
            statistics=tuple(
                PipelineStatistic(s["name"], s["description"], s["value"]) for s in e["statistics"]
            ),
        )
        for e in report
    ]


def pipeline_statistics(
    kernel: Any, *, pins: dict[str, Any] | None = None, device: Any = None
) -> list[PipelineExecutable] | None:
    """What the driver reports on `kernel`'s launch pipeline on `device` (a `GpuDevice` or what
    `cthreads.gpu.device()` takes; default: the current device, else the default one): a list
    of `PipelineExecutable`, or None where the device lacks VK_KHR_pipeline_executable_properties.
    `pins` picks the variant of an `@autotune` kernel, as in `kernel.compile()`. Compiles the
    kernel if needed (raising its compile error) and builds a pipeline of its own; launches
    nothing. Raises `GpuInvalidArgument` when `kernel` is not an `@Gpu` kernel."""
    from ..launch.session import pipeline_statistics as report_of
    from ..launch.session import state_for
    from ..runtime.handle import resolve
    from .kernel import GpuKernel
    from .variants import pinned_variant

    if not isinstance(kernel, GpuKernel):
        raise GpuInvalidArgument(
            "pipeline_statistics() takes an @Gpu kernel",
            param="kernel",
            expected="a function decorated with @Gpu",
            got=type(kernel).__name__,
        )
    chosen = pinned_variant(kernel, pins)
    return executables(report_of(chosen, state_for(resolve(device))))
