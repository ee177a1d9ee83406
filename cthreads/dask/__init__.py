"""cthreads.dask: `@Gpu` kernels over the chunks of dask arrays, on a distributed cluster.

`map_blocks(kernel, *args)` (blocks.py) builds the dask graph; `GpuWorkerPlugin` (worker.py)
opens each worker's device once and prepares the kernels at worker start; kernels travel by
module name (refs.py). An optional extra: `pip install cthreads[dask]`.
"""

from __future__ import annotations

try:
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        f"cthreads.dask needs dask[array] and distributed ({exc}); install them with "
        "`pip install cthreads[dask]`"
    ) from exc

from typing import Any

from .blocks import map_blocks
from .refs import KernelRef, ref_of
from .worker import GpuWorkerPlugin, device_selector, worker_rank, worker_stats


def register(client: Any, *kernels: Any) -> GpuWorkerPlugin:
    """Register a `GpuWorkerPlugin` preparing `kernels` on every worker of `client` (those
    running now, which set up before this returns, and those that join later)."""
    plugin = GpuWorkerPlugin(kernels)
    client.register_plugin(plugin)
    return plugin


__all__ = [
    "GpuWorkerPlugin",
    "KernelRef",
    "device_selector",
    "map_blocks",
    "ref_of",
    "register",
    "worker_rank",
    "worker_stats",
]
