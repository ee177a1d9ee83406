"""The three parsers of sizes (DeviceArray shapes, `gpu(grid=)`, `kernel[grid]`) read extents
through one helper (runtime/extents.py), so they agree on what is a size and what is a type
mistake; each keeps its own axis rule and type-error words. A shape and `gpu(grid=)` share the
sign rule too (`nonnegative`); a workgroup count words its own."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cthreads.errors import GpuArgumentTypeError, GpuInvalidArgument
from cthreads.gpu.bracket import parse_groups
from cthreads.launch.dispatch import parse_grid
from cthreads.residency.device_array import DeviceArray, _shape
from cthreads.runtime.extents import extent_items, is_extent

KERNEL = SimpleNamespace(name="k")  # parse_groups reads only the name, for its messages

SIZES = [3, np.int64(3), np.uint8(2), (2, 3), [2, np.int32(3)], (1, 2, 3), (4, -1), -2]
NOT_SIZES = ["3", 2.0, True, np.True_, None, (2, 1.5), (np.float32(2),), [1, "2"], (2, False)]


@pytest.mark.parametrize("value", SIZES)
def test_sizes_are_read_alike(value):
    items = extent_items(value)
    assert items is not None and all(is_extent(v) for v in items)
    dims = tuple(int(v) for v in items)
    assert dims == (tuple(value) if isinstance(value, (tuple, list)) else (int(value),))
    for parse in (_shape, parse_grid, lambda g: parse_groups(g, KERNEL)):
        if min(dims) < 0:
            with pytest.raises(GpuInvalidArgument):
                parse(value)
        else:
            assert tuple(parse(value))[: len(dims)] == dims


@pytest.mark.parametrize("value", NOT_SIZES)
def test_type_mistakes_are_type_errors_in_all_three(value):
    assert extent_items(value) is None
    for parse, words in (
        (_shape, "`shape` expects an int or a tuple of ints"),
        (parse_grid, "`grid` expects an int or a tuple of 1 to 3 ints"),
        (lambda g: parse_groups(g, KERNEL), "a grid is a number of workgroups"),
    ):
        with pytest.raises(GpuArgumentTypeError, match=words) as info:
            parse(value)
        assert info.value.param in ("shape", "grid")


def test_an_integer_array_is_not_an_extent_anywhere():
    # it has __index__ but converts only when 0-d: a shape, a grid= or a bracket grid holding
    # one is a GpuArgumentTypeError in that parser's words (it was a bare numpy TypeError)
    assert extent_items(np.array([4, 2])) is None
    assert extent_items((np.array([4, 2]), 1)) is None
    assert extent_items((np.array(4), np.int64(2))) is not None  # 0-d arrays, numpy ints
    with pytest.raises(GpuArgumentTypeError, match="got ndarray"):
        parse_groups(np.array([4, 2]), KERNEL)
    with pytest.raises(GpuArgumentTypeError, match="`shape` expects an int or a tuple of ints"):
        DeviceArray((np.array([2, 3]),), "f32")
    with pytest.raises(GpuArgumentTypeError, match="`grid` expects an int or a tuple"):
        parse_grid((np.array([2, 3]), 1))


def test_a_shape_and_a_grid_refuse_a_negative_extent_in_the_same_words():
    for parse, param in ((_shape, "shape"), (parse_grid, "grid")):
        with pytest.raises(
            GpuInvalidArgument, match=rf"`{param}` extents must be >= 0; got \(4, -1\)"
        ) as info:
            parse((4, np.int64(-1)))
        assert (info.value.param, info.value.got) == (param, "(4, -1)")
    with pytest.raises(GpuInvalidArgument, match="workgroup counts must be >= 0"):
        parse_groups((4, -1), KERNEL)
