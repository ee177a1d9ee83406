"""The C fast launcher (native/launch.c): used for kernels whose lists are all resident, equal
to the general path, and stepping aside (returning None) for every unusual argument, so that
the general path does the work or words the error. No reference is leaked."""

from __future__ import annotations

import gc
import resource
import sys

import numpy as np
import pytest

from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuArgumentTypeError,
    GpuInvalidArgument,
    f16,
    gpu,
    prepare,
    shutdown,
    u32,
)
from cthreads.launch import dispatch, plan, session
from cthreads.launch.gpujob import GpuJob
from cthreads.runtime import native


@Gpu
def mixed(n: int, a: float, flag: bool, xs: list[float], ks: list[int], bs: list[bool]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        xs[i] = xs[i] * a + float(ks[i])
        ks[i] = ks[i] + (1 if flag else -1)
        bs[i] = not bs[i]


@Gpu
def scaled(n: int, c: u32, h: f16, us: list[u32], hs: list[f16]) -> None:
    i = GlobalIdx.x
    if i < n:
        us[i] = us[i] * c
        hs[i] = hs[i] + h


@Gpu
def axpy(a: float, x: list[float], y: list[float]) -> None:  # size: the longest list
    i: int = GlobalIdx.x
    y[i] = a * x[i] + y[i]


def _data(n):
    return [float(i) for i in range(n)], list(range(n)), [i % 3 == 0 for i in range(n)]


def _no_general_path(*a, **k):
    raise AssertionError("the general path ran")


def _launcher(kernel, *args):
    """The kernel's fast launcher, built by one launch."""
    gpu(kernel, *args).join(download=False)
    fast = kernel._fast_launch
    assert type(fast.__self__) is native.module().FastLauncher
    return fast


def test_the_c_launcher_runs_and_equals_the_general_path(monkeypatch):
    n = 300
    xs, ks, bs = _data(n)
    rx, rk, rb = _data(n)
    for _ in range(2):
        gpu(mixed, n, 1.5, True, rx, rk, rb).join()  # general path (nothing resident)
    with GpuArena().bind(xs=xs, ks=ks, bs=bs) as arena:
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        job = gpu(mixed, n, 1.5, True, xs, ks, bs)
        assert type(mixed._fast_launch.__self__) is native.module().FastLauncher
        assert type(job) is GpuJob
        job.join(download=False)
        gpu(mixed, n, 1.5, True, xs, ks, bs).join()  # join() downloads the written lists
        monkeypatch.undo()
        arena.sync()
    assert xs == rx and ks == rk and bs == rb


def test_numpy_lists_u32_and_f16_scalars_and_the_longest_list_rule(monkeypatch):
    n = 100
    us, hs = np.arange(n, dtype=np.uint32), (np.arange(n) / 4).astype(np.float16)
    ru, rh = us.copy(), hs.copy()
    gpu(scaled, n, 3_000_000_000, 1.0001, ru, rh).join()  # f16(1.0001) == 1.0 here too
    x, y, ry = [1.0] * 70, [float(i) for i in range(70)], [float(i) for i in range(70)]
    gpu(axpy, 2.0, list(x), ry).join()
    with GpuArena().bind(us=us, hs=hs, x=x, y=y) as arena:
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        gpu(scaled, n, 3_000_000_000, 1.0001, us, hs).join(download=False)
        gpu(axpy, 2.0, x, y).join(download=False)
        monkeypatch.undo()
        arena.sync()
    np.testing.assert_array_equal(us, ru)
    np.testing.assert_array_equal(hs, rh)
    assert y == ry


def test_jobs_of_both_launchers_have_the_same_attributes():
    n = 8
    xs, ks, bs = _data(n)
    general = gpu(mixed, n, 1.5, True, *_data(n))
    with GpuArena().bind(xs=xs, ks=ks, bs=bs):
        fast = gpu(mixed, n, 1.5, True, xs, ks, bs)
        assert type(fast) is GpuJob
        # the C launcher fills the QUEUED_FIELDS slots and writes no attribute dict; the rest
        # are class defaults (gpujob.py)
        assert vars(fast) == {}
        # (`_written`: the general path's pairs, the C launcher's records: gpujob.py)
        names = [*GpuJob.QUEUED_FIELDS, *vars(general), "_writebacks"]
        assert {k: type(getattr(fast, k)) for k in names} == {
            k: type(getattr(general, k)) for k in names if k not in ("_buffers", "_written")
        } | {"_buffers": tuple, "_written": tuple}
        assert [w[1].name for w in fast._writebacks] == ["xs", "ks", "bs"]
        assert fast._written == tuple(w[1] for w in fast._writebacks)
        assert fast._writebacks[0][0] is None and list(fast._buffers) == []
        assert fast._device_done is False
        assert fast._kernel_name == "mixed" and fast._device is session.state.device
        fast.join()
        general.join()
        assert fast.done() and repr(fast) == "<GpuJob mixed done>"


def test_every_unusual_argument_returns_none():
    n = 4
    xs, ks, bs = _data(n)
    with GpuArena().bind(xs=xs, ks=ks, bs=bs) as arena:
        fast = _launcher(mixed, n, 1.5, True, xs, ks, bs)

        class Index:
            def __index__(self):
                raise RuntimeError("never called")

        class Int(int):
            pass

        good = (n, 1.5, True, xs, ks, bs)
        assert type(fast(good)) is GpuJob
        bad = [
            good[:5],  # arity
            good + (1,),
            (1.0, 1.5, True, xs, ks, bs),  # float for int
            (True, 1.5, True, xs, ks, bs),  # bool for int
            (Int(4), 1.5, True, xs, ks, bs),  # int subclass
            (Index(), 1.5, True, xs, ks, bs),  # __index__ is the general path's business
            (2**31, 1.5, True, xs, ks, bs),  # out of int32
            (2**100, 1.5, True, xs, ks, bs),
            (-(2**31) - 1, 1.5, True, xs, ks, bs),
            (0, 1.5, True, xs, ks, bs),  # nothing to launch
            (-1, 1.5, True, xs, ks, bs),
            (n, 2, True, xs, ks, bs),  # int for float (converted by the general path)
            (n, "1.5", True, xs, ks, bs),
            (n, float("nan"), True, xs, ks, bs),
            (n, float("inf"), True, xs, ks, bs),
            (n, 1e39, True, xs, ks, bs),  # overflows float32
            (n, 10**400, True, xs, ks, bs),  # an int too large for any float
            (n, np.array([1.5]), True, xs, ks, bs),  # a one-element array is not a scalar
            (np.array([n]), 1.5, True, xs, ks, bs),
            (n, np.float32(1.5), True, xs, ks, bs),  # numpy scalars: the general path converts
            (n, 1.5, 1, xs, ks, bs),  # int for bool
            (n, 1.5, None, xs, ks, bs),
            (n, 1.5, True, list(xs), ks, bs),  # an equal but not resident list
            (n, 1.5, True, xs, xs, bs),  # a float32 list for list[int]
            (n, 1.5, True, xs, ks, xs),  # also aliasing of written lists
            (n, 1.5, True, np.zeros(n, np.float32), ks, bs),
            (n, 1.5, True, xs, ks, None),
        ]
        for args in bad:
            assert fast(args) is None, args
        assert fast([*good]) is None  # not a tuple
        xs.append(1.0)  # resized since bound
        assert fast(good) is None
        with pytest.raises(GpuInvalidArgument, match="with 4 elements but now has 5"):
            gpu(mixed, *good)
        xs.pop()
        assert type(fast(good)) is GpuJob
        arena.sync()
    assert fast(good) is None  # the arena was released
    gpu(mixed, *good).join()  # the general path uploads them again


def test_general_path_words_the_errors_the_launcher_steps_aside_from():
    n = 4
    xs, ks, bs = _data(n)
    ys = [0.0] * n
    with GpuArena().bind(xs=xs, ks=ks, bs=bs, ys=ys):
        _launcher(mixed, n, 1.5, True, xs, ks, bs)
        with pytest.raises(TypeError, match="`flag` expects bool; got int"):
            gpu(mixed, n, 1.5, 1, xs, ks, bs)
        with pytest.raises(GpuInvalidArgument, match="outside \\[-2\\*\\*31"):
            gpu(mixed, 2**31, 1.5, True, xs, ks, bs)
        with pytest.raises(GpuArgumentTypeError, match="`ks` expects list\\[int\\]"):
            gpu(mixed, n, 1.5, True, xs, ys, bs)
        _launcher(axpy, 1.0, xs, ys)
        with pytest.raises(GpuInvalidArgument, match="same object is passed as `x` and `y`"):
            gpu(axpy, 1.0, ys, ys)


def test_shutdown_and_reprepare_make_a_new_launcher():
    n = 4
    xs, ks, bs = _data(n)
    old_arena = GpuArena().bind(xs=xs, ks=ks, bs=bs)
    old = _launcher(mixed, n, 1.5, True, xs, ks, bs)
    old_arena.sync()
    shutdown()
    args = (n, 1.5, True, xs, ks, bs)
    assert old(args) is None  # the device it holds is gone
    prepare()
    assert old(args) is None
    with GpuArena().bind(xs=xs, ks=ks, bs=bs) as arena:
        assert old(args) is None  # bound again, but for a newer generation
        gpu(mixed, *args).join(download=False)
        assert mixed._fast_launch is not old
        assert type(mixed._fast_launch(args)) is GpuJob
        arena.sync()
    old_arena.release()


def test_without_the_c_launcher_the_general_path_does_the_same(monkeypatch):
    """Stub devices and kernels the C launcher does not cover have no fast launcher at all
    (the generated Python one is gone): every launch takes the general path, same results."""
    n = 50
    a, b = _data(n), _data(n)
    monkeypatch.setattr(plan, "NATIVE", False)
    mixed._fast_launch = None
    prep = session.state.prepared.get(mixed.source_key)
    if prep is not None:
        prep.fast = None
    with GpuArena().bind(x=a[0], k=a[1], b=a[2]) as arena:
        gpu(mixed, n, 1.5, False, *a).join(download=False)
        assert mixed._fast_launch is None
        arena.sync()
    monkeypatch.undo()
    session.state.prepared[mixed.source_key].fast = None
    with GpuArena().bind(x=b[0], k=b[1], b=b[2]) as arena:
        _launcher(mixed, n, 1.5, False, *b)
        arena.sync()
    assert a == b


def test_no_reference_or_memory_is_leaked():
    n = 16
    xs, ks, bs = _data(n)
    args = (n, 1.5, True, xs, ks, bs)
    device = session.state.device
    with GpuArena().bind(xs=xs, ks=ks, bs=bs) as arena:
        fast = _launcher(mixed, *args)
        records = [arena._slots[k] for k in ("xs", "ks", "bs")]
        device.wait_idle()
        fast(args).join(download=False)
        gc.collect()
        kept0 = device.stats()["kept_objects"]
        refs0 = [sys.getrefcount(o) for o in (args, xs, ks, bs, records[0], records[0].buffer)]
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(20):
            for _ in range(5000):
                fast(args)
            fast(args).join(download=False)
        device.wait_idle()
        fast(args).join(download=False)  # retires the batches that completed meanwhile
        gc.collect()
        assert device.stats()["kept_objects"] == kept0
        refs1 = [sys.getrefcount(o) for o in (args, xs, ks, bs, records[0], records[0].buffer)]
        assert refs1 == refs0
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 20_000  # KiB
        arena.sync()


def test_gpu_is_its_c_entry_with_the_functions_face_and_routing(monkeypatch):
    """gpu() is native/bound.c's LaunchEntry where the extension is built: the function's
    name, doc and signature; no options or `grid=` alone go to the kernel's C launcher, any
    other option (or a declined launch) to launch() as the same call."""
    assert type(gpu) is native.module().LaunchEntry
    face = dispatch._gpu_function
    assert (gpu.__name__, gpu.__doc__) == ("gpu", face.__doc__)
    assert gpu.__signature__ == face.__signature__
    with pytest.raises(TypeError, match=r"gpu\(\) missing 1 required positional argument: 'fn'"):
        gpu()
    with pytest.raises(TypeError, match="needs a @Gpu kernel"):
        gpu(len, 1)
    n = 8
    xs, ks, bs = _data(n)
    gpu(mixed, n, 1.5, True, xs, ks, bs).join()  # the kernel class is known from here
    assert dispatch.KERNEL_CLASS[0] is type(mixed)
    monkeypatch.setattr(dispatch, "_launch", _no_general_path)
    with GpuArena().bind(xs=xs, ks=ks, bs=bs):
        assert type(gpu(mixed, n, 1.5, True, xs, ks, bs)) is GpuJob
        assert type(gpu(mixed, n, 1.5, True, xs, ks, bs, grid=(n,))) is GpuJob
        with pytest.raises(AssertionError, match="the general path ran"):
            gpu(mixed, n, 1.5, True, xs, ks, bs, timed=True)  # another option: launch()
        with pytest.raises(TypeError, match="takes 6 argument"):
            gpu(fn=mixed)  # `fn` by keyword: the function's binding, then launch()'s checks
    monkeypatch.undo()
    before = list(ks)
    gpu(mixed, n, 1.5, True, xs, ks, bs).join()  # not resident now: declined, then general
    assert ks == [k + 1 for k in before]


def test_a_launch_entry_refuses_bad_parts_and_falls_back_on_anything_odd():
    import contextvars

    entry_type = native.module().LaunchEntry
    context = contextvars.ContextVar("device", default=None)
    for bad in [
        (),
        ("a", [None], 1, [0], context),
        ("a", [None], print, [], context),
        ("a", [None], print, [0], None),
        (1, [None], print, [0], context),
    ]:
        with pytest.raises(TypeError):
            entry_type(*bad)
    calls = []
    kinds: list = []  # no kernel class at all (item 0 missing): every call is the fallback's
    entry = entry_type(
        "_fast_launch", kinds, lambda *a, **k: calls.append((a, k)) or 7, [0], context
    )
    assert entry(mixed, 1, grid=2) == 7 and entry(fn=3) == 7
    kinds.append(int)  # an int "kernel" whose attribute lookup fails: that error surfaces
    with pytest.raises(AttributeError):
        entry(5, 1)
    assert calls == [((mixed, 1), {"grid": 2}), ((), {"fn": 3})]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'fn'"):
        entry(grid=1)
