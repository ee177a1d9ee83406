"""The frontend: `@Gpu` Python functions (their `ast`) -> typed IR (`cthreads.compiler.ir`).

`lower_kernel(fn, ...)` is the entry; `check_signature` validates a signature at decoration.
Errors are `GpuCompileError`s pointing at file:line:col of the culprit, raised `from None`.
Names load on first use, so decorating kernels (which needs only `signature`) stays cheap.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ALLOWED_PARAM_TYPES": "signature",
    "SignatureError": "signature",
    "check_signature": "signature",
    "python_type_name": "signature",
    "signature_node": "signature",
    "signature_text": "signature",
    "KernelSource": "source",
    "source_unavailable": "source",
    "collect_constants": "constants",
    "lower_kernel": "lower",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [  # noqa: RUF022 - grouped by module, as _EXPORTS
    "ALLOWED_PARAM_TYPES",
    "SignatureError",
    "check_signature",
    "python_type_name",
    "signature_node",
    "signature_text",
    "KernelSource",
    "source_unavailable",
    "collect_constants",
    "lower_kernel",
]
