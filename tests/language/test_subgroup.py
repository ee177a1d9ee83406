"""Subgroup operations (issue 8 item 3) on the device (lavapipe: 8 lanes) against numpy, and
device against emulator; the missing-feature error; errors of the statement form.

The checks never assume which invocations form a subgroup: every kernel writes each
invocation's workgroup, `subgroup_id()` and `subgroup_lane()` next to its result, and numpy
groups the results by them.
"""

from __future__ import annotations


import numpy as np
import pytest

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target
from cthreads.gpu import (
    BlockIdx,
    GlobalIdx,
    Gpu,
    GpuCompileError,
    ThreadIdx,
    atomic_add,
    available,
    gpu,
    num_subgroups,
    shared,
    subgroup_add,
    subgroup_all,
    subgroup_any,
    subgroup_ballot,
    subgroup_broadcast,
    subgroup_broadcast_first,
    subgroup_elect,
    subgroup_exclusive_add,
    subgroup_id,
    subgroup_inclusive_add,
    subgroup_lane,
    subgroup_max,
    subgroup_min,
    subgroup_shuffle,
    subgroup_shuffle_xor,
    subgroup_size,
)
from cthreads.sync import __sync_threads
from cthreads.testing.emulate import emulate

needs_device = pytest.mark.skipif(not available(), reason="no Vulkan device")
U = 2.0**-24
WG = 256
FULL = Target(
    subgroup_arithmetic=True, subgroup_ballot=True, subgroup_shuffle=True, subgroup_vote=True
)


@Gpu(workgroup_size=WG)
def sg_sum(n: int, x: list[float], total: list[float]) -> None:
    """n invocations each add a strided slice of x; subgroups add those; one atomic per group."""
    partial = shared(float, WG)  # one slot per subgroup: enough for any subgroup size
    acc: float = 0.0
    for j in range(GlobalIdx.x, len(x), n):
        acc += x[j]
    s = subgroup_add(acc)
    if subgroup_lane() == 0:
        partial[subgroup_id()] = s
    __sync_threads()
    if ThreadIdx.x == 0:
        t: float = 0.0
        for k in range(num_subgroups()):
            t += partial[k]
        atomic_add(total, 0, t)


@Gpu(workgroup_size=64)
def sg_ops(n: int, x: list[float], xi: list[int], f: list[float], r: list[int]) -> None:
    """Per invocation: where it is (r[0..2]) and every operation's result."""
    i: int = GlobalIdx.x
    v: float = x[i]
    w: int = xi[i]
    lane = subgroup_lane()
    r[i * 16 + 0] = BlockIdx.x * 1000 + subgroup_id()
    r[i * 16 + 1] = lane
    r[i * 16 + 2] = subgroup_size() * 1000 + num_subgroups()
    r[i * 16 + 3] = subgroup_max(w)
    r[i * 16 + 4] = subgroup_min(w)
    r[i * 16 + 5] = subgroup_add(w)
    r[i * 16 + 6] = subgroup_ballot(w > 0)
    e = subgroup_elect()
    r[i * 16 + 7] = int(e)
    a = subgroup_all(w > -40)
    y = subgroup_any(w > 45)
    r[i * 16 + 8] = int(a) * 2 + int(y)
    r[i * 16 + 9] = subgroup_broadcast_first(w)
    r[i * 16 + 10] = subgroup_broadcast(w, 1)
    r[i * 16 + 11] = subgroup_shuffle(w, subgroup_size() - 1 - lane)  # reverse
    r[i * 16 + 12] = subgroup_shuffle_xor(w, 1)
    r[i * 16 + 13] = subgroup_inclusive_add(w)
    r[i * 16 + 14] = subgroup_exclusive_add(1)
    r[i * 16 + 15] = subgroup_broadcast(w, xi[0] & 3)  # a dynamically uniform lane
    f[i * 4 + 0] = subgroup_add(v)
    f[i * 4 + 1] = subgroup_max(v)
    f[i * 4 + 2] = subgroup_min(v)
    f[i * 4 + 3] = subgroup_shuffle(v, lane + 1)  # the last lane reads 0


@Gpu(workgroup_size=20)
def sg_divergent(n: int, xi: list[int], r: list[int]) -> None:
    """Operations in branches, loops with per-lane trip counts, a partial last subgroup."""
    i: int = GlobalIdx.x
    if i >= n:
        return
    lane = subgroup_lane()
    w: int = xi[i]
    r[i * 8 + 0] = BlockIdx.x * 1000 + subgroup_id()
    r[i * 8 + 1] = lane
    if lane % 3 == 0:
        a = subgroup_add(w)
        r[i * 8 + 2] = a
    else:
        b = subgroup_ballot(True)
        r[i * 8 + 2] = -b
    t: int = 0
    for k in range(lane):
        c = subgroup_ballot(True)  # iteration k: the lanes above k
        t = t * 3 + c
    r[i * 8 + 3] = t
    s = subgroup_shuffle(w, lane + 1)
    r[i * 8 + 4] = s
    m = subgroup_max(w)  # everyone meets again here
    r[i * 8 + 5] = m
    e = subgroup_elect()
    if e:
        r[i * 8 + 6] = 1


