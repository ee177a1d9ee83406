"""Several devices in one process (issue 20): handles, `with device:`, `device=`, cross-device
arguments, `DeviceArray.to()`, `split()`, shutdown, fork.

Lavapipe is one physical device; `device(0, logical=k)` opens extra logical devices on it, each
its own VkDevice, queue and submission thread: "several devices" here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import cthreads.gpu as g
from cthreads.errors import GpuArgumentTypeError, GpuInvalidArgument, GpuUseAfterDestroy
from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, GpuArena, gpu
from cthreads.launch import session
from cthreads import runtime
from cthreads.runtime import handle, lifecycle


@Gpu
def axpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@Gpu
def fill(n: int, v: float, y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = v


@pytest.fixture
def device():
    """The default runtime device (skips where there is no Vulkan device)."""
    if not runtime.available():
        pytest.skip("no Vulkan device")
    return runtime.get_device()


@pytest.fixture
def two(device):
    """The default device's handle and a second logical device on the same GPU."""
    return g.device(), g.device(0, logical=1)


def test_devices_lists_handles_without_opening_anything(device):
    lifecycle.shutdown()
    listed = g.devices()
    assert listed and [d.index for d in listed] == list(range(len(listed)))
    first = listed[0]
    assert first.name == device.info.name and first.type == device.info.type
    assert first.uuid == device.info.uuid and first.memory == device.info.memory > 0
    assert lifecycle._device is None and not lifecycle._others  # nothing opened
    assert not first.is_open and first.is_default
    assert "GpuDevice #0" in repr(first)


def test_device_finds_by_index_name_uuid_and_handles_are_one_per_device(device):
    d0 = g.device(0)
    assert g.device(0) is d0 is g.devices()[0] is g.device("0")
    assert g.device(device.info.name[:5].upper()) is d0
    assert g.device(d0.uuid) is d0 and g.device("GPU-" + d0.uuid[:8]) is d0
    assert g.device() is d0 and g.current_device() is d0  # the default
    other = g.device(0, logical=1)
    assert other is not d0 and other is g.device(d0, logical=1) and other.logical == 1
    assert not other.is_default and other.info == d0.info


def test_device_errors_name_the_argument(device):
    with pytest.raises(GpuInvalidArgument) as err:
        g.device(len(g.devices()))
    assert err.value.param == "spec" and "sees" in str(err.value)
    with pytest.raises(GpuArgumentTypeError) as err:
        g.device(1.5)
    assert err.value.param == "spec"
    with pytest.raises(GpuInvalidArgument, match="names no usable device"):
        g.device("no such gpu")
    with pytest.raises(GpuInvalidArgument) as err:
        g.device(0, logical=-1)
    assert err.value.param == "logical"
    with pytest.raises(GpuArgumentTypeError) as err:
        gpu(fill, 4, 1.0, [0.0] * 4, device=2.5)
    assert err.value.param == "device"
    with pytest.raises(GpuArgumentTypeError) as err:
        DeviceArray(4, device=object())
    assert err.value.param == "device"


def test_each_device_is_its_own_vulkan_device_with_its_own_launch_state(two):
    a, b = two
    ys = [0.0] * 8
    gpu(fill, 8, 2.0, ys, device=b).join()
    assert ys == [2.0] * 8
    ra, rb = a.open(), b.open()
    assert ra is lifecycle.get_device() and rb is not ra and rb.alive
    assert rb.generation != ra.generation and rb._dev is not ra._dev
    st = session.state_for(b)
    assert st is not session.state and st.device is rb
    assert st.prepared[fill.source_key].pipeline is not None
    # the default device's handle shares the default launch state
    assert session.state_for(a) is session.state
    job = gpu(fill, 8, 3.0, ys, device=b)
    assert job._device is rb
    job.join()
    assert ys == [3.0] * 8
    # b launches through a C launcher of its own; the kernel's own one stays the default's
    from cthreads.launch.dispatch import _no_fast_path

    fast_b = st.prepared[fill.source_key].fast
    assert fast_b is not None and fast_b is not _no_fast_path
    gpu(fill, 8, 4.0, ys).join()
    assert fill._fast_launch is session.state.prepared[fill.source_key].fast is not fast_b


