"""The on-disk copy of the driver's VkPipelineCache, or the driver's own disk cache instead.

One file per device and driver under `config.cache_dir()/pipelines/`, read when a device is
created and written back atomically (temporary file + rename) on shutdown, at exit and, at
most every few seconds, after new pipelines. Failures to read or write are never fatal.
With `CTHREADS_PIPELINE_CACHE=driver` there is no file and the device builds its pipelines
through no VkPipelineCache at all, so the driver's own disk cache serves them.
A save whose data is what the file already holds writes nothing: a warm process builds its
pipelines from the file it read, and rewriting the same bytes cost 1-6 ms on the first launch
on the CI machine (issue 19).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .. import config
from ..errors import CThreadsGPUError
from .info import DeviceInfo

SAVE_INTERVAL_S = 2.0


def cache_path(info: DeviceInfo) -> Path:
    """`<cache_dir>/pipelines/<vendor>-<device>-<driver>-<uuid>.bin`."""
    driver = "".join(c if c.isalnum() or c in ".-_" else "_" for c in info.driver_version)
    name = f"{info.vendor_id:04x}-{info.device_id:04x}-{driver}-{info.pipeline_cache_uuid}.bin"
    return config.cache_dir() / "pipelines" / name


def uses_file(info: DeviceInfo) -> bool:
    """Whether pipelines on `info` go through our VkPipelineCache (and its file) rather than
    straight to the driver's own disk cache (`config.pipeline_cache_mode()`). The file is the
    default on every device: it works wherever the cache directory is writable. On the H200
    (580.159.04, 2026-12-03) either way served a warm process's pipelines in 0.1-0.9 ms each,
    but NVIDIA's driver leaves its own cache out of a build that names an application's
    cache, so a pipeline missing from our file compiles (6-8 ms for the smallest shader,
    bench/first_pipeline.sh) even where GLCache holds it."""
    return config.pipeline_cache_mode() == "file"


class PipelineCacheFile:
    """Loads and (debounced) saves one device's pipeline cache; `in_use` False: the device
    has none (the driver's own disk cache serves its pipelines, `uses_file`)."""

    def __init__(self, info: DeviceInfo):
        self.in_use = uses_file(info)
        self.path = cache_path(info) if self.in_use and config.disk_cache_enabled() else None
        self.dirty = False
        self.last_save = 0.0
        self.on_disk: bytes | None = None  # what the file holds, as read or last written

    def load(self) -> bytes | None:
        if self.path is None:
            return None
        try:
            self.on_disk = self.path.read_bytes()
        except OSError:
            return None
        return self.on_disk

    def touched(self, get_data) -> None:
        """A pipeline was created: save now unless a save happened very recently."""
        self.dirty = True
        if time.monotonic() - self.last_save >= SAVE_INTERVAL_S:
            self.save(get_data)

    def save(self, get_data) -> None:
        if self.path is None or not self.dirty:
            return
        self.dirty = False
        self.last_save = time.monotonic()
        try:
            data = get_data()
            if data == self.on_disk:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # (per process and per file object: two logical devices on one GPU share the path)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}-{id(self):x}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, self.path)
            self.on_disk = data
        except (OSError, CThreadsGPUError):  # an unwritable cache only costs compile time
            self.dirty = True
