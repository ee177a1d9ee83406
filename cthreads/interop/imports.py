"""CUDA objects as launch arguments and `DeviceArray.from_cuda` (issue 17, item 2).

A CUDA object is anything with `__cuda_array_interface__` (torch, CuPy, Numba, JAX) or with a
`__dlpack__` whose `__dlpack_device__` is CUDA. Memory that CUDA allocated cannot be imported
into Vulkan (cudaMalloc memory is not exportable), so such an argument is copied device to
device by CUDA (`cuMemcpyDtoDAsync` on the producer's stream) into an exported staging array,
the launch runs on that, and a parameter the kernel writes is copied back the same way; the
host never sees the data. A CUDA view of a DeviceArray's own memory (`torch.from_dlpack(d)`)
is the array itself: no copy at all.

Order: the copy in is queued on the producer's stream (the CAI `stream` field; torch's current
stream for a torch tensor) and comes before the launch; the copy back of a written argument is
queued on that stream after the launch, so CUDA work queued there after `gpu()` returns sees
the results. Each of those hand-offs is handoff.py's: on the GPU through exported timeline
semaphores where the driver allows it, else a wait on the host.

Nothing here runs for a device that is not `cuda_capable`: passing a CUDA object there raises
GpuInvalidArgument that says why, without loading libcuda.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..errors import GpuArgumentTypeError, GpuInvalidArgument
from ..residency.arena import SELF_RECORD_TYPES
from ..runtime import formats
from . import cuda, cuda_capable, exports, handoff, why_not_capable
from .describe import Foreign, describe

_PLAIN = (list, tuple, bytes, bytearray, memoryview, str, int, float, bool, type(None))
_CUDA_DEVICE_TYPES = (2, 13)  # kDLCUDA, kDLCUDAManaged


def is_cuda_object(value: Any) -> bool:
    """Whether `value` offers CUDA memory (without touching CUDA: attribute probes only).
    torch raises RuntimeError (not AttributeError) for a tensor that requires grad: that is
    a CUDA object too, refused later with torch's reason."""
    t = type(value)
    if t in _PLAIN or t in SELF_RECORD_TYPES:
        return False  # (a DeviceArray's own interface would import it into CUDA)
    try:  # (an instance attribute counts: SimpleNamespace(__cuda_array_interface__=...))
        if hasattr(value, "__cuda_array_interface__"):
            return True
    except Exception:  # noqa: BLE001 - see above
        return True
    probe = getattr(t, "__dlpack_device__", None)
    if probe is None or not hasattr(t, "__dlpack__"):
        return False
    try:
        kind = value.__dlpack_device__()[0]
    except Exception:  # noqa: BLE001 - a producer that cannot say is not ours to take
        return False
    return int(kind) in _CUDA_DEVICE_TYPES


# ---- checks against the kernel's parameter ---------------------------------------------


def not_capable(name: str, obj: Any, device: Any) -> GpuInvalidArgument:
    return GpuInvalidArgument(
        f"`{name}` is a CUDA array ({type(obj).__module__}.{type(obj).__name__}), but "
        f"{why_not_capable(device)}",
        param=name,
        expected="a list, a host array or a DeviceArray",
        got="CUDA memory",
        hint="copy it to the host first (e.g. tensor.cpu().numpy(), cupy.asnumpy(a)), or run "
        "cthreads on the NVIDIA GPU that holds it",
    )


