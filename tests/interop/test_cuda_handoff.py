"""Hand-offs with torch on the GPU (issue 17): through the exported timeline semaphores, with
host waits refused, under load both ways, results exact.

Runs where torch with CUDA and an NVIDIA Vulkan device are present (the H200); skips with the
reason elsewhere. A long torch kernel (torch.cuda._sleep) queued right before the work that
must come after it, and a long kernel of ours right before torch reads its output: a missing
wait shows as wrong values, not as a timing. What lavapipe checks (struct sizes, the "host"
mode and its reason, the semaphore calls) is in test_no_cuda.py."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from cuda_kernels import N, SLEEP_CYCLES, SLOW_REPS, saxpy, slow_two

import cthreads.interop as interop
from cthreads.gpu import DeviceArray, gpu
from cthreads.interop import cuda
from cthreads.runtime import get_device

torch = pytest.importorskip("torch", reason="torch is not installed")


@pytest.fixture
def dev(nvidia):
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch.device(f"cuda:{nvidia.ordinal}")


@contextlib.contextmanager
def no_host_waits(monkeypatch):
    """Inside: any cuStreamSynchronize or wait on our timeline fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a hand-off waited on the host")

    with monkeypatch.context() as m:
        m.setattr(cuda.Context, "synchronize", refuse)
        m.setattr(type(get_device()), "wait", refuse)
        yield


def test_the_h200_hands_off_on_the_gpu(dev):
    got, why = interop.handoff_mode()
    assert got == "gpu", why


def test_torch_then_ours_then_torch_zero_copy(dev, monkeypatch):
    d, e = DeviceArray(N, "f32", exportable=True), DeviceArray(N, "f32", exportable=True)
    x, y = torch.from_dlpack(d), torch.from_dlpack(e)
    torch.cuda.synchronize(dev)
    with no_host_waits(monkeypatch):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(3.0)  # behind the sleep: our launch must wait for it on the GPU
        y.zero_()
        gpu(saxpy, N, 2.0, x, y)
        gpu(slow_two, N, SLOW_REPS, x)  # a long kernel of ours writing x ...
        total = x.sum() + y.sum()  # ... then torch reads both at once
    assert float(total) == 2.0 * N + 6.0 * N


def test_many_steps_keep_order(dev, monkeypatch):
    d, e = DeviceArray(N, "f32", exportable=True), DeviceArray(N, "f32", exportable=True)
    x, y = torch.from_dlpack(d), torch.from_dlpack(e)
    x.zero_()
    y.zero_()
    with no_host_waits(monkeypatch):
        for _ in range(40):  # y += 1 * x; x += 1, alternating, values rising every step
            x.add_(1.0)
            gpu(saxpy, N, 1.0, x, y)
    assert bool((y == 40 * 41 / 2).all())


def test_dlpack_export_waits_on_the_consumer_stream(dev, monkeypatch):
    d = DeviceArray(N, "f32", exportable=True)
    with no_host_waits(monkeypatch):
        gpu(slow_two, N, SLOW_REPS, d)
        t = torch.from_dlpack(d)  # torch's stream waits for the launch, the host does not
        total = t.sum()
    assert float(total) == 2.0 * N


def test_a_side_stream_has_its_own_semaphore(dev, monkeypatch):
    s = torch.cuda.Stream(dev)
    d = DeviceArray(N, "f32", exportable=True)
    out = DeviceArray(N, "f32", exportable=True)
    x, y = torch.from_dlpack(d), torch.from_dlpack(out)
    torch.cuda.synchronize(dev)
    with no_host_waits(monkeypatch):
        with torch.cuda.stream(s):
            torch.cuda._sleep(SLEEP_CYCLES)
            x.fill_(5.0)
            y.zero_()
            gpu(saxpy, N, 1.0, x, y)
            total = y.sum()
        # the default stream (after s, as torch wants across streams): its own semaphore
        torch.cuda.current_stream(dev).wait_stream(s)
        x.fill_(1.0)
        gpu(saxpy, N, 1.0, x, y)
    torch.cuda.synchronize(dev)
    assert float(total) == 5.0 * N
    np.testing.assert_array_equal(out.numpy(), np.full(N, 6.0, np.float32))


def test_staged_tensors_under_load(dev):
    x = torch.zeros(N, dtype=torch.float32, device=dev)
    y = torch.zeros(N, dtype=torch.float32, device=dev)
    for step in range(1, 6):  # staging arrays reused step after step
        torch.cuda._sleep(SLEEP_CYCLES // 10)
        x.fill_(float(step))
        gpu(saxpy, N, 2.0, x, y)
        assert float(y.sum()) == 2.0 * N * step * (step + 1) / 2


def test_from_cuda_then_a_launch_on_a_stream(dev):
    from cthreads.gpu import Stream

    d = DeviceArray(N, "f32", exportable=True)
    t = torch.from_dlpack(d)
    torch.cuda._sleep(SLEEP_CYCLES)
    t.fill_(4.0)
    same = DeviceArray.from_cuda(t)  # the hand-off; a lane waits on timeline values only
    assert same is d
    out = DeviceArray(N, "f32", exportable=True)
    gpu(saxpy, N, 1.0, same, out, stream=Stream())
    np.testing.assert_array_equal(out.numpy(), np.full(N, 4.0, np.float32))


def test_host_handoffs_keep_order_under_load(dev, monkeypatch):
    # CTHREADS_CUDA_HANDOFF=host: the same exchange ordered by host waits (a fresh device state)
    from cthreads.interop import handoff

    monkeypatch.setenv("CTHREADS_CUDA_HANDOFF", "host")
    monkeypatch.delitem(handoff._state, get_device(), raising=False)
    got, why = interop.handoff_mode()
    assert got == "host" and "CTHREADS_CUDA_HANDOFF" in why
    d, e = DeviceArray(N, "f32", exportable=True), DeviceArray(N, "f32", exportable=True)
    x, y = torch.from_dlpack(d), torch.from_dlpack(e)
    x.zero_()
    y.zero_()
    for _ in range(10):
        torch.cuda._sleep(SLEEP_CYCLES // 4)
        x.add_(1.0)  # behind the sleep: our launch must still see it
        gpu(saxpy, N, 1.0, x, y)
    assert bool((y == 10 * 11 / 2).all())
    monkeypatch.delitem(handoff._state, get_device(), raising=False)  # (the next tests: gpu)
