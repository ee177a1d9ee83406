"""The frontend: `@Gpu` Python functions (their `ast`) -> typed IR (`cthreads.compiler.ir`).

`lower_kernel(fn, ...)` is the entry; `check_signature` validates a signature at decoration.
Errors are `GpuCompileError`s pointing at file:line:col of the culprit, raised `from None`.
"""

from __future__ import annotations

from .constants import collect_constants
from .lower import lower_kernel
from .signature import ALLOWED_PARAM_TYPES, SignatureError, check_signature, python_type_name, signature_node, signature_text
from .source import KernelSource, source_unavailable

__all__ = [
    "ALLOWED_PARAM_TYPES",
    "KernelSource",
    "SignatureError",
    "check_signature",
    "collect_constants",
    "lower_kernel",
    "python_type_name",
    "signature_node",
    "signature_text",
    "source_unavailable",
]