def _check(param: Any, f: Foreign, ctx: cuda.Context) -> None:
    fmt = formats.of(param.type.elem)
    name = param.name
    ordinal = ctx.pointer_ordinal(f.ptr) if f.ptr else ctx.ordinal
    ok = f.dtype.name in fmt.dtype.split(" ") or (fmt.kind == "bool" and f.dtype.name == "uint8")
    if not ok or f.dtype.itemsize != fmt.itemsize or not f.dtype.isnative:
        raise GpuArgumentTypeError(
            f"`{name}` expects {fmt.dtype}, got {f.label(ordinal)}",
            param=name,
            expected=fmt.dtype,
            got=f.label(ordinal),
            hint=f"convert it on the GPU first (for torch: x.to(torch.{fmt.dtype.split(' ')[0]}))",
        )
    if ordinal is not None and ordinal != ctx.ordinal:
        raise GpuInvalidArgument(
            f"`{name}` is on cuda:{ordinal}; cthreads runs on cuda:{ctx.ordinal}",
            param=name,
            expected=f"memory on cuda:{ctx.ordinal}",
            got=f.label(ordinal),
            hint=f"move it there (x.to('cuda:{ctx.ordinal}')) or choose the matching device",
        )
    if not f.contiguous:
        raise GpuInvalidArgument.non_contiguous(
            name,
            "array",
            f.label(ordinal),
            hint="pass x.contiguous() (torch) or cupy.ascontiguousarray(x)",
        )
    if f.nbytes == 0:
        raise GpuInvalidArgument.empty(name, "list", f.label(ordinal))
    if param.writes and f.readonly:
        raise GpuInvalidArgument(
            f"`{name}` is written by the kernel but the {f.label(ordinal)} passed is read-only",
            param=name,
            expected="a writable CUDA array",
            got="read-only",
        )


# ---- staging: exported arrays that CUDA copies into, reused across launches ---------------

_pool_lock = threading.Lock()
_idle: dict[tuple, list] = {}  # key -> [(array, the CUDA stream that last copied from it)]
_IDLE_PER_KEY = 4


def _take(device: Any, shape: tuple, dtype: Any, ctx: Any, stream: int | None) -> Any:
    from ..residency.device_array import DeviceArray

    key = (id(device), device.generation, shape, dtype.str)
    with _pool_lock:
        free = _idle.get(key)
        arr, last = free.pop() if free else (None, None)
    if arr is None or arr.released:
        arr = DeviceArray(shape, dtype, exportable=True)
    elif last is not None and last != stream:
        ctx.synchronize(last)  # a copy back from it on another stream is done (rare)
    # a launch still reading it finishes before CUDA overwrites it
    handoff.ours_to_cuda(device, ctx, arr.last_use, [stream])
    return arr


def _give(device: Any, arr: Any, stream: int | None = None) -> None:
    key = (id(device), device.generation, arr.shape, arr.dtype.str)
    with _pool_lock:
        for k in [k for k in _idle if k[1] != device.generation]:
            del _idle[k]  # arrays of a device that was shut down
        free = _idle.setdefault(key, [])
        if len(free) < _IDLE_PER_KEY:
            free.append((arr, stream))
            return
    arr.release()


@dataclass
class Staged:
    """One CUDA argument as the launch sees it: `array` (a DeviceArray) and how it got there."""

    foreign: Foreign
    array: Any
    copied: bool  # True: `array` is staging (copy back if written); False: the same memory


def stage(param: Any, value: Any, device: Any) -> Staged:
    """`value` (a CUDA object) as a DeviceArray for parameter `param` (checked), its data in
    place once the producer's queued work finished (the caller hands off from its stream)."""
    if not cuda_capable(device):
        raise not_capable(param.name, value, device)
    ctx = cuda.context_for(device)
    f = describe(value, param.name)
    _check(param, f, ctx)
    own = exports.array_at(f.ptr, f.nbytes)
    if own is not None and own._device is device:
        return Staged(f, own, False)  # a view of our own memory: used in place
    import numpy

    elem = numpy.dtype(formats.of(param.type.elem).dtype.split(" ")[0])
    arr = _take(device, f.shape, elem, ctx, f.stream)
    try:
        dst = exports.mapping(arr).ptr
        ctx.copy(dst, f.ptr, f.nbytes, f.stream)
    except BaseException:
        _give(device, arr)
        raise
    return Staged(f, arr, True)


def finish(staged: list[tuple[Any, Staged]], value: int, device: Any) -> None:
    """After the launch (timeline `value`): copy written staging arrays back on their producer's
    stream, and make CUDA views of our memory safe for CUDA work queued from now on."""
    ctx = cuda.context_for(device) if staged else None
    # results exist before CUDA reads them, and a view of our own memory is no longer read by
    # the launch when CUDA writes it next (on the producers' streams)
    streams = [s.foreign.stream for param, s in staged if param.writes or not s.copied]
    if streams:
        handoff.ours_to_cuda(device, ctx, value, streams)
    try:
        for param, s in staged:
            if s.copied and param.writes:
                ctx.copy(
                    s.foreign.ptr, exports.mapping(s.array).ptr, s.foreign.nbytes, s.foreign.stream
                )
        for _, s in staged:
            if s.foreign.keep:  # a DLPack producer: its memory must outlive the copy back
                ctx.synchronize(s.foreign.stream)
                s.foreign.keep.clear()
    finally:
        for param, s in staged:
            if s.copied:
                _give(device, s.array, s.foreign.stream if param.writes else None)


