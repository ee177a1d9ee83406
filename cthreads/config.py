"""The only reader of the package's `CTHREADS_*` settings.

Each setting is read when asked for (not at import), so tests and subprocesses can change the
environment before first use. That includes the native extension's benchmarking knobs
(`CTHREADS_SPIN_US` and friends, `native_knobs()`), which the runtime hands to the native
device when it creates one: no C file reads the environment. One family lives elsewhere on
purpose: the fuzzer's `CTHREADS_FUZZ_*` (cthreads/testing).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import GpuInvalidArgument  # errors.py imports nothing from cthreads


def _flag(name: str) -> bool:
    """Whether the variable `name` is set to a yes (1, true, yes, on; any case)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _unflag(name: str) -> bool:
    """Whether the variable `name` is set to a no (0, false, no, off; any case)."""
    return os.environ.get(name, "").strip().lower() in ("0", "false", "no", "off")


def device_selector() -> str | None:
    """`CTHREADS_DEVICE`: the default device, a Vulkan device index or a case-insensitive name
    substring (any device, also one the visibility variables hide); None = the first visible
    device."""
    value = os.environ.get("CTHREADS_DEVICE", "").strip()
    return value or None


def visible_devices() -> str | None:
    """`CTHREADS_VISIBLE_DEVICES`: the devices this process may use, in order (comma-separated
    Vulkan indexes, UUIDs with or without `GPU-`, or name substrings; runtime/visibility.py).
    None when unset; "" (set but empty) hides every device. It takes precedence over
    `CUDA_VISIBLE_DEVICES`."""
    return os.environ.get("CTHREADS_VISIBLE_DEVICES")


