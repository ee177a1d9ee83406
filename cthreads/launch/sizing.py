"""Sizing a launch (SPEC §4): the `grid=` keyword read as (nx, ny, nz), the extents a kernel
reads through `x.shape[k]`, and the dispatch commands covering a problem size — whole workgroups
for kernels that observe the workgroup (split along x past the device's group-count limit),
exact grid-stride extents for those that do not, vector-form kernels spread one element per
invocation while their blocks would leave the device part empty (`spread_below`) — with the
parameter block pushed or, past the push-constant space, in a buffer of its own. The C launcher
sizes its one dispatch the same way (native/launch.c `ct_plan_dispatch`, from the plan's
`spread_below` and `width`)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..residency.arena import SELF_RECORD_TYPES
from ..runtime.extents import extent_items, nonnegative

if TYPE_CHECKING:
    from . import session
    from .plan import LaunchPlan


# The problem size below which vector-form kernels run one element per invocation: None takes
# the device's (`spread_below`); an int forces it for every device (bench/small_saxpy.py sweeps
# the dispatch shapes this way: 0 never spreads, 2**32 always does). The general path reads it
# at every launch; a kernel's plan, and so its C launcher, takes it once, when it is made.
SPREAD_BELOW: int | None = None

_resident: dict[tuple[int, int], int] = {}  # (vendor_id, device_id) -> resident invocations


def resident_invocations(info: Any) -> int:
    """How many invocations the device runs at once: what the driver says (NVIDIA: SMs x warps
    per SM x 32, `limits["resident_invocations"]`), else the `resident_invocations` field of
    the shipped profile with the same vendor and device id (compute units x resident
    invocations per unit; Vulkan core reports neither), 0 where no profile says and on CPU
    devices, where spreading never pays (llvmpipe runs both sides of a uniform branch under a
    mask)."""
    if info.type == "cpu":
        return 0  # and no profile lookup on the first launch (time to first result)
    told = int(info.limits.get("resident_invocations", 0))  # (VK_NV_shader_sm_builtins)
    if told:
        return told
    key = (info.vendor_id, info.device_id)
    got = _resident.get(key)
    if got is None:
        from ..compiler import profiles  # once per device, off the import path (json, pathlib)

        got = 0
        for name in profiles.shipped_names():
            prof = profiles.load(name)[1]
            if (prof.get("vendor_id"), prof.get("device_id")) == key:
                got = int(prof.get("resident_invocations", 0))
                break
        _resident[key] = got
    return got


def spread_below(plan: LaunchPlan, width: int, info: Any) -> int:
    """The problem size below which a kernel of `plan`, built `width` invocations wide, is
    dispatched one invocation per element rather than one per block of its vector form: half
    the device's resident invocations, where even one element per invocation leaves it half
    empty (issue 14). Measured on the H200 (bench/small_saxpy.py, 2026-12-02): spreading won
    2-3 % at 2^16 and lost up to 33 % at 2^18-2^20, where the vector form's wider loads pay
    for its fewer invocations. 0 for scalar kernels and unknown devices."""
    return spread_threshold(plan.per_group // width, info)


def spread_threshold(per_invocation: int, info: Any) -> int:
    """`spread_below` of a kernel whose vector form covers `per_invocation` elements per
    invocation (launch/plan.py stores it in the plan, for the C launcher)."""
    if per_invocation <= 1:
        return 0
    if SPREAD_BELOW is not None:
        return SPREAD_BELOW
    return resident_invocations(info) // 2


def grid_stride_groups(plan: LaunchPlan, width: int, total: int, info: Any) -> int:
    """Workgroups along x for a grid-stride kernel covering `total` indexes: one invocation
    per element below `spread_below` (codegen_vec.py runs such a dispatch scalar), else one
    per `plan.per_group // width` elements; at most the device's limit."""
    per = width if total < spread_below(plan, width, info) else plan.per_group
    return min(max(1, -(-total // per)), plan.max_groups[0])


def parse_grid(grid: Any) -> tuple[int, int, int]:
    """`grid=` as (nx, ny, nz): an int or a tuple/list of 1 to 3 ints, each >= 0."""
    items = extent_items(grid)
    if items is None:
        raise GpuArgumentTypeError(
            f"`grid` expects an int or a tuple of 1 to 3 ints (invocations per axis); got {grid!r}",
            param="grid",
            expected="(nx,), (nx, ny) or (nx, ny, nz)",
            got=describe_grid(grid),
            hint="e.g. grid=(width, height)",
        )
    if not 1 <= len(items) <= 3:
        raise GpuInvalidArgument(
            f"`grid` has {len(items)} axes; launches have 1 to 3 (x, y, z)",
            param="grid",
            expected="1 to 3 extents",
            got=str(tuple(items)),
        )
    dims = nonnegative(items, "grid")
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]


def describe_grid(grid: Any) -> str:
    return type(grid).__name__ if not isinstance(grid, (tuple, list)) else repr(grid)


def shape_of(param: Any, value: Any, count: int, axis: int) -> tuple[int, int, int]:
    """The extents the kernel reads through `x.shape[k]` (k <= axis), padded to 3."""
    if isinstance(value, list):
        shape: tuple = (len(value),)
    elif type(value) in SELF_RECORD_TYPES:  # a DeviceArray
        shape = value.shape or (count,)
    else:
        shape = tuple(memoryview(value).shape) or (count,)
    if len(shape) <= axis:
        raise GpuInvalidArgument(
            f"kernel reads `{param.name}.shape[{axis}]` but the argument has {len(shape)} "
            f"dimension(s) (shape {shape})",
            param=param.name,
            expected=f"an array of at least {axis + 1} dimensions",
            got=f"shape {shape}",
            hint="pass a numpy array of that shape (e.g. arr.reshape(rows, cols)); Python lists are 1-D",
        )
    return (shape + (1, 1, 1))[:3]  # type: ignore[return-value]


def dispatches(
    prep: session.Prepared,
    plan: LaunchPlan,
    device: Any,
    size: tuple[int, int, int],
    addr: dict[int, int],
    count: dict[int, int],
    scalar: dict[int, int | float],
    shape: dict[int, tuple],
    buffers: list[Any],
    commands: list[tuple],
) -> None:
    """Append the dispatch(es) covering `size` (x, y, z) logical invocations to `commands`.

    A kernel that observes the workgroup runs whole workgroups: per axis `size` rounded up (at
    least one: the caller launches n <= 0 only for such kernels, as cthreads-gpu does). One that does not runs exactly the indexes
    below `size` (its grid-stride loop stops at `total`): the rounding is ours, so invocations
    past the problem never run — an unguarded kernel whose extra invocations would read zeros
    and loop forever (docs/reliability.md, "Out of range") behaves the same on every device."""
    groups3 = tuple(max(1, -(-n // w)) for n, w in zip(size, plan.wg3))
    totals = tuple(g * w for g, w in zip(groups3, plan.wg3))
    for axis, total_a in enumerate(totals):
        if total_a > 0xFFFFFFFF:
            what = (
                f"problem size {size[0]}"
                if size[1:] == (1, 1)
                else f"`grid` extent {size[axis]} along {'xyz'[axis]}"
            )
            raise GpuInvalidArgument(
                f"{what} exceeds 2**32 invocations",
                param=None if size[1:] == (1, 1) else "grid",
                hint="split the work",
            )
    grid_x, grid_y, grid_z = groups3
    total, total_y, total_z = totals
    pipeline = prep.pipeline
    mx, my, mz = plan.max_groups
    if not plan.observes_workgroup:
        total, total_y, total_z = size  # exact: the grid-stride loops stop at the problem size
        groups = grid_stride_groups(plan, prep.physical_wg, total, device.info)
        block = plan.pack(total, 0, grid_x, total_y, total_z, addr, count, scalar, shape)
        dims = (groups, max(1, min(total_y, my)), max(1, min(total_z, mz)))
        commands.append(
            ("dispatch", pipeline, push_block(plan, device, block, buffers, commands), dims)
        )
        return
    for axis in (1, 2):
        limit = plan.max_groups[axis]
        if groups3[axis] > limit:
            raise GpuInvalidArgument(
                f"`grid` needs {groups3[axis]} workgroups of {plan.wg3[axis]} along "
                f"{'xyz'[axis]} for kernel `{plan.name}`, more than the device's limit "
                f"of {limit} (only x is split across dispatches for kernels that observe the workgroup)",
                param="grid",
                expected=f"at most {limit * plan.wg3[axis]} invocations along {'xyz'[axis]}",
                got=str(size[axis]),
                hint="put the longest axis first (x), or declare a larger workgroup_size along that axis",
            )
    for base in range(0, grid_x, mx):
        block = plan.pack(total, base, grid_x, total_y, total_z, addr, count, scalar, shape)
        groups = min(mx, grid_x - base)
        dims = (groups, grid_y, grid_z)
        commands.append(
            ("dispatch", pipeline, push_block(plan, device, block, buffers, commands), dims)
        )


def push_block(
    plan: LaunchPlan, device: Any, block: bytes, buffers: list[Any], commands: list[tuple]
) -> bytes:
    """The push-constant bytes: the block itself, or the address of a buffer holding it when it
    exceeds the device's push-constant space (the block travels like a list)."""
    if not plan.in_buffer:
        return block
    pbuf = device.buffer(len(block))
    buffers.append(pbuf)
    if pbuf.host_visible:
        pbuf.write(block)
    else:
        staging = device.buffer(len(block), usage="upload")
        buffers.append(staging)
        staging.write(block)
        commands.append(("copy", staging, pbuf, len(block), 0, 0))
    return struct.pack("<Q", pbuf.address)
