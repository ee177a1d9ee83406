"""Aliasing between the list arguments of one launch (SPEC §5.2): each list is its own device
buffer, so two arguments that share host memory cannot both be honoured when the kernel
writes either. Refused before anything runs: the same object twice (by identity), and two
buffers whose bytes overlap (views of one numpy array, memoryviews of one bytearray, ...).
"""

from __future__ import annotations

from typing import Any

from ..errors import GpuInvalidArgument


def buffer_span(view: memoryview) -> tuple[int, int]:
    """[start, end) host addresses of a C-contiguous byte view."""
    import ctypes  # loaded only when two buffers meet in one launch

    try:  # the quickest way to a buffer's address (under a microsecond), writable ones only
        start = ctypes.addressof(ctypes.c_char.from_buffer(view))
    except TypeError:  # read-only
        import numpy

        start = numpy.frombuffer(view, dtype=numpy.uint8).__array_interface__["data"][0]
    return start, start + view.nbytes


def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """How many bytes two [start, end) spans share."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def check_aliasing(lists: list[Any]) -> None:
    """Refuse list arguments (`binding.ListArg`s) that alias when the kernel writes either:
    one object passed twice, or two buffers sharing bytes. Read-only with read-only is fine."""
    if len({id(arg.value) for arg in lists}) != len(lists):
        seen: dict[int, Any] = {}
        for arg in lists:
            other = seen.get(id(arg.value))
            if other is not None and (arg.param.writes or other.param.writes):
                written = arg.param.name if arg.param.writes else other.param.name
                raise GpuInvalidArgument(
                    f"the same object is passed as `{other.param.name}` and `{arg.param.name}`, "
                    f"and the kernel writes `{written}`",
                    param=arg.param.name,
                    hint="pass a copy for one of them",
                )
            seen[id(arg.value)] = arg
    buffers = [arg for arg in lists if arg.memory is not None]
    if len(buffers) < 2 or not any(arg.param.writes for arg in buffers):
        return
    spans = [buffer_span(arg.memory) for arg in buffers]
    for i, a in enumerate(buffers):
        for j in range(i + 1, len(buffers)):
            b = buffers[j]
            if not (a.param.writes or b.param.writes) or a.value is b.value:
                continue
            shared = overlap(spans[i], spans[j])
            if shared:
                written = " and ".join(f"`{x.param.name}`" for x in (a, b) if x.param.writes)
                raise GpuInvalidArgument(
                    f"`{a.param.name}` and `{b.param.name}` share memory ({shared} bytes "
                    f"overlap: views of one array or buffer), and the kernel writes {written}: "
                    "each list is its own device buffer, so one list's results would be lost",
                    param=(b if b.param.writes else a).param.name,
                    expected="separate memory for lists the kernel writes",
                    got=f"{shared} shared bytes",
                    hint=f"pass copies (e.g. {b.param.name}.copy()) so that each list has its "
                    "own memory",
                )
