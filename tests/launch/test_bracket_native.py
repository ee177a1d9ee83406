"""The C call of `kernel[grid]` (native/bound.c, gpu/bracket.py): a held launcher launches
resident arguments without Python code of ours; options, streams, devices, declined launches
and callable grids take the Python fallback with the same results; the type survives misuse."""

from __future__ import annotations

import contextvars

import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GpuJob, bracket
from cthreads.launch import dispatch
from cthreads.launch.stream import SCOPED
from cthreads.runtime import native

pytestmark = pytest.mark.skipif(not native.built(), reason="needs the C extension")


@Gpu
def axpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def _refuse(*args, **kwargs):
    raise AssertionError("the Python path ran")


def test_a_held_launcher_on_resident_lists_runs_no_python_path(monkeypatch):
    x, y = [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]
    held = axpy[1]
    assert isinstance(held, native.module().BoundLaunch)
    with GpuArena() as arena:
        arena.bind(x=x, y=y)
        held(3, 1.0, x, y).join(download=False)  # the first launch builds the C launcher
        assert axpy._fast_launch is not None
        monkeypatch.setattr(bracket, "gpu", _refuse)
        monkeypatch.setattr(dispatch, "_launch", _refuse)
        jobs = [held(3, 1.0, x, y) for _ in range(4)]
        assert all(type(j) is GpuJob for j in jobs)
        jobs[-1].join(download=False)
        monkeypatch.undo()
        arena.sync("y")
    assert y == [5.0, 10.0, 15.0]


def test_what_the_c_call_declines_takes_the_fallback():
    held = axpy[1]
    y = [0.0, 0.0]
    held(2, 2.0, [1.0, 2.0], y).join()  # plain lists: not resident, the general path
    assert y == [2.0, 4.0]
    held(2, 1.0, [1.0, 2.0], y, timed=True).join()  # an option
    assert y == [3.0, 6.0]
    with pytest.raises(TypeError, match="grid in the brackets"):
        held(2, 1.0, [1.0, 2.0], y, grid=4)
    with pytest.raises(TypeError, match="takes 4 argument"):
        held(2, 1.0)


def test_inside_with_stream_and_with_device_it_goes_through_gpu(monkeypatch):
    from cthreads.gpu import devices

    seen = []
    real = bracket.gpu

    def spy(*args, **kwargs):
        seen.append(kwargs.get("grid"))
        return real(*args, **kwargs)

    monkeypatch.setattr(bracket, "gpu", spy)
    x, y = [1.0], [0.0]
    with GpuArena() as arena:
        arena.bind(x=x, y=y)
        held = axpy[1]
        held(1, 1.0, x, y).join(download=False)
        with devices()[0]:
            held(1, 1.0, x, y).join(download=False)
        SCOPED[0] += 1  # as `with stream:` counts itself
        try:
            held(1, 1.0, x, y).join(download=False)
        finally:
            SCOPED[0] -= 1
        arena.sync("y")
    assert seen == [held.invocations, held.invocations]
    assert y == [3.0]


def test_the_type_survives_misuse():
    bound = native.module().BoundLaunch
    with pytest.raises(TypeError, match="before __init__"):
        bound.__new__(bound)(1, 2)
    var = contextvars.ContextVar("v", default=None)
    for args in [
        (),
        (axpy, "_fast_launch", (64, 1, 1), print, [0]),  # one short
        (axpy, 5, (64, 1, 1), print, [0], var),  # attribute not a str
        (axpy, "_fast_launch", [64, 1, 1], print, [0], var),  # grid not a tuple
        (axpy, "_fast_launch", (64, 1, 1), 3, [0], var),  # fallback not callable
        (axpy, "_fast_launch", (64, 1, 1), print, [], var),  # empty scoped list
        (axpy, "_fast_launch", (64, 1, 1), print, [0], "var"),  # not a ContextVar
    ]:
        with pytest.raises(TypeError):
            bound(*args)
    with pytest.raises(TypeError, match="positional"):
        bound(axpy, "_fast_launch", None, print, [0], var, extra=1)
    # an attribute that is missing raises as getattr does; one that is None falls back
    seen = []
    b = bound(axpy, "no_such_attribute", (64, 1, 1), lambda *a: seen.append(a), [0], var)
    with pytest.raises(AttributeError):
        b(1, 2)
    b = bound(axpy, "_bracket", (64, 1, 1), lambda *a, **k: seen.append((a, k)), ["x"], var)
    b(1, 2, k=3)  # a scoped count that is not an int: the fallback, with the launcher first
    assert seen == [((b, 1, 2), {"k": 3})]
