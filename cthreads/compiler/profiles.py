"""Device profiles: a device described as plain data, so kernels compile for it without it.

A profile is the JSON object `python -m cthreads.gpu info --json` writes: the device's name,
type, ids, versions, `limits`, `features` and memory heaps, plus `profile_version`. The
compiler needs only `type`, `limits` and `features` (`target.target_from_profile`); the rest
says which machine it was captured on.

Shipped profiles live in `profiles/` next to this module (package data), one `<name>.json` each:
`lavapipe` (Mesa's software device, the CI machine), `nvidia-h200`, and `portable`, the baseline
`kernel.compile()` uses when no device is present: Vulkan 1.2's guaranteed limits plus what
cthreads itself requires of a device, and no optional feature. This module never imports the
runtime; turning a live `DeviceInfo` into a profile reads its attributes only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import GpuInvalidArgument
from .target import Target, target_from_profile

PROFILE_VERSION = 1  # bump when a field changes meaning; older files still load
PORTABLE = "portable"  # the shipped profile `compile(chip=None)` uses when there is no device
_DIR = Path(__file__).with_name("profiles")

# The DeviceInfo attributes a profile records, in the order `info --json` writes them.
_FIELDS = (
    "name",
    "type",
    "vendor_id",
    "device_id",
    "api_version",
    "driver_name",
    "driver_version",
    "limits",
    "features",
    "memory_heaps",
    "memory_types",
    "cooperative_matrix",
)


def shipped_names() -> list[str]:
    """The names of the profiles shipped with cthreads, sorted."""
    try:
        return sorted(p.stem for p in _DIR.glob("*.json"))
    except OSError:
        return []


def profile_of(info: Any) -> dict[str, Any]:
    """The profile of a device description (a `runtime.DeviceInfo`, or anything with its
    attributes), as JSON-ready plain data: tuples become lists."""
    out: dict[str, Any] = {"profile_version": PROFILE_VERSION}
    for name in _FIELDS:
        if hasattr(info, name):
            out[name] = _plain(getattr(info, name))
    return out


def load(chip: Any) -> tuple[str, dict[str, Any], Target]:
    """Resolve `chip` (a shipped profile's name, the path of a JSON profile, or a profile as a
    mapping) to `(label, profile, target)`; `label` is the name or the path as given.

    Raises `GpuInvalidArgument` naming `chip` for an unknown name, a file that cannot be read,
    malformed JSON or a profile without the fields a Target needs."""
    if isinstance(chip, Mapping):
        profile, target = _checked(dict(chip), "the profile given", chip)
        name = profile.get("name")
        return (name if isinstance(name, str) else "<profile>"), profile, target
    if isinstance(chip, str) and chip in shipped_names():
        label, path = chip, _DIR / f"{chip}.json"
    elif isinstance(chip, (str, os.PathLike)) and _looks_like_path(chip):
        label, path = os.fspath(chip), Path(chip)
    else:
        raise _bad(
            f"no device profile named {chip!r}",
            chip,
            "a shipped profile name, or the path of a JSON file written by "
            "`python -m cthreads.gpu info --json` on the target machine",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _bad(
            f"cannot read the device profile {label!r}: {exc.strerror or exc}", chip
        ) from None
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(f"the device profile {label!r} is not valid JSON: {exc}", chip) from None
    return label, *_checked(data, f"the device profile {label!r}", chip)


def _checked(data: Any, what: str, got: Any) -> tuple[dict[str, Any], Target]:
    """`data` if it is a profile this version reads, with its Target."""
    if not isinstance(data, dict):
        raise _bad(f"{what} is not a JSON object", got)
    version = data.get("profile_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _bad(f"{what} has no valid `profile_version` (not written by `info --json`?)", got)
    if version > PROFILE_VERSION:
        raise _bad(
            f"{what} has profile_version {version}; this cthreads reads up to {PROFILE_VERSION}",
            got,
            hint="upgrade cthreads, or write the profile with this version's `info --json`",
        )
    for section in ("limits", "features"):
        if not isinstance(data.get(section), dict):
            raise _bad(f"{what} has no `{section}` object", got)
    try:
        target = target_from_profile(data)
    except ValueError as exc:
        raise _bad(f"{what} is malformed: {exc}", got) from None
    return data, target


def _looks_like_path(chip: str | os.PathLike) -> bool:
    text = os.fspath(chip)
    return isinstance(text, str) and (
        os.sep in text or "/" in text or text.endswith(".json") or Path(text).exists()
    )


def _bad(message: str, chip: Any, expected: str | None = None, hint: str | None = None):
    names = ", ".join(shipped_names()) or "none"
    return GpuInvalidArgument(
        f"chip: {message}",
        param="chip",
        expected=expected or "a shipped profile name or the path of a JSON device profile",
        got=repr(chip) if not isinstance(chip, Mapping) else "a mapping",
        hint=(f"{hint}; " if hint else "")
        + f"shipped profiles: {names}; or pass the path of a file written by "
        "`python -m cthreads.gpu info --json PATH` on the target machine",
    )


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
