"""The dispatch shape of grid-stride launches (launch/sizing.py, issue 14): vector-form kernels
below `spread_below` run one invocation per element (codegen_vec.py runs such a dispatch with
the scalar body), above it one invocation per 4-element block; the threshold comes from the
driver or the device's shipped profile. The C launcher (native/launch.c) sizes the same way from
the plan's `spread_below` and `width`. Results are exact on either side of the threshold. The
kernels here are compiled in the vector form on every device (conftest's `vector_form`: a CPU
device's own target keeps the scalar form)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np
import pytest

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu
from cthreads.launch import general, plan, session, sizing
from cthreads.runtime import native

# profiles/nvidia-h200.json (limits without the driver's own count: the profile is read)
H200 = SimpleNamespace(type="discrete", vendor_id=4318, device_id=9013, limits={})
UNKNOWN = SimpleNamespace(type="discrete", vendor_id=0x1234, device_id=1, limits={})
CPU = SimpleNamespace(type="cpu", vendor_id=4318, device_id=9013, limits={})  # even the H200's ids
# a device whose driver counts its resident invocations (VK_NV_shader_sm_builtins)
TOLD = SimpleNamespace(
    type="discrete", vendor_id=0x1234, device_id=1, limits={"resident_invocations": 100 * 2048}
)
MAX_GROUPS = (2**31 - 1, 65535, 65535)
WIDTH = 256

pytestmark = pytest.mark.usefixtures("vector_form")


def vec_plan(max_x: int = MAX_GROUPS[0]) -> SimpleNamespace:
    """What the rule reads of a LaunchPlan: a vector-form kernel built WIDTH wide."""
    return SimpleNamespace(per_group=4 * WIDTH, max_groups=(max_x, 65535, 65535))


def test_the_threshold_is_half_the_devices_resident_invocations():
    assert sizing.resident_invocations(H200) == 132 * 2048
    assert sizing.spread_below(vec_plan(), WIDTH, H200) == 132 * 2048 // 2
    assert sizing.spread_below(vec_plan(), WIDTH, UNKNOWN) == 0  # no profile: never spread
    assert sizing.spread_below(vec_plan(), WIDTH, CPU) == 0  # CPU devices never spread
    scalar = SimpleNamespace(per_group=WIDTH, max_groups=MAX_GROUPS)
    assert sizing.spread_below(scalar, WIDTH, H200) == 0  # one element per invocation anyway


def test_the_drivers_own_count_wins_over_the_profiles(monkeypatch):
    import cthreads.compiler as compiler

    # no profile may be read when the driver says (a warm first launch reads no JSON file)
    monkeypatch.setattr(sizing, "_resident", {})
    monkeypatch.delattr(compiler, "profiles", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "cthreads.compiler.profiles", None)
    assert sizing.resident_invocations(TOLD) == 100 * 2048
    assert sizing.spread_below(vec_plan(), WIDTH, TOLD) == 100 * 1024


@pytest.mark.parametrize(
    ("n", "groups"),
    [
        (1, 1),
        (1 << 16, (1 << 16) // WIDTH),  # small: one invocation per element
        (132 * 1024 - 1, -(-(132 * 1024 - 1) // WIDTH)),
        (132 * 1024, 132 * 1024 // (4 * WIDTH)),  # from the threshold on: blocks of 4
        (1 << 18, (1 << 18) // (4 * WIDTH)),  # where the vector form measured faster
        (1 << 26, (1 << 26) // (4 * WIDTH)),
    ],
)
def test_small_launches_spread_and_large_ones_take_blocks(n, groups):
    assert sizing.grid_stride_groups(vec_plan(), WIDTH, n, H200) == groups


def test_the_group_count_stays_within_the_device_limit():
    assert sizing.grid_stride_groups(vec_plan(max_x=100), WIDTH, 1 << 16, H200) == 100
    assert sizing.grid_stride_groups(vec_plan(max_x=100), WIDTH, 1 << 26, H200) == 100


def test_a_forced_threshold_overrides_the_device(monkeypatch):
    monkeypatch.setattr(sizing, "SPREAD_BELOW", 1 << 32)
    assert sizing.grid_stride_groups(vec_plan(), WIDTH, 1 << 26, UNKNOWN) == (1 << 26) // WIDTH
    monkeypatch.setattr(sizing, "SPREAD_BELOW", 0)
    assert sizing.grid_stride_groups(vec_plan(), WIDTH, 1 << 16, H200) == (1 << 16) // (4 * WIDTH)


@Gpu
def saxpy_spread(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


THRESHOLD = 1000  # not a multiple of 4 or of the width: partial blocks on both sides


def _record_dispatches(monkeypatch) -> list[tuple]:
    """The group counts of the dispatches the general path makes from now on."""
    seen: list[tuple] = []
    dispatch_commands = sizing.dispatches

    def recording(*args):
        before = len(args[-1])
        dispatch_commands(*args)
        seen.extend(c[3] for c in args[-1][before:] if c[0] == "dispatch")

    monkeypatch.setattr(general, "dispatches", recording)
    return seen


def _saxpy_inputs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, y after saxpy_spread(n, 0.25, x, y)): longer than n, and the elements past n
    must stay as they were."""
    m = max(n, 7) + 5
    x = np.linspace(-3.0, 3.0, m, dtype=np.float32)
    y = np.linspace(1.0, 2.0, m, dtype=np.float32)[::-1].copy()
    want = y.copy()
    want[:n] = np.float32(0.25) * x[:n] + y[:n]
    return x, y, want


