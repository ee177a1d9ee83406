"""Issue 19: a first launch whose vector form is not cached runs the scalar form, and the
vector form, compiled and built on a thread, takes the kernel's place once ready
(launch/session.py `_vector_form_behind`). Lavapipe's own target keeps the scalar form, so
these tests give the default device a GPU-like target (`vector_form=True`) and a fresh cache.
"""

from __future__ import annotations

import threading

import pytest

from cthreads import runtime
from cthreads.compiler.cache import KernelCache
from cthreads.gpu import GlobalIdx, Gpu, ThreadIdx, gpu
from cthreads.launch import session

N = 4096


@pytest.fixture
def gpu_like(monkeypatch, tmp_path):
    monkeypatch.delenv("CTHREADS_VECTORIZE", raising=False)
    monkeypatch.delenv("CTHREADS_NO_VECTORIZE", raising=False)
    monkeypatch.delenv("CTHREADS_SCALAR_FIRST", raising=False)  # (conftest turns it off)
    st = session.state
    session._current_device()
    monkeypatch.setattr(st, "target", st.target.replace(vector_form=True))
    monkeypatch.setattr(st, "_cache", KernelCache(tmp_path / "spirv", True))
    yield st
    session.wait_for_vector_forms()


def _saxpy():
    @Gpu
    def saxpy_behind(n: int, a: float, x: list[float], y: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            y[i] = a * x[i] + y[i]

    return saxpy_behind


def test_the_first_launch_runs_the_scalar_form_then_the_vector_form_takes_over(
    gpu_like, monkeypatch
):
    # the builder thread starts only once the test has looked at the first form (on a fast
    # machine it replaced the scalar form before the test read it: seen in CI)
    release, holders = threading.Event(), []
    real = session._vector_form_behind

    def held(*args):
        holder = threading.Thread(target=lambda: (release.wait(30), real(*args)))
        holders.append(holder)
        holder.start()

    monkeypatch.setattr(session, "_vector_form_behind", held)
    k = _saxpy()
    x, y = [float(i) for i in range(N)], [1.0] * N
    gpu(k, N, 2.0, x, y).join()
    assert y == [2.0 * i + 1.0 for i in range(N)]
    first = gpu_like.prepared[k.source_key]
    assert first.compiled.elements_per_invocation == 1 and len(holders) == 1
    release.set()
    holders[0].join(30)
    session.wait_for_vector_forms()
    later = gpu_like.prepared[k.source_key]
    assert later is not first and later.compiled.elements_per_invocation == 4
    assert k._fast_launch is None or k._fast_launch is later.fast  # not the scalar launcher
    for _ in range(2):  # the general path builds the vector form's launcher, then it is used
        gpu(k, N, 2.0, x, y).join()
    assert y == [2.0 * i + 1.0 + 2 * (2.0 * i) for i in range(N)]
    assert gpu_like.prepared[k.source_key] is later and k._fast_launch is later.fast
    # a later process (here: the cache) has the vector form: no scalar first
    k2 = _saxpy()
    assert session._scalar_first(k2, gpu_like.target, False, gpu_like) is None


def test_a_kernel_without_a_vector_form_keeps_its_first_build(gpu_like):
    @Gpu(workgroup_size=64)
    def by_groups(x: list[float]) -> None:
        x[GlobalIdx.x] = float(ThreadIdx.x)

    x = [0.0] * 256
    gpu(by_groups, x).join()
    first = gpu_like.prepared[by_groups.source_key]
    session.wait_for_vector_forms()
    assert gpu_like.prepared[by_groups.source_key] is first
    assert x == [float(i % 64) for i in range(256)]


def test_a_shutdown_waits_for_a_vector_form_being_built(gpu_like, monkeypatch):
    k = _saxpy()
    x, y = [1.0] * N, [0.0] * N
    gpu(k, N, 1.0, x, y).join()
    runtime.shutdown()  # (the builder thread is still compiling or building: joined first)
    assert not session._behind
    monkeypatch.setattr(gpu_like, "target", None)  # the next launch derives it again
    gpu(k, N, 1.0, x, y).join()  # on the new device
    assert y == [2.0] * N


def test_forced_forms_are_launched_as_asked(gpu_like, monkeypatch):
    monkeypatch.setenv("CTHREADS_VECTORIZE", "1")
    assert session._scalar_first(_saxpy(), gpu_like.target, False, gpu_like) is None
    monkeypatch.setenv("CTHREADS_NO_VECTORIZE", "1")
    monkeypatch.delenv("CTHREADS_VECTORIZE")
    assert session._scalar_first(_saxpy(), gpu_like.target, False, gpu_like) is None
    monkeypatch.delenv("CTHREADS_NO_VECTORIZE")
    assert session._scalar_first(_saxpy(), gpu_like.target, False, gpu_like) is not None
    monkeypatch.setenv("CTHREADS_SCALAR_FIRST", "0")
    assert session._scalar_first(_saxpy(), gpu_like.target, False, gpu_like) is None
