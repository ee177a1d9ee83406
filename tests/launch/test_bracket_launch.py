"""`kernel[grid](*args)` (issue 15 item 2): grid in workgroups, as an int, 1 to 3 ints or a
callable of the launch's meta; the same launch as `gpu(..., grid=groups * workgroup shape)`;
zero grids, grids past the device's group-count limit, grid callables that misbehave. Bad
static grids, arity, launchers and the job they return: test_bracket_errors.py."""

from __future__ import annotations

import numpy as np
import pytest
from bracket_kernels import saxpy

from cthreads.gpu import (
    BlockIdx,
    GlobalIdx,
    Gpu,
    GpuArgumentTypeError,
    GpuInvalidArgument,
    GpuJob,
    GridDim,
    ThreadIdx,
    atomic_add,
    gpu,
)
from cthreads.launch import session


@Gpu
def where(n: int, gid: list[int], tid: list[int], bid: list[int], gdim: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        gid[i] = GlobalIdx.x
        tid[i] = ThreadIdx.x
        bid[i] = BlockIdx.x
        gdim[i] = GridDim.x


@Gpu(workgroup_size=(8, 4))
def where2d(w: int, h: int, tx: list[int], ty: list[int], bx: list[int], by: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    if x < w and y < h:
        i: int = y * w + x
        tx[i] = ThreadIdx.x
        ty[i] = ThreadIdx.y
        bx[i] = BlockIdx.x
        by[i] = BlockIdx.y


@Gpu(workgroup_size=(4, 2, 2))
def cells3d(w: int, h: int, d: int, hits: list[int], bz: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    z: int = GlobalIdx.z
    if x < w and y < h and z < d:
        i: int = (z * h + y) * w + x
        hits[i] = hits[i] + 1
        bz[i] = BlockIdx.z


@Gpu
def plain2d(w: int, h: int, out: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    if x < w and y < h:
        out[y * w + x] = out[y * w + x] + y * 1000 + x


@Gpu(workgroup_size=1)
def group_hits(hits: list[int]) -> None:
    atomic_add(hits, BlockIdx.x, 1)  # unguarded: one count per workgroup it runs


@Gpu(workgroup_size=1)
def tail_hits(base: int, hits: list[int]) -> None:
    k: int = BlockIdx.x - base  # wraps like the group index: exact for groups past 2**31 too
    if k >= 0 and k < len(hits):
        atomic_add(hits, k, 1)


@Gpu(workgroup_size=1)
def plain_hits(seen: list[int]) -> None:
    i: int = GlobalIdx.x
    seen[i] = seen[i] + 1  # unguarded: exactly the invocations asked for run


def _where_arrays(n: int) -> list[np.ndarray]:
    return [np.full(n, -1, np.int32) for _ in range(4)]


def _groups(n: int, w: int) -> int:
    return -(-n // w)


# ------------------------------------------------------------------------- the grid forms


def test_int_grid_is_saxpy():
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    job = saxpy[_groups(n, 64)](n, 2.0, x, y)
    assert isinstance(job, GpuJob)
    job.join()
    assert np.array_equal(y, 2.0 * np.arange(n, dtype=np.float32) + 1.0)


@pytest.mark.parametrize("grid", [16, (16,), [16], (16, 1), (16, 1, 1), np.int64(16)])
def test_every_static_form_matches_gpu(grid):
    n = 1000  # 16 groups of 64 cover it; the kernel guards i < n
    mine, ref = _where_arrays(n), _where_arrays(n)
    where[grid](n, *mine).join()
    gpu(where, n, *ref).join()  # gpu(): n invocations rounded up to whole groups
    for a, b in zip(mine, ref):
        assert np.array_equal(a, b)
    gid, tid, bid, gdim = mine
    assert np.array_equal(gid, np.arange(n))
    assert np.array_equal(tid, np.arange(n) % 64)
    assert np.array_equal(bid, np.arange(n) // 64)
    assert (gdim == 16).all()


def test_callable_grid_reads_meta():
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (_groups(meta["n"], meta["workgroup_size"][0]),)

    n = 200
    mine, ref = _where_arrays(n), _where_arrays(n)
    where[grid](np.int32(n), *mine).join()
    gpu(where, n, *ref).join()
    for a, b in zip(mine, ref):
        assert np.array_equal(a, b)
    assert seen == [{"n": n, "gid": n, "tid": n, "bid": n, "gdim": n, "workgroup_size": (64, 1, 1)}]
    assert type(seen[0]["n"]) is int  # a numpy scalar arrives as the number the launch passes


def test_callable_grid_from_list_lengths():
    x = [float(i) for i in range(300)]
    y = [1.0] * 300
    job = saxpy[lambda m: -(-m["y"] // m["workgroup_size"][0])](300, 3.0, x, y)
    job.join()
    assert y == [3.0 * i + 1.0 for i in range(300)]


def test_meta_of_a_2d_array_is_its_element_count_and_the_declared_shape():
    h, w = 12, 20
    seen = []

    def grid(meta):
        seen.append(meta)
        wx, wy, _ = meta["workgroup_size"]
        return (_groups(meta["w"], wx), _groups(meta["h"], wy))

    arrays = [np.zeros((h, w), np.int32) for _ in range(4)]
    where2d[grid](w, h, *arrays).join()
    assert seen[0]["tx"] == h * w and seen[0]["workgroup_size"] == (8, 4, 1)
    tx, ty, bx, by = arrays
    yy, xx = np.mgrid[0:h, 0:w]
    assert np.array_equal(tx, xx % 8) and np.array_equal(ty, yy % 4)
    assert np.array_equal(bx, xx // 8) and np.array_equal(by, yy // 4)


def test_2d_grid_matches_gpu_grid_in_invocations():
    h, w = 10, 21
    mine = [np.full((h, w), -1, np.int32) for _ in range(4)]
    ref = [np.full((h, w), -1, np.int32) for _ in range(4)]
    where2d[_groups(w, 8), _groups(h, 4)](w, h, *mine).join()
    gpu(where2d, w, h, *ref, grid=(w, h)).join()
    for a, b in zip(mine, ref):
        assert np.array_equal(a, b)


def test_3d_grid_runs_each_cell_once():
    w, h, d = 9, 5, 6
    hits = np.zeros((d, h, w), np.int32)
    bz = np.full((d, h, w), -1, np.int32)
    cells3d[_groups(w, 4), _groups(h, 2), _groups(d, 2)](w, h, d, hits, bz).join()
    assert (hits == 1).all()
    assert np.array_equal(bz, np.broadcast_to((np.arange(d) // 2)[:, None, None], (d, h, w)))


def test_plain_kernel_2d_matches_gpu():
    h, w = 7, 130
    mine = np.zeros((h, w), np.int32)
    ref = np.zeros((h, w), np.int32)
    plain2d[_groups(w, 64), h](w, h, mine).join()  # plain: default shape (64, 1, 1)
    gpu(plain2d, w, h, ref, grid=(w, h)).join()
    yy, xx = np.mgrid[0:h, 0:w]
    assert np.array_equal(mine, ref) and np.array_equal(mine, yy * 1000 + xx)


def test_plain_kernel_runs_exactly_groups_times_shape():
    seen = np.zeros(100, np.int32)
    plain_hits[37](seen).join()  # workgroup_size=1: 37 invocations, no rounding past them
    assert (seen[:37] == 1).all() and (seen[37:] == 0).all()


# ---------------------------------------------------------------- zero and very large grids


@pytest.mark.parametrize("grid", [0, (0,), (4, 0), (0, 3, 2), lambda m: (0,)])
def test_zero_grid_runs_nothing_and_is_finished(grid):
    x = [0.1, 0.2, 0.3]
    y = [0.1, 0.2, 0.3]  # doubles: a launch would round them to float32 on writeback
    job = saxpy[grid](3, 2.0, x, y)
    assert isinstance(job, GpuJob) and job.done()
    job.join()
    assert y == [0.1, 0.2, 0.3] and job.result() is None


def test_zero_grid_still_checks_the_arguments():
    with pytest.raises(GpuArgumentTypeError) as info:
        saxpy[0](3, 2.0, "not a list", [0.0])
    assert info.value.param == "x"
    with pytest.raises(GpuInvalidArgument) as info:
        saxpy[0](3, 2.0, [1.0], [])
    assert info.value.param == "y"


def test_gpu_zero_grid_is_finished_too():
    y = [0.1]
    job = gpu(saxpy, 1, 2.0, [1.0], y, grid=(0,))
    assert job.done()
    job.join()
    assert y == [0.1]


def _limits() -> dict:
    session.kernel_for_launch(group_hits)  # opens the device
    return session.state.device.info.limits


def _group_limit() -> int:
    return int(_limits()["max_compute_work_group_count"][0])


def test_grid_past_the_group_count_limit_runs_each_group_once():
    groups = _group_limit() + 1234  # 65,535 on lavapipe
    if (groups + 10) * 4 > _limits()["max_storage_buffer_range"]:
        # NVIDIA allows 2**31 - 1 groups along x: one int per group is past what a list may hold
        pytest.skip(f"{groups} groups need a list larger than maxStorageBufferRange")
    hits = np.zeros(groups, np.int32)
    group_hits[groups](hits).join()
    assert (hits == 1).all()
    seen = np.zeros(groups + 10, np.int32)
    plain_hits[groups](seen).join()
    assert (seen[:groups] == 1).all() and (seen[groups:] == 0).all()


def test_the_groups_past_the_limit_run_once_on_every_device():
    limit = _group_limit()  # 2**31 - 1 on NVIDIA: the last groups are counted, not every one
    hits = np.zeros(2000, np.int32)
    tail_hits[limit + 1234](limit - 766, hits).join()
    assert (hits == 1).all()


def test_more_than_2_to_32_invocations_per_axis():
    ok = saxpy[(2**32 - 1) // 64]  # the largest: made, not launched
    assert ok.invocations == ((2**32 - 1) // 64 * 64, 1, 1)
    with pytest.raises(GpuInvalidArgument) as info:
        saxpy[2**26](1, 1.0, [1.0], [1.0])  # 2**26 groups of 64 = 2**32 invocations
    assert info.value.param == "grid"
    assert "67108864 workgroups of 64 along x" in str(info.value)
    assert "2**32" in str(info.value)
    with pytest.raises(GpuInvalidArgument, match="along y") as info:
        where2d[1, 2**30](1, 1, [0], [0], [0], [0])  # 2**30 groups of 4 along y
    assert info.value.param == "grid"
    with pytest.raises(GpuInvalidArgument, match="along x") as info:
        saxpy[lambda m: 2**27](1, 1.0, [1.0], [1.0])
    assert info.value.param == "grid"


def test_more_groups_than_the_device_allows_along_y_is_gpus_error():
    limit = _group_limit()
    with pytest.raises(GpuInvalidArgument, match="along y") as info:
        where2d[1, limit + 1](1, 1, [0], [0], [0], [0])
    assert info.value.param == "grid"


# --------------------------------------------------------- callable grids that misbehave


def _returns(value):
    return lambda meta: value


@pytest.mark.parametrize(
    "returned, exc, words",
    [
        (None, GpuArgumentTypeError, "returned None"),
        ("3", GpuArgumentTypeError, "returned '3'"),
        ((1.5,), GpuArgumentTypeError, "a tuple holding float"),
        (True, GpuArgumentTypeError, "got bool True"),
        ((), GpuInvalidArgument, "got 0"),
        ((1, 1, 1, 1), GpuInvalidArgument, "got 4"),
        ((-2,), GpuInvalidArgument, "negative along x"),
        (len, GpuArgumentTypeError, "returned another callable"),
    ],
)
def test_callable_grid_returning_nonsense(returned, exc, words):
    with pytest.raises(exc) as info:
        saxpy[_returns(returned)](1, 1.0, [1.0], [1.0])
    assert type(info.value) is exc and info.value.param == "grid"
    assert "the grid callable" in str(info.value) and "of kernel `saxpy`" in str(info.value)
    assert words in str(info.value)


def test_callable_grid_may_return_numpy_ints_and_lists():
    y = [0.0] * 3
    saxpy[_returns([np.int64(1)])](3, 1.0, [1.0, 2.0, 3.0], y).join()
    assert y == [1.0, 2.0, 3.0]


def test_callable_grid_that_raises():
    def by_missing_key(meta):
        return meta["N"]

    y = [0.0]
    with pytest.raises(GpuInvalidArgument) as info:
        saxpy[by_missing_key](1, 1.0, [1.0], y)
    err = info.value
    assert err.param == "grid"
    assert isinstance(err.__cause__, KeyError)  # chained
    text = str(err)
    assert "the grid callable `test_callable_grid_that_raises.<locals>.by_missing_key`" in text
    assert "raised KeyError: 'N'" in text
    assert "(its meta has: n, a, x, y, workgroup_size)" in text
    with pytest.raises(
        GpuInvalidArgument,
        match=r"\(a lambda at test_bracket_launch.py:\d+\) of kernel `saxpy` raised Zero",
    ):
        saxpy[lambda m: 1 // 0](1, 1.0, [1.0], y)
    assert y == [0.0]


def test_callable_grid_sees_bad_arguments_as_gpu_reports_them():
    calls = []
    with pytest.raises(GpuArgumentTypeError) as info:
        saxpy[lambda m: calls.append(m) or 1]("5", 1.0, [1.0], [1.0])
    assert info.value.param == "n" and calls == []
