"""The CUDA exchange's control flow on any device that exports memory (lavapipe included),
with the driver API replaced by a stand-in that moves bytes on the host (issue 17).

`FakeContext` plays `cuda.Context`: its "device pointers" are host addresses of numpy arrays
(the CUDA objects) or keys of `FakeMapping`s (exported buffers, host-visible on lavapipe), and
`copy` moves bytes between them. That checks, without CUDA: staging and copy back of written
parameters only, reuse of staging arrays, zero copy for views of a DeviceArray (through CAI and
through our own DLPack capsule read back), the order of copies and stream waits, and every
argument error. What only the H200 can show (libcuda itself) is tests/interop/test_cuda.py."""

from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

import cthreads.interop as interop
from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, GpuArgumentTypeError, GpuInvalidArgument, gpu
from cthreads.interop import cuda, describe, exports, imports
from cthreads.runtime import get_device


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


class FakeCudaArray:
    """A numpy array posing as CUDA memory (CAI v3, producer stream 7)."""

    def __init__(self, a: np.ndarray, readonly: bool = False, stream: int | None = 7) -> None:
        self.a = a
        self.readonly = readonly
        self.stream = stream

    @property
    def __cuda_array_interface__(self) -> dict:
        strides = None if self.a.flags.c_contiguous else self.a.strides
        return {
            "shape": self.a.shape,
            "typestr": self.a.dtype.str,
            "data": (self.a.ctypes.data, self.readonly),
            "version": 3,
            "strides": strides,
            "stream": self.stream,
        }


class CaiView:
    """What torch.as_tensor(d) would hold: a DeviceArray's own interface."""

    def __init__(self, cai: dict) -> None:
        self.__cuda_array_interface__ = dict(cai, stream=7)


class DLPackView:
    """What a DLPack consumer holds of a DeviceArray: it re-exports the capsule it got."""

    def __init__(self, d: DeviceArray) -> None:
        self.d = d

    def __dlpack__(self, stream=None):
        return self.d.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.d.__dlpack_device__()


class FakeMapping:
    counter = itertools.count(1)
    live: dict[int, object] = {}

    def __init__(self, ctx, buffer) -> None:
        self.ctx = ctx
        self.ptr = 0x7E00_0000_0000 + (next(self.counter) << 32)
        self.buffer = buffer
        FakeMapping.live[self.ptr] = buffer
        ctx.log.append(("map", buffer.nbytes))

    def close(self) -> None:
        FakeMapping.live.pop(self.ptr, None)


class FakeContext:
    ordinal = 0

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self.elsewhere: set[int] = set()  # pointers "on cuda:1"

    def pointer_ordinal(self, ptr: int) -> int:
        return 1 if ptr in self.elsewhere else 0

    def copy(self, dst: int, src: int, nbytes: int, stream) -> None:
        if dst in FakeMapping.live:
            FakeMapping.live[dst].write((ctypes.c_char * nbytes).from_address(src))
            self.log.append(("in", nbytes, stream))
        elif src in FakeMapping.live:
            FakeMapping.live[src].read_into(memoryview((ctypes.c_char * nbytes).from_address(dst)))
            self.log.append(("back", nbytes, stream))
        else:
            raise AssertionError("a copy that touches no exported buffer")

    def synchronize(self, stream) -> None:
        self.log.append(("sync", stream))


@pytest.fixture
def fake(monkeypatch):
    device = get_device()
    if not device._dev.external()["memory_fd"]:
        pytest.skip("the device does not export memory")
    probe = device.buffer(16, usage="export")
    visible = probe.host_visible
    probe.release()
    if not visible:  # (NVIDIA: device-local only; test_cuda_*.py run the real driver there)
        pytest.skip(
            "the stand-in moves bytes through mapped memory; export buffers are not host-visible here"
        )
    ctx = FakeContext()
    for mod in (interop, exports, imports):
        monkeypatch.setattr(mod, "cuda_capable", lambda dev: True)
    monkeypatch.setattr(cuda, "context_for", lambda dev: ctx)
    monkeypatch.setattr(cuda, "Mapping", FakeMapping)
    monkeypatch.setattr(imports, "_idle", {})
    return ctx


