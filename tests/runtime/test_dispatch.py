"""Dispatching the GLSL test shaders: results, stream order, grids, spec constants, timing."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cthreads import runtime
from cthreads.errors import GpuArgumentTypeError, GpuInvalidArgument


def _upload(device, array):
    buf = device.buffer(array.nbytes)
    buf.write(array)
    return buf


def _download(buf, dtype, n):
    out = np.empty(n, dtype=dtype)
    buf.read_into(out)
    return out


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 1 << 20])
def test_saxpy_matches_numpy(device, kernels, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    a = np.float32(1.75)
    bx, by = _upload(device, x), _upload(device, y)
    value = device.submit(
        [kernels.dispatch("saxpy", n, bx.address, by.address, n, a)], keep=(bx, by)
    )
    assert device.wait(value)
    np.testing.assert_allclose(_download(by, np.float32, n), a * x + y, rtol=1e-6, atol=1e-6)


def test_saxpy_leaves_memory_past_n_alone(device, kernels):
    n = 65
    bx = _upload(device, np.ones(n + 7, np.float32))
    by = _upload(device, np.full(n + 7, 5.0, np.float32))
    device.wait(device.submit([kernels.dispatch("saxpy", n, bx.address, by.address, n, 2.0)]))
    out = _download(by, np.float32, n + 7)
    assert (out[:n] == 7.0).all() and (out[n:] == 5.0).all()


def test_dependent_dispatches_in_one_submission(device, kernels):
    n = 4099
    buf = _upload(device, np.arange(n, dtype=np.int32))
    cmds = [kernels.dispatch("add_i32", n, buf.address, n, k) for k in range(1, 51)]
    assert device.wait(device.submit(cmds, keep=(buf,)))
    np.testing.assert_array_equal(_download(buf, np.int32, n), np.arange(n) + sum(range(1, 51)))


def test_dependent_submissions_without_waits(device, kernels):
    n = 10_000
    buf = _upload(device, np.zeros(n, dtype=np.int32))
    values = [
        device.submit([kernels.dispatch("add_i32", n, buf.address, n, 1)], keep=(buf,))
        for _ in range(200)
    ]
    assert values == sorted(values) and len(set(values)) == 200
    assert device.wait(values[-1])
    assert device.completed() >= values[-1]
    np.testing.assert_array_equal(_download(buf, np.int32, n), np.full(n, 200))


def test_fill_copy_and_dispatch_are_stream_ordered(device, kernels):
    n = 1000
    a, b = device.buffer(4 * n), device.buffer(4 * n)
    cmds = [
        ("fill", a, 0, 4 * n, 7),
        kernels.dispatch("add_i32", n, a.address, n, 3),
        ("copy", a, b, 4 * n, 0, 0),
        kernels.dispatch("add_i32", n, b.address, n, 10),
        ("copy", b, a, 8, 0, 4 * (n - 2)),
    ]
    device.wait(device.submit(cmds, keep=(a, b)))
    out_a, out_b = _download(a, np.int32, n), _download(b, np.int32, n)
    assert (out_b == 20).all()
    assert (out_a[: n - 2] == 10).all() and (out_a[n - 2 :] == 20).all()


def test_fill_shader_and_two_dimensional_grid(device, kernels):
    # more than maxComputeWorkGroupCount.x * 64 elements on lavapipe: a 2-D grid covers them
    # capped: NVIDIA allows 2**31 - 1 groups along x, far more memory than a test should take
    max_x = min(device.info.limits["max_compute_work_group_count"][0], 65535)
    n = max_x * 64 + 1000
    gx = min(max_x, -(-n // 64))
    gy = -(-n // (gx * 64))
    buf = device.buffer(4 * n)
    device.wait(
        device.submit(
            [kernels.dispatch("fill_u32", n, buf.address, n, 0xABCD1234, groups=(gx, gy, 1))]
        )
    )
    out = _download(buf, np.uint32, n)
    assert (out == 0xABCD1234).all()


def test_specialization_constants(device, kernels):
    n = 100
    data = np.arange(n, dtype=np.float32)
    buf = _upload(device, data)
    dispatch = kernels.dispatch("scale_spec", n, buf.address, n, spec={0: 2.5, 1: -3, 2: True})
    device.wait(device.submit([dispatch]))
    np.testing.assert_allclose(_download(buf, np.float32, n), data * 2.5 - 3)
    off = kernels.dispatch("scale_spec", n, buf.address, n, spec={0: 100.0, 2: False})
    device.wait(device.submit([off]))
    np.testing.assert_allclose(_download(buf, np.float32, n), data * 2.5 - 3)


def test_timed_submission_reports_elapsed(device, kernels):
    n = 1 << 16
    buf = device.buffer(4 * n)
    value = device.submit([kernels.dispatch("spin", n, buf.address, n, 64)], timed=True)
    assert device.wait(value)
    ms = device.elapsed_ms(value)
    assert ms is not None and 0.0 < ms < 60_000
    untimed = device.submit([kernels.dispatch("spin", 1, buf.address, 1, 1)])
    device.wait(untimed)
    assert device.elapsed_ms(untimed) is None


def test_the_query_pool_is_made_by_the_first_timed_submission(request):
    """Opening a device makes no timestamp query pool (issue 19: open cost); the first timed
    submit does, and times itself with it."""
    if not runtime.available():
        pytest.skip("no Vulkan device")
    runtime.shutdown()  # a fresh device: the fixtures below open it
    kernels = request.getfixturevalue("kernels")
    device = kernels.dev
    buf = device.buffer(4 * 256)
    device.wait(device.submit([kernels.dispatch("spin", 256, buf.address, 256, 1)]))
    assert device.stats()["query_pool"] == 0
    value = device.submit([kernels.dispatch("spin", 256, buf.address, 256, 1)], timed=True)
    assert device.stats()["query_pool"] == 1
    assert device.wait(value)
    ms = device.elapsed_ms(value)
    assert ms is not None and ms >= 0.0


def test_wait_timeout_and_completed(device, kernels):
    n = 1 << 16
    buf = device.buffer(4 * n)
    value = device.submit([kernels.dispatch("spin", n, buf.address, n, 20000)], keep=(buf,))
    assert device.wait(value, timeout=0) in (True, False)
    assert device.wait(value, timeout=60)
    assert device.completed() >= value
    assert device.wait(value, timeout=0)
    with pytest.raises(GpuInvalidArgument, match="never submitted"):
        device.wait(device.last_value + 10)


def test_empty_submission_completes(device):
    assert device.wait(device.submit([]))


def test_bad_commands_are_rejected(device, kernels):
    buf = device.buffer(64)
    pipe = kernels.pipe("fill_u32")
    with pytest.raises(GpuInvalidArgument, match="push constants"):
        device.submit([("dispatch", pipe, bytes(64), (1, 1, 1))])
    # one past the device's limit (65535 on lavapipe, 2**31 - 1 on NVIDIA), whatever it is
    limit_x = device.info.limits["max_compute_work_group_count"][0]
    with pytest.raises(GpuInvalidArgument, match="maxComputeWorkGroupCount"):
        device.submit([("dispatch", pipe, bytes(16), (limit_x + 1, 1, 1))])
    with pytest.raises(GpuInvalidArgument, match="maxComputeWorkGroupCount"):
        device.submit([("dispatch", pipe, bytes(16), (1, 1, -1))])
    with pytest.raises(GpuArgumentTypeError, match="Pipeline"):
        device.submit([("dispatch", "pipe", bytes(16), (1, 1, 1))])
    with pytest.raises(GpuInvalidArgument, match="out of range"):
        device.submit([("copy", buf, buf, 32, 0, 40)])
    with pytest.raises(GpuInvalidArgument, match="overlap"):
        device.submit([("copy", buf, buf, 32, 0, 16)])
    with pytest.raises(GpuInvalidArgument, match="multiples of 4"):
        device.submit([("fill", buf, 2, 8, 0)])
    with pytest.raises(GpuInvalidArgument, match="unknown command"):
        device.submit([("launch", buf)])
    with pytest.raises(GpuArgumentTypeError):
        device.submit([["copy", buf, buf, 4, 0, 8]])
    with pytest.raises(GpuArgumentTypeError):
        device.submit(42)
    # the device still works after all of that
    device.wait(device.submit([("fill", buf, 0, 64, 1)]))


def test_bad_pipelines_are_rejected(device):
    from cthreads.runtime import load_shader

    with pytest.raises(GpuInvalidArgument, match="SPIR-V"):
        device.pipeline(b"not spirv at all", 16)
    with pytest.raises(GpuInvalidArgument, match="push_size"):
        device.pipeline(load_shader("fill_u32"), 6)
    limit = device.info.limits["max_push_constants_size"]
    with pytest.raises(GpuInvalidArgument, match="maxPushConstantsSize"):
        device.pipeline(load_shader("fill_u32"), limit + 4)
    with pytest.raises(GpuInvalidArgument, match="32 bits"):
        device.pipeline(load_shader("scale_spec"), 16, {1: 1 << 40})
    with pytest.raises(GpuArgumentTypeError, match="spec constant"):
        device.pipeline(load_shader("scale_spec"), 16, {1: "x"})


def test_push_constants_shorter_than_push_size_are_zero_padded(device, kernels):
    buf = device.buffer(16)
    buf.write(np.full(4, 9, np.int32))
    pipe = kernels.pipe("add_i32")
    # k (last field) omitted: it reads as 0
    device.wait(device.submit([("dispatch", pipe, struct.pack("<QI", buf.address, 4), (1, 1, 1))]))
    assert (_download(buf, np.int32, 4) == 9).all()
