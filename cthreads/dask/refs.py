"""Kernels travel to dask workers by name: `(module, qualname)`, checked on the client.

A worker imports the module and walks the qualified name to the same `@Gpu` kernel, so the
source is never pickled and every worker compiles (and caches) exactly what is on its disk.
Kernels that no other process can import (`__main__`, closures) are refused before any task runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument


@dataclass(frozen=True)
class KernelRef:
    """Where a worker finds a kernel: `importlib.import_module(module)`, then `qualname`."""

    module: str
    qualname: str

    def __str__(self) -> str:
        return f"{self.module}.{self.qualname}"


def _kernel_class() -> type:
    from ..gpu.kernel import GpuKernel

    return GpuKernel


def _walk(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def ref_of(kernel: Any, param: str = "kernel") -> KernelRef:
    """The name a worker imports `kernel` by. Raises GpuArgumentTypeError for a non-kernel and
    GpuInvalidArgument, naming `param`, for a kernel other processes cannot import."""
    if isinstance(kernel, KernelRef):
        kernel = resolve(kernel)
    elif isinstance(kernel, str):
        kernel = resolve(parse(kernel, param), param)
    if not isinstance(kernel, _kernel_class()):
        raise GpuArgumentTypeError(
            f"`{param}` must be a @Gpu kernel; got {type(kernel).__name__}",
            param=param,
            expected="a @Gpu kernel (or its 'module.qualname')",
            got=type(kernel).__name__,
            hint="decorate the function with @Gpu in an importable module",
        )
    fn = kernel._fn
    module, qualname = fn.__module__, fn.__qualname__
    if module == "__main__":
        raise GpuInvalidArgument(
            f"kernel `{kernel.name}` is defined in __main__, which dask workers cannot import "
            "(kernels travel to workers by module name, never as source)",
            param=param,
            expected="a kernel defined at the top level of an importable module",
            got=f"__main__.{qualname}",
            hint="move the kernel into a module of its own (e.g. mykernels.py) and import it",
        )
    if "<locals>" in qualname:
        raise GpuInvalidArgument(
            f"kernel `{kernel.name}` is defined inside a function ({module}.{qualname}), so "
            "dask workers cannot import it by name",
            param=param,
            expected="a kernel defined at the top level of an importable module (or a class)",
            got=f"{module}.{qualname}",
            hint="move the @Gpu definition to the module's top level",
        )
    try:
        found = _walk(module, qualname)
    except (ImportError, AttributeError):
        found = None
    if found is not kernel:
        raise GpuInvalidArgument(
            f"kernel `{kernel.name}` is not what {module}.{qualname} names now (it was "
            "redefined, deleted or made under another name), so workers would import another "
            "kernel",
            param=param,
            expected=f"the kernel that {module}.{qualname} names",
            got=repr(kernel),
            hint="pass the kernel as its module defines it",
        )
    return KernelRef(module, qualname)


def parse(name: str, param: str = "kernel") -> KernelRef:
    """A `'package.module.qualname'` string as a KernelRef: the longest importable prefix is
    the module."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        return KernelRef(module, ".".join(parts[cut:]))
    raise GpuInvalidArgument(
        f"`{param}`={name!r} names no importable module",
        param=param,
        expected="'package.module.kernel_name'",
        got=repr(name),
        hint="check the spelling and that the module is on sys.path",
    )


def resolve(ref: KernelRef, param: str = "kernel") -> Any:
    """The kernel `ref` names in this process (a worker imports its module here)."""
    try:
        kernel = _walk(ref.module, ref.qualname)
    except ImportError as exc:
        raise GpuInvalidArgument(
            f"kernel {ref} cannot be imported here: {exc}",
            param=param,
            expected="a module importable on every dask worker",
            got=str(ref),
            hint="install the module (or put it on PYTHONPATH) on the workers too",
        ) from None
    except AttributeError:
        raise GpuInvalidArgument(
            f"module {ref.module} has no kernel {ref.qualname}",
            param=param,
            expected=f"a @Gpu kernel named {ref.qualname} in {ref.module}",
            got=str(ref),
            hint="the workers may have another version of the module than the client",
        ) from None
    if not isinstance(kernel, _kernel_class()):
        raise GpuArgumentTypeError(
            f"{ref} is a {type(kernel).__name__}, not a @Gpu kernel",
            param=param,
            expected="a @Gpu kernel",
            got=type(kernel).__name__,
            hint="decorate it with @Gpu",
        )
    return kernel
