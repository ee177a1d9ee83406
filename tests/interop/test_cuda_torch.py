"""Exchange with torch on an NVIDIA GPU (issue 17): zero copy both ways, torch tensors as kernel
arguments, stream order both ways under load, and the argument errors.

Runs where torch with CUDA and an NVIDIA Vulkan device are present (the H200); skips with the
reason elsewhere. Under load: a long torch kernel (torch.cuda._sleep) is queued right before
the work whose inputs come after it, and a long kernel of ours right before torch reads its
output, so a missing wait shows as wrong values, not as a timing."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from cuda_kernels import N, SLEEP_CYCLES, SLOW_REPS, fill, saxpy, slow_two

from cthreads.gpu import DeviceArray, GpuArgumentTypeError, GpuInvalidArgument, gpu
from cthreads.interop import imports

torch = pytest.importorskip("torch", reason="torch is not installed")


@pytest.fixture
def dev(nvidia):
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch.device(f"cuda:{nvidia.ordinal}")


def no_staging(monkeypatch):
    """Make any device-to-device staging fail: what follows must be zero copy."""

    def refuse(*args):
        raise AssertionError("a staging copy was made")

    monkeypatch.setattr(imports, "_take", refuse)


def test_attributes_present(nvidia):
    d = DeviceArray(16, "f32", exportable=True)
    assert hasattr(d, "__cuda_array_interface__")
    assert d.__dlpack_device__() == (2, nvidia.ordinal)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (16,)


def test_torch_reads_kernel_output_without_copy(dev):
    d = DeviceArray(N, "f32", exportable=True)
    gpu(fill, N, 5.0, d)  # no join: the exchange waits for it
    t = torch.from_dlpack(d)
    assert t.device == dev and t.dtype == torch.float32 and tuple(t.shape) == (N,)
    assert t.data_ptr() == d.__cuda_array_interface__["data"][0]
    assert bool((t == 5.0).all())
    a = torch.as_tensor(d, device=dev)  # through __cuda_array_interface__
    assert a.data_ptr() == t.data_ptr()


def test_kernel_reads_what_torch_wrote_without_copy(dev, monkeypatch):
    d = DeviceArray(N, "f32", exportable=True)
    t = torch.from_dlpack(d)
    t.copy_(torch.arange(N, dtype=torch.float32, device=dev))
    out = DeviceArray(N, "f32", exportable=True)
    no_staging(monkeypatch)
    gpu(saxpy, N, 1.0, t, out)  # `t` is d's own memory: used in place, after torch's copy
    np.testing.assert_array_equal(out.numpy(), np.arange(N, dtype=np.float32))


def test_kernel_writes_a_torch_view_in_place(dev, monkeypatch):
    d = DeviceArray(N, "f32", exportable=True)
    t = torch.from_dlpack(d)
    t.fill_(1.0)
    x = DeviceArray.from_numpy(np.arange(N, dtype=np.float32), exportable=True)
    no_staging(monkeypatch)
    gpu(saxpy, N, 2.0, x, t)
    expect = torch.arange(N, dtype=torch.float32, device=dev) * 2 + 1
    assert torch.equal(t, expect)


def test_torch_tensors_as_arguments(dev):
    x = torch.arange(N, dtype=torch.float32, device=dev)
    y = torch.ones(N, dtype=torch.float32, device=dev)
    xp, yp = x.data_ptr(), y.data_ptr()
    gpu(saxpy, N, 2.0, x, y)
    assert torch.equal(y, torch.arange(N, dtype=torch.float32, device=dev) * 2 + 1)
    assert torch.equal(x, torch.arange(N, dtype=torch.float32, device=dev))
    assert (x.data_ptr(), y.data_ptr()) == (xp, yp)  # results land in the caller's tensors


def test_from_cuda(dev):
    x = torch.arange(N, dtype=torch.float32, device=dev)
    d = DeviceArray.from_cuda(x)
    np.testing.assert_array_equal(d.numpy(), np.arange(N, dtype=np.float32))
    assert DeviceArray.from_cuda(torch.from_dlpack(d)) is d


def test_exported_array_outlives_its_name(dev):
    d = DeviceArray(N, "f32", exportable=True)
    gpu(fill, N, 7.0, d)
    t = torch.from_dlpack(d)
    del d
    gc.collect()
    assert bool((t == 7.0).all())  # the capsule's owner keeps the memory


# ---- stream order under load --------------------------------------------------------------


def test_torch_work_before_our_launch_copy_path(dev):
    x = torch.zeros(N, dtype=torch.float32, device=dev)
    y = torch.zeros(N, dtype=torch.float32, device=dev)
    torch.cuda._sleep(SLEEP_CYCLES)
    x.fill_(3.0)  # queued behind the sleep
    gpu(saxpy, N, 2.0, x, y)
    assert bool((y == 6.0).all())


def test_torch_work_before_our_launch_zero_copy(dev):
    d = DeviceArray(N, "f32", exportable=True)
    t = torch.from_dlpack(d)
    out = DeviceArray(N, "f32", exportable=True)
    torch.cuda._sleep(SLEEP_CYCLES)
    t.fill_(3.0)
    gpu(saxpy, N, 2.0, t, out)
    np.testing.assert_array_equal(out.numpy(), np.full(N, 6.0, np.float32))


def test_torch_work_on_a_side_stream_before_our_launch(dev):
    s = torch.cuda.Stream(dev)
    x = torch.zeros(N, dtype=torch.float32, device=dev)
    y = torch.zeros(N, dtype=torch.float32, device=dev)
    torch.cuda.synchronize(dev)
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(3.0)
        gpu(saxpy, N, 2.0, x, y)  # torch's current stream is `s`: its work comes first
        ok = bool((y == 6.0).all())  # queued on `s` after our copy back
    assert ok


def test_our_launch_before_torch_work_copy_path(dev):
    y = torch.zeros(N, dtype=torch.float32, device=dev)
    gpu(slow_two, N, SLOW_REPS, y)
    assert bool((y == 2.0).all())  # torch reads right after gpu() returned


def test_our_launch_before_torch_work_zero_copy(dev):
    d = DeviceArray(N, "f32", exportable=True)
    gpu(slow_two, N, SLOW_REPS, d)
    t = torch.from_dlpack(d)  # the exchange: our queued writes land before it returns
    assert bool((t == 2.0).all())
    d2 = DeviceArray(N, "f32", exportable=True)
    t2 = torch.from_dlpack(d2)
    gpu(slow_two, N, SLOW_REPS, t2)  # the torch view as the argument: waited for
    assert bool((t2 == 2.0).all())


# ---- errors ---------------------------------------------------------------------------------


def test_dtype_error(dev):
    x = torch.zeros(8, dtype=torch.float64, device=dev)
    y = torch.zeros(8, dtype=torch.float32, device=dev)
    with pytest.raises(
        GpuArgumentTypeError, match=rf"`x` expects float32, got torch\.float64 on {dev}"
    ) as ei:
        gpu(saxpy, 8, 1.0, x, y)
    assert ei.value.param == "x"


def test_device_error(dev):
    if torch.cuda.device_count() < 2:
        pytest.skip("one CUDA device only")
    other = torch.device(f"cuda:{1 if dev.index == 0 else 0}")
    x = torch.zeros(8, dtype=torch.float32, device=other)
    y = torch.zeros(8, dtype=torch.float32, device=dev)
    with pytest.raises(GpuInvalidArgument, match=rf"`x` is on {other}; cthreads runs on {dev}"):
        gpu(saxpy, 8, 1.0, x, y)


def test_layout_and_grad_errors(dev):
    y = torch.zeros(8, dtype=torch.float32, device=dev)
    strided = torch.zeros(16, dtype=torch.float32, device=dev)[::2]
    with pytest.raises(GpuInvalidArgument, match=r"`x` expects a C-contiguous array"):
        gpu(saxpy, 8, 1.0, strided, y)
    grad = torch.zeros(8, dtype=torch.float32, device=dev, requires_grad=True)
    with pytest.raises(GpuInvalidArgument, match=r"`x`: the CUDA object .*detach"):
        gpu(saxpy, 8, 1.0, grad, y)
