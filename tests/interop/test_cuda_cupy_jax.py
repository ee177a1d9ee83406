"""Round trips with CuPy and JAX on an NVIDIA GPU (issue 17); each skips with the reason where
its library or a CUDA device for it is missing."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cuda_kernels import N, fill, saxpy

from cthreads.gpu import DeviceArray, gpu

# JAX takes 75% of GPU memory at its first use unless told not to; cthreads and the other
# libraries of this process need theirs
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


@pytest.fixture
def cupy(nvidia):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cp.cuda.runtime.getDeviceCount() <= nvidia.ordinal:
            pytest.skip("CuPy does not see the GPU cthreads runs on")
    except cp.cuda.runtime.CUDARuntimeError as exc:
        pytest.skip(f"CuPy cannot use CUDA here: {exc}")
    with cp.cuda.Device(nvidia.ordinal):
        yield cp


@pytest.fixture
def jax_gpu(nvidia):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError as exc:
        pytest.skip(f"JAX has no GPU backend here: {exc}")
    mine = [g for g in gpus if g.id == nvidia.ordinal]
    if not mine:
        pytest.skip(f"JAX does not see cuda:{nvidia.ordinal}")
    return jax, mine[0]


def test_cupy_sees_a_device_array_in_place(cupy):
    d = DeviceArray(N, "f32", exportable=True)
    gpu(fill, N, 5.0, d)
    a = cupy.asarray(d)  # __cuda_array_interface__
    assert a.data.ptr == d.__cuda_array_interface__["data"][0]
    assert bool((a == 5.0).all())
    b = cupy.from_dlpack(d)
    assert b.data.ptr == a.data.ptr
    a *= 2  # CuPy writes our memory; a launch passed the CuPy view sees it
    out = DeviceArray(N, "f32", exportable=True)
    gpu(saxpy, N, 1.0, a, out)
    np.testing.assert_array_equal(out.numpy(), np.full(N, 10.0, np.float32))


def test_cupy_arrays_as_arguments(cupy):
    x = cupy.arange(N, dtype=cupy.float32)
    y = cupy.ones(N, dtype=cupy.float32)
    gpu(saxpy, N, 2.0, x, y)
    expect = cupy.arange(N, dtype=cupy.float32) * 2 + 1
    assert bool((y == expect).all())
    d = DeviceArray.from_cuda(x)
    np.testing.assert_array_equal(d.numpy(), np.arange(N, dtype=np.float32))


def test_jax_round_trip(jax_gpu):
    jax, device = jax_gpu
    import jax.numpy as jnp

    d = DeviceArray(N, "f32", exportable=True)
    gpu(fill, N, 5.0, d)
    j = jax.dlpack.from_dlpack(d)
    np.testing.assert_array_equal(np.asarray(j), np.full(N, 5.0, np.float32))
    x = jax.device_put(jnp.arange(N, dtype=jnp.float32), device)
    out = DeviceArray(N, "f32", exportable=True)
    gpu(saxpy, N, 1.0, x, out)  # a JAX array as a (read-only) argument
    np.testing.assert_array_equal(out.numpy(), np.arange(N, dtype=np.float32))
    back = jax.dlpack.from_dlpack(out)
    np.testing.assert_array_equal(np.asarray(back + 1), np.arange(1, N + 1, dtype=np.float32))
