"""Access to the C extension `cthreads._native`, tolerant of its absence.

Importing this never touches Vulkan: the extension dlopens the loader only in `load()`.
`module()` returns the extension or raises VulkanNotBuiltError; `loaded_module()` also makes
sure the Vulkan loader named by `config.vulkan_library()` is open.
"""

from __future__ import annotations

from types import ModuleType

from .. import config
from ..errors import VulkanNotBuiltError

try:
    from .. import _native as _ext
except ImportError as exc:  # built without the extension, or a broken build
    _ext = None
    _import_error: ImportError | None = exc
else:
    _import_error = None


def built() -> bool:
    """Whether the extension is importable."""
    return _ext is not None


def module() -> ModuleType:
    """The extension module; VulkanNotBuiltError when it is missing."""
    if _ext is None:
        raise VulkanNotBuiltError(
            f"the native extension cthreads._native is not available ({_import_error})",
            hint="Build it with `pip install -e .` (needs a C compiler, libvulkan-dev, "
            "glslang-tools and spirv-tools)",
        )
    return _ext


def loaded_module() -> ModuleType:
    """The extension with the Vulkan loader opened (raises VulkanLoaderNotFound)."""
    ext = module()
    if not ext.loaded():
        ext.load(config.vulkan_library())
    return ext
