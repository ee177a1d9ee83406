"""`@Gpu(constants=)`, `@autotune` choices, `pins=` and the tuner (issue 16 items 3-5).

No test depends on which variant wins: the tuned kernels here compute the same result with
every choice; where a choice changes the result (`SCALE`), the test pins it or turns tuning off.
Tuning is proven by the tuner's counters (`tuning.stats`), never by time.
"""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

from cthreads.gpu import (
    DeviceArray,
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuInvalidArgument,
    autotune,
    available,
    gpu,
)
from cthreads.gpu import tuning

needs_device = pytest.mark.skipif(not available(), reason="no Vulkan device")

OFFSET = 100  # a module constant that @Gpu(constants=) overrides for one kernel


@autotune(STEP=[1, 2, 4], workgroup_size=[32, 64], key=["n"])
@Gpu
def bump(n: int, x: list[float], out: list[float]) -> None:
    # every choice computes out[i] += x[i] (STEP / STEP is 1.0): results never say who won
    i: int = GlobalIdx.x
    if i < n:
        out[i] += x[i] * (float(STEP) / STEP)  # noqa: F821 (an autotune choice)


@autotune(SCALE=[2, 3], key=["n"])
@Gpu
def scaled(n: int, out: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = float(SCALE)  # noqa: F821


@Gpu(constants={"OFFSET": 5})
def offset(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = OFFSET


@Gpu
def plain(n: int, out: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        out[i] = 1


def _tunings() -> int:
    return tuning.stats["tunings"]


# ----------------------------------------------------------------------------- constants


@needs_device
def test_constants_are_read_as_compile_time_values_over_module_ones():
    out = [0] * 10
    gpu(offset, 10, out).join()
    assert out == [5] * 10
    assert offset.constants()["OFFSET"] == 5
    assert offset.options["constants"] == {"OFFSET": 5}


def test_constants_enter_the_source_key():
    def make(value):
        @Gpu(constants={"K": value})
        def k(n: int, out: list[int]) -> None:
            i: int = GlobalIdx.x
            if i < n:
                out[i] = K  # noqa: F821

        return k

    assert make(1).source_key != make(2).source_key
    assert make(3).source_key == make(3).source_key


def test_a_constant_shadowing_a_parameter_is_an_error_naming_it():
    with pytest.raises(TypeError, match="`n` is also a parameter"):

        @Gpu(constants={"n": 3})
        def k(n: int, out: list[int]) -> None:
            out[0] = n


@pytest.mark.parametrize("value", ["16", [16], None, 1j])
def test_a_constant_that_is_not_a_number_is_an_error_naming_it(value):
    with pytest.raises(TypeError, match="`TILE` is"):

        @Gpu(constants={"TILE": value})
        def k(n: int, out: list[int]) -> None:
            out[0] = TILE  # noqa: F821


def test_constants_must_be_a_dict():
    with pytest.raises(TypeError, match="takes a dict"):
        Gpu(constants=[("TILE", 16)])(plain._fn)


# --------------------------------------------------------------------- declaring choices


def _decorate(**kwargs):
    def body(n: int, out: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = float(TILE)  # noqa: F821

    return autotune(**kwargs)(Gpu(body))


@pytest.mark.parametrize(
    "kwargs, param, words",
    [
        (dict(TILE=[]), "TILE", "non-empty list"),
        (dict(TILE=8), "TILE", "non-empty list"),
        (dict(TILE=[8, 16, 8]), "TILE", "lists 8 twice"),
        (dict(TILE=[8], UNUSED=[1, 2]), "UNUSED", "never reads `UNUSED`"),
        (dict(TILE=[8], key=["m"]), "key", "names `m`"),
        (dict(TILE=["8"]), "TILE", "not an int, float or bool"),
        (dict(TILE=[8], n=[1, 2]), "n", "is a parameter"),
        (dict(TILE=[8], workgroup_size=[64, 64]), "workgroup_size", "twice"),
        (dict(key=["n"]), "autotune", "declares no choices"),
    ],
)
def test_bad_choices_are_errors_naming_them(kwargs, param, words):
    with pytest.raises(GpuInvalidArgument, match=words) as info:
        _decorate(**kwargs)
    assert info.value.param == param


def test_autotune_goes_above_gpu():
    with pytest.raises(TypeError, match="above @Gpu"):
        autotune(TILE=[8])(lambda: None)


def test_the_tuned_kernel_takes_the_registry_slot_and_inspects_as_its_first_variant():
    from cthreads.gpu.kernel import get_kernel

    assert get_kernel(bump.qualified_name) is bump
    assert bump.choices == {"STEP": (1, 2, 4), "workgroup_size": (32, 64)}
    assert bump.constants()["STEP"] == 1
    assert "STEP" not in plain.constants()


# -------------------------------------------------------------------------------- pins


@needs_device
def test_pins_fix_the_choice_for_that_launch_without_tuning():
    before = _tunings()
    out = [0.0] * 50
    gpu(scaled, 50, out, pins={"SCALE": 3}).join()
    assert out == [3.0] * 50
    scaled[1](50, out, pins={"SCALE": 2}).join()
    assert out == [2.0] * 50
    assert _tunings() == before


@needs_device
@pytest.mark.parametrize(
    "pins, words",
    [
        ({"NOPE": 1}, "`NOPE`"),
        ({"SCALE": 5}, "`SCALE`=5"),
        ({"SCALE": 2.0}, "`SCALE`=2.0"),
        ({"SCALE": True}, "`SCALE`=True"),
        ([("SCALE", 2)], "dict"),
    ],
)
def test_bad_pins_are_errors_naming_pins_and_the_name(pins, words):
    out = [0.0] * 8
    with pytest.raises(GpuInvalidArgument, match=words) as info:
        gpu(scaled, 8, out, pins=pins)
    assert info.value.param == "pins"
    with pytest.raises(GpuInvalidArgument, match=words):
        scaled[1](8, out, pins=pins)
    assert out == [0.0] * 8  # nothing ran


@needs_device
def test_pins_on_a_kernel_without_choices_are_an_error():
    out = [0] * 8
    with pytest.raises(GpuInvalidArgument, match="declares no autotune choices") as info:
        gpu(plain, 8, out, pins={"TILE": 16})
    assert info.value.param == "pins"
    gpu(plain, 8, out, pins={}).join()  # nothing pinned: an ordinary launch
    assert out == [1] * 8


@needs_device
def test_autotune_off_runs_the_first_choices(monkeypatch):
    monkeypatch.setenv("CTHREADS_AUTOTUNE", "0")
    before = _tunings()
    out = [0.0] * 3000
    gpu(scaled, 3000, out).join()
    assert out == [2.0] * 3000  # SCALE's first choice
    assert _tunings() == before


# ----------------------------------------------------------------------- compile(pins=)


def test_compile_pins_one_variant_for_inspection():
    wide = bump.compile(chip="lavapipe", pins={"workgroup_size": 64, "STEP": 2})
    first = bump.compile(chip="lavapipe")
    assert wide.contract["physical_workgroup_size"] == (64, 1, 1)
    assert first.contract["physical_workgroup_size"] == (32, 1, 1)
    assert wide.cache_key != first.cache_key
    three = scaled.compile(chip="portable", pins={"SCALE": 3})
    assert three.spirv != scaled.compile(chip="portable").spirv
    with pytest.raises(GpuInvalidArgument, match="`SCALE`=4") as info:
        scaled.compile(chip="portable", pins={"SCALE": 4})
    assert info.value.param == "pins"
    with pytest.raises(GpuInvalidArgument, match="declares no autotune choices"):
        plain.compile(chip="portable", pins={"SCALE": 2})


# ------------------------------------------------------------------------------ tuning


def _kinds(n: int):
    """(x, out, read back) for each kind of argument a tuned launch takes."""

    def as_list():
        return [1.0] * n, [0.0] * n, lambda out: list(out)

    def as_numpy():
        return np.ones(n, np.float32), np.zeros(n, np.float32), lambda out: out.tolist()

    def as_arena():
        x, out = [1.0] * n, [0.0] * n
        arena = GpuArena().bind(x=x, out=out)

        def read(out):
            arena.sync()
            values = list(out)
            arena.release()
            return values

        return x, out, read

    def as_device_array():
        x = DeviceArray.from_numpy(np.ones(n, np.float32))
        out = DeviceArray(n, "f32")
        return x, out, lambda out: out.numpy().tolist()

    return {"list": as_list, "numpy": as_numpy, "arena": as_arena, "device": as_device_array}


@needs_device
@pytest.mark.parametrize(
    "kind, n", [("list", 100), ("numpy", 200), ("arena", 400), ("device", 800)]
)
def test_the_first_tuned_launch_writes_the_users_data_exactly_once(kind, n):
    # each case a new tuning key (n bucketed to 128, 256, 512, 1024): the launch tunes
    before = _tunings()
    timed_before = tuning.stats["timed_launches"]
    x, out, read = _kinds(n)[kind]()
    gpu(bump, n, x, out).join()
    assert _tunings() == before + 1
    assert tuning.stats["timed_launches"] - timed_before == tuning.REPS * 6  # 6 variants
    assert read(out) == [1.0] * n  # incremented once, by the winner alone
    # the next launch with that key reuses the choice: no timing, one more increment
    x2, out2, read2 = _kinds(n)[kind]()
    gpu(bump, n - 1, x2, out2).join()
    gpu(bump, n - 1, x2, out2).join()
    assert _tunings() == before + 1
    assert read2(out2) == [2.0] * (n - 1) + [0.0]


@needs_device
def test_the_bracket_launch_tunes_with_each_variants_workgroups():
    n = 3 * 1024 + 5  # a new key (4096)
    before = _tunings()
    out = [0.0] * n
    seen = []

    def grid(meta):
        seen.append((meta["STEP"], meta["workgroup_size"]))
        return -(-meta["n"] // meta["workgroup_size"][0])

    bump[grid](n, [1.0] * n, out).join()
    assert _tunings() == before + 1
    assert out == [1.0] * n
    assert {wg for _, wg in seen} == {(32, 1, 1), (64, 1, 1)}
    assert {step for step, _ in seen} == {1, 2, 4}
    choice = bump.tuned()["n=4096"]
    assert choice["STEP"] in (1, 2, 4) and choice["workgroup_size"] in (32, 64)


@needs_device
def test_tuning_is_logged_with_the_time_spent(caplog):
    with caplog.at_level(logging.INFO, logger="cthreads.gpu"):
        gpu(bump, 5000, [1.0] * 5000, [0.0] * 5000).join()  # key n=8192
    lines = [r.getMessage() for r in caplog.records if "autotune" in r.getMessage()]
    assert any("n=8192" in line and "chosen among 6 variants" in line for line in lines)
    assert any(" ms" in line for line in lines)


@needs_device
def test_a_progress_line_on_a_terminal_when_tuning_is_slow(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(tuning, "PROGRESS_AFTER_S", 0.0)  # "slow" from the start
    monkeypatch.setattr("sys.stderr", term)
    gpu(bump, 9000, [1.0] * 9000, [0.0] * 9000).join()  # key n=16384
    text = term.getvalue()
    assert "autotuning bump (n=16384): 6/6 variants" in text
    assert text.endswith("\n")


@needs_device
def test_no_progress_line_when_stderr_is_not_a_terminal(monkeypatch):
    pipe = io.StringIO()
    monkeypatch.setattr(tuning, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr("sys.stderr", pipe)
    gpu(bump, 20000, [1.0] * 20000, [0.0] * 20000).join()  # key n=32768
    assert pipe.getvalue() == ""


def test_sizes_bucket_to_powers_of_two():
    assert [tuning.bucket(v) for v in (0, 1, 2, 3, 1000, 1024, 1025)] == [
        0,
        1,
        2,
        4,
        1024,
        1024,
        2048,
    ]


@needs_device
def test_a_workgroup_choice_is_the_width_a_kernel_that_does_not_observe_it_runs_with():
    from cthreads.gpu.variants import variant_of
    from cthreads.launch import session

    out = [0.0] * 70
    for width in (32, 64):
        gpu(bump, 70, [1.0] * 70, out, pins={"STEP": 1, "workgroup_size": width}).join()
        variant = variant_of(bump, {"STEP": 1, "workgroup_size": width})
        assert session.state.prepared[variant.source_key].physical_wg == width
    assert out == [2.0] * 70


@needs_device
def test_the_unpinned_names_of_a_partly_pinned_launch_take_the_recorded_choice():
    n = 60000  # key n=65536
    gpu(bump, n, [1.0] * n, [0.0] * n).join()
    recorded = bump.tuned()["n=65536"]
    before = _tunings()
    other = 4 if recorded["STEP"] != 4 else 1
    out = [0.0] * n
    gpu(bump, n, [1.0] * n, out, pins={"STEP": other}).join()
    assert _tunings() == before
    assert out == [1.0] * n


@needs_device
def test_a_variant_that_does_not_compile_for_the_device_is_left_out_of_the_race():
    from cthreads.gpu import GpuCompileError, ThreadIdx, shared

    @autotune(SLOTS=[64, 1 << 24], key=["n"])  # 64 MiB of shared memory fits no device
    @Gpu(workgroup_size=64)
    def staged(n: int, out: list[float]) -> None:
        buf = shared(float, SLOTS)  # noqa: F821
        t: int = ThreadIdx.x
        buf[t] = 1.0
        i: int = GlobalIdx.x
        if i < n:
            out[i] = buf[t]

    before = _tunings()
    out = [0.0] * 64
    gpu(staged, 64, out).join()
    assert _tunings() == before + 1
    assert out == [1.0] * 64
    assert staged.tuned()["n=64"] == {"SLOTS": 64}
    with pytest.raises(GpuCompileError):
        gpu(staged, 64, out, pins={"SLOTS": 1 << 24})

    @autotune(SLOTS=[1 << 24, 1 << 25], key=["n"])
    @Gpu(workgroup_size=64)
    def never(n: int, out: list[float]) -> None:
        buf = shared(float, SLOTS)  # noqa: F821
        buf[ThreadIdx.x] = 1.0
        out[0] = buf[0]

    with pytest.raises(GpuCompileError):  # none compiles: the first one's error
        gpu(never, 64, out)


def test_called_as_python_a_kernel_sees_its_constants_and_first_choices():
    # (as Python the kernel runs once, as invocation 0: GlobalIdx.x is 0 on the host)
    out = [0] * 3
    offset(3, out)
    assert out == [5, 0, 0]  # constants= wins over the module's OFFSET = 100
    values = [0.0] * 4
    scaled(4, values)  # the tuned kernel as Python: the first choice (SCALE=2)
    assert values == [2.0, 0.0, 0.0, 0.0]
