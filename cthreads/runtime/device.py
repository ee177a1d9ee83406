"""Device: a thin typed wrapper over the native device (buffers, pipelines, submission).

Hot paths (`submit`, `wait`, `completed`, buffer copies and list packing) go straight to C;
this class adds the usage names, the DeviceInfo, the generation and the pipeline cache file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import GpuInvalidArgument
from ..forwarding import forwarded
from .info import DeviceInfo
from .pipeline_cache import PipelineCacheFile

# a pipeline's specialization constants: constant id -> its 32-bit value
_SpecConstants = dict[int, int | float | bool]
_KINDS = {"device": 0, "upload": 1, "download": 2, "export": 3}  # export: interop (issue 17)

# Command tuples accepted by Device.submit:
#   ('dispatch', pipeline, push_bytes, (gx, gy, gz))
#   ('copy', src_buffer, dst_buffer, nbytes, src_offset, dst_offset)
#   ('fill', buffer, offset, nbytes, u32_value)
Command = tuple


class Device:
    """One Vulkan device with its queue. Made by `cthreads.runtime.init()`."""

    __slots__ = ("__weakref__", "_cache_file", "_dev", "generation", "info", "logical")

    def __init__(
        self,
        native_device: Any,
        info: DeviceInfo,
        generation: int,
        cache_file: PipelineCacheFile,
        logical: int = 0,
    ):
        self._dev = native_device
        self.info = info
        self.generation = generation
        self._cache_file = cache_file
        self.logical = logical  # 0, or which extra logical device on the physical one

    @property
    def label(self) -> str:
        """Its name, and which logical device it is where that is not the first."""
        return f"{self.info.name!r}" + (f" (logical {self.logical})" if self.logical else "")

    def __repr__(self) -> str:
        state = "alive" if self._dev.alive else "shut down"
        return (
            f"<Device {self.info.name!r} ({self.info.type}) generation {self.generation}, {state}>"
        )

    name = forwarded("info")

    @property
    def alive(self) -> bool:
        """False after shutdown() or a device loss."""
        return self._dev.alive

    @property
    def host_visible_device_local(self) -> bool:
        """Whether 'device' buffers are mapped (lavapipe, resizable BAR): no staging needed."""
        return self._dev.host_visible_device_local

    @property
    def last_value(self) -> int:
        """The last timeline value handed out by submit()."""
        return self._dev.last_value

    # -- memory -----------------------------------------------------------------------------

    def buffer(self, nbytes: int, *, usage: str = "device"):
        """A Buffer of `nbytes` from the pool: usage 'device' (kernel data, has `.address`),
        'upload' (host-visible staging) or 'download' (host-visible, host-cached preferred)."""
        kind = _KINDS.get(usage)
        if kind is None:
            raise GpuInvalidArgument(
                f"unknown buffer usage {usage!r}",
                expected="'device', 'upload' or 'download'",
                got=repr(usage),
            )
        return self._dev.buffer(nbytes, kind)

    def trim(self) -> None:
        """Free pooled memory whose last use completed."""
        self._dev.trim()

    def stats(self) -> dict[str, int]:
        """Vulkan objects alive (vk_buffers, vk_memory, pipelines, command_buffers), pool
        counters (buffers_in_use, pooled, pooled_bytes) and batch counters (batches_pending,
        batches_in_flight, kept_objects, queue_submits, submitted, completed). Submits nothing."""
        return self._dev.stats()

    # -- pipelines --------------------------------------------------------------------------

    def pipeline(
        self, spirv: bytes, push_size: int, spec: _SpecConstants | None = None, entry: str = "main"
    ):
        """A compute Pipeline from SPIR-V with `push_size` bytes of push constants and
        optional 32-bit specialization constants."""
        pipe = self._dev.pipeline(spirv, push_size, spec, entry)
        if pipe.cache_hit is not True:  # (one from the cache leaves the cache file as it is)
            self._cache_file.touched(self._dev.pipeline_cache_data)
        return pipe

    def pipeline_statistics(
        self, spirv: bytes, push_size: int, spec: _SpecConstants | None = None, entry: str = "main"
    ) -> list[dict] | None:
        """What the driver reports on the pipeline `pipeline()` would make from these
        arguments (VK_KHR_pipeline_executable_properties; native/pipeline.c), or None where
        the device lacks the extension. Builds a pipeline of its own, outside the cache."""
        return self._dev.pipeline_statistics(spirv, push_size, spec, entry)

    def save_pipeline_cache(self) -> None:
        """Write the pipeline cache file now if it changed."""
        if self._dev.alive:
            self._cache_file.save(self._dev.pipeline_cache_data)

    # -- submission -------------------------------------------------------------------------

    def submit(
        self,
        commands: Iterable[Command],
        *,
        keep: tuple = (),
        timed: bool = False,
        lane: int = 0,
        after: int = 0,
    ) -> int:
        """Record `commands` in stream order; returns the timeline value at which they
        complete. `keep` objects stay referenced (and buffers unrecycled) until then.
        `lane` 1..3 puts them on a stream's lane (its own queue where the device has several,
        native/lane.c), started once the value `after` completed; lane 0 (the default stream)
        is ordered after everything queued before it on any lane.

        On an idle queue the commands are submitted at once; while work is in flight (or
        launches come in a stream) they join one pending batch that the device's submitter
        thread sends when the in-flight work completes, or that `wait()` on one of its values
        sends at once (native/README.md, "Submission coalescing")."""
        if lane:
            return self._dev.submit(commands, keep, timed, lane, after)
        return self._dev.submit(commands, keep, timed)

    def wait(self, value: int, timeout: float | None = None) -> bool:
        """Wait (GIL released) until `value` completes; False when `timeout` seconds pass.
        A value still in the pending batch makes that batch go out first."""
        return self._dev.wait(value, timeout)

    def completed(self) -> int:
        """The highest completed timeline value (a poll: when the in-flight work is done, a
        pending batch is submitted now rather than when the submitter thread wakes)."""
        return self._dev.completed()

    poll = completed

    def wait_idle(self) -> None:
        """Wait until every submission completed."""
        self._dev.wait_idle()

    def elapsed_ms(self, value: int) -> float | None:
        """GPU time of a `timed=True` submission once complete; None otherwise."""
        return self._dev.elapsed_ms(value)

    # -- teardown ---------------------------------------------------------------------------

    def close(self) -> None:
        """Wait idle, save the pipeline cache and destroy the device (idempotent)."""
        if self._dev.alive:
            try:
                self._cache_file.save(self._dev.pipeline_cache_data)
            finally:
                self._dev.destroy()
        else:
            self._dev.destroy()
