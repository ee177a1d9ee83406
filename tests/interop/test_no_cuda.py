"""Exchange with CUDA (issue 17) where there is no CUDA, and what every device can check:
exportable buffers and their fds, the DLPack capsule, the reading of CUDA interfaces.

On lavapipe (or any non-NVIDIA device) DeviceArray has no CUDA attributes, a CUDA object as an
argument raises GpuInvalidArgument that says why, and nothing loads libcuda (a subprocess looks
at its own /proc/self/maps)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

from cthreads import _native
from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, GpuInvalidArgument, gpu
from cthreads.interop import cuda_capable, describe, imports
from cthreads.runtime import get_device

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


class FakeCuda:
    """Looks like a CUDA array (CAI v3) to anyone who does not dereference the pointer."""

    def __init__(self, n: int = 4, typestr: str = "<f4", strides=None) -> None:
        self.n = n
        self.typestr = typestr
        self.strides = strides

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": (self.n,),
            "typestr": self.typestr,
            "data": (0x7F0000000000, False),
            "version": 3,
            "strides": self.strides,
            "stream": 7,
        }


class FakeDLPackCuda:
    def __dlpack__(self, stream=None):
        raise AssertionError("never asked for its memory here")

    def __dlpack_device__(self):
        return (2, 0)


def no_cuda_device():
    device = get_device()
    if cuda_capable(device):
        pytest.skip("this device can exchange with CUDA (tests/interop/test_cuda.py covers it)")
    return device


def test_device_array_has_no_cuda_attributes_without_cuda():
    no_cuda_device()
    d = DeviceArray(8, "f32")
    for name in ("__cuda_array_interface__", "__dlpack__", "__dlpack_device__"):
        assert not hasattr(d, name), name
    with pytest.raises(AttributeError, match="not an NVIDIA GPU"):
        d.__cuda_array_interface__  # noqa: B018


def test_cuda_argument_raises_saying_why():
    no_cuda_device()
    y = np.zeros(4, np.float32)
    with pytest.raises(GpuInvalidArgument, match=r"`x` is a CUDA array .*not an NVIDIA GPU") as ei:
        gpu(saxpy, 4, 2.0, FakeCuda(), y)
    assert ei.value.param == "x"
    with pytest.raises(GpuInvalidArgument, match=r"`y` is a CUDA array"):
        gpu(saxpy, 4, 2.0, y, FakeDLPackCuda())
    with pytest.raises(GpuInvalidArgument, match=r"`obj` is a CUDA array"):
        DeviceArray.from_cuda(FakeCuda())


def test_nothing_loads_libcuda(tmp_path):
    """A process that makes arrays, probes them and passes CUDA objects never maps libcuda."""
    no_cuda_device()
    script = textwrap.dedent(
        """
        import numpy as np
        from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, GpuInvalidArgument, gpu
        from cthreads.interop import cuda

        @Gpu
        def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
            i: int = GlobalIdx.x
            if i < n:
                y[i] = a * x[i] + y[i]

        class FakeCuda:
            __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4",
                                        "data": (1 << 40, False), "version": 3}

        d = DeviceArray(4, "f32")
        assert not hasattr(d, "__cuda_array_interface__") and not hasattr(d, "__dlpack__")
        gpu(saxpy, 4, 2.0, DeviceArray(4, "f32"), d).join()
        for call in (lambda: gpu(saxpy, 4, 2.0, FakeCuda(), d),
                     lambda: DeviceArray.from_cuda(FakeCuda())):
            try:
                call()
            except GpuInvalidArgument:
                pass
            else:
                raise SystemExit("no error")
        maps = open("/proc/self/maps").read()
        assert "libcuda" not in maps, [l for l in maps.splitlines() if "libcuda" in l]
        assert not cuda.loaded()
        print("ok")
        """
    )
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    path = tmp_path / "probe.py"  # a file: kernels need their source
    path.write_text(script)
    run = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("ok")


# ---- exportable memory (VK_KHR_external_memory_fd): lavapipe lists it too -----------------


def export_device():
    device = get_device()
    if not device._dev.external()["memory_fd"]:
        pytest.skip("the device does not list VK_KHR_external_memory_fd")
    return device


def test_export_buffer_gives_fds_and_works_as_a_buffer():
    device = export_device()
    buf = device.buffer(1000, usage="export")
    assert buf.kind == "export"
    assert buf.memory_size >= buf.capacity >= 1000
    fds = [buf.export_fd() for _ in range(2)]
    try:
        assert fds[0] != fds[1]  # a new descriptor each time (CUDA takes one over)
        for fd in fds:
            assert os.fstat(fd).st_size >= 0
    finally:
        for fd in fds:
            os.close(fd)
    # an ordinary buffer as far as Vulkan is concerned: fill, copy, read back (validated)
    down = device.buffer(1000, usage="download")
    value = device.submit(
        [("fill", buf, 0, 1000, 0x3F800000), ("copy", buf, down, 1000, 0, 0)], keep=(buf, down)
    )
    device.wait(value)
    out = np.empty(250, np.float32)
    down.read_into(out)
    assert (out == 1.0).all()
    buf.release()
    down.release()


def test_plain_buffers_have_no_fd():
    device = export_device()
    plain = device.buffer(1000)
    with pytest.raises(GpuInvalidArgument, match="not exportable"):
        plain.export_fd()
    plain.release()


def test_export_and_plain_allocations_are_pooled_apart():
    """A released export allocation is never handed out as a plain one, nor the reverse."""
    device = export_device()
    device.wait_idle()
    ex = device.buffer(5000, usage="export")
    ex.release()
    plain = device.buffer(5000)
    with pytest.raises(GpuInvalidArgument, match="not exportable"):
        plain.export_fd()
    plain.release()
    again = device.buffer(5000, usage="export")
    os.close(again.export_fd())
    again.release()


def test_device_uuid_is_described_once():
    # one format (physdev.c): 8-4-4-4-12 hex groups; cuda.py compares it without the dashes
    uuid = get_device().info.uuid
    groups = uuid.split("-")
    assert [len(g) for g in groups] == [8, 4, 4, 4, 12] and int("".join(groups), 16) >= 0
    assert "device_uuid" not in get_device()._dev.external()


# ---- hand-offs: semaphores CUDA imports, or host waits and why -------------------------------


def test_handoff_mode_is_host_with_a_reason_without_cuda():
    import cthreads.interop as interop

    device = get_device()
    if cuda_capable(device) and device._dev.external()["semaphore_fd"]:
        pytest.skip("this device can hand off on the GPU (tests/interop/test_cuda_torch.py)")
    got, why = interop.handoff_mode()
    assert got == "host"
    assert why and (device.name in why or "semaphore" in why)
    assert interop.handoff_mode(device) == (got, why)  # (decided once per device)


def test_handoff_mode_host_on_request_and_a_bad_value_named(monkeypatch):
    import cthreads.interop as interop
    from cthreads.interop import handoff

    device = get_device()
    monkeypatch.delitem(handoff._state, device, raising=False)
    monkeypatch.setenv("CTHREADS_CUDA_HANDOFF", "sometimes")
    with pytest.raises(
        GpuInvalidArgument, match="CTHREADS_CUDA_HANDOFF must be 'gpu' or 'host'; got 'sometimes'"
    ):
        interop.handoff_mode(device)
    monkeypatch.setenv("CTHREADS_CUDA_HANDOFF", "host")
    assert interop.handoff_mode(device) == (
        "host",
        "CTHREADS_CUDA_HANDOFF=host asks for host waits",
    )
    monkeypatch.delitem(handoff._state, device, raising=False)  # (decided again by later tests)


def test_cuda_semaphore_structs_have_the_driver_abi_sizes():
    import ctypes

    from cthreads.interop import cuda

    # cuda.h (x86-64): the handle union is 16 bytes, 8-aligned; params blocks are 72 bytes
    assert ctypes.sizeof(cuda._SemaphoreHandleDesc) == 96
    assert cuda._SemaphoreHandleDesc.handle.offset == 8
    assert cuda._SemaphoreHandleDesc.flags.offset == 24
    for params in (cuda._SignalParams, cuda._WaitParams):
        assert ctypes.sizeof(params) == 144
        assert params.flags.offset == 72 and params.reserved.offset == 76
    assert cuda._WaitParams.params.size == cuda._SignalParams.params.size == 72
    assert ctypes.sizeof(cuda._WaitMutex) == 16  # key, timeoutMs, padding
    assert ctypes.sizeof(cuda._MemoryHandleDesc) == 104
    assert ctypes.sizeof(cuda._BufferDesc) == 88


def test_semaphore_export_signals_and_waits_on_the_queue():
    device = get_device()
    dev = device._dev
    if not dev.external()["semaphore_fd"]:
        with pytest.raises(GpuInvalidArgument, match="cannot export semaphores"):
            dev.export_semaphore()
        pytest.skip(
            f"{device.name!r} does not export timeline semaphores (VK_KHR_external_semaphore_fd)"
        )
    index, fd = dev.export_semaphore()
    try:
        assert fd >= 0 and os.fstat(fd) is not None
    finally:
        os.close(fd)
    dev.semaphore_submit(index, signal=1)
    dev.semaphore_submit(index, wait=1)  # (the alias: the same payload, imported back)
    dev.semaphore_submit(index, signal=2)
    # These submissions are not on the device's timeline (wait_idle() does not cover them): on a
    # real GPU the counter is read before they ran unless the host waits for the value itself.
    assert dev.semaphore_wait(index, 2, 30.0)
    assert dev.semaphore_value(index) == 2
    assert not dev.semaphore_wait(index, 3, 0.0)  # nothing signals 3: the timeout answers
    with pytest.raises(GpuInvalidArgument, match="timeout_s"):
        dev.semaphore_wait(index, 3, -1.0)
    with pytest.raises(GpuInvalidArgument, match="never exported"):
        dev.semaphore_submit(index + 100, signal=3)


def test_export_usage_refused_where_unsupported():
    device = get_device()
    if device._dev.external()["memory_fd"]:
        pytest.skip("the device exports memory")
    with pytest.raises(GpuInvalidArgument, match="cannot export memory"):
        device.buffer(16, usage="export")


# ---- DLPack capsules (checked against numpy's consumer, on the host) -----------------------


class HostExporter:
    """numpy memory handed out through cthreads' DLPack capsule (kDLCPU) instead of CUDA's."""

    def __init__(self, a: np.ndarray, legacy: bool = False) -> None:
        self.a = a
        self.legacy = legacy  # answer with the 0.8 capsule even when 1.0 is allowed
        self.asked = []

    def __dlpack__(self, stream=None, max_version=None, **kw):
        self.asked.append(max_version)
        code = {"f": 2, "i": 0, "u": 1, "b": 6}[self.a.dtype.kind]
        versioned = max_version is not None and max_version[0] >= 1 and not self.legacy
        return _native.dlpack_capsule(
            self,
            self.a.ctypes.data,
            self.a.shape,
            (code, self.a.dtype.itemsize * 8, 1),
            (1, 0),
            versioned,
        )

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("legacy", [False, True], ids=["dlpack1.0", "dlpack0.8"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16, np.bool_])
def test_dlpack_capsule_is_consumed_in_place(dtype, legacy):
    a = (np.arange(24) % 2).astype(dtype).reshape(2, 3, 4)
    ex = HostExporter(a, legacy)
    b = np.from_dlpack(ex)
    assert ex.asked and ex.asked[0] is not None  # numpy offers DLPack 1.0
    assert b.dtype == a.dtype and b.shape == a.shape
    assert b.ctypes.data == a.ctypes.data  # the same memory
    assert (b == a).all()


@pytest.mark.parametrize("legacy", [False, True], ids=["dlpack1.0", "dlpack0.8"])
def test_dlpack_capsule_holds_its_owner_until_deleted(legacy):
    a = np.arange(8, dtype=np.float32)
    ex = HostExporter(a, legacy)
    ref = weakref.ref(ex)
    b = np.from_dlpack(ex)
    del ex
    gc.collect()
    assert ref() is not None  # the consumer's array keeps the producer alive
    del b
    gc.collect()
    assert ref() is None
    # a capsule nobody consumed lets its owner go with it
    ex = HostExporter(a, legacy)
    ref = weakref.ref(ex)
    cap = ex.__dlpack__(max_version=(1, 0))
    del ex
    gc.collect()
    assert ref() is not None
    del cap
    gc.collect()
    assert ref() is None


# ---- reading CUDA interfaces (no CUDA call) ------------------------------------------------


def test_cuda_objects_are_recognised_without_touching_them():
    assert imports.is_cuda_object(FakeCuda())
    assert imports.is_cuda_object(FakeDLPackCuda())
    assert not imports.is_cuda_object(np.zeros(3, np.float32))  # kDLCPU
    assert not imports.is_cuda_object([1.0, 2.0])
    assert not imports.is_cuda_object(DeviceArray(3, "f32"))


def test_cuda_array_interface_is_read():
    f = describe.describe(FakeCuda(6, "<f8"), "x")
    assert (f.ptr, f.shape, f.dtype, f.stream, f.readonly) == (
        0x7F0000000000, (6,), np.dtype("f8"), 7, False
    )  # fmt: skip
    assert f.nbytes == 48 and f.contiguous
    assert f.label(0) == "test_no_cuda.FakeCuda of float64 on cuda:0"
    assert not describe.describe(FakeCuda(6, "<f4", strides=(8,)), "x").contiguous
    assert describe.describe(FakeCuda(1, "<f4", strides=(8,)), "x").contiguous


@pytest.mark.parametrize(
    ("shape", "strides", "ok"),
    [
        ((2, 3), (12, 4), True),
        ((2, 3), (4, 8), False),
        ((2, 1), (4, 100), True),
        ((0,), None, True),
    ],
)
def test_contiguity(shape, strides, ok):
    assert describe._contiguous(shape, strides, 4) is ok
