"""`DeviceArray` (issue 15 items 1 and 4): constructors and element types, bit-exact round trips,
attributes, errors, numpy interop and launches that take device arrays for list parameters."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import (
    DeviceArray,
    GlobalIdx,
    Gpu,
    GpuArgumentTypeError,
    GpuInvalidArgument,
    GpuUseAfterDestroy,
    VulkanOutOfMemory,
    device_name,
    f16,
    gpu,
    i8,
    u64,
)
from cthreads.runtime import get_device

NAMES = ["f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"]
NUMPY = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16,
    "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
    "u64": np.uint64, "bool": np.bool_,
}  # fmt: skip


def random_array(name: str, shape, seed: int = 0) -> np.ndarray:
    """Every bit pattern of the type (NaN payloads and negative zeros included); bools 0/1."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(NUMPY[name])
    if name == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def copy_f16(n: int, x: list[f16], y: list[f16]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = x[i]


@Gpu
def copy_i8(n: int, x: list[i8], y: list[i8]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = x[i]


@Gpu
def copy_u64(n: int, x: list[u64], y: list[u64]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = x[i]


@Gpu
def negate_bool(n: int, x: list[bool], y: list[bool]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = not x[i]


@Gpu
def row_sums(n: int, m: list[float], out: list[float]) -> None:
    r: int = GlobalIdx.x
    cols: int = m.shape[1]
    if r < n:
        s: float = 0.0
        for c in range(cols):
            s = s + m[r * cols + c]
        out[r] = s


# -- constructors and element types -------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_zero_filled_of_every_type_by_name_and_numpy_dtype(name):
    for dtype in (name, NUMPY[name], np.dtype(NUMPY[name])):
        d = DeviceArray((3, 5), dtype)
        assert d.dtype == np.dtype(NUMPY[name])
        assert d.shape == (3, 5)
        out = d.numpy()
        assert out.dtype == np.dtype(NUMPY[name]) and out.shape == (3, 5)
        assert not out.any()


def test_recycled_memory_is_zeroed():
    DeviceArray.from_numpy(np.full(4096, 7, np.int32)).release()  # back to the pool
    assert not DeviceArray(4096, "i32").numpy().any()


def test_int_shape_and_cthreads_types():
    assert DeviceArray(7, f16).shape == (7,)
    assert DeviceArray(7, f16).dtype == np.float16
    assert DeviceArray(7, u64).dtype == np.uint64


@pytest.mark.parametrize("name", NAMES)
def test_round_trips_are_bit_exact(name):
    a = random_array(name, (17, 3), seed=len(name))
    d = DeviceArray.from_numpy(a)
    assert d.shape == a.shape and d.dtype == a.dtype
    assert d.numpy().tobytes() == a.tobytes()
    assert d.to_bytes() == a.tobytes()
    e = DeviceArray.from_bytes(a.tobytes(), (17, 3), name)
    assert e.numpy().tobytes() == a.tobytes()
    raw = DeviceArray.from_bytes(a.view(np.uint8), (17, 3), name)  # any buffer's bytes
    assert raw.numpy().tobytes() == a.tobytes()
    b = random_array(name, (17, 3), seed=99)
    d.copy_from(b)
    out = np.empty_like(b)
    d.copy_to(out)
    assert out.tobytes() == b.tobytes()
    into = bytearray(d.nbytes)
    d.copy_to(into)
    assert bytes(into) == b.tobytes()


def test_from_numpy_takes_non_contiguous_arrays_as_row_major():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    d = DeviceArray.from_numpy(a)
    assert d.shape == (4, 3)
    assert (d.numpy() == a).all()


def test_attributes():
    d = DeviceArray((4, 6), "f64")
    assert (d.size, d.nbytes, d.ndim, len(d)) == (24, 192, 2, 4)
    assert d.device == device_name()
    assert isinstance(d.device_address, int) and d.device_address != 0
    assert repr(d) == f"<DeviceArray shape=(4, 6) dtype=float64 on {device_name()!r}>"
    d.release()
    assert repr(d) == "<DeviceArray shape=(4, 6) dtype=float64 released>"
    assert d.released


def test_empty_arrays():
    d = DeviceArray(0, "f32")
    assert d.numpy().shape == (0,) and d.to_bytes() == b""
    with pytest.raises(GpuInvalidArgument, match="empty DeviceArray"):
        gpu(saxpy, 1, 2.0, d, DeviceArray(1, "f32"))


def test_numpy_interop():
    a = np.arange(10, dtype=np.int16)
    d = DeviceArray.from_numpy(a)
    assert (np.asarray(d) == a).all() and np.asarray(d).dtype == np.int16
    assert np.asarray(d, dtype=np.float64).dtype == np.float64
    assert np.array(d).sum() == a.sum()
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(d, copy=False)


# -- errors -------------------------------------------------------------------------------------


def test_bad_dtype_and_shape():
    with pytest.raises(GpuArgumentTypeError, match=r"`dtype`: DeviceArray elements are f16, f32"):
        DeviceArray(3, "f128x")
    with pytest.raises(GpuArgumentTypeError, match="`dtype`"):
        DeviceArray(3, np.complex64)
    with pytest.raises(GpuArgumentTypeError, match="`dtype`"):
        DeviceArray(3, np.dtype(">f4"))  # not native byte order
    with pytest.raises(GpuArgumentTypeError, match="`shape` expects an int or a tuple of ints"):
        DeviceArray(3.0, "f32")
    with pytest.raises(GpuInvalidArgument, match=r"`shape` extents must be >= 0; got \(2, -1\)"):
        DeviceArray((2, -1), "f32")
    with pytest.raises(GpuArgumentTypeError, match="from_numpy\\(\\) takes a numpy array"):
        DeviceArray.from_numpy([1.0, 2.0])
    with pytest.raises(GpuArgumentTypeError, match="`dtype`"):
        DeviceArray.from_numpy(np.zeros(3, np.complex128))


def test_copy_errors():
    d = DeviceArray((2, 3), "f32")
    with pytest.raises(GpuInvalidArgument, match=r"numpy array of float64 with shape \(2, 3\)"):
        d.copy_from(np.zeros((2, 3)))
    with pytest.raises(GpuInvalidArgument, match=r"holds float32 with shape \(2, 3\)"):
        d.copy_from(np.zeros(6, np.float32))
    with pytest.raises(GpuInvalidArgument, match="holds 8 bytes; .* holds 24"):
        d.copy_from(b"12345678")
    with pytest.raises(GpuInvalidArgument, match="`host` is read-only"):
        d.copy_to(bytes(24))
    with pytest.raises(GpuArgumentTypeError, match="got str"):
        d.copy_from("abc")
    with pytest.raises(GpuInvalidArgument, match="`data` holds 3 bytes"):
        DeviceArray.from_bytes(b"abc", 2, "f32")


def test_use_after_release():
    with DeviceArray(8, "f32") as d:
        pass
    for use in (d.numpy, d.to_bytes, lambda: d.copy_from(np.zeros(8, np.float32))):
        with pytest.raises(GpuUseAfterDestroy, match=r"DeviceArray \(8,\) of float32 was released"):
            use()
    with pytest.raises(GpuUseAfterDestroy, match="be passed as `x`"):
        gpu(saxpy, 8, 1.0, d, DeviceArray(8, "f32"))
    d.release()  # idempotent


def test_use_after_shutdown():
    from cthreads.gpu import shutdown

    d = DeviceArray(8, "f32")
    shutdown()
    with pytest.raises(GpuUseAfterDestroy, match="device that has since been shut down"):
        d.numpy()
    with pytest.raises(GpuUseAfterDestroy, match="shut down"):
        gpu(saxpy, 8, 1.0, d, DeviceArray(8, "f32"))
    d.release()  # quiet: the memory went with the device
    del d


def test_out_of_memory_names_the_size():
    heap = max(h["size"] for h in get_device().info.memory_heaps)
    count = heap  # 4 bytes each: four heaps' worth
    with pytest.raises(VulkanOutOfMemory) as info:
        DeviceArray(count, "f32")
    assert f"{count} elements, {4 * count} bytes" in str(info.value)
    assert "does not fit on the device" in str(info.value)


# -- launches -----------------------------------------------------------------------------------


def test_a_chain_of_100_launches_reads_back_once():
    n = 4096
    xs = np.linspace(-1, 1, n, dtype=np.float32)
    x = DeviceArray.from_numpy(xs)
    y = DeviceArray(n, "f32")
    want = np.zeros(n, np.float32)
    for k in range(100):
        a = np.float32(0.5 + k / 64)
        job = gpu(saxpy, n, float(a), x, y)
        want = a * xs + want
    job.join()  # nothing is copied back at join: only y.numpy() reads
    assert np.array_equal(y.numpy(), want)
    assert np.array_equal(x.numpy(), xs)  # read-only in the kernel: untouched


def test_launches_leave_host_objects_alone_and_stay_device_side():
    x = DeviceArray.from_numpy(np.ones(64, np.float32))
    y = DeviceArray(64, "f32")
    job = gpu(saxpy, 64, 3.0, x, y)
    assert job._writebacks == []  # nothing waits to be copied at join
    job.join()
    assert (y.numpy() == 3.0).all()


@pytest.mark.parametrize(
    ("kernel", "name", "want"),
    [
        (copy_f16, "f16", lambda a: a),
        (copy_i8, "i8", lambda a: a),
        (copy_u64, "u64", lambda a: a),
        (negate_bool, "bool", lambda a: ~a),
    ],
)
def test_launches_on_every_kind_of_element(kernel, name, want):
    a = random_array(name, 300, seed=5)
    if name == "f16":
        a[np.isnan(a)] = 0  # a NaN may come back quieted through a float register
    x = DeviceArray.from_numpy(a)
    y = DeviceArray(300, name)
    gpu(kernel, 300, x, y).join()
    assert y.numpy().tobytes() == want(a).tobytes()


def test_element_type_must_match_exactly():
    with pytest.raises(GpuArgumentTypeError) as info:
        gpu(saxpy, 4, 1.0, DeviceArray(4, "f16"), DeviceArray(4, "f32"))
    message = str(info.value)
    assert "`x` expects list[float] (float32); got a DeviceArray of float16" in message
    assert "astype(numpy.float32)" in message
    with pytest.raises(GpuArgumentTypeError, match="got a DeviceArray of uint8"):
        gpu(negate_bool, 4, DeviceArray(4, "u8"), DeviceArray(4, "bool"))


def test_the_same_array_twice_for_a_written_list_is_refused():
    x = DeviceArray(4, "f32")
    with pytest.raises(GpuInvalidArgument, match="the same object is passed as `x` and `y`"):
        gpu(saxpy, 4, 1.0, x, x)


def test_kernels_see_the_arrays_shape_row_major():
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = DeviceArray.from_numpy(m)
    out = DeviceArray(3, "f32")
    gpu(row_sums, 3, d, out).join()
    assert np.array_equal(out.numpy(), m.sum(axis=1))
    with pytest.raises(GpuInvalidArgument, match=r"reads `m.shape\[1\]` but the argument has 1"):
        gpu(row_sums, 3, DeviceArray(12, "f32"), out)


def test_device_arrays_mix_with_host_arrays_and_lists():
    x = DeviceArray.from_numpy(np.full(8, 2.0, np.float32))
    ys = [1.0] * 8
    gpu(saxpy, 8, 2.0, x, ys).join()
    assert ys == [5.0] * 8
    y = DeviceArray(8, "f32")
    gpu(saxpy, 8, 1.0, np.full(8, 4.0, np.float32), y).join()
    assert (y.numpy() == 4.0).all()


@pytest.mark.parametrize("native", [True, False])
def test_host_and_device_arrays_mixed_with_and_without_the_c_launcher(native):
    from tests.devicehelp import use_launcher

    use_launcher(saxpy, native)
    try:
        x = DeviceArray.from_numpy(np.full(32, 2.0, np.float32))
        y = DeviceArray(32, "f32")
        xs = np.full(32, 2.0, np.float32)
        ys = np.zeros(32, np.float32)
        for _ in range(3):  # fast-path launches (host arrays) and device-array ones, mixed
            gpu(saxpy, 32, 1.0, xs, ys).join()
            gpu(saxpy, 32, 1.0, x, y)
        assert (y.numpy() == 6.0).all() and (ys == 6.0).all()
    finally:
        use_launcher(saxpy, True)


def test_the_c_launcher_takes_device_arrays_of_the_exact_type(monkeypatch):
    """DeviceArrays are self-records (arena.SELF_RECORD_TYPES): the C launcher runs them with no
    general-path frame, writes nothing back at join; anything it cannot take (another element
    type, an empty or released array) goes to the general path, which words the error."""
    from cthreads.launch import dispatch

    x = DeviceArray.from_numpy(np.full(32, 2.0, np.float32))
    y = DeviceArray(32, "f32")
    gpu(saxpy, 32, 1.0, x, y).join()  # builds the C launcher

    def no_general_path(*a, **k):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(dispatch, "_launch", no_general_path)
    job = gpu(saxpy, 32, 1.0, x, y)
    assert job._writebacks == []
    job.join()
    assert x.last_use == y.last_use == y.last_write == job._value
    gpu(saxpy, 32, 1.0, x, y, grid=(32, 1, 1)).join()
    monkeypatch.undo()
    assert (y.numpy() == 6.0).all()  # three launches of y += 1.0 * x
    with pytest.raises(GpuArgumentTypeError, match="DeviceArray of float64"):
        gpu(saxpy, 32, 1.0, DeviceArray(32, "f64"), y)
    with pytest.raises(GpuArgumentTypeError, match="DeviceArray of uint8"):
        gpu(negate_bool, 32, DeviceArray(32, "u8"), DeviceArray(32, "bool"))  # u8 is not bool
    gone = DeviceArray(32, "f32")
    gone.release()
    with pytest.raises(GpuUseAfterDestroy):
        gpu(saxpy, 32, 1.0, x, gone)


def test_grid_and_timed_launches_take_device_arrays():
    x = DeviceArray.from_numpy(np.ones(64, np.float32))
    y = DeviceArray(64, "f32")
    gpu(saxpy, 64, 1.0, x, y, grid=(64,)).join()
    gpu(saxpy, 64, 1.0, x, y, timed=True).join()
    assert (y.numpy() == 2.0).all()


@pytest.mark.parametrize("name", ["u8", "f16", "f32", "u64"])
def test_the_discrete_gpu_paths_round_trip(name, monkeypatch):
    # fills and staging copies through the queue, as on a GPU over PCIe
    monkeypatch.setattr(DeviceArray, "_direct", lambda self: False)
    DeviceArray.from_numpy(random_array(name, 7, seed=3)).release()  # dirty pool memory
    z = DeviceArray(7, name)  # 7 elements: a fill whose size is no multiple of 4 for u8/f16
    assert not z.numpy().any()
    a = random_array(name, (5, 7), seed=4)
    d = DeviceArray.from_numpy(a)
    assert d.numpy().tobytes() == a.tobytes()
    b = random_array(name, (5, 7), seed=6)
    d.copy_from(b)
    assert d.to_bytes() == b.tobytes()