def _device_subgroup_size() -> int:
    from cthreads.runtime.lifecycle import default_device_info

    return int(default_device_info().limits["subgroup_size"])


def _groups(ids: np.ndarray) -> list[np.ndarray]:
    """Invocation indexes per (workgroup, subgroup), each ordered by lane."""
    return [np.nonzero(ids == g)[0] for g in np.unique(ids)]


# --------------------------------------------------------------------------- device


@needs_device
def test_sum_of_ten_million_floats_with_subgroup_add():
    n = 10**7
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    threads = WG * 64
    total = np.zeros(1, np.float32)
    gpu(sg_sum, threads, x, total).join()
    ref = x.astype(np.float64).sum()
    # chain: ceil(n / threads) sequential adds, a subgroup sum (at most WG adds in any order),
    # the per-workgroup loop over subgroups, 64 atomic adds
    chain = -(-n // threads) + WG + WG + 64
    assert abs(float(total[0]) - ref) <= chain * U * ref, (total[0], ref)


@needs_device
def test_sum_ragged_matches_numpy():
    x = np.random.default_rng(2).standard_normal(12345).astype(np.float32)
    total = np.zeros(1, np.float32)
    gpu(sg_sum, WG * 3, x, total).join()
    ref = x.astype(np.float64).sum()
    assert abs(float(total[0]) - ref) <= 600 * U * np.abs(x.astype(np.float64)).sum()


def _run_ops(run) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n = 256
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    xi = rng.integers(-50, 50, n, dtype=np.int32)
    f = np.zeros(4 * n, np.float32)
    r = np.zeros(16 * n, np.int32)
    run(sg_ops, n, x, xi, f, r)
    return x, xi, f.reshape(n, 4), r.reshape(n, 16)


@needs_device
def test_every_operation_against_numpy():
    x, xi, f, r = _run_ops(lambda *a: gpu(*a).join())
    size = _device_subgroup_size()
    assert (r[:, 2] == size * 1000 + 64 // size).all()
    groups = _groups(r[:, 0])
    assert len(groups) == len(x) // size
    for g in groups:
        lanes = r[g, 1]
        assert list(lanes) == list(range(size))  # full subgroups, lanes 0..size-1 once each
        w, v = xi[g], x[g]
        assert (r[g, 3] == w.max()).all() and (r[g, 4] == w.min()).all()
        assert (r[g, 5] == w.sum()).all()
        assert (r[g, 6] == (w > 0).sum()).all()
        assert r[g, 7].sum() == 1  # elect: exactly one per subgroup
        assert (r[g, 8] == int((w > -40).all()) * 2 + int((w > 45).any())).all()
        assert (r[g, 9] == w[0]).all()
        assert (r[g, 10] == w[1]).all()
        assert (r[g, 11] == w[::-1]).all()
        assert (r[g, 12] == w[np.arange(size) ^ 1]).all()
        assert (r[g, 13] == np.cumsum(w)).all()
        assert (r[g, 14] == np.arange(size)).all()
        assert (r[g, 15] == w[xi[0] & 3]).all()
        bound = size * U * np.abs(v.astype(np.float64)).sum()
        assert np.all(np.abs(f[g, 0] - v.astype(np.float64).sum()) <= bound)
        assert (f[g, 1] == v.max()).all() and (f[g, 2] == v.min()).all()
        assert (f[g, 3] == np.append(v[1:], 0.0)).all()


@needs_device
def test_device_and_emulator_agree():
    size = _device_subgroup_size()
    x, _xi, f_dev, r_dev = _run_ops(lambda *a: gpu(*a).join())
    _, _, f_emu, r_emu = _run_ops(lambda *a: emulate(*a, subgroup_size=size))
    np.testing.assert_array_equal(r_dev, r_emu)
    bound = size * U * np.abs(x).max() * size
    np.testing.assert_allclose(f_dev[:, 0], f_emu[:, 0], atol=bound)
    np.testing.assert_array_equal(f_dev[:, 1:], f_emu[:, 1:])


@needs_device
def test_divergent_control_flow_device_and_emulator_agree():
    size = _device_subgroup_size()
    n = 57  # three workgroups of 20, the last one partly returned
    xi = np.random.default_rng(6).integers(-100, 100, n, dtype=np.int32)
    r_dev = np.zeros(8 * n, np.int32)
    r_emu = np.zeros(8 * n, np.int32)
    gpu(sg_divergent, n, xi, r_dev).join()
    emulate(sg_divergent, n, xi, r_emu, subgroup_size=size)
    np.testing.assert_array_equal(r_dev, r_emu)
    r = r_dev.reshape(n, 8)
    for g in _groups(r[:, 0]):
        assert r[g, 6].sum() == 1  # elect among the active invocations
        w = xi[g]
        assert (r[g, 5] == w.max()).all()


def test_emulator_default_subgroup_size_and_partial_subgroups():
    xi = np.arange(20, dtype=np.int32)
    r = np.zeros(8 * 20, np.int32)
    emulate(sg_divergent, 20, xi, r, subgroup_size=16)  # subgroups of 16 and 4
    r = r.reshape(20, 8)
    assert list(r[:, 0]) == [0] * 16 + [1] * 4
    assert list(r[16:, 4]) == [17, 18, 19, 0]  # the lane past the end reads 0
    assert list(r[:, 5]) == [15] * 16 + [19] * 4
    if available():
        from cthreads.testing.translate_subgroup import default_subgroup_size

        assert default_subgroup_size() == _device_subgroup_size()


# ----------------------------------------------------------------- compile errors


@pytest.mark.parametrize(
    "feature, capability",
    [
        ("subgroup_arithmetic", "GroupNonUniformArithmetic"),
        ("subgroup_ballot", "GroupNonUniformBallot"),
        ("subgroup_shuffle", "GroupNonUniformShuffle"),
        ("subgroup_vote", "GroupNonUniformVote"),
        ("subgroup_basic", "GroupNonUniform"),
    ],
)
def test_missing_feature_is_a_located_compile_error(feature, capability):
    target = FULL.replace(**{feature: False})
    with pytest.raises(GpuCompileError) as info:
        compile_kernel(sg_ops.lower(target), target)
    exc = info.value
    assert f"`{feature}`" in str(exc) and capability in str(exc)
    assert exc.filename == __file__ and exc.line is not None and "subgroup_" in exc.line


def test_spirv_validates_for_a_full_target():
    for k in (sg_ops, sg_sum, sg_divergent):
        compile_kernel(k.lower(FULL), FULL)  # spirv-val runs on every compile


def test_subgroup_kernels_observe_the_workgroup():
    assert compile_kernel(sg_ops.lower(FULL), FULL).observes_workgroup
    assert compile_kernel(sg_ops.lower(FULL), FULL).elements_per_invocation == 1


@Gpu
def _in_expression(n: int, x: list[float]) -> None:
    x[0] = subgroup_add(x[1]) + 1.0


@Gpu
def _alone(n: int, x: list[float]) -> None:
    subgroup_add(x[1])


@Gpu
def _float_lane(n: int, x: list[float]) -> None:
    s = subgroup_shuffle(x[0], 1.5)
    x[0] = s


@Gpu
def _in_condition(n: int, x: list[float]) -> None:
    if subgroup_elect():
        x[0] = 1.0


@pytest.mark.parametrize(
    "kernel, words",
    [
        (_in_expression, "cannot be part of an expression"),
        (_alone, "alone has no effect"),
        (_float_lane, "must be an int"),
        (_in_condition, "cannot be part of an expression"),
    ],
)
def test_statement_form_errors(kernel, words):
    with pytest.raises(GpuCompileError) as info:
        kernel.lower(FULL)
    assert words in str(info.value) and "s = subgroup_" in str(info.value)


def test_host_meaning_is_a_subgroup_of_one():
    assert (subgroup_size(), subgroup_lane(), subgroup_id(), num_subgroups()) == (1, 0, 0, 1)
    assert subgroup_add(2.5) == 2.5 and subgroup_ballot(True) == 1 and subgroup_elect()
    assert subgroup_shuffle(3, 0) == 3 and subgroup_shuffle(3, 1) == 0
    assert subgroup_broadcast(2.0, 0) == 2.0 and subgroup_shuffle_xor(4, 1) == 0
    assert subgroup_all(1) and not subgroup_any(0) and subgroup_exclusive_add(5) == 0
    assert subgroup_inclusive_add(True) == 1 and subgroup_min(3) == subgroup_max(3) == 3
    assert subgroup_broadcast_first(7) == 7


@pytest.mark.parametrize("size", [1, 8, 32, 64])
def test_emulated_reduction_with_barrier_any_subgroup_size(size):
    x = np.arange(3000, dtype=np.float32)
    total = np.zeros(1, np.float32)
    emulate(sg_sum, WG * 2, x, total, subgroup_size=size)  # subgroups, a barrier, an atomic
    assert total[0] == x.sum()


def test_emulator_rejects_the_expression_form():
    from cthreads.testing.semantics import EmulationError

    with pytest.raises(EmulationError, match="value of an assignment"):
        emulate(_in_expression, 1, [0.0, 1.0])
