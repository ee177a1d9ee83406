"""cthreads.dask without a cluster: what map_blocks refuses on the client (naming the argument),
kernels by name, results through dask's local scheduler, worker-named errors that pickle, and
the device choice of a worker (faked device lists)."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

da = pytest.importorskip(
    "dask.array", reason="cthreads.dask needs dask: pip install cthreads[dask]"
)
pytest.importorskip("distributed", reason="cthreads.dask needs distributed")

import dask_kernels as k  # tests/dask is on sys.path (pytest's rootdir insertion)

import cthreads.dask as cdask
from cthreads import runtime
from cthreads.dask.worker import named
from cthreads.errors import (
    GpuArgumentTypeError,
    GpuCompileError,
    GpuInvalidArgument,
    VulkanNoDevice,
)
from cthreads.gpu import GlobalIdx, Gpu, available
from cthreads.gpu.kernel import unregister
from cthreads.runtime.info import DeviceInfo
from cthreads.runtime.visibility import default_device

needs_device = pytest.mark.skipif(not available(), reason="no Vulkan device")


def _f32(n, chunks, start=0.0):
    return da.arange(start, start + n, chunks=chunks, dtype=np.float32)


# ------------------------------------------------------------------ refused on the client


def test_a_kernel_in_main_is_refused():
    def body(n: int, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = 1.0

    body.__module__, body.__qualname__ = "__main__", "body"
    kernel = Gpu(body)
    try:
        with pytest.raises(GpuInvalidArgument, match="__main__") as info:
            cdask.map_blocks(kernel, _f32(8, 4))
        assert info.value.param == "kernel" and "a module of its own" in str(info.value)
    finally:
        unregister(kernel)


def test_a_closure_kernel_is_refused():
    @Gpu
    def inner(n: int, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = 1.0

    try:
        with pytest.raises(GpuInvalidArgument, match="inside a function") as info:
            cdask.map_blocks(inner, _f32(8, 4))
        assert info.value.param == "kernel"
    finally:
        unregister(inner)


def test_a_plain_function_is_refused():
    with pytest.raises(GpuArgumentTypeError, match="@Gpu kernel") as info:
        cdask.map_blocks(np.add, _f32(8, 4))
    assert info.value.param == "kernel"


@pytest.mark.parametrize(
    "name,cls,words",
    [
        ("dask_kernels.no_such_kernel", GpuInvalidArgument, "has no kernel"),
        ("no_such_module_xyz.kernel", GpuInvalidArgument, "no importable module"),
        ("dask_kernels.GlobalIdx", GpuArgumentTypeError, "not a @Gpu kernel"),
    ],
)
def test_a_bad_kernel_name_is_refused(name, cls, words):
    with pytest.raises(cls, match=words):
        cdask.map_blocks(name, _f32(8, 4), _f32(8, 4))


def test_chunks_that_do_not_line_up_name_the_argument():
    x, y = _f32(64, 8), _f32(64, 16)
    with pytest.raises(GpuInvalidArgument, match="`y`") as info:
        cdask.map_blocks(k.add_scaled, 2.0, x, y)
    assert info.value.param == "y" and "y.rechunk(x.chunks)" in str(info.value)


def test_same_length_other_chunks_are_refused_too():
    x = da.from_array(np.zeros(12, np.float32), chunks=((4, 8),))
    y = da.from_array(np.zeros(12, np.float32), chunks=((8, 4),))
    with pytest.raises(GpuInvalidArgument, match="first difference at chunk 0") as info:
        cdask.map_blocks(k.add_scaled, 2.0, x, y)
    assert info.value.param == "y"


def test_arity_counts_without_n():
    with pytest.raises(GpuArgumentTypeError, match="`n` is not passed") as info:
        cdask.map_blocks(k.add_scaled, 64, 2.0, _f32(64, 8), _f32(64, 8))
    assert "a, x, y" in str(info.value)


def test_a_list_parameter_needs_an_array():
    with pytest.raises(GpuArgumentTypeError, match="`x` is a list parameter") as info:
        cdask.map_blocks(k.add_scaled, 2.0, [1.0, 2.0], _f32(2, 1))
    assert info.value.param == "x"


def test_a_scalar_parameter_refuses_an_array():
    with pytest.raises(GpuArgumentTypeError, match="`a` is a scalar") as info:
        cdask.map_blocks(k.add_scaled, _f32(4, 2), _f32(4, 2), _f32(4, 2))
    assert info.value.param == "a"


def test_two_dimensional_arrays_are_refused():
    x = da.zeros((4, 4), chunks=2, dtype=np.float32)
    with pytest.raises(GpuInvalidArgument, match="2-d") as info:
        cdask.map_blocks(k.add_scaled, 2.0, x, x)
    assert info.value.param == "x"


def test_no_dask_array_at_all_is_refused():
    x = np.zeros(4, np.float32)
    with pytest.raises(GpuInvalidArgument, match="at least one dask array"):
        cdask.map_blocks(k.add_scaled, 2.0, x, x)


def test_a_kernel_that_writes_nothing_is_refused():
    with pytest.raises(GpuInvalidArgument, match="writes none") as info:
        cdask.map_blocks(k.only_reads, _f32(4, 2))
    assert info.value.param == "kernel"


def test_a_kernel_that_does_not_compile_fails_on_the_client():
    with pytest.raises(GpuCompileError, match="does_not_compile") as info:
        cdask.map_blocks(k.does_not_compile, _f32(8, 4))
    assert "on dask worker" not in str(info.value)  # nothing was sent anywhere


def test_the_graph_names_the_kernel_and_carries_no_source():
    cloudpickle = pytest.importorskip("cloudpickle")
    x, y = _f32(64, 8), _f32(64, 8)
    out = cdask.map_blocks(k.add_scaled, 2.0, x, y)
    tasks = dict(out.__dask_graph__())
    payload = cloudpickle.dumps(tasks)
    assert b"dask_kernels" in payload and b"add_scaled" in payload
    assert b"a * x[i] + y[i]" not in payload and b"GlobalIdx" not in payload
    # the same call names the same graph; another scalar names another
    assert cdask.map_blocks(k.add_scaled, 2.0, x, y).name == out.name
    assert cdask.map_blocks(k.add_scaled, 3.0, x, y).name != out.name


# ------------------------------------------------------- results on dask's local scheduler


@needs_device
def test_local_scheduler_equals_numpy_and_inputs_stay_untouched():
    x_np = np.arange(1000, dtype=np.float32)
    y_np = np.linspace(-3, 3, 1000, dtype=np.float32)
    y_before = y_np.copy()
    x = da.from_array(x_np, chunks=97)  # a short last chunk
    out = cdask.map_blocks(k.add_scaled, np.float32(0.5), x, y_np)  # numpy: chunked like x
    assert out.chunks == x.chunks and out.dtype == np.float32
    got = out.compute(scheduler="sync")
    np.testing.assert_allclose(got, np.float32(0.5) * x_np + y_before, rtol=1e-6)
    np.testing.assert_array_equal(y_np, y_before)  # the kernel wrote into copies


@needs_device
def test_an_empty_chunk_launches_nothing_and_keeps_its_place():
    x = da.from_array(np.arange(6, dtype=np.float32), chunks=((2, 0, 4),))
    out = cdask.map_blocks(k.add_scaled, 1.0, x, da.zeros(6, chunks=((2, 0, 4),), dtype="f4"))
    assert out.chunks == ((2, 0, 4),)
    np.testing.assert_array_equal(out.compute(scheduler="sync"), np.arange(6))


@needs_device
def test_several_written_lists_give_a_tuple_in_parameter_order():
    x_np = np.linspace(-5, 5, 300, dtype=np.float32)
    x = da.from_array(x_np, chunks=64)
    whole, frac = cdask.map_blocks(
        k.whole_and_frac,
        x,
        da.zeros(300, chunks=64, dtype=np.int32),
        da.zeros(300, chunks=64, dtype=np.float32),
    )
    assert whole.dtype == np.int32 and frac.dtype == np.float32
    w, f = da.compute(whole, frac, scheduler="sync")
    np.testing.assert_array_equal(w, np.floor(x_np).astype(np.int32))
    np.testing.assert_allclose(f, x_np - np.floor(x_np), atol=1e-6)


@needs_device
def test_kernel_by_name_and_kernel_without_n():
    x = _f32(50, 16)
    by_name = cdask.map_blocks(
        "dask_kernels.add_scaled", 3.0, x, da.ones(50, chunks=16, dtype=np.float32)
    )
    np.testing.assert_allclose(by_name.compute(scheduler="sync"), 3 * np.arange(50) + 1)
    doubled = cdask.map_blocks(k.no_n, x, da.zeros(50, chunks=16, dtype=np.float32))
    np.testing.assert_array_equal(doubled.compute(scheduler="sync"), 2 * np.arange(50))


@needs_device
def test_a_launch_error_keeps_its_class_and_says_where():
    out = cdask.map_blocks(k.add_scaled, 2.0, _f32(16, 8).astype(np.float64), _f32(16, 8))
    with pytest.raises(GpuArgumentTypeError, match="in a dask task of the local scheduler") as info:
        out.compute(scheduler="sync")
    assert info.value.param == "x" and "float64" in str(info.value)


@needs_device
def test_workers_in_this_process_keep_its_open_device(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from cthreads.gpu import init

    monkeypatch.delenv("CTHREADS_DEVICE", raising=False)
    init()  # the device choice of this process is made
    with (
        distributed.LocalCluster(
            n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        cdask.register(client, k.add_scaled)
        x = _f32(64, 8)
        out = cdask.map_blocks(k.add_scaled, 1.0, x, da.zeros(64, chunks=8, dtype=np.float32))
        np.testing.assert_array_equal(client.compute(out).result(), np.arange(64))
        stats = client.run(cdask.worker_stats)
    # threads of one process share its device: no worker re-chose it through the environment
    assert "CTHREADS_DEVICE" not in os.environ
    assert {s["pid"] for s in stats.values()} == {os.getpid()}


# ------------------------------------------------------------------ errors that travel


@pytest.mark.parametrize(
    "exc",
    [
        GpuArgumentTypeError("`x` expects float32", param="x", expected="f32", got="f64"),
        GpuInvalidArgument("bad grid", param="grid", hint="pass fewer groups"),
        VulkanNoDevice(),
        GpuCompileError("no strings", kernel="k", filename="m.py", lineno=3, col=5, line="s"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_named_errors_pickle_back_as_themselves(exc):
    back = pickle.loads(pickle.dumps(named(exc, "on dask worker tcp://10.0.0.1:4000 (name 3)")))
    assert type(back) is type(exc)
    assert str(back).startswith("on dask worker tcp://10.0.0.1:4000 (name 3): ")
    assert str(exc) in str(back)
    for field in ("param", "expected", "got", "hint", "lineno", "kernel"):
        assert getattr(back, field, None) == getattr(exc, field, None), field


# ------------------------------------------------------------------------ device choice


def _dev(index, type_, vendor=0x10DE, usable=True, uuid=""):
    return DeviceInfo(
        index=index, name=f"dev{index}", type=type_, vendor_id=vendor, device_id=0,
        api_version="1.3.0", driver_version="1", driver_name="x", usable=usable, uuid=uuid,
    )  # fmt: skip


LAVAPIPE = _dev(0, "cpu", vendor=0x10005, uuid="6d657361-3232-2e33")
UUID_A = "418fbc3c-8e36-8050-1c09-65fcbba2e1c3"
UUID_B = "9a1b2c3d-0000-1111-2222-333344445555"
# Vulkan order: an Intel iGPU, lavapipe, then two NVIDIA GPUs (CUDA ordinals 0 and 1)
MIXED = [
    _dev(0, "integrated", vendor=0x8086),
    _dev(1, "cpu", vendor=0x10005),
    _dev(2, "discrete", uuid=UUID_A),
    _dev(3, "discrete", uuid=UUID_B),
]


@pytest.mark.parametrize("rank", [0, 1, 5])
@pytest.mark.parametrize("cuda", [None, "", "0", "1", "GPU-418fbc3c-8e36-8050-1c09-65fcbba2e1c3"])
def test_lavapipe_alone_is_every_workers_device(rank, cuda):
    assert cdask.device_selector(rank, cuda, [LAVAPIPE]) == "0"


def test_no_usable_device_leaves_the_choice_to_the_runtime():
    assert cdask.device_selector(0, "0", [_dev(0, "discrete", usable=False)]) is None


def test_round_robin_over_gpus_skips_the_software_device():
    infos = [LAVAPIPE, _dev(1, "discrete"), _dev(2, "discrete"), _dev(3, "discrete", usable=False)]
    assert [cdask.device_selector(r, None, infos) for r in range(4)] == ["1", "2", "1", "2"]


@pytest.mark.parametrize(
    "cuda, expected",
    [
        ("1,0", "3"),  # dask-cuda: this worker's GPU first
        ("0", "2"),
        ("1", "3"),
        (f"GPU-{UUID_B}", "3"),  # the UUID of the second NVIDIA device: that one
        (f"GPU-{UUID_B.upper()}", "3"),
        ("GPU-9a1b", "3"),  # a unique prefix, as CUDA accepts
        (f"GPU-{UUID_B},GPU-{UUID_A}", "3"),
        (f" GPU-{UUID_A} , 1", "2"),
        ("0,GPU-9a1b", "2"),
    ],
)
def test_cuda_visible_devices_picks_what_the_rest_of_cthreads_opens(cuda, expected):
    # every rank: the value is each worker's own (dask-cuda), not shared round-robin
    for rank in range(3):
        assert cdask.device_selector(rank, cuda, MIXED) == expected
    assert str(default_device(MIXED, None, None, cuda).index) == expected


@pytest.mark.parametrize(
    "cuda", ["2", "GPU-00000000", "GPU-", "MIG-418fbc3c-8e36-8050-1c09-65fcbba2e1c3/1/0", "x,0"]
)
def test_cuda_visible_devices_naming_no_nvidia_device_is_an_error_naming_it(cuda):
    with pytest.raises(VulkanNoDevice) as caught:
        cdask.device_selector(1, cuda, MIXED)
    assert f"CUDA_VISIBLE_DEVICES={cuda!r}" in str(caught.value)
    assert f"GPU-{UUID_B}" in str(caught.value)  # the devices it could have named
    assert "nvidia-smi -L" in caught.value.hint


def test_a_prefix_matching_both_nvidia_devices_names_none():
    twins = [
        _dev(0, "discrete", uuid="abcd0000-" + UUID_A[9:]),
        _dev(1, "discrete", uuid="abcd1111-" + UUID_B[9:]),
    ]
    with pytest.raises(VulkanNoDevice, match="'GPU-abcd'"):
        cdask.device_selector(0, "GPU-abcd", twins)
    assert cdask.device_selector(0, "GPU-abcd1", twins) == "1"


def test_empty_cuda_visible_devices_hides_nvidia_and_the_rest_round_robin():
    # CUDA's "no GPU": the Intel iGPU is the only GPU left (lavapipe stays hidden behind it)
    assert [cdask.device_selector(r, "", MIXED) for r in range(3)] == ["0", "0", "0"]
    nvidia_only = MIXED[2:]
    with pytest.raises(VulkanNoDevice, match="CUDA_VISIBLE_DEVICES='' hides every"):
        cdask.device_selector(0, "", nvidia_only)


def test_our_visible_devices_take_precedence_over_cuda():
    assert cdask.device_selector(0, "0", MIXED, visible_devices=f"GPU-{UUID_B}") == "3"
    assert cdask.device_selector(1, "GPU-bogus", MIXED, visible_devices="1") == "1"  # software
    with pytest.raises(VulkanNoDevice, match="CTHREADS_VISIBLE_DEVICES=''"):
        cdask.device_selector(0, "0", MIXED, visible_devices="")
    with pytest.raises(GpuInvalidArgument, match="CTHREADS_VISIBLE_DEVICES"):
        cdask.device_selector(0, None, MIXED, visible_devices="GPU-00000000")


def test_the_users_cthreads_device_wins(monkeypatch):
    # choose_device() keeps CTHREADS_DEVICE as given, whatever CUDA_VISIBLE_DEVICES says
    from cthreads.dask import worker

    monkeypatch.setenv("CTHREADS_DEVICE", "7")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-00000000")
    monkeypatch.setattr(worker, "_device_chosen", False)
    monkeypatch.setitem(worker._stats, "device_selector", None)
    monkeypatch.setattr(runtime, "current_generation", lambda: 0)
    assert worker.choose_device("w3") == "7"
    assert os.environ["CTHREADS_DEVICE"] == "7"


def test_without_a_device_choice_the_worker_sets_the_ranked_one(monkeypatch):
    from cthreads.dask import worker

    for name in ("CTHREADS_DEVICE", "CTHREADS_VISIBLE_DEVICES"):  # (set first: undo restores)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"GPU-{UUID_B[:8]}")
    monkeypatch.setattr(worker, "_device_chosen", False)
    monkeypatch.setitem(worker._stats, "device_selector", None)
    monkeypatch.setattr(runtime, "current_generation", lambda: 0)
    monkeypatch.setattr(runtime, "list_devices", lambda: list(MIXED))
    assert worker.choose_device("w0") == "3"
    assert os.environ["CTHREADS_DEVICE"] == "3"


def test_worker_rank():
    names = (3, "host-7", "tcp-worker", "w12", "tcp://10.0.0.2:41234")
    assert [cdask.worker_rank(v) for v in names] == [3, 7, 0, 12, 0]