def cuda_visible_devices() -> str | None:
    """`CUDA_VISIBLE_DEVICES` as CUDA reads it (ordinals, `GPU-<uuid prefix>`; it hides and
    orders NVIDIA devices only, runtime/visibility.py). None when unset."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


SPIRV_TOOLS_NEW_VERSION = "2025.5"  # the SPIRV-Tools release tile modules are validated with


def cuda_library() -> str:
    """`CTHREADS_CUDA_LIBRARY`: where libcuda is (default: the loader finds libcuda.so.1);
    read only when a CUDA exchange first needs the driver (interop/cuda.py)."""
    return os.environ.get("CTHREADS_CUDA_LIBRARY", "").strip() or "libcuda.so.1"


def cuda_handoff() -> str:
    """`CTHREADS_CUDA_HANDOFF`: how a CUDA exchange orders the two APIs (interop/handoff.py):
    "gpu" (default: exported timeline semaphores where the driver allows, no host wait) or
    "host" (the host waits at each hand-off, draining the GPU: for comparison and as a
    workaround for a driver; slower on the H200, docs/interop.md). Read at a device's first
    CUDA exchange."""
    value = os.environ.get("CTHREADS_CUDA_HANDOFF", "").strip().lower() or "gpu"
    if value not in ("gpu", "host"):
        raise _bad_variable(
            "CTHREADS_CUDA_HANDOFF", "'gpu' or 'host'", value, "the default ('gpu')"
        )
    return value


def _bad_variable(variable: str, expected: str, raw: str, default: str) -> GpuInvalidArgument:
    """The error for an environment variable set to something it does not take."""
    return GpuInvalidArgument(
        f"{variable} must be {expected}; got {raw!r}",
        param=variable,
        expected=expected,
        got=repr(raw),
        hint=f"set it to such a value, or unset it for {default}",
    )


def spirv_tools_new_dir() -> Path:
    """`CTHREADS_SPIRV_TOOLS_NEW`: a directory whose bin/ holds a SPIRV-Tools new enough for
    matrix tiles (compiler/spirv/tools.py); default ~/.cache/cthreads/spirv-tools-<version>,
    where `python -m cthreads.compiler.spirv.tools_new` puts it."""
    env = os.environ.get("CTHREADS_SPIRV_TOOLS_NEW", "").strip()
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cthreads" / f"spirv-tools-{SPIRV_TOOLS_NEW_VERSION}"


def validation_enabled() -> bool:
    """`CTHREADS_VALIDATION=1` turns on the Khronos validation layer and message capture."""
    return _flag("CTHREADS_VALIDATION")


def vulkan_library() -> str:
    """`CTHREADS_VULKAN_LIBRARY`: the loader to dlopen (default `libvulkan.so.1`)."""
    return os.environ.get("CTHREADS_VULKAN_LIBRARY", "").strip() or "libvulkan.so.1"


def pipeline_cache_mode() -> str:
    """`CTHREADS_PIPELINE_CACHE`: where a later process finds the pipelines this one built
    (runtime/pipeline_cache.py): "file" (default: our VkPipelineCache, saved to a file under
    `cache_dir()`) or "driver" (no VkPipelineCache: only the driver's own disk cache, such as
    NVIDIA's GLCache or Mesa's shader cache, which an application's cache bypasses)."""
    value = os.environ.get("CTHREADS_PIPELINE_CACHE", "").strip().lower() or "file"
    if value not in ("file", "driver"):
        raise _bad_variable(
            "CTHREADS_PIPELINE_CACHE", "'file' or 'driver'", value, "the default ('file')"
        )
    return value


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
    return not _flag("CTHREADS_NO_DISK_CACHE")


def autotune_enabled() -> bool:
    """`CTHREADS_AUTOTUNE=0` turns the autotuner off: `@autotune` kernels run the first choice
    of each name (or the pinned ones), recorded choices are neither read nor written."""
    return not _unflag("CTHREADS_AUTOTUNE")


def vector_form() -> bool | None:
    """Whether element-wise kernels take the 4-wide form with 16-byte list accesses
    (codegen_vec.py): None (unset) lets each compile target decide (`Target.vector_form`: on
    GPUs, not on CPU devices); `CTHREADS_NO_VECTORIZE=1` (False) keeps every kernel in the
    scalar form, one element per grid-stride step; `CTHREADS_VECTORIZE=1` (True) gives every
    device the vector form (benchmarks and tests of it on lavapipe). Read at each compile; the
    first wins when both are set."""
    if _flag("CTHREADS_NO_VECTORIZE"):
        return False
    if _flag("CTHREADS_VECTORIZE"):
        return True
    return None


def scalar_first() -> bool:
    """Whether a first launch whose vector form is not cached runs the scalar form while the
    vector form is built on a thread (launch/session.py; NVIDIA builds the scalar form's
    pipeline in half the time). `CTHREADS_SCALAR_FIRST=0` builds the vector form at once:
    every launch of the process then runs one form (the test suite sets it, for tests that
    look at what a launch prepared)."""
    return not _unflag("CTHREADS_SCALAR_FIRST")


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
        raise _bad_variable(
            "CTHREADS_WORKGROUP",
            "a power of two from 1 to 1024 (1, 2, 4, ..., 512, 1024)",
            raw,
            "the default (256)",
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


# The native submission policy's knobs (native/README.md "Policy knobs"): the variable, the
# knob's name in the native Device (and in Device.stats()["knobs"]), the kind of value and, for
# durations, the factor to the native unit (nanoseconds). Defaults live in native/knobs.c: a
# variable that is unset or empty is left out, so the device keeps its default.
_NATIVE_KNOBS = (
    ("CTHREADS_COALESCE", "coalesce", "switch", 1),
    ("CTHREADS_BATCH_MAX", "batch_max", "count", 1),
    ("CTHREADS_STREAM_US", "stream_ns", "duration", 1000),
    ("CTHREADS_SPIN_US", "spin_ns", "duration", 1000),
    ("CTHREADS_POLL_NS", "poll_ns", "duration", 1),
    ("CTHREADS_BG_SPIN_US", "bg_spin_ns", "duration", 1000),
    ("CTHREADS_BG_POLL_NS", "bg_poll_ns", "duration", 1),
    ("CTHREADS_BG_HOT_US", "bg_hot_ns", "duration", 1000),
    ("CTHREADS_BG_DELAY_US", "bg_delay_ns", "duration", 1000),
    ("CTHREADS_LOCK_SPIN_US", "lock_spin_ns", "duration", 1000),
    ("CTHREADS_INFLIGHT", "inflight", "inflight", 1),
    ("CTHREADS_SPIN_YIELD", "spin_yield", "switch", 1),
    ("CTHREADS_LANE_QUEUES", "lane_queues", "count", 1),
    ("CTHREADS_COPY_QUEUE", "copy_queue", "copy_queue", 1),
)

# kind -> lowest and highest native value, whole numbers only, what the error says is expected
_KNOB_KINDS = {
    "switch": (0, 1, True, "0 or 1"),
    "count": (1, 2**31 - 1, True, "a whole number >= 1"),
    "duration": (0, 2**63 - 1, False, "a number >= 0"),
    "inflight": (1, 2, True, "1 or 2"),
    "copy_queue": (0, 2, True, "auto, 0 or compute"),
}
# words a kind takes for its numbers: CTHREADS_COPY_QUEUE=auto (1: the copy lane on a
# transfer-only queue family where the device has one), compute (2: on the compute family;
# tests the copy lane where there is no such family)
_KNOB_WORDS = {"copy_queue": {"auto": "1", "compute": "2"}}


def _native_knob(variable: str, kind: str, scale: int, raw: str) -> int:
    lowest, highest, whole, expected = _KNOB_KINDS[kind]
    raw = _KNOB_WORDS.get(kind, {}).get(raw.lower(), raw)
    try:
        number = float(raw)
    except ValueError:
        number = float("nan")  # fails every comparison below
    if not (lowest <= number * scale <= highest and (number.is_integer() or not whole)):
        raise _bad_variable(
            variable, expected, raw, "the default (native/README.md lists the knobs and theirs)"
        )
    return int(number * scale)


def native_knobs() -> dict[str, int]:
    """The native submission policy's benchmarking knobs (`CTHREADS_COALESCE`,
    `CTHREADS_BATCH_MAX`, `CTHREADS_*_US`, `CTHREADS_*_POLL_NS`, `CTHREADS_INFLIGHT`,
    `CTHREADS_SPIN_YIELD`, `CTHREADS_LANE_QUEUES`, `CTHREADS_COPY_QUEUE`; native/README.md
    says what each does), each read once, as the native Device takes them: {knob: int},
    durations in nanoseconds. Unset variables are left
    out (the device's default: `CTHREADS_SPIN_YIELD`'s depends on the device type). Raises
    GpuInvalidArgument naming the variable for a value that is not allowed."""
    knobs = {}
    for variable, name, kind, scale in _NATIVE_KNOBS:
        raw = os.environ.get(variable, "").strip()
        if raw:
            knobs[name] = _native_knob(variable, kind, scale, raw)
    return knobs
