"""Writeback at join()/await/arena.sync(): a Python list resized while its launch runs loses
only its own results, with a GpuInvalidArgument that names it ("length changed"); every other
list of the launch is still written back."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from devicehelp import use_launcher

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GpuInvalidArgument, gpu


@Gpu
def fill3(n: int, a: list[float], b: list[float], c: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        a[i] = 1.0
        b[i] = 2.0
        c[i] = 3.0


def test_a_grown_list_is_named_and_the_others_are_written_back():
    a, b, c = [0.0] * 4, [0.0] * 4, np.zeros(4, np.float32)
    job = gpu(fill3, 4, a, b, c)
    a.append(9.0)
    with pytest.raises(GpuInvalidArgument, match="`a` length changed") as info:
        job.join()
    assert info.value.param == "a" and "4 elements" in str(info.value)
    assert a == [0.0, 0.0, 0.0, 0.0, 9.0]  # untouched, not half-written
    assert b == [2.0] * 4
    assert c.tolist() == [3.0] * 4
    job.join()  # joining again is harmless
    assert job.done()


def test_a_shrunk_list_is_named_too_and_every_error_is_reported():
    a, b, c = [0.0] * 4, [0.0] * 4, [0.0] * 4
    job = gpu(fill3, 4, a, b, c)
    a.pop()
    c.clear()
    with pytest.raises(GpuInvalidArgument, match="`a` length changed") as info:
        job.join()
    assert any("`c` length changed" in note for note in info.value.__notes__)
    assert a == [0.0] * 3 and c == [] and b == [2.0] * 4


def test_await_behaves_as_join():
    a, b, c = [0.0] * 4, [0.0] * 4, [0.0] * 4

    async def main():
        job = gpu(fill3, 4, a, b, c)
        b.append(0.5)
        await job

    with pytest.raises(GpuInvalidArgument, match="`b` length changed"):
        asyncio.run(main())
    assert a == [1.0] * 4 and c == [3.0] * 4


@pytest.fixture
def launcher_kind():
    yield
    use_launcher(fill3, True)


def test_resident_lists_on_the_fast_paths(launcher_kind):
    use_launcher(fill3, True)
    a, b, c = [0.0] * 4, [0.0] * 4, [0.0] * 4
    with GpuArena().bind(a=a, b=b, c=c) as arena:
        gpu(fill3, 4, a, b, c).join(download=False)  # builds the fast launcher
        fast = fill3._fast_launch
        assert type(getattr(fast, "__self__", None)).__name__ == "FastLauncher"
        job = fast((4, a, b, c))
        assert job is not None
        c.append(0.0)
        with pytest.raises(GpuInvalidArgument, match="`c` length changed between arena.bind()"):
            job.join()
        assert a == [1.0] * 4 and b == [2.0] * 4 and c == [0.0] * 5
        a[0] = b[0] = -1.0
        with pytest.raises(GpuInvalidArgument, match="`c` length changed"):
            arena.sync()  # sync too: the others are synced first
        assert a == [1.0] * 4 and b == [2.0] * 4
        c.pop()
        arena.sync()
        assert c == [3.0] * 4
