"""cthreads: typed Python functions on the GPU through Vulkan.

`cthreads.gpu` holds the GPU API (`@Gpu`, `gpu()`, `GpuArena`, ...); `cthreads.Job` is the host
job handle that `GpuJob` extends; `cthreads.sync` has `Barrier` and `__sync_threads`.
Importing never touches Vulkan.
"""

from __future__ import annotations

from . import errors, sync
from .job import Job

__version__ = "0.1.0"


def __getattr__(name: str):
    # `cthreads.gpu` loads on first access, keeping `import cthreads` light.
    if name == "gpu":
        import importlib

        return importlib.import_module(".gpu", __name__)
    raise AttributeError(f"module 'cthreads' has no attribute {name!r}")


__all__ = ["Job", "__version__", "errors", "gpu", "sync"]
