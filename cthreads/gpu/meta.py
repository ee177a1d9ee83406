"""`__gpu_kernel_meta__`: a kernel's launch metadata in the layout of cthreads-gpu (SPEC §2).

Plain data made once per kernel object (and per variant, gpu/variants.py): the cthreads-gpu
keys a program written for that package reads, plus our own (`qualified_name`, `types`).
"""

from __future__ import annotations

from typing import Any


def kernel_meta(kernel: Any) -> dict[str, Any]:
    """The `__gpu_kernel_meta__` dict of `kernel` (a `GpuKernel`)."""
    from ..compiler import ir
    from ..compiler.frontend.signature import python_type_name

    params = []
    for p in kernel.signature:
        t = p.type
        if isinstance(t, ir.ListType):
            kind, elem = "list", t.elem.kind
            nbytes = t.storage_bits // 8
            inner = {"kind": elem, "spirv_type": elem, "elem_bytes": nbytes}
            schema = {
                "kind": "list",
                "spirv_type": f"{elem}[]",
                "elem_bytes": nbytes,
                "inner": inner,
            }
            params.append(
                {
                    "name": p.name,
                    "pass_as": "ref",
                    "kind": kind,
                    "schema": schema,
                    "elem_kind": elem,
                    "elem_bytes": nbytes,
                }
            )
        else:
            schema = {"kind": t.kind, "spirv_type": t.kind, "elem_bytes": t.bits // 8}
            params.append({"name": p.name, "pass_as": "value", "kind": t.kind, "schema": schema})
    n_scalars = sum(not p.is_list for p in kernel.signature)
    wg = kernel.workgroup_size
    return {
        "symbol": kernel.name,
        "name": kernel.name,
        "qualified_name": kernel.qualified_name,
        "binding_count": (1 if n_scalars else 0) + (len(kernel.signature) - n_scalars),
        "scalar_bytes": 4 * n_scalars,
        "local_size_x": wg[0],
        "group_count_x": None,
        "group_count_y": 1,
        "group_count_z": 1,
        "workgroup_size": wg,
        "params": params,
        "types": {p.name: python_type_name(p.type) for p in kernel.signature},
        "schemas": {},
        "returns": None,
        "log": kernel.log,
    }
