"""Which invocations a launch runs (SPEC §4, docs/reliability.md "Out of range").

A kernel that never observes the workgroup runs exactly the indexes below the problem size, on
every device and in the emulator: the rounding up to whole workgroups is the runtime's, so an
unguarded kernel never sees the extra invocations (on NVIDIA they read zeros, and a loop that
waits for a value can spin forever; lavapipe ends loops after 65,535 iterations, hiding it). A
kernel that observes the workgroup runs whole workgroups, at least one, as cthreads-gpu does.
"""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, ThreadIdx, atomic_add, gpu
from cthreads.testing import emulate


@Gpu
def count_unguarded(hits: list[int], seen: list[int]) -> None:
    i: int = GlobalIdx.x
    atomic_add(hits, 0, 1)
    seen[i] = seen[i] + 1


@Gpu
def count_n(n: int, hits: list[int]) -> None:
    atomic_add(hits, 0, 1)


@Gpu
def count_groups(n: int, hits: list[int]) -> None:
    atomic_add(hits, ThreadIdx.x, 1)


@Gpu
def wait_for_one(start: list[int], steps: list[int]) -> None:
    # Unguarded: an invocation past the list would read 0 and never reach 1.
    i: int = GlobalIdx.x
    v: int = start[i]
    c: int = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        c += 1
    steps[i] = c


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 1000])
def test_unguarded_kernel_runs_each_index_once(n):
    hits, seen = [0], [0] * n
    gpu(count_unguarded, hits, seen).join()
    assert hits == [n]  # not n rounded up to the workgroup
    assert seen == [1] * n
    ehits, eseen = [0], [0] * n
    emulate(count_unguarded, ehits, eseen, oob="device")
    assert (ehits, eseen) == (hits, seen)


@pytest.mark.parametrize("n", [0, 3, 200])
def test_n_parameter_bounds_a_kernel_without_workgroup(n):
    hits = np.zeros(1, np.int32)
    gpu(count_n, n, hits).join()
    assert hits[0] == n


def test_a_kernel_that_observes_the_workgroup_runs_whole_groups_at_least_one():
    hits = np.zeros(64, np.int32)
    gpu(count_groups, 0, hits).join()  # n = 0: one workgroup, as in cthreads-gpu
    assert (hits == 1).all()
    hits[:] = 0
    gpu(count_groups, 65, hits).join()
    assert (hits == 2).all()
    ehits = [0] * 64
    emulate(count_groups, 0, ehits, oob="device")
    assert ehits == [1] * 64


def test_a_loop_waiting_for_a_value_ends_for_every_index():
    # 499 indexes: the workgroup of 64 is not filled; the last 13 invocations must not run.
    start = list(range(1, 500))
    steps = [0] * len(start)
    gpu(wait_for_one, start, steps).join()
    ref = []
    for v in start:
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        ref.append(c)
    assert steps == ref
