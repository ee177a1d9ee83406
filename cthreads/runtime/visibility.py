"""Which devices a process sees and in which order: pure functions over `DeviceInfo` lists.

The rules (docs/scale.md, "Which devices a process sees"), first match wins:

1. `CTHREADS_VISIBLE_DEVICES`, when set: exactly the devices it names, in its order, software
   devices too (naming one is asking for it). Entries are Vulkan indexes, UUIDs or unique UUID
   prefixes (with or without `GPU-`), or case-insensitive name substrings (every device whose
   name holds it, in Vulkan order). An entry naming no usable device is an error naming the
   variable (our own variable is strict); "" hides every device.
2. Else `CUDA_VISIBLE_DEVICES`, when set, hides and orders the NVIDIA devices as CUDA does:
   ordinals count the NVIDIA devices in Vulkan order (which is PCI order, CUDA's with
   `CUDA_DEVICE_ORDER=PCI_BUS_ID`; the UUID form is exact on any machine), `GPU-<prefix>`
   names a device by a unique prefix of its UUID, and the list ends at the first entry that
   names nothing, names a device twice, or is a MIG instance (no Vulkan device), as CUDA's
   does. Other vendors' devices are not CUDA's to hide. The GPUs come first, by type
   (discrete, integrated, virtual; the NVIDIA ones in CUDA's order among them), and software
   devices (type "cpu": lavapipe) are listed only when no GPU is.
3. Else every usable device, ranked the same way.

`CTHREADS_DEVICE` chooses the default device (info.choose) among every device; without it the
default is the first visible one; `rank_device` is the choice of one of several processes
(dask workers), by the same rules. Unusable devices are never visible.
"""

from __future__ import annotations

import re

from ..errors import GpuInvalidArgument, VulkanNoDevice
from .info import DeviceInfo, choose

_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}
_HEX = re.compile(r"[0-9a-f-]{8,}")


def uuid_matches(infos: list[DeviceInfo], text: str) -> list[DeviceInfo] | None:
    """The devices whose UUID starts with `text` (a `GPU-` in front is dropped; dashes and
    case do not matter), or None when `text` is not written as a UUID (prefix)."""
    t = text.strip().lower()
    if t.startswith("gpu-"):
        t = t[4:]
    elif not _HEX.fullmatch(t):
        return None
    want = t.replace("-", "")
    if not want:
        return []
    return [i for i in infos if i.uuid and i.uuid.replace("-", "").lower().startswith(want)]


def _ranked(infos: list[DeviceInfo], position: dict[int, int] | None = None) -> list[DeviceInfo]:
    """GPUs by type rank (stable: `position` first, then Vulkan order), software devices only
    when there is no GPU."""
    pos = position or {}
    gpus = [i for i in infos if i.type != "cpu"]
    chosen = gpus if gpus else infos
    return sorted(chosen, key=lambda i: (_TYPE_RANK.get(i.type, 9), pos.get(i.index, i.index)))


def cuda_selection(nvidia: list[DeviceInfo], value: str) -> list[DeviceInfo]:
    """The NVIDIA devices `CUDA_VISIBLE_DEVICES=value` leaves visible, in its order (`nvidia`:
    the NVIDIA devices in Vulkan order). CUDA's reading: the list ends at the first entry that
    is not a device (an unknown ordinal, no or several UUID matches, MIG, a repeat)."""
    chosen: list[DeviceInfo] = []
    for raw in value.split(","):
        token = raw.strip()
        if token.isdigit():
            k = int(token)
            hit = nvidia[k] if k < len(nvidia) else None
        else:
            found = uuid_matches(nvidia, token) if token.lower().startswith("gpu-") else None
            hit = found[0] if found is not None and len(found) == 1 else None
        if hit is None or hit in chosen:
            break
        chosen.append(hit)
    return chosen


