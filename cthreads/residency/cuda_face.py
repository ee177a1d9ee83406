"""The face of a `DeviceArray` that CUDA libraries see (SPEC §12): `__cuda_array_interface__`,
`__dlpack__`, `__dlpack_device__` and `from_cuda`, each handed to cthreads/interop (imported
when used, so nothing of the exchange loads for an array CUDA never sees).
"""

from __future__ import annotations

import functools
from typing import Any


class CudaFace:
    """Mixed into DeviceArray: what torch, CuPy, JAX and Numba look for."""

    # -- exchange with CUDA (SPEC §12, cthreads/interop) ------------------------------------------
    # Properties that raise AttributeError where CUDA cannot see the memory (not NVIDIA), so
    # `hasattr(d, "__cuda_array_interface__")` is False there and nothing loads libcuda.
    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3 over this array's own memory (NVIDIA devices only)."""
        from ..interop import exports

        return exports.cuda_array_interface(self)

    @property
    def __dlpack__(self) -> Any:
        """`__dlpack__(stream=None, ...)`: a kDLCUDA capsule over this array's memory."""
        from ..interop import exports

        exports.exportable(self)
        return functools.partial(exports.dlpack, self)

    @property
    def __dlpack_device__(self) -> Any:
        from ..interop import exports

        exports.exportable(self)
        return functools.partial(exports.dlpack_device, self)

    @classmethod
    def from_cuda(cls, obj: Any) -> Any:
        """The device array holding what CUDA object `obj` holds (`__cuda_array_interface__`
        or `__dlpack__`: a torch tensor, a CuPy or JAX array): a CUDA view of a DeviceArray is
        that array (no copy); anything else is copied device to device through CUDA, never
        through the host, after the work queued on `obj`'s stream."""
        from ..interop import imports

        return imports.from_cuda(obj)