def launch(prep: Any, device: Any, args: tuple, plan: Any, run: Any, **options: Any) -> Any:
    """Run `run(prep, device, args', **options)` (dispatch._launch) with every CUDA object in
    `args` replaced by its staged DeviceArray; copy results back after."""
    staged: list[tuple[Any, Staged]] = []
    new = list(args)
    seen: dict[int, Staged] = {}
    try:
        for param in plan.lists:
            value = args[param.index]
            if is_cuda_object(value):
                s = seen.get(id(value))
                if s is not None:
                    # the same object twice: the same array twice, so that the launch's
                    # aliasing check sees it (as for any other list passed twice)
                    new[param.index] = s.array
                    continue
                s = seen[id(value)] = stage(param, value, device)
                staged.append((param, s))
                new[param.index] = s.array
        if staged:  # what CUDA queued on the producers' streams comes first (once per stream)
            ctx = cuda.context_for(device)
            for stream in dict.fromkeys(s.foreign.stream for _, s in staged):
                handoff.cuda_to_ours(device, ctx, stream)
        job = run(prep, device, tuple(new), **options)
    except BaseException:
        for _, s in staged:
            if s.copied:
                _give(device, s.array)
        raise
    # the launch's timeline value: the staged arrays' last_use was set to it
    value = max((s.array.last_use for _, s in staged), default=0)
    finish(staged, value, device)
    return job


def from_cuda(obj: Any) -> Any:
    """`DeviceArray.from_cuda(obj)`: the DeviceArray of a CUDA view of one, else a copy."""
    import numpy

    from .. import runtime
    from ..residency.device_array import DeviceArray, _element

    device = runtime.get_device()
    if not is_cuda_object(obj):
        raise GpuArgumentTypeError(
            f"`obj`: from_cuda() takes an object with __cuda_array_interface__ or a CUDA "
            f"__dlpack__; got {type(obj).__name__}",
            param="obj",
            expected="a CUDA array (torch tensor on cuda, CuPy array, ...)",
            got=type(obj).__name__,
            hint="for host data use DeviceArray.from_numpy(a)",
        )
    if not cuda_capable(device):
        raise not_capable("obj", obj, device)
    ctx = cuda.context_for(device)
    f = describe(obj, "obj")
    ordinal = ctx.pointer_ordinal(f.ptr) if f.ptr else ctx.ordinal
    _element(f.dtype)  # one of the DeviceArray element types, or its error
    if ordinal is not None and ordinal != ctx.ordinal:
        raise GpuInvalidArgument(
            f"`obj` is on cuda:{ordinal}; cthreads runs on cuda:{ctx.ordinal}",
            param="obj",
            got=f.label(ordinal),
            hint=f"move it there (x.to('cuda:{ctx.ordinal}'))",
        )
    if not f.contiguous:
        raise GpuInvalidArgument(
            f"`obj` must be C-contiguous; got a non-contiguous {f.label(ordinal)}",
            param="obj",
            hint="pass x.contiguous() (torch) or cupy.ascontiguousarray(x)",
        )
    own = exports.array_at(f.ptr, f.nbytes)
    if own is not None and own._device is device and own.shape == f.shape:
        handoff.cuda_to_ours(device, ctx, f.stream)
        handoff.stamp(device, own)
        return own
    arr = DeviceArray(f.shape, numpy.dtype(f.dtype), exportable=True)
    if f.nbytes:
        # its zero fill, queued on our side, lands first
        handoff.ours_to_cuda(device, ctx, arr.last_use, [f.stream])
        ctx.copy(exports.mapping(arr).ptr, f.ptr, f.nbytes, f.stream)
        handoff.cuda_to_ours(device, ctx, f.stream)
        handoff.stamp(device, arr)
        if f.keep:  # a DLPack producer's memory must outlive the copy
            ctx.synchronize(f.stream)
    f.keep.clear()
    return arr
