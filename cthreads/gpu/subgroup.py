"""Subgroup operations: `subgroup_add(x)`, `subgroup_ballot(c)`, `subgroup_shuffle(x, lane)`, ...

A subgroup is a hardware-defined set of invocations of one workgroup that run in lockstep (a warp
on NVIDIA, a wavefront on AMD, 8 lanes on lavapipe with AVX2). Inside a `@Gpu` kernel each
function here is one Vulkan 1.1 non-uniform group operation (OpGroupNonUniform*, Subgroup scope)
over the invocations of the subgroup that execute it together (the *active* ones). The compiler
recognises these functions by their `__gpu_builtin__` tag.

On the host (a kernel called as plain Python) one invocation is a subgroup of one: size 1,
lane 0, `subgroup_add(x) == x`, `subgroup_elect()` is True, and a lane other than 0 reads 0.
"""

from __future__ import annotations

from typing import Any

from .builtin import tagged


def subgroup_size() -> int:
    """The number of invocations per subgroup (SubgroupSize; a power of two on real devices)."""
    return 1


def subgroup_lane() -> int:
    """This invocation's index within its subgroup, 0 .. subgroup_size() - 1."""
    return 0


def subgroup_id() -> int:
    """The index of this invocation's subgroup within its workgroup (SubgroupId)."""
    return 0


def num_subgroups() -> int:
    """The number of subgroups in the workgroup (NumSubgroups)."""
    return 1


def subgroup_add(x: Any) -> Any:
    """The sum of `x` over the active invocations of the subgroup (ints wrap)."""
    return int(x) if isinstance(x, bool) else x


def subgroup_min(x: Any) -> Any:
    """The minimum of `x` over the active invocations of the subgroup."""
    return int(x) if isinstance(x, bool) else x


def subgroup_max(x: Any) -> Any:
    """The maximum of `x` over the active invocations of the subgroup."""
    return int(x) if isinstance(x, bool) else x


def subgroup_inclusive_add(x: Any) -> Any:
    """The sum of `x` over the active invocations with lane <= this one (a prefix sum)."""
    return int(x) if isinstance(x, bool) else x


def subgroup_exclusive_add(x: Any) -> Any:
    """The sum of `x` over the active invocations with lane < this one (0 in the first)."""
    return type(subgroup_add(x))(0)


def subgroup_broadcast(x: Any, lane: int) -> Any:
    """`x` of invocation `lane` (the same lane in every invocation); 0 if that lane is inactive
    or out of range."""
    return x if lane == 0 else type(x)(0)


def subgroup_broadcast_first(x: Any) -> Any:
    """`x` of the active invocation with the lowest lane."""
    return x


def subgroup_ballot(cond: Any) -> int:
    """The number of active invocations whose `cond` is true."""
    return int(bool(cond))


def subgroup_elect() -> bool:
    """True in exactly one active invocation of the subgroup (the lowest lane)."""
    return True


def subgroup_all(cond: Any) -> bool:
    """Whether `cond` is true in every active invocation of the subgroup."""
    return bool(cond)


def subgroup_any(cond: Any) -> bool:
    """Whether `cond` is true in some active invocation of the subgroup."""
    return bool(cond)


def subgroup_shuffle(x: Any, lane: int) -> Any:
    """`x` of invocation `lane` (may differ per invocation); 0 if that lane is inactive or out
    of range."""
    return x if lane == 0 else type(x)(0)


def subgroup_shuffle_xor(x: Any, mask: int) -> Any:
    """`x` of invocation `subgroup_lane() ^ mask`; 0 if that lane is inactive or out of range."""
    return x if mask == 0 else type(x)(0)


SUBGROUP_FUNCTIONS = tagged(
    subgroup_size,
    subgroup_lane,
    subgroup_id,
    num_subgroups,
    subgroup_add,
    subgroup_min,
    subgroup_max,
    subgroup_inclusive_add,
    subgroup_exclusive_add,
    subgroup_broadcast,
    subgroup_broadcast_first,
    subgroup_ballot,
    subgroup_elect,
    subgroup_all,
    subgroup_any,
    subgroup_shuffle,
    subgroup_shuffle_xor,
)

__all__ = sorted(SUBGROUP_FUNCTIONS)
