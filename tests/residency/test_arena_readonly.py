"""A read-only array bound in a GpuArena (SPEC §7): a launch that would write it is refused at
the launch, before anything runs, on every launch path, naming the parameter and the binding;
launches that only read it, and `sync()`, work."""

from __future__ import annotations

import numpy as np
import pytest
from devicehelp import use_launcher

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GpuInvalidArgument, gpu
from cthreads.launch import session


@Gpu
def scale_into(n: int, src: list[float], dst: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        dst[i] = src[i] * 2.0


@pytest.fixture
def restore_launcher():
    yield
    use_launcher(scale_into, True)


def read_only(values):
    a = np.array(values, np.float32)
    a.setflags(write=False)
    return a


def test_writing_a_read_only_resident_array_is_refused_at_the_launch(restore_launcher):
    use_launcher(scale_into, True)
    ro = read_only([1.0, 2.0, 3.0, 4.0])
    out = np.zeros(4, np.float32)
    with GpuArena().bind(ro=ro, out=out) as arena:
        gpu(scale_into, 4, ro, out).join(download=False)  # reading it: fine, builds the launcher
        fast = scale_into._fast_launch
        assert type(getattr(fast, "__self__", None)).__name__ == "FastLauncher"
        assert fast((4, ro, out)) is not None
        assert fast((4, out, ro)) is None  # writes the read-only one: the general path words it
        last = session.state.device.last_value
        with pytest.raises(GpuInvalidArgument, match="`dst` is written by the kernel") as info:
            gpu(scale_into, 4, out, ro)
        assert "read-only" in str(info.value) and "bound in a GpuArena as `ro`" in str(info.value)
        assert info.value.param == "dst"
        assert session.state.device.last_value == last  # nothing was submitted
        arena.sync()  # the read-only array is skipped, the other downloads
    assert out.tolist() == [2.0, 4.0, 6.0, 8.0] and ro.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_made_read_only_after_bind_is_seen_on_rebind():
    a = np.ones(4, np.float32)
    with GpuArena() as arena:
        arena.bind(a=a)
        a.setflags(write=False)
        arena.bind(a=a)  # the same object again: re-uploaded, now known read-only
        with pytest.raises(GpuInvalidArgument, match="read-only"):
            gpu(scale_into, 4, np.ones(4, np.float32), a)
        a.setflags(write=True)
        arena.bind(a=a)
        gpu(scale_into, 4, np.full(4, 3.0, np.float32), a).join()
    assert a.tolist() == [6.0] * 4