def test_cuda_arguments_are_staged_and_written_back(fake):
    n = 1000
    xa = np.arange(n, dtype=np.float32)
    ya = np.ones(n, np.float32)
    gpu(saxpy, n, 2.0, FakeCudaArray(xa), FakeCudaArray(ya))
    # no join: the copy back was queued before gpu() returned
    np.testing.assert_array_equal(ya, 2 * np.arange(n, dtype=np.float32) + 1)
    np.testing.assert_array_equal(xa, np.arange(n, dtype=np.float32))
    moves = [e for e in fake.log if e[0] in ("in", "back")]
    assert moves == [("in", 4 * n, 7), ("in", 4 * n, 7), ("back", 4 * n, 7)]  # y only back
    # each copy in is waited for on its stream before the launch
    assert fake.log.index(("sync", 7)) > fake.log.index(("in", 4 * n, 7))


def test_staging_arrays_are_reused(fake):
    n = 256
    x, y = FakeCudaArray(np.ones(n, np.float32)), FakeCudaArray(np.zeros(n, np.float32))
    for _ in range(3):
        gpu(saxpy, n, 1.0, x, y)
    assert [e for e in fake.log if e[0] == "map"] == [("map", 4 * n)] * 2
    np.testing.assert_array_equal(y.a, np.full(n, 3.0, np.float32))


def test_view_of_a_device_array_is_used_in_place(fake):
    n = 300
    d = DeviceArray.from_numpy(np.full(n, 5.0, np.float32), exportable=True)
    view = CaiView(d.__cuda_array_interface__)
    out = FakeCudaArray(np.zeros(n, np.float32))
    gpu(saxpy, n, 1.0, view, out)
    assert out.a.tolist() == [5.0] * n
    ins = [e for e in fake.log if e[0] == "in"]
    assert ins == [("in", 4 * n, 7)]  # only `out` was copied
    # written through the view: the kernel writes d itself
    gpu(
        saxpy,
        n,
        1.0,
        DeviceArray.from_numpy(np.ones(n, np.float32), exportable=True),
        CaiView(d.__cuda_array_interface__),
    )
    np.testing.assert_array_equal(d.numpy(), np.full(n, 6.0, np.float32))


def test_own_dlpack_capsule_reads_back_as_the_array(fake):
    n = 64
    d = DeviceArray.from_numpy(np.arange(n, dtype=np.float32), exportable=True)
    assert d.__dlpack_device__() == (2, 0)
    assert DeviceArray.from_cuda(DLPackView(d)) is d
    out = DeviceArray(n, "f32", exportable=True)
    gpu(saxpy, n, 1.0, DLPackView(d), out)
    np.testing.assert_array_equal(out.numpy(), np.arange(n, dtype=np.float32))
    assert not [e for e in fake.log if e[0] == "in"]


def test_cuda_array_interface_of_a_device_array(fake):
    d = DeviceArray((3, 4), "f64", exportable=True)
    cai = d.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f8" and cai["version"] == 3
    assert cai["strides"] is None and cai["stream"] is None
    assert cai["data"][0] in FakeMapping.live and cai["data"][1] is False
    assert d.__cuda_array_interface__["data"] == cai["data"]  # imported once


def test_only_arrays_allocated_exportable_have_a_cuda_view(fake):
    # (on the H200 export memory is device-local only: plain arrays keep host-mapped memory)
    plain = DeviceArray(8, "f32")
    assert plain.buffer.kind == "device"
    assert not hasattr(plain, "__cuda_array_interface__") and not hasattr(plain, "__dlpack__")
    with pytest.raises(AttributeError, match="exportable=True"):
        plain.__cuda_array_interface__  # noqa: B018 - the attribute read is the test
    assert DeviceArray(8, "f32", exportable=True).buffer.kind == "export"


def test_from_cuda_copies(fake):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    d = DeviceArray.from_cuda(FakeCudaArray(a))
    assert d.shape == (3, 4) and d.dtype == np.int32
    np.testing.assert_array_equal(d.numpy(), a)


def test_dtype_error_names_the_parameter(fake):
    x = FakeCudaArray(np.zeros(8, np.float64))
    with pytest.raises(GpuArgumentTypeError, match=r"`x` expects float32, got .*float64 on cuda:0"):
        gpu(saxpy, 8, 1.0, x, FakeCudaArray(np.zeros(8, np.float32)))
    assert not [e for e in fake.log if e[0] == "in"]  # nothing moved