def test_inside_with_the_kernels_default_fast_path_is_not_taken(two):
    a, b = two
    ya = DeviceArray(8)  # (the C launcher takes device arrays; lists it leaves to Python)
    gpu(fill, 8, 1.0, ya).join()  # the default device's C launcher is the kernel's now
    assert fill._fast_launch is not None
    with b:
        yb = DeviceArray(8)
        job = gpu(fill, 8, 2.0, yb)
        bracket = fill[1](8, 3.0, yb)
        # a's array inside `with b`: the launch is b's, so it is refused (the kernel's C
        # launcher, a's, would have run it on a)
        for launch in (lambda: gpu(fill, 8, 4.0, ya), lambda: fill[1](8, 4.0, ya)):
            with pytest.raises(GpuInvalidArgument) as err:
                launch()
            assert err.value.param == "y"
    assert job._device is b.open() and bracket._device is b.open()
    assert yb.numpy().tolist() == [3.0] * 8 and ya.numpy().tolist() == [1.0] * 8
    assert gpu(fill, 8, 5.0, ya)._device is a.open()  # outside it, the default again


def test_prepare_on_a_device_builds_there(two):
    a, b = two
    report = g.prepare(device=b)
    st = session.state_for(b)
    assert report["fill"]["cache_hit"] in (True, False) and fill.source_key in st.prepared
    assert st.prepared[fill.source_key].generation == b.open().generation
    with b:  # the current device, without device=
        g.prepare()
    assert st.device is b.open()


def test_with_device_is_the_current_device_nested_and_restored(two):
    a, b = two
    c = g.device(0, logical=2)
    assert g.current_device() is a
    with b:
        assert g.current_device() is b and g.device() is b
        x = DeviceArray.from_numpy(np.ones(4, np.float32))
        with c:
            assert g.current_device() is c
            z = DeviceArray(4)
        assert g.current_device() is b
        y = DeviceArray(4)
        gpu(axpy, 4, 2.0, x, y).join()  # on b: no device= needed
        arena = GpuArena()
    assert g.current_device() is a
    assert x._device is b.open() and y._device is b.open() and z._device is c.open()
    assert y.numpy().tolist() == [2.0] * 4
    hs = np.zeros(4, np.float32)
    arena.bind(h=hs)
    assert arena._slots["h"].device is b.open()


def test_the_current_device_is_per_thread_and_per_task(two):
    a, b = two
    seen = {}

    def worker():
        seen["thread"] = g.current_device()

    async def task(dev, key):
        with dev:
            await asyncio.sleep(0)
            seen[key] = g.current_device()

    async def both():
        await asyncio.gather(task(b, "task b"), task(a, "task a"))

    with b:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    asyncio.run(both())
    assert seen == {"thread": a, "task b": b, "task a": a}


