"""`GpuKernel.__gpu_kernel_meta__`: the launch metadata dict in cthreads-gpu's layout, plus our
own keys. Built at decoration (and per variant, gpu/variants.py) from the checked signature
(`ir_types.Param`s): it reads no IR node class and no source, so decorating stays cheap (issue 19)."""

from __future__ import annotations

from typing import Any


def kernel_meta(kernel: Any) -> dict[str, Any]:
    """The metadata of `kernel` (a `GpuKernel` whose signature is checked)."""
    from ..compiler.frontend.signature import python_type_name
    from ..compiler.ir_types import ListType

    params = []
    for p in kernel.signature:
        t = p.type
        if isinstance(t, ListType):
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
