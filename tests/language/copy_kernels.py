"""Kernels with `copy16(dst_shared, dst_offset, src_list, src_offset)`: one per element size
(COPIES: 2-, 4- and 8-byte elements, run on the device and in the emulator) and rejected
forms (BAD: each with the words its message must contain)."""

# ruff: noqa: F821, F841

from cthreads.gpu import Gpu, ThreadIdx, atomic_add, copy16, f16, shared, u8, u64
from cthreads.sync import __sync_threads

S = 64  # shared elements per workgroup: 8 invocations x one 16-byte copy of 2-byte elements


@Gpu(workgroup_size=8)
def copy_f16(src: list[f16], out: list[f16], so: int, do: int) -> None:
    """Invocation t copies 8 halves from src[so + 8t] into s[do + 8t]; then s goes to out."""
    t = ThreadIdx.x
    s = shared(f16, S)
    copy16(s, do + t * 8, src, so + t * 8)
    __sync_threads()
    for j in range(8):
        out[t * 8 + j] = s[t * 8 + j]


@Gpu(workgroup_size=8)
def copy_f32(src: list[float], out: list[float], so: int, do: int) -> None:
    t = ThreadIdx.x
    s = shared(float, S)
    copy16(s, do + t * 4, src, so + t * 4)
    __sync_threads()
    for j in range(8):
        out[t * 8 + j] = s[t * 8 + j]


@Gpu(workgroup_size=8)
def copy_u64(src: list[u64], out: list[u64], so: int, do: int) -> None:
    t = ThreadIdx.x
    s = shared(u64, S)
    copy16(s, do + t * 2, src, so + t * 2)
    __sync_threads()
    for j in range(8):
        out[t * 8 + j] = s[t * 8 + j]


@Gpu(workgroup_size=4)
def copy_then_atomics(src: list[float], out: list[float]) -> None:
    """Float atomics on a shared array keep it as int32 bits: the copy stores bit patterns."""
    t = ThreadIdx.x
    s = shared(float, 16)
    copy16(s, t * 4, src, t * 4)
    __sync_threads()
    atomic_add(s, t, 1.0)
    __sync_threads()
    for j in range(4):
        out[t * 4 + j] = s[t * 4 + j]


# kernel -> (numpy dtype, elements per copy)
COPIES = {copy_f16: (16, 8), copy_f32: (32, 4), copy_u64: (64, 2)}


@Gpu
def bad_one_byte(src: list[u8], out: list[u8]) -> None:
    s = shared(u8, 64)
    copy16(s, 0, src, 0)


@Gpu
def bad_destination_list(src: list[float], out: list[float]) -> None:
    copy16(out, 0, src, 0)


@Gpu
def bad_source_shared(src: list[float], out: list[float]) -> None:
    s = shared(float, 64)
    t = shared(float, 64)
    copy16(s, 0, t, 0)


@Gpu
def bad_arity(src: list[float], out: list[float]) -> None:
    s = shared(float, 64)
    copy16(s, 0, src)


@Gpu
def bad_element_mismatch(src: list[float], out: list[float]) -> None:
    s = shared(int, 64)
    copy16(s, 0, src, 0)


@Gpu
def bad_as_value(src: list[float], out: list[float]) -> None:
    s = shared(float, 64)
    x = copy16(s, 0, src, 0)


# kernel -> (the argument the message points at, words it must contain)
BAD = {
    bad_one_byte: ("src", "2, 4 or 8 bytes; `src` (list[u8]) holds u8"),
    bad_destination_list: ("out", "writes into a workgroup shared array; `out` is a list[float]"),
    bad_source_shared: ("t", "reads a list parameter; `t` is a shared or local array"),
    bad_arity: ("copy16", "copy16() takes 4 arguments; got 3"),
    bad_element_mismatch: ("s", "shared array `s` holds int, `src` (list[float]) holds float"),
    bad_as_value: ("copy16", "is a statement and has no value"),
}
