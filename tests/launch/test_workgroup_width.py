"""CTHREADS_WORKGROUP: the width of kernels that do not observe their workgroup (tuning knob)."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuInvalidArgument, gpu
from cthreads.launch import session


@Gpu
def triple(n: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] * 3.0


def test_default_width_is_256(monkeypatch):
    monkeypatch.delenv("CTHREADS_WORKGROUP", raising=False)
    gpu(triple, 1, [1.0]).join()
    assert session.physical_workgroup(session.state.device) == 256


@pytest.mark.parametrize("width", [32, 1024])
def test_a_set_width_is_used_and_every_index_runs_once(monkeypatch, width):
    monkeypatch.setenv("CTHREADS_WORKGROUP", str(width))
    session.state.prepared.pop(triple.source_key, None)  # rebuilt with the new width
    triple._fast_launch = None
    try:
        x = np.arange(100_003, dtype=np.float32)
        gpu(triple, len(x), x).join()
        np.testing.assert_array_equal(x, np.arange(100_003, dtype=np.float32) * 3)
        assert session.state.prepared[triple.source_key].physical_wg == width
    finally:
        session.state.prepared.pop(triple.source_key, None)
        triple._fast_launch = None


@pytest.mark.parametrize("raw", ["0", "96", "2048", "wide"])
def test_a_bad_width_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv("CTHREADS_WORKGROUP", raw)
    with pytest.raises(GpuInvalidArgument, match="CTHREADS_WORKGROUP must be a power of two") as e:
        session.physical_workgroup(session.state.device or session._current_device())
    assert e.value.param == "CTHREADS_WORKGROUP" and repr(raw) in str(e.value)
    assert "1024" in str(e.value) and "256" in str(e.value)  # the allowed values, the default
