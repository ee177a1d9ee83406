"""gpu() end to end on the default device (lavapipe in CI): results, sizes, list/array paths."""

from __future__ import annotations

import array
import math

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, gpu


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def fill_index(out: list[int]) -> None:
    i: int = GlobalIdx.x
    out[i] = i


@Gpu
def count_hits(n: int, hits: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        hits[i] = hits[i] + 1


@Gpu
def add_one(x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] + 1.0


@Gpu
def negate_flags(src: list[bool], dst: list[bool]) -> None:
    i: int = GlobalIdx.x
    dst[i] = not src[i]


def assert_fma_close(actual, expected):
    # GPUs may contract a*x + y into one fused multiply-add (as GLSL and CUDA do by default),
    # which rounds once instead of twice: allow that difference, nothing more.
    np.testing.assert_allclose(np.asarray(actual, np.float32), expected, rtol=2**-22, atol=1e-30)


def saxpy_ref(a, x, y):
    return (np.float32(a) * np.asarray(x, np.float32) + np.asarray(y, np.float32)).astype(
        np.float32
    )


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 1 << 16])
def test_saxpy_lists(n):
    x = [float(i) * 0.5 for i in range(n)]
    y = [1.0 - i for i in range(n)]
    expected = saxpy_ref(2.5, x, y)
    gpu(saxpy, n, 2.5, x, y).join()
    assert_fma_close(y, expected)
    assert all(type(v) is float for v in y[:10])


def test_saxpy_numpy_in_place():
    n = 4099
    x = np.linspace(-3, 3, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32)
    expected = saxpy_ref(-1.25, x, y)
    x_before = x.copy()
    gpu(saxpy, n, -1.25, x, y).join()
    assert_fma_close(y, expected)
    assert np.array_equal(x, x_before)


def test_array_array_accepted():
    x = array.array("f", [1.0, 2.0, 3.0])
    y = array.array("f", [0.5, 0.5, 0.5])
    gpu(saxpy, 3, 2.0, x, y).join()
    assert list(y) == [2.5, 4.5, 6.5]


def test_inputs_are_never_rewritten_or_rounded():
    x = [0.1, 0.2, 0.3]
    y = [0.0, 0.0, 0.0]
    gpu(saxpy, 3, 1.0, x, y).join()
    assert x == [0.1, 0.2, 0.3]  # exactly the Python doubles passed in
    assert y == [float(np.float32(v)) for v in (0.1, 0.2, 0.3)]


def test_size_from_longest_list_without_n():
    out = [-1] * 1000
    gpu(fill_index, out).join()
    assert out == list(range(1000))


def test_n_limits_the_work():
    hits = [0] * 100
    gpu(count_hits, 10, hits).join()
    assert hits == [1] * 10 + [0] * 90


def test_n_zero_runs_nothing():
    hits = [5] * 4
    job = gpu(count_hits, 0, hits)
    job.join()
    assert hits == [5] * 4 and job.done()


def test_beyond_group_count_limit_runs_every_index_once():
    n = 20_000_000  # lavapipe allows 65535 groups along x
    hits = np.zeros(n, dtype=np.int32)
    gpu(count_hits, n, hits).join()
    assert int(hits.min()) == 1 and int(hits.max()) == 1


def test_bool_lists_lists_and_arrays():
    src = [True, False, True, True, False]
    dst = [False] * 5
    gpu(negate_flags, src, dst).join()
    assert dst == [False, True, False, False, True]
    srca = np.array(src, dtype=np.bool_)
    dsta = np.zeros(5, dtype=np.bool_)
    gpu(negate_flags, srca, dsta).join()
    assert dsta.tolist() == [False, True, False, False, True]


def test_multidimensional_array_is_flat():
    x = np.ones((4, 8), dtype=np.float32)
    gpu(add_one, x).join()
    assert np.array_equal(x, np.full((4, 8), 2.0, np.float32))


def test_special_float_values_round_trip():
    x = [math.inf, -math.inf, math.nan, -0.0]
    gpu(add_one, x).join()
    assert x[0] == math.inf and x[1] == -math.inf and math.isnan(x[2]) and x[3] == 1.0


@Gpu
def negate(x: list[float], k: list[int], b: list[bool]) -> None:
    i: int = GlobalIdx.x
    x[i] = -x[i]
    k[i] = k[i] * 1
    b[i] = b[i]


def test_writeback_keeps_equal_items_and_replaces_changed_ones():
    shared = 1.0
    x = [0.0, shared, shared, math.nan]
    k = [7, 300000, -1, 0]
    b = [True, False, True, False]
    ids = [id(v) for v in k]
    gpu(negate, x, k, b).join()
    assert math.copysign(1.0, x[0]) == -1.0  # -0.0 differs from 0.0 bit for bit
    assert x[1:3] == [-1.0, -1.0] and math.isnan(x[3])
    assert shared == 1.0  # a float shared with other names is replaced, never mutated
    assert k == [7, 300000, -1, 0] and [id(v) for v in k] == ids  # equal ints kept as they are
    assert b == [True, False, True, False]