def test_device_error_names_the_parameter(fake):
    y = FakeCudaArray(np.zeros(8, np.float32))
    fake.elsewhere.add(y.a.ctypes.data)
    with pytest.raises(GpuInvalidArgument, match=r"`y` is on cuda:1; cthreads runs on cuda:0"):
        gpu(saxpy, 8, 1.0, FakeCudaArray(np.zeros(8, np.float32)), y)


def test_layout_errors(fake):
    ok = FakeCudaArray(np.zeros(8, np.float32))
    strided = FakeCudaArray(np.zeros(16, np.float32)[::2])
    with pytest.raises(GpuInvalidArgument, match=r"`x` expects a C-contiguous array"):
        gpu(saxpy, 8, 1.0, strided, ok)
    with pytest.raises(GpuInvalidArgument, match=r"`y` is written by the kernel .* read-only"):
        gpu(saxpy, 8, 1.0, ok, FakeCudaArray(np.zeros(8, np.float32), readonly=True))
    with pytest.raises(GpuInvalidArgument, match=r"`x` expects a non-empty list"):
        gpu(saxpy, 8, 1.0, FakeCudaArray(np.zeros(0, np.float32)), ok)


def test_refusing_producer_is_worded(fake):
    class Grad:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

    with pytest.raises(GpuInvalidArgument, match=r"`x`: the CUDA object .* requires grad"):
        gpu(saxpy, 8, 1.0, Grad(), FakeCudaArray(np.zeros(8, np.float32)))


def test_driver_struct_layouts():
    """The ctypes mirrors of the driver ABI (cuda.h, CUDA 10+) have its sizes and offsets."""
    assert ctypes.sizeof(cuda._MemoryHandleDesc) == 104
    assert cuda._MemoryHandleDesc.handle.offset == 8
    assert cuda._MemoryHandleDesc.size.offset == 24
    assert cuda._MemoryHandleDesc.flags.offset == 32
    assert ctypes.sizeof(cuda._BufferDesc) == 88
    assert ctypes.sizeof(describe._DLTensor) == 48
    assert ctypes.sizeof(describe._DLManaged) == 64


def test_same_cuda_object_twice_is_aliasing(fake):
    y = FakeCudaArray(np.zeros(8, np.float32))
    with pytest.raises(GpuInvalidArgument, match=r"same object is passed as `x` and `y`"):
        gpu(saxpy, 8, 1.0, y, y)
    assert not [e for e in fake.log if e[0] == "back"]


def test_launch_reading_a_view_of_ours_is_done_before_cuda_may_write_it(fake):
    """CUDA work queued after gpu() may overwrite the view's memory: the launch finished."""
    n = 1 << 20
    d = DeviceArray.from_numpy(np.ones(n, np.float32), exportable=True)
    out = DeviceArray(n, "f32", exportable=True)
    job = gpu(saxpy, n, 1.0, CaiView(d.__cuda_array_interface__), out)
    assert job.done()
    staged = FakeCudaArray(np.ones(n, np.float32))  # a copy was read: no wait needed for it
    gpu(saxpy, n, 1.0, staged, out).join()


class FakeJaxArray(FakeCudaArray):
    """What a JAX array offers: an interface without a stream, and block_until_ready()."""

    __module__ = "jaxlib.xla_extension"

    def __init__(self, a: np.ndarray) -> None:
        super().__init__(a, stream=None)
        self.waits = 0

    def block_until_ready(self):
        self.waits += 1
        return self


def test_a_jax_array_is_waited_for_before_it_is_read():
    # JAX names no stream its value is written on: describe() waits for it on the host
    x = FakeJaxArray(np.arange(4, dtype=np.float32))
    f = describe.describe(x, "x")
    assert x.waits == 1 and f.stream is None and f.shape == (4,)
    plain = FakeCudaArray(np.arange(4, dtype=np.float32), stream=None)
    plain.block_until_ready = lambda: pytest.fail("only JAX arrays are waited for")
    describe.describe(plain, "x")


def test_a_jax_array_that_fails_to_become_ready_names_the_parameter():
    class Broken(FakeJaxArray):
        __module__ = "jaxlib.xla_extension"

        def block_until_ready(self):
            raise RuntimeError("the computation failed")

    with pytest.raises(GpuInvalidArgument, match="`x`.*the computation failed"):
        describe.describe(Broken(np.zeros(2, np.float32)), "x")
