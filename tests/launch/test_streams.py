"""Streams (issue 16, items 1-2): `Stream`, `stream=` on launches and copies, `with stream:`,
`s.wait(job)`, `after=`, and their errors. Results are checked, never timings: whether streams
overlap in device time is bench/streams.py's question (H200).

`QueueGate` (tests/devicehelp.py) holds the queue busy, so "not finished yet" is observed
without a clock.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from devicehelp import QueueGate

from cthreads.gpu import (
    DeviceArray,
    GpuArgumentTypeError,
    GpuDeviceLost,
    GpuInvalidArgument,
    GpuJob,
    GpuUseAfterDestroy,
    Stream,
    available,
    gpu,
    shutdown,
)
from cthreads.launch.stream import SCOPED, current_stream

from stream_kernels import N, add_k, scaled
from stream_kernels import arange as _arange

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")


def test_two_streams_each_run_a_chain():
    s1, s2 = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange(), stream=s1)
    y = DeviceArray.from_numpy(-_arange(), stream=s2)
    for _ in range(8):
        gpu(add_k, N, 1.0, x, stream=s1)
        gpu(add_k, N, 2.0, y, stream=s2)
    s1.synchronize()
    s2.synchronize()
    assert s1.done() and s2.done()
    np.testing.assert_array_equal(x.numpy(stream=s1), _arange() + 8)
    np.testing.assert_array_equal(y.numpy(stream=s2), -_arange() + 16)


def test_a_stream_remembers_what_was_queued_on_it():
    s, other = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    assert s.done() and other.done()  # nothing queued: done
    with QueueGate() as gate:
        job = gpu(add_k, N, 1.0, x, stream=s)
        assert not s.done()
        assert other.done()  # no work of its own
        gate.open()
        s.synchronize()
    assert s.done() and job.done()
    np.testing.assert_array_equal(x.numpy(), _arange() + 1)


def test_after_orders_a_launch_on_another_stream():
    a, b = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    z = DeviceArray(N, "f32")
    with QueueGate() as gate:
        ja = gpu(scaled, N, 2.0, x, y, stream=a)  # y = 2x on a
        jb = gpu(scaled, N, 3.0, y, z, stream=b, after=[ja])  # z = 3y on b, after ja only
        assert isinstance(jb, GpuJob) and not jb.done()
        gate.open()
        b.synchronize()  # the host waits for b only
    np.testing.assert_array_equal(z.numpy(), _arange() * 6)
    assert ja.done()


def test_after_takes_a_single_job_and_jobs_of_the_default_stream():
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    j0 = gpu(add_k, N, 1.0, x)  # the default stream
    s = Stream()
    gpu(scaled, N, 2.0, x, y, stream=s, after=j0)
    gpu(add_k, N, 1.0, y, after=())  # an empty list: no dependency
    np.testing.assert_array_equal(y.numpy(stream=s), (_arange() + 1) * 2 + 1)


def test_stream_wait_orders_later_launches_after_a_job():
    a, b = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    with QueueGate() as gate:
        ja = gpu(add_k, N, 5.0, x, stream=a)
        assert b.wait(ja) is None  # no host wait: the gate is still closed
        assert not ja.done()
        gpu(scaled, N, 1.0, x, y, stream=b)
        gate.open()
    b.synchronize()
    np.testing.assert_array_equal(y.numpy(), _arange() + 5)


def test_await_a_stream():
    s = Stream()
    x = DeviceArray.from_numpy(_arange(), stream=s)

    async def main() -> bool:
        for _ in range(4):
            gpu(add_k, N, 1.0, x, stream=s)
        await s
        return s.done()

    assert asyncio.run(main())
    np.testing.assert_array_equal(x.numpy(), _arange() + 4)


def test_await_a_gated_stream_does_not_block_the_loop():
    s = Stream()
    x = DeviceArray.from_numpy(_arange())

    async def main() -> list[str]:
        seen: list[str] = []
        with QueueGate() as gate:
            gpu(add_k, N, 1.0, x, stream=s)

            async def opener() -> None:
                seen.append("loop ran while the stream was pending")
                gate.open()

            task = asyncio.get_running_loop().create_task(opener())
            await s
            await task
        seen.append(f"done={s.done()}")
        return seen

    assert asyncio.run(main()) == ["loop ran while the stream was pending", "done=True"]


def test_await_an_idle_stream_returns_at_once():
    async def main() -> None:
        await Stream()

    asyncio.run(main())


def test_with_stream_is_the_threads_default_and_nests():
    s1, s2 = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    before = SCOPED[0]
    with QueueGate() as gate:
        with s1 as entered:
            assert entered is s1 and current_stream() is s1
            with s2:
                assert current_stream() is s2
                gpu(add_k, N, 1.0, x)  # on s2
                assert not s2.done() and s1.done()
            assert current_stream() is s1
            add_k[N // 64](N, 1.0, x)  # the bracket launch follows `with` too: on s1
            assert not s1.done()
        assert current_stream() is None and SCOPED[0] == before
        gate.open()
        s1.synchronize()
        s2.synchronize()
    np.testing.assert_array_equal(x.numpy(), _arange() + 2)


def test_with_stream_covers_copies():
    s = Stream()
    with QueueGate() as gate:
        with s:
            x = DeviceArray.from_numpy(_arange())
            x.copy_from(_arange() * 2)
        gate.open()
        s.synchronize()
    out = np.empty(N, np.float32)
    x.copy_to(out, stream=s)
    np.testing.assert_array_equal(out, _arange() * 2)


def test_with_stream_restores_on_an_exception():
    s = Stream()
    with pytest.raises(KeyError), s:
        raise KeyError("inside")
    assert current_stream() is None


def test_launch_errors_name_the_keyword():
    x = DeviceArray.from_numpy(_arange())
    with pytest.raises(GpuArgumentTypeError) as e:
        gpu(add_k, N, 1.0, x, stream="fast")
    assert e.value.param == "stream" and "Stream" in str(e.value)
    with pytest.raises(GpuArgumentTypeError) as e:
        add_k[1](N, 1.0, x, stream=3)
    assert e.value.param == "stream"
    for bad in (5, [5], [gpu(add_k, N, 1.0, x), "job"], {"a": 1}):
        with pytest.raises(GpuArgumentTypeError) as e:
            gpu(add_k, N, 1.0, x, after=bad)
        assert e.value.param == "after" and "GpuJob" in str(e.value)
    with pytest.raises(GpuArgumentTypeError) as e:
        Stream().wait(x)
    assert e.value.param == "job"
    with pytest.raises(GpuArgumentTypeError) as e:
        Stream(device="gpu0")
    assert e.value.param == "device"


def test_copy_errors_name_the_keyword():
    x = DeviceArray.from_numpy(_arange())
    calls = (
        lambda: DeviceArray.from_numpy(_arange(), stream=1),
        lambda: x.copy_from(_arange(), stream=1),
        lambda: x.copy_to(np.empty(N, np.float32), stream=1),
        lambda: x.numpy(stream=1),
    )
    for call in calls:
        with pytest.raises(GpuArgumentTypeError) as e:
            call()
        assert e.value.param == "stream"


def test_jobs_and_streams_of_a_shut_down_device_are_refused():
    x = [1.0, 2.0]
    old_job = gpu(add_k, 2, 1.0, x)
    old_job.join()
    old_stream = Stream()
    shutdown()
    y = [1.0, 2.0]
    with pytest.raises(GpuInvalidArgument) as e:
        gpu(add_k, 2, 1.0, y, after=[old_job])
    assert e.value.param == "after" and "shutdown" in str(e.value)
    with pytest.raises(GpuInvalidArgument) as e:
        gpu(add_k, 2, 1.0, y, stream=old_stream)
    assert e.value.param == "stream" and "shutdown" in str(e.value)
    with pytest.raises(GpuInvalidArgument) as e:
        Stream().wait(old_job)
    assert e.value.param == "job"
    with pytest.raises(GpuInvalidArgument) as e, old_stream:
        gpu(add_k, 2, 1.0, y)  # a `with` stream of the old device: an error, not ignored
    assert e.value.param == "stream"
    gpu(add_k, 2, 1.0, y).join()  # nothing was launched by the refused calls
    assert y == [2.0, 3.0]


def test_shutdown_with_work_queued_on_two_streams():
    s1, s2 = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange(), stream=s1)
    y = DeviceArray.from_numpy(_arange(), stream=s2)
    for _ in range(16):
        gpu(add_k, N, 1.0, x, stream=s1)
        gpu(add_k, N, 1.0, y, stream=s2)
    shutdown()  # completes the queued work, then destroys the device: no hang, no crash
    for s in (s1, s2):
        assert "shut down" in repr(s)
        with pytest.raises(GpuUseAfterDestroy):
            s.synchronize()
    with pytest.raises(GpuUseAfterDestroy):
        Stream(device=s1._device)
    s3 = Stream()  # the next device
    z = DeviceArray.from_numpy(_arange(), stream=s3)
    gpu(add_k, N, 1.0, z, stream=s3)
    np.testing.assert_array_equal(z.numpy(stream=s3), _arange() + 1)


def test_two_threads_queue_on_one_stream():
    import threading

    s = Stream()
    xs = [DeviceArray.from_numpy(_arange()) for _ in range(2)]

    def work(x: DeviceArray) -> None:
        for _ in range(20):
            gpu(add_k, N, 1.0, x, stream=s)

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s.synchronize()
    assert s.done()
    for x in xs:
        np.testing.assert_array_equal(x.numpy(), _arange() + 20)


def test_with_stream_applies_to_its_own_thread_only():
    import threading

    s = Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray.from_numpy(_arange())
    seen: dict[str, object] = {}
    with QueueGate() as gate:
        with s:

            def other() -> None:
                seen["stream"] = current_stream()
                seen["job"] = gpu(add_k, N, 1.0, y)  # the default stream, not s

            t = threading.Thread(target=other)
            t.start()
            t.join()
            assert seen["stream"] is None
            assert s.done()  # the other thread's launch was not queued on s
            gpu(add_k, N, 1.0, x)
            assert not s.done()
        gate.open()
        s.synchronize()
    seen["job"].join()
    np.testing.assert_array_equal(y.numpy(), _arange() + 1)


def test_bracket_launch_takes_stream_and_after():
    a, b = Stream(), Stream()
    x = DeviceArray.from_numpy(_arange())
    y = DeviceArray(N, "f32")
    with QueueGate() as gate:
        ja = add_k[N // 64](N, 1.0, x, stream=a)
        scaled[lambda meta: N // meta["workgroup_size"][0]](N, 2.0, x, y, stream=b, after=[ja])
        assert not a.done() and not b.done()
        gate.open()
        b.synchronize()
    np.testing.assert_array_equal(y.numpy(), (_arange() + 1) * 2)


def test_force_with_a_stream_is_checked_against_the_new_device():
    # prepare(force=True) restarts the device first, so a stream made before the launch is
    # refused clearly (not queued on a device that is gone)
    s = Stream()
    x = [1.0, 2.0]
    with pytest.raises(GpuInvalidArgument) as e:
        gpu(add_k, 2, 1.0, x, force=True, stream=s)
    assert e.value.param == "stream" and "before a shutdown" in str(e.value)
    assert x == [1.0, 2.0]
    gpu(add_k, 2, 1.0, x, stream=Stream()).join()
    assert x == [2.0, 3.0]


def test_plain_launches_never_take_the_stream_path(monkeypatch):
    from cthreads.launch import dispatch

    def refuse(*a: object) -> None:
        raise AssertionError("a launch without stream=/after= took the stream path")

    x = DeviceArray.from_numpy(_arange())
    gpu(add_k, N, 1.0, x)  # prepared: the C launcher exists
    monkeypatch.setattr(dispatch, "_stream_launch", refuse)
    gpu(add_k, N, 1.0, x)
    add_k[N // 64](N, 1.0, x)
    with pytest.raises(AssertionError), Stream():
        gpu(add_k, N, 1.0, x)  # inside `with stream:` it does
    np.testing.assert_array_equal(x.numpy(), _arange() + 3)


def test_after_a_device_loss_streams_follow_the_new_device():
    # the H200 lost a device under load (2026-12-02); streams made afterwards belong to the
    # reopened device, and the launch must check them against it, not the lost one
    from cthreads import runtime

    x = DeviceArray.from_numpy(np.zeros(16, np.float32))
    old = Stream()
    gpu(add_k, 16, 1.0, x, stream=old).join()
    runtime.get_device()._dev._inject_submit_error(-4)  # VK_ERROR_DEVICE_LOST
    with pytest.raises(GpuDeviceLost):
        gpu(add_k, 16, 1.0, x, stream=old).join()
    new = Stream()
    y = DeviceArray.from_numpy(np.zeros(16, np.float32))
    gpu(add_k, 16, 1.0, y, stream=new).join()
    np.testing.assert_array_equal(y.numpy(), np.ones(16, np.float32))
    with pytest.raises(GpuInvalidArgument) as info:  # a stream of the lost device is refused
        gpu(add_k, 16, 1.0, y, stream=old)
    assert info.value.param == "stream"
