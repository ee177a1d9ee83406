"""`kernel[grid](*args)` when used wrongly and what it returns: every bad static grid, arity
and keyword errors, a meta key clashing with a parameter; the reused launchers, the job (join,
result, done, await, timed), compile errors and resident arena lists."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from bracket_kernels import saxpy

from cthreads.gpu import GlobalIdx, Gpu, GpuArgumentTypeError, GpuInvalidArgument


@Gpu
def clash(workgroup_size: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < workgroup_size:
        x[i] = 1.0


# -------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "grid, exc, words",
    [
        ("4", GpuArgumentTypeError, "got str '4'"),
        (None, GpuArgumentTypeError, "got NoneType None"),
        (2.0, GpuArgumentTypeError, "got float 2.0"),
        (True, GpuArgumentTypeError, "got bool True"),
        ((2, False), GpuArgumentTypeError, "a tuple holding bool"),
        ((2, 1.5), GpuArgumentTypeError, "a tuple holding float"),
        ((np.float32(2),), GpuArgumentTypeError, "a tuple holding float32"),
        (np.True_, GpuArgumentTypeError, "got bool"),
        ({"x": 1}, GpuArgumentTypeError, "got dict"),
        (np.array([4, 2]), GpuArgumentTypeError, "got ndarray"),
        ((), GpuInvalidArgument, "1 to 3 axes (x, y, z); got 0"),
        ((1, 2, 3, 4), GpuInvalidArgument, "1 to 3 axes (x, y, z); got 4"),
        (-1, GpuInvalidArgument, "must be >= 0; got (-1,) (negative along x)"),
        ((2, -3), GpuInvalidArgument, "(negative along y)"),
    ],
)
def test_bad_static_grid(grid, exc, words):
    with pytest.raises(exc) as info:
        saxpy[grid](1, 1.0, [1.0], [1.0])
    assert info.value.param == "grid"
    assert type(info.value) is exc
    assert words in str(info.value)
    assert f"`saxpy[{grid!r}]`" in str(info.value)  # names the launch as written


def test_bad_static_grid_raises_at_the_brackets():
    with pytest.raises(GpuInvalidArgument):
        saxpy[-1]  # before any arguments exist: nothing can have run


def test_meta_key_clash_with_a_parameter_named_workgroup_size():
    with pytest.raises(GpuInvalidArgument, match="parameter named `workgroup_size`") as info:
        clash[lambda m: 1](1, [0.0])
    assert info.value.param == "grid"
    x = [0.0]
    clash[1](1, x).join()  # a static grid is fine
    assert x == [1.0]


def test_arity_and_keywords():
    with pytest.raises(TypeError, match=r"takes 4 argument\(s\) \(n, a, x, y\); got 2"):
        saxpy[1](1, 1.0)
    with pytest.raises(TypeError, match=r"takes 4 argument\(s\) \(n, a, x, y\); got 2"):
        saxpy[lambda m: 1](1, 1.0)
    with pytest.raises(TypeError, match="by position only"):
        saxpy[1](1, 1.0, [1.0], y=[1.0])
    with pytest.raises(TypeError, match="by position only.*`y`"):
        saxpy[lambda m: 1](1, 1.0, [1.0], y=[1.0])
    with pytest.raises(TypeError, match="takes its grid in the brackets"):
        saxpy[lambda m: 1](1, 1.0, [1.0], [1.0], grid=(64,))
    with pytest.raises(TypeError, match="takes its grid in the brackets"):
        saxpy[1](1, 1.0, [1.0], [1.0], grid=(64,))  # a static grid too: never silently replaced


def test_an_argument_error_names_the_parameter():
    with pytest.raises(GpuArgumentTypeError) as info:
        saxpy[1](1, 1.0, np.zeros(1), [1.0])  # float64 for list[float]
    assert info.value.param == "x" and "astype(numpy.float32)" in str(info.value)


# ------------------------------------------------------------------ launchers and the job


def test_launchers_are_reused_and_never_confuse_bool_with_int():
    assert saxpy[3] is saxpy[3]
    same = saxpy[(5, 1)]
    assert saxpy[(5, 1)] is same  # an equal grid in a new tuple: the same launcher
    assert same.invocations == (320, 1, 1) and same.workgroup_size == (64, 1, 1)
    assert same.kernel is saxpy and same.groups == (5, 1, 1)
    saxpy[1]
    with pytest.raises(GpuArgumentTypeError):
        saxpy[True]  # equal to 1, but not a workgroup count
    saxpy[(1, 1)]
    with pytest.raises(GpuArgumentTypeError):
        saxpy[(True, 1)]
    assert "saxpy[(5, 1)]" in repr(same)


def test_a_held_launcher_keeps_launching():
    launch = saxpy[1]
    y = [0.0, 0.0]
    for _ in range(5):
        launch(2, 1.0, [1.0, 2.0], y)
    launch(2, 1.0, [1.0, 2.0], y).join()
    # each launch starts from the host list as it was (a launch joins before the next reads y)
    assert y == [1.0, 2.0]


def test_job_join_result_done_await_and_timed():
    n = 64
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    job = saxpy[1](n, 2.0, x, y)
    assert job.start() is job
    job.join()
    assert job.done() and job.result() is None
    job.join()  # repeatable
    assert (y == 2.0).all()

    async def main():
        await saxpy[lambda m: 1](n, 1.0, x, y)
        await saxpy[1](n, 1.0, x, y)

    asyncio.run(main())
    assert (y == 4.0).all()
    timed = saxpy[1](n, 1.0, x, y, timed=True)
    timed.join()
    assert timed.elapsed_ms is not None and timed.elapsed_ms >= 0.0


def test_a_compile_error_is_raised_by_the_brackets():
    from cthreads.gpu import GpuCompileError
    from cthreads.gpu.kernel import unregister

    @Gpu
    def broken(x: list[float]) -> None:
        i: int = GlobalIdx.x
        assert i >= 0
        x[i] = 1.0

    try:
        with pytest.raises(GpuCompileError, match="assert"):
            broken[1]  # before any launch: the kernel is prepared here, as gpu() would
        with pytest.raises(GpuCompileError):
            broken[lambda m: 1]
    finally:
        unregister(broken)


def test_arena_lists_stay_resident():
    from cthreads.gpu import GpuArena

    x = [1.0, 2.0, 3.0]
    y = [0.0, 0.0, 0.0]
    with GpuArena() as arena:
        arena.bind(x=x, y=y)
        for _ in range(3):
            saxpy[1](3, 1.0, x, y)
        saxpy[lambda m: -(-m["y"] // 64)](3, 1.0, x, y).join(download=False)
        assert y == [0.0, 0.0, 0.0]  # on the device until synced
        arena.sync("y")
        assert y == [4.0, 8.0, 12.0]
