"""The kernel registry (SPEC §2): every `@Gpu` kernel by qualified name (a redefinition replaces
the old one and counts its version on), and the source keys of live kernel objects, so that what
was built for kernels no longer alive can be dropped (launch/dispatch.py `forget_kernels`).
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .kernel import GpuKernel

_lock = threading.RLock()
_registry: dict[str, GpuKernel] = {}
_generation = 0
# Source keys of live kernel objects (several may share one: the same `def` run again), and
# keys whose last kernel was collected: their compiled forms and pipelines are dropped at the
# next launch that builds one (launch/dispatch.py), unless a new kernel claimed the key.
_live_keys: dict[str, int] = {}
_orphaned: set[str] = set()


def register(kernel: GpuKernel) -> None:
    """Register a new kernel under its qualified name (a redefinition: one version on)."""
    global _generation
    with _lock:
        old = _registry.pop(kernel.qualified_name, None)
        if old is not None:
            kernel.version = old.version + 1
        _registry[kernel.qualified_name] = kernel
        _generation += 1


def claim(kernel: GpuKernel, key: str) -> None:
    """Count `kernel` as a live user of `key` until it is garbage collected."""
    with _lock:
        _live_keys[key] = _live_keys.get(key, 0) + 1
        _orphaned.discard(key)
    weakref.finalize(kernel, _release_key, key).atexit = False


def _release_key(key: str) -> None:
    # a finalizer (any thread, inside the garbage collector): bookkeeping only
    with _lock:
        n = _live_keys.pop(key, 1) - 1
        if n > 0:
            _live_keys[key] = n
        else:
            _orphaned.add(key)


def take_orphaned_keys() -> list[str]:
    """Source keys no live kernel object has any more (each returned once): what was built
    for them can be freed."""
    if not _orphaned:
        return []
    with _lock:
        # copied first: a collection during the loop may run _release_key (same thread)
        keys = list(_orphaned)
        _orphaned.difference_update(keys)
        return [k for k in keys if k not in _live_keys]


def registered_kernels() -> list[GpuKernel]:
    """Every registered kernel (one per qualified name, the latest definition), oldest first."""
    with _lock:
        return list(_registry.values())


def get_kernel(qualified_name: str) -> GpuKernel | None:
    """The kernel registered as `module.qualname`, if any."""
    with _lock:
        return _registry.get(qualified_name)


def unregister(kernel: GpuKernel | str) -> bool:
    """Remove a kernel (or a qualified name) from the registry; False if it was not there."""
    global _generation
    name = kernel if isinstance(kernel, str) else kernel.qualified_name
    with _lock:
        current = _registry.get(name)
        if current is None or (not isinstance(kernel, str) and current is not kernel):
            return False
        del _registry[name]
        _generation += 1
        return True


def replace(kernel: GpuKernel, by: GpuKernel) -> bool:
    """Put `by` in `kernel`'s place (same name and version) if `kernel` is still the registered
    one (`@autotune` does: its tuned kernel stands for the plain one)."""
    global _generation
    with _lock:
        if _registry.get(kernel.qualified_name) is not kernel:
            return False
        _registry[kernel.qualified_name] = by
        _generation += 1
        return True


def registry_generation() -> int:
    """A counter bumped by every registration or removal (cheap change detection)."""
    return _generation