def _ours(infos: list[DeviceInfo], value: str) -> list[DeviceInfo]:
    """The devices `CTHREADS_VISIBLE_DEVICES=value` names (see the module docstring)."""
    listing = "; ".join(i.describe() for i in infos) or "none"
    chosen: list[DeviceInfo] = []
    for raw in value.split(","):
        token = raw.strip()
        if not token:
            continue
        if token.isdigit():
            hits = [i for i in infos if i.index == int(token)]
        else:
            hits = uuid_matches(infos, token)
            if hits is None or not hits:
                hits = [i for i in infos if token.lower() in i.name.lower()]
        if not hits:
            raise GpuInvalidArgument(
                f"CTHREADS_VISIBLE_DEVICES entry {token!r} names no usable Vulkan device "
                f"(devices: {listing})",
                param="CTHREADS_VISIBLE_DEVICES",
                expected="Vulkan indexes, UUIDs (GPU-...) or parts of names, comma-separated",
                got=repr(value),
                hint="use `python -m cthreads.gpu info` to list the devices, or unset it",
            )
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def visible(infos: list[DeviceInfo], ours: str | None, cuda: str | None) -> list[DeviceInfo]:
    """The devices a process sees, in order, given every device (`infos`, Vulkan order) and
    the values of `CTHREADS_VISIBLE_DEVICES` (`ours`) and `CUDA_VISIBLE_DEVICES` (`cuda`),
    None where unset."""
    usable = [i for i in infos if i.usable]
    if ours is not None:
        return _ours(usable, ours)
    if cuda is None:
        return _ranked(usable)
    nvidia = [i for i in usable if i.nvidia]
    keep = cuda_selection(nvidia, cuda)
    others = [i for i in usable if not i.nvidia]
    return _ranked(keep + others, {i.index: k - len(keep) for k, i in enumerate(keep)})


def _describe_hidden(infos: list[DeviceInfo], ours: str | None, cuda: str | None) -> str:
    """Which variable hid every device, with the devices there are (for VulkanNoDevice)."""
    listing = "; ".join(f"{i.describe()} {i.uuid}".rstrip() for i in infos) or "none"
    which = (
        f"CTHREADS_VISIBLE_DEVICES={ours!r}"
        if ours is not None
        else f"CUDA_VISIBLE_DEVICES={cuda!r}"
    )
    return f"{which} hides every Vulkan device (devices: {listing})"


def default_device(
    infos: list[DeviceInfo], selector: str | None, ours: str | None, cuda: str | None
) -> DeviceInfo:
    """The device a process opens by default: `CTHREADS_DEVICE` (`selector`) when set, else
    the first visible device (VulkanNoDevice, saying why, when there is none)."""
    if selector is not None or not any(i.usable for i in infos):
        return choose(infos, selector)  # (its errors say what is missing)
    seen = visible(infos, ours, cuda)
    if seen:
        return seen[0]
    raise VulkanNoDevice(
        _describe_hidden(infos, ours, cuda),
        hint="name a device in it, unset it, or choose one with CTHREADS_DEVICE",
    )


def rank_device(
    infos: list[DeviceInfo], rank: int, ours: str | None, cuda: str | None
) -> DeviceInfo | None:
    """The device the process of `rank` among several on one host opens (a dask worker): when
    a variable names devices, the first it leaves visible, the one `default_device` opens
    (dask-cuda hands each worker a `CUDA_VISIBLE_DEVICES` with its own GPU first); when none
    does, the visible devices round-robin by rank. None when no device is usable (the runtime
    raises its own error on first use); VulkanNoDevice, naming the value, when a variable
    names nothing there is: a `CUDA_VISIBLE_DEVICES` that starts with no NVIDIA device of
    this machine (an unknown ordinal or UUID, a MIG instance), or one that hides them all."""
    usable = [i for i in infos if i.usable]
    if not usable:
        return None
    seen = visible(usable, ours, cuda)
    if not seen:
        raise VulkanNoDevice(
            _describe_hidden(usable, ours, cuda),
            hint="name a device in it, unset it, or set CTHREADS_DEVICE yourself",
        )
    if ours is not None:
        return seen[0]
    if cuda is not None and cuda.strip():
        nvidia = [i for i in usable if i.nvidia]
        named = cuda_selection(nvidia, cuda)
        if named:
            return seen[0]
        if nvidia:
            listing = "; ".join(f"{k}: {i.name} GPU-{i.uuid}" for k, i in enumerate(nvidia))
            raise VulkanNoDevice(
                f"CUDA_VISIBLE_DEVICES={cuda!r} starts with no NVIDIA Vulkan device of this "
                f"machine (NVIDIA devices, by CUDA ordinal: {listing})",
                hint="give an ordinal below "
                f"{len(nvidia)} or a GPU-<uuid> that `nvidia-smi -L` lists (a MIG instance "
                "has no Vulkan device), or set CTHREADS_DEVICE yourself",
            )
    return seen[rank % len(seen)]
