"""The launch plan (launch/plan.py, issue 14 item 1): one typed description per prepared kernel,
read by the general path and encoded for the C launcher with the C module's own codes; the C
launcher also serves `grid=` launches, and takes an object of a self-record type as its own
resident record (the plug-in point for device arrays)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuInvalidArgument,
    ThreadIdx,
    gpu,
    i8,
    u64,
)
from cthreads.launch import binding, dispatch, session
from cthreads.launch.gpujob import GpuJob
from cthreads.launch.plan import LaunchPlan, native_encoding
from cthreads.residency import arena as residency
from cthreads.runtime import formats, native


@Gpu
def typed(n: int, k: i8, big: u64, a: float, flag: bool, xs: list[float], us: list[i8]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        xs[i] = xs[i] * a + (1.0 if flag else 0.0) + float(k)
        us[i] = us[i] + i8(1)


@Gpu
def plane(w: int, out: list[int]) -> None:  # does not observe the workgroup: grid-stride loops
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    z: int = GlobalIdx.z
    if x < w:
        out[(z * 3 + y) * w + x] = x + 100 * y + 10000 * z


@Gpu(workgroup_size=(4, 2))
def tiles(w: int, out: list[int]) -> None:  # observes it: whole workgroups of (4, 2)
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    if x < w:
        out[y * w + x] = ThreadIdx.x + 10 * ThreadIdx.y + 100 * y


def _no_general_path(*a, **k):
    raise AssertionError("the general path ran")


def _plan_of(kernel, *args) -> LaunchPlan:
    gpu(kernel, *args).join()
    return session.state.prepared[kernel.source_key].plan


def test_the_plan_is_typed_immutable_and_derived_from_the_contract():
    n = 8
    plan = _plan_of(typed, n, 1, 2**63, 1.0, True, [0.0] * n, np.zeros(n, np.int8))
    assert isinstance(plan, LaunchPlan)
    with pytest.raises(AttributeError):
        plan.n_index = None  # type: ignore[misc]
    kinds = [(p.name, p.kind, p.lo, p.hi) for p in plan.params]
    assert kinds == [
        ("n", "int", -(2**31), 2**31 - 1),
        ("k", "int", -128, 127),
        ("big", "u64", 0, 2**64 - 1),
        ("a", "f32", 0, 0),
        ("flag", "bool", 0, 0),
        ("xs", "list", 0, 0),
        ("us", "list", 0, 0),
    ]
    assert plan.params[5].fmt is formats.BY_TYPE["float", 32] and plan.params[6].fmt.name == "i8"
    assert plan.n_index == 0 and plan.writes_lists and not plan.in_buffer
    assert [p.index for p in plan.lists] == [5, 6] and [p.index for p in plan.scalars] == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_check_scalar_reads_the_range_from_the_plan():
    plan = _plan_of(typed, 4, 1, 1, 1.0, True, [0.0] * 4, np.zeros(4, np.int8))
    k = plan.params[1]
    assert binding.check_scalar(k, 127) == 127
    with pytest.raises(
        GpuInvalidArgument, match=r"`k` expects i8 \(int8\); got 128, outside \[-128, 127\]"
    ):
        binding.check_scalar(k, 128)
    narrowed = k.replace(hi=10)  # the plan, not a second table, decides
    with pytest.raises(GpuInvalidArgument, match="outside \\[-128, 10\\]"):
        binding.check_scalar(narrowed, 11)


def test_the_c_encoding_uses_the_codes_and_layout_the_c_module_exports():
    plan = _plan_of(typed, 4, 1, 1, 1.0, True, [0.0] * 4, np.zeros(4, np.int8))
    codes = native.module().FastLauncher.codes()
    params, fields, sizing = native_encoding(plan, codes)
    rows = list(struct.iter_unpack(codes["PARAM_FORMAT"], params))
    assert [r[0] for r in rows] == [codes[f"P_{p.kind.upper()}"] for p in plan.params]
    assert rows[1][:4] == (codes["P_INT"], 0, -128, 127)  # i8: its range
    assert rows[6][1:] == (1, 0, 0, 1, b"b" + bytes(7))  # list[i8]: written, 1 byte, pack 'b'
    roles = [r[1] for r in struct.iter_unpack(codes["FIELD_FORMAT"], fields)]
    assert roles == [codes[f"R_{f.role.upper()}"] for f in plan.fields]
    assert struct.unpack(codes["SIZING_FORMAT"], sizing)[0] == 0  # n is parameter 0
    shifted = {k: v + 100 if k.startswith("P_") else v for k, v in codes.items()}
    again = struct.iter_unpack(codes["PARAM_FORMAT"], native_encoding(plan, shifted)[0])
    assert [r[0] for r in again] == [r[0] + 100 for r in rows]


@pytest.mark.parametrize(
    ("kernel", "grid", "w"),
    [(plane, (5, 3, 2), 5), (plane, (7, 3), 7), (tiles, (6, 4), 6), (tiles, (8, 2, 1), 8)],
    ids=["grid-stride-3d", "grid-stride-2d", "workgroups-2d", "workgroups-exact"],
)
def test_grid_launches_take_the_c_launcher_and_equal_the_general_path(monkeypatch, kernel, grid, w):
    n = w * 3 * 2
    ref = np.zeros(n, np.int32)
    gpu(kernel, w, ref, grid=grid).join()  # general path (nothing resident)
    out = np.zeros(n, np.int32)
    with GpuArena().bind(out=out) as arena:
        gpu(kernel, w, out).join(download=False)  # builds the C launcher
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        job = gpu(kernel, w, out, grid=grid)
        assert type(job) is GpuJob
        job.join(download=False)
        assert kernel._fast_launch((w, out), dispatch.parse_grid(grid)) is not None
        monkeypatch.undo()
        arena.sync()
    np.testing.assert_array_equal(out, ref)


def test_grid_launches_the_c_launcher_declines_go_to_the_general_path():
    out = np.zeros(16, np.int32)
    limit = session.state.device.info.limits["max_compute_work_group_count"][1]
    with GpuArena().bind(out=out):
        gpu(tiles, 4, out).join(download=False)
        fast = tiles._fast_launch
        assert fast((4, out), (0, 1, 1)) is None  # nothing to run
        assert fast((4, out), (4, 2 * limit + 2, 1)) is None  # too many groups along y
        with pytest.raises(GpuInvalidArgument, match="more than the device's limit") as info:
            gpu(tiles, 4, out, grid=(4, 2 * limit + 2))
        assert info.value.param == "grid"


class _SelfRecord:
    """A stand-in for a device array: it carries the record protocol's fields itself, as the
    slots the C launcher reads and writes."""

    __slots__ = residency.RECORD_FIELDS

    def __init__(self, record: residency.Resident) -> None:
        self.obj = self
        for name in residency.RECORD_FIELDS[1:]:
            setattr(self, name, getattr(record, name))

    def __len__(self) -> int:
        return self.count


def test_an_object_of_a_self_record_type_is_its_own_record(monkeypatch):
    n = 6
    out = np.zeros(n, np.int32)
    with GpuArena().bind(out=out) as arena:
        own = _SelfRecord(arena._slots["out"])
        assert residency.resident_of(own) is None  # not a self-record type yet
        monkeypatch.setattr(residency, "SELF_RECORD_TYPES", [_SelfRecord])
        assert residency.resident_of(own) is own
        plane._fast_launch = None
        session.state.prepared[plane.source_key].fast = None
        gpu(plane, n, out).join(download=False)  # a C launcher that knows the type
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        job = gpu(plane, n, own)
        assert job._writebacks == []  # a self-record stays on the device: nothing at join
        session.state.device.wait(job._value)
        assert own.last_use == own.last_write == job._value
        arena.sync()  # the arena's record shares the buffer the launch wrote
    assert out.tolist() == list(range(n))
    plane._fast_launch = None
    session.state.prepared[plane.source_key].fast = None


def test_queued_fields_are_what_init_sets_first():
    """The C launcher makes jobs from GpuJob.QUEUED_FIELDS: they must be the job's slots,
    what __init__ sets first, in its argument order; what __init__ sets after them (in the
    instance dict) has a class default that means "queued" (no buffers, not done)."""
    device = session.state.device
    writebacks: list = []
    job = GpuJob(device, 5, "k", writebacks, [])
    assert GpuJob.__slots__ == GpuJob.QUEUED_FIELDS
    values = [getattr(job, name) for name in GpuJob.QUEUED_FIELDS]
    assert values[0] is device and values[1:3] == [5, "k"] and values[3] is writebacks
    assert list(vars(job)) == ["_buffers", "_device_done"]
    assert list(GpuJob._buffers) == [] and GpuJob._device_done is False
    assert job._buffers == [] and job._device_done is False


def test_the_c_launcher_takes_the_job_fields_only_as_slots(monkeypatch):
    """The C launcher stores a queued job's QUEUED_FIELDS into their slots at offsets it
    finds once: a job type without those slots gets no C launcher (the general path)."""
    from cthreads.launch import plan as plan_module
    from cthreads.launch.general import plan_of

    out = [0] * 8
    gpu(plane, 8, out).join()
    st = session.state
    prep = st.prepared[plane.source_key]
    built = plan_of(prep, st.device)

    class Loose:  # the same names as plain attributes: no slot to store into
        QUEUED_FIELDS = GpuJob.QUEUED_FIELDS

    monkeypatch.setattr(plan_module, "GpuJob", Loose)
    assert plan_module.native_launcher(built, prep.pipeline, st.device, prep.generation) is None
    monkeypatch.undo()
    launch = plan_module.native_launcher(built, prep.pipeline, st.device, prep.generation)
    assert type(launch.__self__) is native.module().FastLauncher
    out[:] = [0] * 8
    with GpuArena().bind(out=out):  # the C launcher takes resident lists only
        job = launch((8, out))
        assert type(job) is GpuJob and job._kernel_name == "plane" and vars(job) == {}
        job.join()
        assert out == list(range(8))


def test_the_c_launcher_takes_the_record_fields_only_as_slots(monkeypatch):
    """The C launcher reads and writes RECORD_FIELDS at slot offsets it finds once: a
    self-record type carrying them as plain attributes (the instance dict) gets no C launcher,
    and launches of it take the general path, which reads them as attributes."""
    from cthreads.launch import plan as plan_module
    from cthreads.launch.general import plan_of

    class Loose:  # the record protocol's names in the instance dict: no slots
        def __init__(self, record: residency.Resident) -> None:
            self.obj = self
            for name in residency.RECORD_FIELDS[1:]:
                setattr(self, name, getattr(record, name))

    n = 6
    out = np.zeros(n, np.int32)
    gpu(plane, n, out).join()
    st = session.state
    prep = st.prepared[plane.source_key]
    built = plan_of(prep, st.device)
    monkeypatch.setattr(residency, "SELF_RECORD_TYPES", [_SelfRecord])
    assert plan_module.native_launcher(built, prep.pipeline, st.device, prep.generation)
    monkeypatch.setattr(residency, "SELF_RECORD_TYPES", [Loose])
    assert plan_module.native_launcher(built, prep.pipeline, st.device, prep.generation) is None
    monkeypatch.undo()
    # the C launcher numbers the fields in RECORD_FIELDS' order: another order is declined
    monkeypatch.setattr(residency, "RECORD_FIELDS", residency.RECORD_FIELDS[::-1])
    assert plan_module.native_launcher(built, prep.pipeline, st.device, prep.generation) is None
    monkeypatch.undo()
    with GpuArena().bind(out=out):
        launch = plan_module.native_launcher(built, prep.pipeline, st.device, prep.generation)
        job = launch((n, out))  # the arena's records (slots) are read in C
        assert type(job) is GpuJob
        session.state.device.wait(job._value)
        record = residency.resident_of(out)
        assert record.last_use == record.last_write == job._value
        job.join()
    assert out.tolist() == list(range(n))


def test_the_c_launcher_sees_every_change_of_the_registry(monkeypatch):
    """The C launcher reuses the record it found for a list while RECORDS_CHANGES[0] stays the
    same object: a release and a new binding of the same list must each be seen (a stale
    record there would be a released buffer, which sends the launch to the general path)."""
    n = 6
    out = np.zeros(n, np.int32)
    gpu(plane, n, out).join()
    with GpuArena().bind(out=out):
        first = residency.resident_of(out)
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        for _ in range(2):  # the second launch takes the record the first one found
            job = gpu(plane, n, out)
            assert first.last_use == first.last_write == job._value
        monkeypatch.undo()
        changes = residency.RECORDS_CHANGES[0]
    assert residency.RECORDS_CHANGES[0] != changes  # the release changed the registry
    out[:] = 0
    gpu(plane, n, out).join()  # no longer resident: the general path uploads it
    assert out.tolist() == list(range(n))
    out[:] = 0
    with GpuArena().bind(out=out) as second:
        again = residency.resident_of(out)
        assert again is not first
        monkeypatch.setattr(dispatch, "_launch", _no_general_path)
        job = gpu(plane, n, out)  # the new record, not the one found before
        assert again.last_use == job._value and first.last_use < job._value
        monkeypatch.undo()
        second.sync()
    assert out.tolist() == list(range(n))


def test_the_packer_puts_each_value_where_the_field_table_says_and_compiles_nothing(
    monkeypatch,
):
    # (issue 19: the packer was generated source run through exec, ~0.2 ms of a first launch)
    import builtins

    from cthreads.compiler.artifact import PushField
    from cthreads.launch.plan import _make_packer

    fields = (
        PushField("total", None, 0, "I"),
        PushField("total_y", None, 4, "I"),
        PushField("grid_x", None, 8, "I"),
        PushField("addr", 2, 16, "Q"),
        PushField("len", 2, 24, "I"),
        PushField("shape1", 2, 28, "I"),
        PushField("scalar", 0, 32, "f"),
        PushField("scalar", 1, 36, "i"),
        PushField("base_group", None, 40, "I"),
        PushField("total_z", None, 44, "I"),
    )
    layout = struct.Struct("<" + "".join(f.fmt for f in fields))

    def refused(*a, **k):
        raise AssertionError("the packer compiled source")

    with monkeypatch.context() as m:
        m.setattr(builtins, "exec", refused)
        m.setattr(builtins, "compile", refused)
        pack = _make_packer(fields, layout)
    block = pack(7, 3, 5, 11, 13, {2: 0xDEAD}, {2: 99}, {0: 1.5, 1: -4}, {2: (6, 8)})
    assert block == layout.pack(7, 11, 5, 0xDEAD, 99, 8, 1.5, -4, 3, 13)
