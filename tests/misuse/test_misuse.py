# ruff: noqa: F821, F841, PLW0602, S102, TRY203 - kernels here break the language on purpose
"""The misuse table (issue 6): ways to call the API wrongly. Each raises the documented exception
with a message that names the culprit, never crashes, and leaves the library working: after
every case a valid launch must still succeed."""

from __future__ import annotations

import array
import asyncio
import os

import numpy as np
import pytest

from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuCompileError,
    GpuInvalidArgument,
    VulkanOutOfMemory,
    gpu,
)
from cthreads.gpu.kernel import unregister
from cthreads.sync import Barrier, __sync_threads


@Gpu
def axpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def flags(n: int, f: list[bool], out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n and f[i]:
        out[i] = 1


@Gpu
def set_flags(n: int, f: list[bool]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        f[i] = True


def k_fresh(x: list[float]) -> None:
    x[0] = 1.0


def workgroup_env(raw: str):
    """A first launch of a kernel with CTHREADS_WORKGROUP set to `raw` (read when its pipeline
    is built)."""
    kernel = Gpu(k_fresh)
    old = os.environ.get("CTHREADS_WORKGROUP")
    os.environ["CTHREADS_WORKGROUP"] = raw
    try:
        gpu(kernel, [0.0]).join()
    finally:
        if old is None:
            del os.environ["CTHREADS_WORKGROUP"]
        else:
            os.environ["CTHREADS_WORKGROUP"] = old
        unregister(kernel)


def good(*over):
    args = [3, 2.0, [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    for i, v in over:
        args[i] = v
    return gpu(axpy, *args)


def ro_array():
    a = np.zeros(3, np.float32)
    a.setflags(write=False)
    return a


def decorate(src_fn):
    """Decorate a kernel defined by `src_fn` (a nested def whose source inspect can read)."""
    try:
        kernel = Gpu(src_fn)
    except BaseException:
        raise
    try:
        gpu(kernel, *([0] * len(kernel.param_names)))
    finally:
        unregister(kernel)


# --- kernels outside the language: each fails alone, at launch --------------------------------


def k_assert(x: list[float]) -> None:
    assert x[0] > 0


def k_try(x: list[float]) -> None:
    try:
        x[0] = 1.0
    except ValueError:
        pass


def k_raise(x: list[float]) -> None:
    raise ValueError("no")


def k_with(x: list[float]) -> None:
    with open("f"):
        pass


def k_lambda(x: list[float]) -> None:
    f = lambda v: v
    x[0] = 1.0


def k_comprehension(x: list[float]) -> None:
    y = [v for v in range(3)]
    x[0] = 1.0


def k_print(x: list[float]) -> None:
    print(x[0])


def k_nested_index(x: list[float]) -> None:
    x[0][1] = 2.0


def k_return_value(x: list[float]) -> None:
    return 1


def k_barrier_ctor(x: list[float]) -> None:
    b = Barrier(4)
    x[0] = 1.0


def k_unknown_name(x: list[float]) -> None:
    x[0] = undefined_thing


def k_string(x: list[float]) -> None:
    x[0] = "text"


def k_slice(x: list[float]) -> None:
    x[0:2] = 1.0


def k_float_index(x: list[float]) -> None:
    x[1.5] = 1.0


def k_list_method(x: list[float]) -> None:
    x.append(1.0)


def k_global(x: list[float]) -> None:
    global something
    x[0] = 1.0


def launch_kernel(fn):
    kernel = Gpu(fn)
    try:
        return gpu(kernel, [0.0])
    finally:
        unregister(kernel)


def bad_signature(annotation_src: str):
    """Decorating a kernel whose signature is outside SPEC §2."""
    scope: dict = {}
    exec(f"def bad{annotation_src}:\n    pass\n", {"Gpu": Gpu}, scope)
    return Gpu(scope["bad"])


def host_barrier():
    __sync_threads()


def closed_loop_await():
    loop = asyncio.new_event_loop()
    loop.close()
    job = good()
    try:
        loop.run_until_complete(job)
    finally:
        job.join()


def huge_array():
    from cthreads.runtime import get_device

    limit = get_device().info.limits["max_memory_allocation_size"]
    big = np.zeros(limit // 4 + 16, np.float32)  # larger than one device allocation may be
    gpu(axpy, 1, 1.0, big, [0.0]).join()


def arena_after_release():
    arena = GpuArena()
    arena.release()
    arena.bind(x=[1.0])


def arena_twice():
    xs = [1.0]
    a = GpuArena().bind(x=xs)
    try:
        GpuArena().bind(y=xs)
    finally:
        a.release()


def arena_length_changed():
    xs = [1.0, 2.0, 3.0]
    a = GpuArena().bind(x=xs)
    try:
        xs.pop()
        gpu(axpy, 2, 1.0, xs, [0.0, 0.0]).join()
    finally:
        a.release()


def grown_before_join():
    y = [0.0, 0.0, 0.0]
    job = gpu(axpy, 3, 1.0, [1.0, 2.0, 3.0], y)
    y.append(0.0)
    job.join()


def arena_read_only_written():
    ro = ro_array()
    with GpuArena().bind(out=ro):
        gpu(axpy, 3, 1.0, [1.0, 2.0, 3.0], ro)


def overlapping_views():
    base = np.zeros(6, np.float32)
    gpu(axpy, 3, 1.0, base[:3], base[1:4])


def arena_sync_unknown():
    a = GpuArena().bind(x=[1.0])
    try:
        a.sync("y")
    finally:
        a.release()


# one case per line: docs/reliability.md's misuse table is checked against these lines
# fmt: off
CASES = [
    # (id, call, exception, message fragment)
    ("not-a-kernel", lambda: gpu(len, [1]), TypeError, "not decorated with @Gpu"),
    ("kernel-is-none", lambda: gpu(None), TypeError, "needs a @Gpu kernel"),
    ("keyword-args", lambda: gpu(axpy, n=3), TypeError, "keyword argument(s) `n`"),
    ("too-few", lambda: gpu(axpy, 3), TypeError, "takes 4 argument(s) (n, a, x, y); got 1"),
    ("too-many", lambda: good((0, 3)) and gpu(axpy, 1, 2.0, [1.0], [1.0], 5), TypeError, "got 5"),
    ("str-for-int", lambda: good((0, "3")), TypeError, "`n` expects int (int32); got str"),
    ("none-for-int", lambda: good((0, None)), TypeError, "`n` expects int (int32); got NoneType"),
    ("bool-for-int", lambda: good((0, True)), TypeError, "`n` expects int (int32); got bool"),
    ("float-for-int", lambda: good((0, 3.0)), TypeError, "`n` expects int (int32); got float"),
    ("int-overflow", lambda: good((0, 2**31)), GpuInvalidArgument, "outside [-2**31, 2**31 - 1]"),
    ("int-underflow", lambda: good((0, -(2**31) - 1)), GpuInvalidArgument, "`n` expects int (int32)"),
    ("float-overflow", lambda: good((1, 1e300)), GpuInvalidArgument, "`a` expects float (float32); got 1e+300"),
    ("complex-for-float", lambda: good((1, 1j)), TypeError, "`a` expects float (float32); got complex"),
    ("huge-int-for-float", lambda: good((1, 10**400)), GpuInvalidArgument, "`a` expects float (float32); got an int of 401 digits, which overflows float32"),
    ("pow2-1000-for-float", lambda: good((1, 2**1000)), GpuInvalidArgument, "`a` expects float (float32); got an int of 302 digits, which overflows float32"),
    ("huge-int-for-int", lambda: good((0, 10**400)), GpuInvalidArgument, "`n` expects int (int32); got an int of 401 digits, outside"),
    ("1-element-array-for-float", lambda: good((1, np.array([2.0]))), TypeError, "`a` expects float (float32); got numpy array of float64 of shape (1,)"),
    ("1-element-array-for-int", lambda: good((0, np.array([3]))), TypeError, "`n` expects int (int32); got numpy array of int64 of shape (1,)"),
    ("array-for-float", lambda: good((1, np.ones(3, np.float32))), TypeError, "`a` expects float (float32); got numpy array of float32 of shape (3,)"),
    ("memoryview-for-float", lambda: good((1, memoryview(b"abcd"))), TypeError, "`a` expects float (float32); got memoryview of uint8 of shape (4,)"),
    ("list-for-float", lambda: good((1, [2.0])), TypeError, "`a` expects float (float32); got list of float"),
    ("float-for-list", lambda: good((2, 1.0)), TypeError, "`x` expects list[float] (float32); got float"),
    ("tuple-for-list", lambda: good((2, (1.0, 2.0))), TypeError, "`x` expects list[float] (float32); got tuple"),
    ("dict-for-list", lambda: good((2, {0: 1.0})), TypeError, "`x` expects list[float] (float32); got dict"),
    ("str-element", lambda: good((2, [1.0, "2", 3.0])), TypeError, "`x` expects list[float] (float32); element 1"),
    ("none-element", lambda: good((3, [0.0, None, 0.0])), TypeError, "`y` expects list[float] (float32); element 1"),
    ("nested-list", lambda: good((2, [[1.0]])), TypeError, "`x` expects list[float] (float32); element 0"),
    ("empty-list", lambda: good((2, [])), GpuInvalidArgument, "`x` expects a non-empty list[float]"),
    ("empty-array", lambda: good((2, np.zeros(0, np.float32))), GpuInvalidArgument, "`x` expects a non-empty"),
    ("float64-array", lambda: good((2, np.zeros(3))), TypeError, "got numpy array of float64"),
    ("int32-array-for-float", lambda: good((2, np.zeros(3, np.int32))), TypeError, "got numpy array of int32"),
    ("float16-array", lambda: good((2, np.zeros(3, np.float16))), TypeError, "got numpy array of float16"),
    ("memoryview-non-contiguous", lambda: good((2, memoryview(np.zeros(6, np.float32))[::2])), GpuInvalidArgument, "`x` expects a C-contiguous buffer; got a non-contiguous memoryview of float32"),
    ("bytes-for-float-list", lambda: good((2, bytes(12))), TypeError, "`x` expects list[float] (float32); got bytes (read-only uint8)"),
    ("bytes-for-written-list", lambda: gpu(set_flags, 2, b"\x00\x01"), GpuInvalidArgument, "`f` is written by the kernel but the bytes (read-only uint8) passed is read-only"),
    ("bytearray-for-float-list", lambda: good((2, bytearray(12))), TypeError, "`x` expects list[float] (float32); got bytearray (uint8)"),
    ("array-wrong-typecode", lambda: good((2, array.array("d", [1.0, 2.0, 3.0]))), TypeError, "`x` expects list[float] (float32); got array.array('d') of float64. build it as array.array('f'"),
    ("array-int-for-float", lambda: good((3, array.array("i", [0, 0, 0]))), TypeError, "`y` expects list[float] (float32); got array.array('i') of int32"),
    ("str-for-list", lambda: good((2, "abc")), TypeError, "`x` expects list[float] (float32); got str"),
    ("workgroup-env-abc", lambda: workgroup_env("abc"), GpuInvalidArgument, "CTHREADS_WORKGROUP must be a power of two from 1 to 1024"),
    ("workgroup-env-3", lambda: workgroup_env("3"), GpuInvalidArgument, "got '3'"),
    ("non-contiguous", lambda: good((2, np.zeros(6, np.float32)[::2])), GpuInvalidArgument, "C-contiguous"),
    ("fortran-2d", lambda: good((2, np.zeros((3, 3), np.float32, order="F"))), GpuInvalidArgument, "C-contiguous"),
    ("read-only-written", lambda: good((3, ro_array())), GpuInvalidArgument, "`y` is written by the kernel"),
    ("same-object-written", lambda: gpu(axpy, 1, 1.0, *([[1.0]] * 2)), GpuInvalidArgument, "same object"),
    ("int-for-bool", lambda: gpu(flags, 1, [1], [0]), TypeError, "`f` expects list[bool] (bool (or uint8)); element 0"),
    ("float-array-for-bool", lambda: gpu(flags, 1, np.zeros(1, np.float32), [0]), TypeError, "`f` expects list[bool]"),
    ("int-list-overflow", lambda: gpu(flags, 1, [True], [2**33]), GpuInvalidArgument, "`out` expects list[int] (int32); element 0"),
    ("assert", lambda: launch_kernel(k_assert), GpuCompileError, "assert"),
    ("try", lambda: launch_kernel(k_try), GpuCompileError, "try"),
    ("raise", lambda: launch_kernel(k_raise), GpuCompileError, "raise"),
    ("with", lambda: launch_kernel(k_with), GpuCompileError, "with"),
    ("lambda", lambda: launch_kernel(k_lambda), GpuCompileError, "lambda"),
    ("comprehension", lambda: launch_kernel(k_comprehension), GpuCompileError, "comprehension"),
    ("print", lambda: launch_kernel(k_print), GpuCompileError, "print"),
    ("nested-index", lambda: launch_kernel(k_nested_index), GpuCompileError, "k_nested_index"),
    ("return-value", lambda: launch_kernel(k_return_value), GpuCompileError, "return"),
    ("barrier-ctor", lambda: launch_kernel(k_barrier_ctor), GpuCompileError, "Barrier"),
    ("unknown-name", lambda: launch_kernel(k_unknown_name), GpuCompileError, "undefined_thing"),
    ("string-value", lambda: launch_kernel(k_string), GpuCompileError, "k_string"),
    ("slice", lambda: launch_kernel(k_slice), GpuCompileError, "slic"),
    ("float-index", lambda: launch_kernel(k_float_index), GpuCompileError, "index"),
    ("list-method", lambda: launch_kernel(k_list_method), GpuCompileError, "append"),
    ("global-stmt", lambda: launch_kernel(k_global), GpuCompileError, "global"),
    ("str-annotation", lambda: bad_signature("(x: str) -> None"), TypeError, "`x`"),
    ("missing-annotation", lambda: bad_signature("(x) -> None"), TypeError, "`x`"),
    ("dict-annotation", lambda: bad_signature("(x: dict) -> None"), TypeError, "`x`"),
    ("nested-list-annotation", lambda: bad_signature("(x: list[list[float]]) -> None"), TypeError, "`x`"),
    ("varargs", lambda: bad_signature("(*xs: float) -> None"), TypeError, "xs"),
    ("kwargs", lambda: bad_signature("(**kw: float) -> None"), TypeError, "kw"),
    ("int-return", lambda: bad_signature("(x: list[float]) -> int"), TypeError, "return"),
    ("host-sync-threads", host_barrier, RuntimeError, "__sync_threads"),
    ("host-barrier-class", lambda: Barrier.arrive_and_wait(), RuntimeError, "arrive_and_wait"),
    ("closed-loop", closed_loop_await, RuntimeError, "closed"),
    ("huge-array", huge_array, VulkanOutOfMemory, "`x` ("),
    ("arena-after-release", arena_after_release, GpuInvalidArgument, "released"),
    ("arena-bind-twice", arena_twice, GpuInvalidArgument, "already bound as `x` in another arena"),
    ("arena-length-changed", arena_length_changed, GpuInvalidArgument, "with 3 elements but now has 2"),
    ("list-grown-before-join", grown_before_join, GpuInvalidArgument, "`y` length changed between gpu() and join()"),
    ("arena-read-only-written", arena_read_only_written, GpuInvalidArgument, "`y` is written by the kernel but is a read-only numpy array of float32 bound in a GpuArena as `out`"),
    ("overlapping-views", overlapping_views, GpuInvalidArgument, "`x` and `y` share memory"),
    ("arena-sync-unknown", arena_sync_unknown, GpuInvalidArgument, "no binding named `y`"),
    ("arena-empty", lambda: GpuArena().bind(x=[]), GpuInvalidArgument, "empty"),
    ("arena-bad-dtype", lambda: GpuArena().bind(x=np.zeros(2, complex)), TypeError, "`x`: cannot bind an array of complex128"),
    ("arena-non-contiguous", lambda: GpuArena().bind(v=np.zeros(4, np.float32)[::2]), GpuInvalidArgument, "`v`: cannot bind a non-contiguous array"),
    ("arena-str", lambda: GpuArena().bind(s="abc"), TypeError, "`s`: arenas bind lists and buffers"),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_misuse(case):
    _, call, exc_type, fragment = case
    with pytest.raises(exc_type) as info:
        call()
    assert fragment in str(info.value), str(info.value)
    # the library keeps working
    y = [0.0, 0.0, 0.0]
    gpu(axpy, 3, 2.0, [1.0, 2.0, 3.0], y).join()
    assert y == [2.0, 4.0, 6.0]


def test_table_is_large_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize(
    "n, a",
    [
        (np.int32(3), np.float32(2.0)),
        (np.int64(3), np.float64(2.0)),
        (np.array(3), np.array(2.0)),  # 0-d arrays are scalars too
        (3, np.float16(2.0)),
    ],
)
def test_numpy_scalars_are_accepted_as_scalars(n, a):
    y = [0.0, 0.0, 0.0]
    gpu(axpy, n, a, [1.0, 2.0, 3.0], y).join()
    assert y == [2.0, 4.0, 6.0]


def _message(call) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011 - compared below
        call()
    return type(info.value), str(info.value)


def test_scalar_errors_read_the_same_on_every_launch_path():
    """With every list resident the fast launchers serve the launch; they step aside for a bad
    argument and the general path words it exactly as for plain lists."""
    from cthreads.launch import plan, session

    bad = [(0, 10**400), (1, 10**400), (1, 2**1000), (1, np.array([2.0])), (0, np.array([3])),
           (0, "3"), (1, 1e300), (0, 2**31)]  # fmt: skip
    x, y = [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]
    plain = [_message(lambda: good((i, v))) for i, v in bad]  # nothing resident
    plan.NATIVE = True
    axpy._fast_launch = None
    prep = session.state.prepared.get(axpy.source_key)
    if prep is not None:
        prep.fast = None
    try:
        with GpuArena().bind(x=x, y=y):
            gpu(axpy, 3, 2.0, x, y).join(download=False)  # builds the fast launcher
            fast = axpy._fast_launch
            assert type(getattr(fast, "__self__", None)).__name__ == "FastLauncher"
            for (i, v), expected in zip(bad, plain):
                args = [3, 2.0, x, y]
                args[i] = v
                assert fast(tuple(args)) is None
                assert _message(lambda: gpu(axpy, *args)) == expected
    finally:
        plan.NATIVE = True
        axpy._fast_launch = None
        if prep is not None:
            prep.fast = None
