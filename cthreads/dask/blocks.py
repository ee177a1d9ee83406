"""`map_blocks(kernel, *args)`: a `@Gpu` kernel over the chunks of 1-D dask arrays.

Arguments follow the kernel's parameters, less an `int` parameter named `n`, which gets each
chunk's length (SPEC §4's `n` rule). The list parameters the kernel writes are the outputs
(one dask array, or a tuple in parameter order); the chunks of every array must line up.
Element types are checked by the launch on the worker, the one place that knows them all.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import dask.array as da
import numpy as np

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from .refs import ref_of, resolve
from .worker import BlockSpec, run_block


def _is_n(p: Any) -> bool:
    # the launch's own rule (launch/plan.py): an int scalar named n sizes the problem
    return p.name == "n" and not p.is_list and p.type.kind == "int"


def _chunks_text(chunks: tuple) -> str:
    sizes = chunks[0]
    if len(sizes) <= 4:
        return str(sizes)
    return f"{len(sizes)} chunks ({sizes[0]}, {sizes[1]}, ..., {sizes[-1]})"


def _check_lined_up(name: str, arr: da.Array, first: str, ref: da.Array) -> None:
    if arr.chunks == ref.chunks:
        return
    a, b = arr.chunks[0], ref.chunks[0]
    where = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    raise GpuInvalidArgument(
        f"the chunks of `{name}` do not line up with those of `{first}` (first difference at "
        f"chunk {where}): `{name}` has {_chunks_text(arr.chunks)} of {arr.shape[0]} elements, "
        f"`{first}` has {_chunks_text(ref.chunks)} of {ref.shape[0]}",
        param=name,
        expected=f"the chunks of `{first}`: {_chunks_text(ref.chunks)}",
        got=_chunks_text(arr.chunks),
        hint=f"rechunk it: {name}.rechunk({first}.chunks)",
    )


def _as_dask(name: str, value: Any) -> da.Array | np.ndarray:
    if isinstance(value, (da.Array, np.ndarray)):
        if value.ndim != 1:
            raise GpuInvalidArgument(
                f"`{name}` is a {value.ndim}-d array; kernels take 1-d lists",
                param=name,
                expected="a 1-d dask array",
                got=f"shape {value.shape}",
                hint=f"pass {name}.ravel() (and reshape the result)",
            )
        return value
    raise GpuArgumentTypeError(
        f"`{name}` is a list parameter and expects a 1-d dask array (or a numpy array, chunked "
        f"like the others); got {type(value).__name__}",
        param=name,
        expected="a 1-d dask.array.Array",
        got=type(value).__name__,
        hint="wrap it: dask.array.from_array(values, chunks=...)",
    )


def map_blocks(kernel: Any, *args: Any, name: str | None = None) -> Any:
    """Run `kernel` once per chunk of its dask-array arguments; return what it writes.

    `args` are the kernel's arguments in order, without an `int` parameter named `n` (each
    chunk's length fills it). List parameters take 1-d dask arrays whose chunks line up (a
    numpy array is chunked like the first dask array); scalars go to every chunk unchanged.
    Returns a dask array per list the kernel writes, a tuple when it writes several; a chunk
    of it is a private copy of the input chunk the kernel wrote into. `kernel` must be
    importable by module name on the workers (a `@Gpu` object or `'module.qualname'`).
    Nothing runs until the result is computed; errors raised by the launch on a worker come
    back as their cthreads class with the worker named."""
    ref = ref_of(kernel)
    kernel = resolve(ref)
    params = kernel.lower().params  # reads/writes per list (the frontend only, no SPIR-V)
    taking = [p for p in params if not _is_n(p)]
    if len(args) != len(taking):
        sized = (
            " (`n` is not passed: it is each chunk's length)" if len(taking) < len(params) else ""
        )
        raise GpuArgumentTypeError(
            f"map_blocks({kernel.name}, ...) takes {len(taking)} argument(s) "
            f"({', '.join(p.name for p in taking)}){sized}; got {len(args)}",
            param="args",
            expected=", ".join(p.name for p in taking),
            got=f"{len(args)} argument(s)",
            hint="pass one argument per kernel parameter, in order",
        )
    given = dict(zip((p.name for p in taking), args))
    first = next((p.name for p in taking if isinstance(given[p.name], da.Array)), None)
    if first is None:
        raise GpuInvalidArgument(
            f"map_blocks({kernel.name}, ...) needs at least one dask array among its list "
            "arguments (the chunks to map over)",
            param="args",
            expected="a dask.array.Array for a list parameter",
            got="no dask array",
            hint="wrap one list: dask.array.from_array(values, chunks=...)",
        )
    ref_array = given[first]
    arrays: list[da.Array] = []
    slots: list[tuple] = []
    outputs: list[int] = []
    for position, p in enumerate(params):
        if _is_n(p):
            slots.append(("n",))
            continue
        value = given[p.name]
        if p.is_list:
            value = _as_dask(p.name, value)
            if isinstance(value, np.ndarray):
                value = da.from_array(value, chunks=ref_array.chunks)
            _check_lined_up(p.name, value, first, ref_array)
            slots.append(("array", len(arrays)))
            arrays.append(value)
            if p.writes:
                outputs.append(position)
        elif isinstance(value, (da.Array, np.ndarray)) and getattr(value, "ndim", 0) > 0:
            raise GpuArgumentTypeError(
                f"`{p.name}` is a scalar parameter; got an array",
                param=p.name,
                expected="a Python or numpy scalar",
                got=f"{type(value).__name__} of shape {value.shape}",
                hint="pass one value (it goes to every chunk)",
            )
        else:
            slots.append(("value", value))
    if not outputs:
        raise GpuInvalidArgument(
            f"kernel `{kernel.name}` writes none of its lists, so map_blocks has nothing to "
            "return",
            param="kernel",
            expected="a kernel that writes at least one list parameter",
            got="a kernel that only reads",
            hint="write the results into a list parameter (pass dask.array.zeros(...) for it)",
        )
    spec = BlockSpec(ref, tuple(slots), tuple(outputs))
    task = functools.partial(run_block, spec)
    token = name or f"cthreads-{kernel.name}"
    dtypes = [arrays[slots[p][1]].dtype for p in outputs]
    if len(outputs) == 1:
        dtype = dtypes[0]
        return da.map_blocks(task, *arrays, dtype=dtype, meta=np.empty((0,), dtype), token=token)
    both = da.map_blocks(task, *arrays, dtype=object, meta=np.empty((0,), object), token=token)
    return tuple(
        both.map_blocks(
            operator.getitem,
            i,
            dtype=dtype,
            meta=np.empty((0,), dtype),
            token=f"{token}-{params[p].name}",
        )
        for i, (p, dtype) in enumerate(zip(outputs, dtypes))
    )