def _groups(n: int, width: int) -> int:
    """Workgroups of `width` for n elements under THRESHOLD: one element per invocation below."""
    return -(-n // ((1 if n < THRESHOLD else 4) * width))


@pytest.mark.parametrize("n", [0, 1, THRESHOLD - 1, THRESHOLD, THRESHOLD + 1, 4 * THRESHOLD + 3])
def test_results_are_exact_around_the_threshold(monkeypatch, n):
    monkeypatch.setattr(sizing, "SPREAD_BELOW", THRESHOLD)
    seen = _record_dispatches(monkeypatch)
    x, y, want = _saxpy_inputs(n)
    gpu(saxpy_spread, n, 0.25, x, y, timed=True).join()  # timed: the general path
    np.testing.assert_array_equal(y, want)
    prep = session.state.prepared.get(saxpy_spread.source_key)
    assert prep.compiled.elements_per_invocation == 4  # the vector form
    assert seen == ([(_groups(n, prep.physical_wg), 1, 1)] if n else [])  # n = 0 runs nothing


@Gpu
def stencil_spread(n: int, x: list[float], out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        left: float = x[i - 1] if i > 0 else 0.0
        right: float = x[i + 1] if i + 1 < n else 0.0
        out[i] = 0.25 * left + 0.5 * x[i] + 0.25 * right


@pytest.mark.parametrize("n", [THRESHOLD - 1, THRESHOLD + 1])
def test_neighbour_reads_are_exact_in_both_shapes(monkeypatch, n):
    # x is read at i - 1 and i + 1: out is vectorized, x keeps guarded scalar loads
    monkeypatch.setattr(sizing, "SPREAD_BELOW", THRESHOLD)
    x = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    gpu(stencil_spread, n, x, out, timed=True).join()
    pad = np.concatenate([[0.0], x, [0.0]]).astype(np.float32)
    want = np.float32(0.25) * pad[:-2] + np.float32(0.5) * x + np.float32(0.25) * pad[2:]
    np.testing.assert_array_equal(out, want)
    assert (
        session.state.prepared.get(stencil_spread.source_key).compiled.elements_per_invocation == 4
    )


# -- the C launcher (native/launch.c ct_plan_dispatch): the same rule, from the plan ---------------


def _c_launcher(info=None):
    """(prep, plan, launcher) for saxpy_spread: a plan made now (it takes SPREAD_BELOW and the
    device's rule as they are) and its C launcher, on the real device; `info` replaces the
    device's DeviceInfo in the plan only (its rule and limits)."""
    x = np.zeros(8, np.float32)
    gpu(saxpy_spread, 8, 1.0, x, x.copy(), timed=True).join()  # prepared
    prep = session.state.prepared.get(saxpy_spread.source_key)
    device = session.state.device
    made_on = device if info is None else SimpleNamespace(info=info)
    built = plan.make_plan(prep.compiled, prep.physical_wg, made_on)
    launch = plan.native_launcher(built, prep.pipeline, device, prep.generation)
    assert launch is not None  # the C launcher covers this kernel
    return prep, built, launch


@pytest.mark.parametrize("n", [1, THRESHOLD - 1, THRESHOLD, THRESHOLD + 1, 4 * THRESHOLD + 3])
def test_the_c_launcher_spreads_like_the_general_path(monkeypatch, n):
    monkeypatch.setattr(sizing, "SPREAD_BELOW", THRESHOLD)
    prep, built, launch = _c_launcher()
    assert built.spread_below == THRESHOLD and built.width == prep.physical_wg
    seen = _record_dispatches(monkeypatch)
    x, y, want = _saxpy_inputs(n)
    y_general = y.copy()
    gpu(saxpy_spread, n, 0.25, x, y_general, timed=True).join()  # the general path
    with GpuArena().bind(x=x, y=y) as arena:
        job = launch((n, 0.25, x, y))
        assert job is not None  # resident, plain: the C launcher took it
        job.join(download=False)
        arena.sync("y")
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(y_general, want)
    groups = _groups(n, prep.physical_wg)
    wg = prep.compiled.workgroup_size[0]
    assert seen == [(groups, 1, 1)]
    assert launch.__self__.sizes(n, 1, 1) == ((n, -(-n // wg), 1, 1), (groups, 1, 1))


def test_the_c_launcher_takes_the_devices_rule_from_the_plan():
    # an H200's info (profiles/nvidia-h200.json): the plan stores half its resident invocations
    limits = {"max_compute_work_group_count": MAX_GROUPS}
    h200 = SimpleNamespace(type="discrete", vendor_id=4318, device_id=9013, limits=limits)
    prep, built, launch = _c_launcher(h200)
    width = prep.physical_wg
    assert built.spread_below == sizing.spread_below(built, width, h200) == 132 * 1024
    for n in (1, 1 << 16, 132 * 1024 - 1, 132 * 1024, 1 << 20):
        got = launch.__self__.sizes(n, 1, 1)[1]
        assert got == (sizing.grid_stride_groups(built, width, n, h200), 1, 1), n


def test_the_c_launcher_follows_this_devices_rule_and_observing_kernels_never_spread(monkeypatch):
    _, built, launch = _c_launcher()
    info = session.state.device.info
    assert built.spread_below == sizing.spread_below(built, built.width, info)
    if info.type == "cpu":
        assert built.spread_below == 0  # lavapipe: CPU devices never spread
    for n in (1, 4 * built.per_group + 1, built.spread_below - 1, built.spread_below, 1 << 20):
        if n > 0:
            got = launch.__self__.sizes(n, 1, 1)[1]
            assert got == (sizing.grid_stride_groups(built, built.width, n, info), 1, 1), n
    monkeypatch.setattr(sizing, "SPREAD_BELOW", THRESHOLD)
    _, built, _ = _c_launcher()
    codes = native.module().FastLauncher.codes()
    encoded = struct.unpack(codes["SIZING_FORMAT"], plan.native_encoding(built, codes)[2])
    assert encoded[-2:] == (THRESHOLD, built.width)  # (spread_below, width): launch.h LSizing
    observing = built.replace(observes_workgroup=True)  # whole workgroups only
    encoded = struct.unpack(codes["SIZING_FORMAT"], plan.native_encoding(observing, codes)[2])
    assert encoded[-2] == 0
