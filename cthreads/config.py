"""The only reader of the package's `CTHREADS_*` settings.

Each setting is read when asked for (not at import), so tests and subprocesses can change the
environment before first use. Two families live elsewhere on purpose: the native extension's
benchmarking knobs (`CTHREADS_SPIN_US` and friends, read in C at device creation; see
native/README.md) and the fuzzer's `CTHREADS_FUZZ_*` (cthreads/testing).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import GpuInvalidArgument  # errors.py imports nothing from cthreads


def device_selector() -> str | None:
    """`CTHREADS_DEVICE`: a device index or a case-insensitive name substring; None = automatic."""
    value = os.environ.get("CTHREADS_DEVICE", "").strip()
    return value or None


def validation_enabled() -> bool:
    """`CTHREADS_VALIDATION=1` turns on the Khronos validation layer and message capture."""
    return os.environ.get("CTHREADS_VALIDATION", "").strip().lower() in ("1", "true", "yes", "on")


def vulkan_library() -> str:
    """`CTHREADS_VULKAN_LIBRARY`: the loader to dlopen (default `libvulkan.so.1`)."""
    return os.environ.get("CTHREADS_VULKAN_LIBRARY", "").strip() or "libvulkan.so.1"


def cache_dir() -> Path:
    """Per-user cache root: `CTHREADS_CACHE_DIR`, else `$XDG_CACHE_HOME/cthreads`, else
    `~/.cache/cthreads`. Never next to user sources."""
    explicit = os.environ.get("CTHREADS_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "cthreads"


def disk_cache_enabled() -> bool:
    """`CTHREADS_NO_DISK_CACHE=1` disables the on-disk SPIR-V and pipeline caches."""
    return os.environ.get("CTHREADS_NO_DISK_CACHE", "").strip().lower() not in (
        "1",
        "true",
        "yes",
        "on",
    )


def vectorize_enabled() -> bool:
    """`CTHREADS_NO_VECTORIZE=1` keeps every kernel in the scalar form (one logical invocation per
    grid-stride step) instead of the 4-wide element-wise form with 16-byte list accesses."""
    return os.environ.get("CTHREADS_NO_VECTORIZE", "").strip().lower() not in (
        "1",
        "true",
        "yes",
        "on",
    )


def workgroup_width() -> int | None:
    """`CTHREADS_WORKGROUP=N` (a power of two, 1 to 1024): the workgroup width for kernels that
    do not observe their workgroup, instead of the default 256 (clamped to the device's
    limit). For tuning and for measuring the choice (bench/wg_sweep.py); None when unset."""
    raw = os.environ.get("CTHREADS_WORKGROUP", "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= 1024 or value & (value - 1):
        raise GpuInvalidArgument(
            f"CTHREADS_WORKGROUP must be a power of two from 1 to 1024 (1, 2, 4, ..., 512, "
            f"1024); got {raw!r}",
            param="CTHREADS_WORKGROUP",
            expected="a power of two from 1 to 1024",
            got=repr(raw),
            hint="set it to one of those, or unset it for the default (256)",
        )
    return value


def exit_wait() -> float:
    """`CTHREADS_EXIT_WAIT=S` (seconds, default 10): how long the teardown at interpreter exit
    waits for GPU work still running before it abandons the device with a warning (a kernel
    that never ends must not keep the process from exiting)."""
    raw = os.environ.get("CTHREADS_EXIT_WAIT", "").strip()
    if not raw:
        return 10.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"CTHREADS_EXIT_WAIT must be a number of seconds >= 0; got {raw!r}")
    return value