def test_work_on_three_devices_concurrently_from_threads(two):
    a, b = two
    devices = [a, b, g.device(0, logical=2)]
    n, rounds = 4096, 20
    results: dict[int, tuple] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(devices))
    groups = -(-n // axpy[1].workgroup_size[0])  # (the bracket counts workgroups)

    def work(k, dev):
        try:
            start.wait()
            with dev:
                x = DeviceArray.from_numpy(np.full(n, k + 1, np.float32))
                y = DeviceArray(n)
                ys = [0.0] * n
                for _ in range(rounds):
                    gpu(axpy, n, 1.0, x, y)  # DeviceArray launches, queued
                    axpy[groups](n, 0.5, x, ys).join()  # list launches, bracket form
                results[k] = (y.numpy(), ys, x._device)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k, d)) for k, d in enumerate(devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, dev in enumerate(devices):
        y, ys, where = results[k]
        assert where is dev.open()
        assert np.array_equal(y, np.full(n, rounds * (k + 1), np.float32))
        assert ys == [rounds * 0.5 * (k + 1)] * n
    assert len({d.open().generation for d in devices}) == 3


def test_device_keyword_everywhere(two):
    a, b = two
    x = DeviceArray.from_numpy(np.arange(6, dtype=np.float32), device=b)
    y = DeviceArray((6,), "f32", device=b)
    z = DeviceArray.from_bytes(bytes(24), 6, "f32", device=b)
    assert x._device is y._device is z._device is b.open()
    axpy[1](6, 1.0, x, y, device=b).join()
    gpu(axpy, 6, 1.0, x, z, device=b).join()
    assert y.numpy().tolist() == z.numpy().tolist() == list(range(6))
    arena = GpuArena(device=b)
    hs = np.ones(6, np.float32)
    arena.bind(h=hs)
    gpu(axpy, 6, 1.0, x, hs, device=b).join()
    arena.sync("h")
    assert hs.tolist() == [1.0 + i for i in range(6)]
    # by index, with the same effect as the handle
    w = DeviceArray(6, device=0)
    assert w._device is a.open()


def test_an_array_of_another_device_is_refused_naming_the_parameter(two):
    a, b = two
    x = DeviceArray.from_numpy(np.ones(8, np.float32), device=b)
    ys = [0.0] * 8
    gpu(axpy, 8, 1.0, [1.0] * 8, ys).join()  # the default device's C launcher exists now
    assert axpy._fast_launch is not None
    for launch in (
        lambda: gpu(axpy, 8, 1.0, x, ys),  # the fast path declines, the check refuses
        lambda: gpu(axpy, 8, 1.0, x, ys, device=a),
        lambda: axpy[1](8, 1.0, x, ys),
    ):
        with pytest.raises(GpuInvalidArgument) as err:
            launch()
        assert err.value.param == "x" and "logical 1" in str(err.value)
        assert ".to(device)" in err.value.hint
    held = np.zeros(8, np.float32)
    arena = GpuArena(device=b).bind(held=held)  # (kept: a dropped arena unbinds)
    with pytest.raises(GpuInvalidArgument) as err:
        gpu(axpy, 8, 1.0, [1.0] * 8, held)
    assert err.value.param == "y" and "GpuArena as `held`" in str(err.value)
    assert ys == [1.0] * 8 and "held" in arena  # nothing ran


def test_to_copies_on_purpose(two):
    a, b = two
    src = np.arange(10, dtype=np.float32)
    x = DeviceArray.from_numpy(src, device=b)
    y = x.to(a)
    assert y._device is a.open() and x._device is b.open()
    assert np.array_equal(y.numpy(), src) and y.dtype == x.dtype and y.shape == x.shape
    z = DeviceArray.from_numpy(np.zeros(10, np.float32))
    gpu(axpy, 10, 1.0, y, z).join()  # usable on its new device
    assert np.array_equal(z.numpy(), src)
    x.release()
    with pytest.raises(GpuUseAfterDestroy):
        x.to(a)


def test_split_gives_contiguous_ranges(two):
    a, b = two
    parts = g.split(10, [a, b, g.device(0, logical=2)])
    assert [(p.start, p.stop) for p in parts] == [(0, 4), (4, 7), (7, 10)]
    assert [len(p) for p in parts] == [4, 3, 3] and parts[1].slice == slice(4, 7)
    assert parts[0].device is a and parts[1].device is b
    assert [(p.start, p.stop) for p in g.split(2, [a, b, a])] == [(0, 1), (1, 2), (2, 2)]
    assert [p.device for p in g.split(5)] == g.devices()
    assert g.split(5, 1)[0].device is g.devices()[0]
    assert [(p.start, p.stop) for p in g.split(0, [a, b])] == [(0, 0), (0, 0)]
    for bad, param in ((-1, "n"), (2.0, "n")):
        with pytest.raises(GpuInvalidArgument) as err:
            g.split(bad, [a])
        assert err.value.param == param
    with pytest.raises(GpuInvalidArgument) as err:
        g.split(4, [])
    assert err.value.param == "devices"
    with pytest.raises(GpuInvalidArgument) as err:
        g.split(4, len(g.devices()) + 1)
    assert err.value.param == "devices"


def test_one_kernel_over_several_devices_joined(two):
    a, b = two
    n = 1000
    xs = np.arange(n, dtype=np.float32)
    ys = np.ones(n, np.float32)
    parts = g.split(n, [a, b])
    jobs = [gpu(axpy, len(p), 2.0, xs[p.slice], ys[p.slice], device=p.device) for p in parts]
    for job in jobs:
        job.join()
    assert np.array_equal(ys, 2.0 * np.arange(n, dtype=np.float32) + 1.0)


def test_shutdown_closes_every_open_device(two):
    a, b = two
    x = DeviceArray.from_numpy(np.ones(4, np.float32), device=b)
    y = DeviceArray(4)
    ra, rb = a.open(), b.open()
    g.shutdown()
    assert not ra.alive and not rb.alive and not lifecycle._others
    assert not a.is_open and not b.is_open and b.session is None
    for arr in (x, y):
        with pytest.raises(GpuUseAfterDestroy):
            arr.numpy()
    with pytest.raises(GpuUseAfterDestroy):
        gpu(axpy, 4, 1.0, x, [0.0] * 4, device=b)
    ys = [0.0] * 4
    gpu(fill, 4, 5.0, ys, device=b).join()  # both open again on their next use
    gpu(fill, 4, 5.0, ys).join()
    assert b.open().alive and b.open() is not rb and ys == [5.0] * 4


CHILD = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import cthreads.gpu as g
    from cthreads.runtime import lifecycle, validation_messages
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kern import fill

    def work(dev, v):
        ys = [0.0] * 16
        g.gpu(fill, 16, v, ys, device=dev).join()
        return ys == [v] * 16

    a, b = g.device(), g.device(0, logical=1)
    assert work(a, 1.0) and work(b, 2.0)  # two devices open in the parent
    pid = os.fork()
    if pid == 0:
        dropped = lifecycle._device is None and not lifecycle._others
        try:
            ok = work(b, 3.0) and work(a, 4.0)
        except Exception as exc:  # NVIDIA's driver refuses a device in a forked child
            ok = "refused" if "forked" in str(exc) and "spawn" in str(exc) else repr(exc)
        print(json.dumps(["child", dropped, ok, validation_messages()]), flush=True)
        sys.exit(3)
    _, status = os.waitpid(pid, 0)
    print(json.dumps(["parent", os.waitstatus_to_exitcode(status), work(b, 5.0), work(a, 6.0),
                      validation_messages()]), flush=True)
    """
)


def test_fork_with_two_devices_open_and_exit(tmp_path, device):
    (tmp_path / "kern.py").write_text(
        "from cthreads.gpu import GlobalIdx, Gpu\n\n"
        "@Gpu\ndef fill(n: int, v: float, y: list[float]) -> None:\n"
        "    i: int = GlobalIdx.x\n    if i < n:\n        y[i] = v\n"
    )
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    child = next(line for line in lines if line[0] == "child")
    parent = next(line for line in lines if line[0] == "parent")
    if child[2] == "refused":  # (the loader reports the driver's refusal itself, and only that)
        assert child[:3] == ["child", True, "refused"]
        assert all("CreateDevice" in m for m in child[3]), child[3]
    else:  # lavapipe: a fresh device in the child
        assert child == ["child", True, True, []]
    assert parent == ["parent", 3, True, True, []]  # and the parent exits cleanly (rc 0)
    assert "Traceback" not in proc.stderr and "abandoned" not in proc.stderr


def test_handles_forget_their_state_at_shutdown_but_stay_usable(two):
    a, b = two
    gpu(fill, 4, 1.0, [0.0] * 4, device=b).join()
    assert b.session is not None
    handle.forget_sessions()
    assert b.session is None and b._dev is None
