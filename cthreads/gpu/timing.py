"""The arguments the autotuner times variants on: copies wherever the kernel writes.

The user's data must be written exactly once, by the winning variant's launch (a kernel that
increments its output would otherwise see one increment per timed launch). So every list the
kernel writes is replaced by a copy; lists it only reads are passed as they are where they
already live on the device (device arrays, arena-bound lists). Host lists and arrays (copies or
read-only originals' copies) are bound in a private `GpuArena` for the race, so each timed
launch is the dispatch alone, not its uploads and downloads; where binding is refused the copy
goes as a plain argument (uploaded per launch: the same cost for every variant).
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import CThreadsGPUError
from ..residency.arena import GpuArena, resident_of


class TimingArgs:
    """`args`: the tuple to launch with; `release()` frees what was made for it."""

    def __init__(self, args: tuple, arena: GpuArena, arrays: list[Any]) -> None:
        self.args, self._arena, self._arrays = args, arena, arrays

    def release(self) -> None:
        self._arena.release()
        for array in self._arrays:
            array.release()


def timing_args(args: tuple, params: tuple) -> TimingArgs:
    """Copies of `args` for timed launches (see the module docstring); `params` are the
    compiled kernel's (their `writes` says which lists to copy)."""
    from ..residency.device_array import DeviceArray

    out = list(args)
    arena = GpuArena()
    arrays: list[Any] = []
    for i, param in enumerate(params):
        if not param.is_list or i >= len(args):
            continue
        value = args[i]
        res = resident_of(value)
        if isinstance(value, DeviceArray):
            if param.writes and not value.released:
                twin = DeviceArray.from_numpy(value.numpy())
                arrays.append(twin)
                out[i] = twin
            continue
        if res is not None and not param.writes:
            continue  # already on the device, and never written
        twin = _host_copy(value)
        if twin is None:
            continue  # not a buffer we can copy: the launch reports it
        try:
            arena.bind_as(param.type.elem, **{f"arg{i}": twin})
        except (CThreadsGPUError, TypeError, ValueError):
            pass  # a plain argument then (the real launch words any error)
        out[i] = twin
    return TimingArgs(tuple(out), arena, arrays)


def _host_copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    try:
        return copy.copy(value)  # numpy arrays, array.array: a new buffer
    except Exception:
        return None
