"""The autotuner's choices on disk, next to the kernel cache (`<cache dir>/autotune/`).

One JSON file per (kernel source, variant space, device and driver): the record key hashes the
kernel's cache key (source, signature, options, compiler version, the device's compile target),
the declared choices and the device's identity (name, ids, driver, pipeline-cache UUID), so a
changed kernel, a changed set of choices or another GPU or driver tunes again. A record maps
each tuning key (`n=1024`) to the chosen values and the times measured. Files are written whole
(a temporary file, then a rename) and merged with what another process may have written since;
an unreadable record is treated as absent (the next launch tunes and rewrites it).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .. import config

FORMAT = 1  # bump when the record's layout or meaning changes
FOLDER = "autotune"


def folder() -> Path:
    return config.cache_dir() / FOLDER


def device_identity(info: Any) -> str:
    """The device and driver a choice was measured on, as text."""
    return (
        f"{info.name} [{info.vendor_id:04x}:{info.device_id:04x}] {info.driver_name} "
        f"{info.driver_version} {info.pipeline_cache_uuid}"
    )


def device_label(info: Any) -> str:
    """The device as `cache show` names it."""
    return f"{info.name} (driver {info.driver_version})"


def record_key(kernel_cache_key: str, space: str, device: str) -> str:
    text = f"{FORMAT}\0{kernel_cache_key}\0{space}\0{device}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(key: str) -> dict[str, Any]:
    """The record stored under `key` (empty when there is none or it cannot be read)."""
    if not config.disk_cache_enabled():
        return {}
    try:
        data = json.loads((folder() / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return {}  # another layout, or a file copied onto this name
    return data


def store(key: str, header: dict[str, Any], tuning_key: str, entry: dict[str, Any]) -> None:
    """Add (or replace) one tuning key's entry in the record `key`; failures to write only
    cost a later process the tuning (never an error for the launch)."""
    if not config.disk_cache_enabled():
        return
    where = folder()
    try:
        where.mkdir(parents=True, exist_ok=True)
        record = load(key) or {"format": FORMAT, "key": key, **header, "choices": {}}
        record["choices"][tuning_key] = entry
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=1, sort_keys=True)
        os.replace(tmp, where / f"{key}.json")
    except OSError:
        pass


def records() -> list[dict[str, Any]]:
    """Every readable record (for `python -m cthreads.gpu cache`), oldest file first."""
    where = folder()
    if not where.is_dir():
        return []
    out = []
    for path in sorted(where.glob("*.json"), key=lambda p: p.stat().st_mtime):
        data = load(path.stem)
        if data:
            out.append(data)
    return out


def clear() -> int:
    """Remove every record; returns how many files went."""
    where = folder()
    count = 0
    if where.is_dir():
        for path in where.iterdir():
            try:
                path.unlink()
                count += 1
            except OSError:
                pass
    return count
