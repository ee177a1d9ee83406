"""Aliasing between list arguments (SPEC §5.2): two buffers sharing bytes, when the kernel
writes either, are refused before anything runs, naming both parameters, on every launch path
(general, generated Python launcher, C launcher). Read-only with read-only is fine."""

from __future__ import annotations

import array

import numpy as np
import pytest
from devicehelp import use_launcher

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GpuInvalidArgument, gpu
from cthreads.launch import session


@Gpu
def write_both(n: int, a: list[float], b: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        a[i] = 1.0
        b[i] = 2.0


@Gpu
def add_into(n: int, x: list[float], y: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = x[i] + y[i]


@pytest.fixture
def restore_launchers():
    yield
    for kernel in (write_both, add_into):
        use_launcher(kernel, True)


def overlapping_pairs():
    base = np.zeros(8, np.float32)
    ba = bytearray(32)
    arr = array.array("f", [0.0] * 8)
    return [
        ("numpy views", base, base[:4], base[2:6]),
        (
            "memoryviews of a bytearray",
            ba,
            memoryview(ba).cast("f")[:4],
            memoryview(ba).cast("f")[3:],
        ),  # noqa: E501
        ("array.array and its memoryview", arr, arr, memoryview(arr)[2:6]),
        ("a 2-D array and its row", base, base.reshape(2, 4), base.reshape(2, 4)[1]),
    ]


@pytest.mark.parametrize("case", overlapping_pairs(), ids=lambda c: c[0])
def test_overlapping_written_buffers_are_refused(case):
    _, owner, a, b = case
    before = bytes(memoryview(owner).cast("B"))
    last = session._current_device().last_value  # the device this launch will use
    with pytest.raises(GpuInvalidArgument, match="`a` and `b` share memory") as info:
        gpu(write_both, 4, a, b)
    assert "pass copies" in str(info.value)
    assert bytes(memoryview(owner).cast("B")) == before  # nothing ran
    assert session.state.device.last_value == last  # nothing was submitted


def test_a_read_list_overlapping_a_written_one_is_refused():
    base = np.arange(8, dtype=np.float32)
    with pytest.raises(GpuInvalidArgument, match="`y` and `out` share memory") as info:
        gpu(add_into, 4, np.ones(4, np.float32), base[:4], base[3:7])
    assert info.value.param == "out" and "writes `out`" in str(info.value)


def test_read_only_overlap_and_disjoint_views_are_fine():
    base = np.arange(8, dtype=np.float32)
    out = np.zeros(4, np.float32)
    gpu(add_into, 4, base[:4], base[2:6], out).join()  # both only read
    assert out.tolist() == [2.0, 4.0, 6.0, 8.0]
    gpu(add_into, 4, base[:4], base[:4], out).join()  # the same object, read twice
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0]
    two = np.zeros(8, np.float32)
    gpu(write_both, 4, two[:4], two[4:]).join()  # disjoint views of one array, both written
    assert two.tolist() == [1.0] * 4 + [2.0] * 4


def test_resident_overlap_leaves_the_fast_paths(restore_launchers):
    use_launcher(write_both, True)
    use_launcher(add_into, True)
    base = np.zeros(12, np.float32)
    a, b, far = base[:4], base[2:6], base[8:12]
    other = np.zeros(4, np.float32)
    with GpuArena().bind(a=a, b=b, far=far, other=other) as arena:
        gpu(write_both, 4, far, other).join(download=False)  # builds the fast launcher
        fast = write_both._fast_launch
        assert type(getattr(fast, "__self__", None)).__name__ == "FastLauncher"
        assert fast((4, far, other)) is not None  # disjoint: the fast path runs it
        assert fast((4, a, b)) is None  # overlapping: the general path decides
        with pytest.raises(GpuInvalidArgument, match="`a` and `b` share memory"):
            gpu(write_both, 4, a, b)
        with pytest.raises(GpuInvalidArgument, match="`a` and `b` share memory"):
            gpu(write_both, 4, a, base[3:7])  # a resident and a plain view of the same memory
        # reading both overlapping lists is fine, on the general path
        gpu(add_into, 4, a, b, other).join(download=False)
        assert add_into._fast_launch((4, a, b, other)) is None
        arena.sync()
    # the flag is the pair's: releasing one of them lets the other take the fast path again
    first = GpuArena().bind(a=a, other=other)
    second = GpuArena().bind(b=b)
    assert write_both._fast_launch((4, a, other)) is None
    second.release()
    job = write_both._fast_launch((4, a, other))
    assert job is not None
    job.join()
    first.sync()
    assert a.tolist() == [1.0] * 4 and other.tolist() == [2.0] * 4
    first.release()


@Gpu
def fill3(n: int, a: list[float], b: list[float], c: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        a[i] = 1.0
        b[i] = 2.0
        c[i] = 3.0


@Gpu
def fill_one(n: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = 5.0


def test_sync_of_overlapping_residents_keeps_what_a_launch_wrote():
    """`a` and `b` share two floats; a launch writes `a` alone (allowed: one list). sync() must
    not bring `b`'s bind-time bytes back over `a`'s results."""
    base = np.zeros(6, np.float32)
    a, b = base[:4], base[2:6]
    with GpuArena().bind(a=a, b=b) as arena:
        gpu(fill_one, 4, a).join(download=False)
        arena.sync()
        assert base.tolist() == [5.0] * 4 + [0.0] * 2
        gpu(fill_one, 4, b).join(download=False)  # now `b` was written: its bytes win
        arena.sync("b")
        assert base.tolist() == [5.0] * 6
        gpu(fill3, 4, b, [0.0] * 4, [0.0] * 4).join(download=False)  # b: 1.0, then a: 2.0
        gpu(fill3, 4, [0.0] * 4, a, [0.0] * 4).join(download=False)
        arena.sync()  # a, the newest write, lands last in the two floats they share
        assert base.tolist() == [2.0] * 4 + [1.0] * 2
