"""Messages that code written for cthreads-gpu matches on keep the reference's key phrases:
"length changed" (an arena-bound list resized before a launch), "callable" (gpu() given
something that is not a kernel), "expected N args" (the wrong number of arguments).
Also `arena.sync()` of a resized list, and pickling a kernel (by reference, like a function).
"""

from __future__ import annotations

import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GpuInvalidArgument, gpu


@Gpu
def fill(n: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = 5.0


def test_arena_list_whose_length_changed():
    x = [1.0, 2.0]
    with GpuArena() as arena:
        arena.bind(x=x)
        x.append(3.0)
        with pytest.raises(GpuInvalidArgument, match="length changed") as info:
            gpu(fill, 2, x)
        assert info.value.param == "x"
        assert "bound in a GpuArena as `x` with 2 elements but now has 3" in str(info.value)


@pytest.mark.parametrize("first", [5, "fill", None], ids=repr)
def test_not_callable(first):
    with pytest.raises(TypeError, match="callable"):
        gpu(first, 1, [0.0])


def test_not_a_kernel():
    def plain(n: int, x: list[float]) -> None:
        pass

    with pytest.raises(TypeError, match="callable") as info:
        gpu(plain, 1, [0.0])
    assert "not decorated with @Gpu" in str(info.value)


@pytest.mark.parametrize("args", [(1,), (1, [0.0], 2)], ids=["too few", "too many"])
def test_arity(args):
    with pytest.raises(TypeError, match="expected 2 args") as info:
        gpu(fill, *args)
    assert "takes 2 argument(s) (n, x)" in str(info.value)


def test_arena_sync_of_a_list_whose_length_changed():
    # today: "3 elements of 4 bytes at offset 0 do not fit in a 8-byte buffer"
    x = [1.0, 2.0]
    with GpuArena() as arena:
        arena.bind(x=x)
        x.append(3.0)
        with pytest.raises(GpuInvalidArgument, match="length changed") as info:
            arena.sync("x")
        assert info.value.param == "x"


def test_a_kernel_pickles_by_reference_like_a_function():
    # cthreads-gpu's @Gpu returns the function, which pickles by reference (multiprocessing
    # passes kernels to workers that way); a GpuKernel should too.
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(fill)) is fill
    assert copy.deepcopy(fill) is fill
