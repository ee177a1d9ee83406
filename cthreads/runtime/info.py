"""What a Vulkan device is (DeviceInfo) and which one cthreads uses (the choice policy).

The C extension reports plain dicts; this module turns them into frozen records and picks
a device: discrete GPU first, then integrated, virtual, CPU (lavapipe); `CTHREADS_DEVICE`
(an index or a case-insensitive name substring) overrides.
"""

from __future__ import annotations

from typing import Any

from ..errors import VulkanNoDevice
from ..record import Record, field

_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}


class DeviceInfo(Record):
    """A physical device as plain data (limits, memory, features; see SPEC/DESIGN)."""

    index: int
    name: str
    type: str
    vendor_id: int
    device_id: int
    api_version: str
    driver_version: str
    driver_name: str
    limits: dict[str, Any] = field(default_factory=dict)
    memory_heaps: list[dict[str, Any]] = field(default_factory=list)
    memory_types: list[dict[str, Any]] = field(default_factory=list)
    features: dict[str, bool] = field(default_factory=dict)
    # VK_KHR_cooperative_matrix shapes, {m, n, k, a, b, c, result, saturating, scope} each
    cooperative_matrix: list[dict[str, Any]] = field(default_factory=list)
    pipeline_cache_uuid: str = ""
    usable: bool = True
    unusable_reason: str | None = None
    # VkPhysicalDeviceIDProperties.deviceUUID as 8-4-4-4-12 hex groups: on NVIDIA the CUDA
    # UUID (`nvidia-smi -L` prints it after "GPU-"); "" where the driver does not report it
    uuid: str = ""

    @classmethod
    def from_native(cls, d: dict[str, Any]) -> DeviceInfo:
        fields = {k: d[k] for k in cls._fields if k in d}
        if "device_uuid" in d:
            fields["uuid"] = d["device_uuid"]
        return cls(**fields)

    @property
    def memory(self) -> int:
        """Bytes of device-local memory (the sum of the device-local heaps)."""
        return sum(int(h.get("size", 0)) for h in self.memory_heaps if h.get("device_local"))

    @property
    def nvidia(self) -> bool:
        """Whether NVIDIA's driver runs it (vendor 0x10de): `CUDA_VISIBLE_DEVICES` applies."""
        return self.vendor_id == 0x10DE

    def describe(self) -> str:
        """One line: index, name, type (and why it cannot be used, if so)."""
        why = "" if self.usable else f", unusable: {self.unusable_reason}"
        return f"{self.index}: {self.name} ({self.type}{why})"


def choose(infos: list[DeviceInfo], selector: str | None) -> DeviceInfo:
    """The device to use among `infos` (VulkanNoDevice when none fits)."""
    listing = "; ".join(i.describe() for i in infos) or "none"
    usable = [i for i in infos if i.usable]
    if selector is None:
        if not usable:
            if not infos:
                raise VulkanNoDevice(
                    "the Vulkan loader found no devices",
                    hint="Install a GPU driver or mesa-vulkan-drivers (software Vulkan, lavapipe)",
                )
            raise VulkanNoDevice(
                f"no Vulkan device supports what cthreads needs (available: {listing})",
                hint="cthreads needs Vulkan 1.2 with bufferDeviceAddress and timeline semaphores; "
                "update the driver or install mesa-vulkan-drivers",
            )
        return min(usable, key=lambda i: (_TYPE_RANK.get(i.type, 9), i.index))
    sel = selector.strip()
    if sel.isdigit():
        matches = [i for i in infos if i.index == int(sel)]
    else:
        matches = [i for i in infos if sel.lower() in i.name.lower()]
    matches.sort(key=lambda i: (not i.usable, _TYPE_RANK.get(i.type, 9), i.index))
    if not matches:
        raise VulkanNoDevice(
            f"CTHREADS_DEVICE={selector!r} matches no Vulkan device (available: {listing})",
            hint="Set CTHREADS_DEVICE to one of the indexes or a part of a name above, or unset it",
        )
    if not matches[0].usable:
        raise VulkanNoDevice(
            f"CTHREADS_DEVICE={selector!r} selects {matches[0].describe()}",
            hint=f"Choose another device (available: {listing})",
        )
    return matches[0]
