"""`kernel.compile(chip=...)` (issue 15 item 3): compiling for a device profile without launching,
and without the device. The H200 profile compiles here, where there is no GPU; the contract of
`compile()` is the one a launch on the present device (lavapipe in CI) uses; a profile that lacks
what a kernel needs raises the launch's own located error; a chip that cannot be resolved raises
`GpuInvalidArgument` naming `chip`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from cthreads.compiler import profiles
from cthreads.compiler.spirv import tools
from cthreads.gpu import (
    GlobalIdx,
    Gpu,
    GpuCompileError,
    GpuInvalidArgument,
    ThreadIdx,
    f64,
    gpu,
    shared,
)
from cthreads.launch import session
from cthreads.sync import __sync_threads

ROOT = Path(__file__).resolve().parents[2]


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


# 30 scalars: a 148-byte parameter block, past lavapipe's 128 push-constant bytes, within the
# H200's 256
@Gpu
def many(
    a0: float, a1: float, a2: float, a3: float, a4: float, a5: float, a6: float, a7: float,
    a8: float, a9: float, b0: float, b1: float, b2: float, b3: float, b4: float, b5: float,
    b6: float, b7: float, b8: float, b9: float, c0: float, c1: float, c2: float, c3: float,
    c4: float, c5: float, c6: float, c7: float, c8: float, c9: float, out: list[float],
) -> None:  # fmt: skip
    i: int = GlobalIdx.x
    out[i] = a0 + a9 + b0 + b9 + c0 + c9


@Gpu(workgroup_size=32)
def reverse32(x: list[float]) -> None:
    tile = shared(float, 32)
    t: int = ThreadIdx.x
    tile[t] = x[GlobalIdx.x]
    __sync_threads()
    x[GlobalIdx.x] = tile[31 - t]


@Gpu
def wide(x: list[f64]) -> None:
    i: int = GlobalIdx.x
    d: f64 = x[i] * 2.0
    x[i] = d


F64_LINE = wide.firstlineno + 1  # the `def` line: its parameter is the first use of f64


@Gpu(workgroup_size=64)
def big_tile(x: list[float]) -> None:
    tile = shared(float, 5000)  # 20000 bytes: over Vulkan's guaranteed 16384
    tile[ThreadIdx.x] = x[GlobalIdx.x]
    x[GlobalIdx.x] = tile[ThreadIdx.x]


def test_shipped_profiles_are_package_data_and_load():
    assert {"lavapipe", "nvidia-h200", "portable"} <= set(profiles.shipped_names())
    for name in profiles.shipped_names():
        label, profile, _ = profiles.load(name)
        assert label == name and profile["profile_version"] == 1
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["cthreads"]
    assert "compiler/profiles/*.json" in globs  # shipped in the wheel, not only in the tree


def test_h200_profile_is_the_one_captured_on_the_machine_with_hoppers_vulkan_limits():
    _, profile, target = profiles.load("nvidia-h200")
    assert "provisional" not in profile  # written by `python -m cthreads.gpu info --json` there
    assert (profile["name"], profile["driver_version"]) == ("NVIDIA H200", "580.159.4.0")
    assert profile["limits"]["max_compute_work_group_count"] == [2147483647, 65535, 65535]
    assert (target.max_push_constants_size, target.max_shared_memory, target.subgroup_size) == (
        256,
        49152,
        32,
    )
    assert target.max_workgroup_size == (1024, 1024, 64)
    assert target.float64 and target.int64 and target.int64_atomics and target.atomic_float32_add
    assert target.fused_fma and target.nan_inf_preserve and target.subgroup_extended_types


def test_compile_for_the_h200_here_gives_valid_spirv_and_its_own_layout():
    h200 = many.compile(chip="nvidia-h200")
    lavapipe = many.compile(chip="lavapipe")
    for build in (h200, lavapipe):
        tools.validate(build.spirv)  # spirv-val --target-env vulkan1.2
        assert build.spirv[:4] == (0x07230203).to_bytes(4, "little")
        assert "OpEntryPoint GLCompute" in build.asm
    assert h200.chip == "nvidia-h200" and lavapipe.chip == "lavapipe"
    assert h200.target != lavapipe.target and h200.cache_key != lavapipe.cache_key
    # the parameter block fits the H200's 256 push-constant bytes, not lavapipe's 128
    assert h200.contract["push"]["size"] == lavapipe.contract["push"]["size"] > 128
    assert h200.contract["push"]["in_buffer"] is False
    assert h200.contract["push"]["push_constant_bytes"] == h200.contract["push"]["size"]
    assert lavapipe.contract["push"]["in_buffer"] is True
    assert lavapipe.contract["push"]["push_constant_bytes"] == 8
    assert h200.contract["limits"]["max_compute_work_group_count"] == (2147483647, 65535, 65535)
    assert "many" in repr(h200) and "'nvidia-h200'" in repr(h200) and "push constants" in repr(h200)
    assert "in a buffer" in repr(lavapipe)


def test_compile_without_chip_is_what_a_launch_on_this_device_uses():
    n = 1000
    x, y = [1.0] * n, [2.0] * n
    gpu(saxpy, n, 3.0, x, y).join()
    assert y[0] == 5.0
    session.wait_for_vector_forms()  # (a GPU's first launch runs the scalar form meanwhile)
    prep = session.state.prepared[saxpy.source_key]
    build = saxpy.compile()
    assert build.chip == session.state.device.info.name
    assert build.compiled == prep.compiled  # same SPIR-V, params, push layout, cache key
    cpu = session.state.device.info.type == "cpu"  # lavapipe launches the scalar form
    assert prep.compiled.elements_per_invocation == (1 if cpu else 4)
    assert build.cache_key == prep.info["cache_key"]
    assert build.contract["physical_workgroup_size"] == prep.info["workgroup_size"]
    assert build.contract["physical_workgroup_size"][0] == prep.physical_wg
    push = build.contract["push"]
    assert push["size"] == prep.compiled.push.size
    assert push["push_constant_bytes"] == prep.compiled.push.push_size
    assert [(f["role"], f["offset"]) for f in push["fields"]] == sorted(
        ((f.role, f.offset) for f in prep.compiled.push.fields), key=lambda rf: rf[1]
    )
    params = {p["name"]: p for p in build.contract["params"]}
    assert params["x"]["reads"] and not params["x"]["writes"]
    assert params["y"]["reads"] and params["y"]["writes"]
    assert params["n"]["type"] == "i32" and params["a"]["type"] == "f32"
    assert (
        build.contract["limits"]["max_push_constants_size"]
        == session.state.target.max_push_constants_size
    )


def test_the_vector_form_is_the_gpus_and_cpu_devices_keep_the_scalar_one(monkeypatch):
    monkeypatch.delenv("CTHREADS_NO_VECTORIZE", raising=False)
    monkeypatch.delenv("CTHREADS_VECTORIZE", raising=False)
    h200, lavapipe = saxpy.compile(chip="nvidia-h200"), saxpy.compile(chip="lavapipe")
    assert h200.target.vector_form and not lavapipe.target.vector_form
    assert h200.contract["elements_per_invocation"] == 4  # "discrete" in the profile
    assert lavapipe.contract["elements_per_invocation"] == 1  # "cpu"
    here = saxpy.compile()  # the present device (lavapipe in CI): the vector form if a GPU
    from cthreads import runtime

    assert here.target.vector_form == (runtime.default_device_info().type != "cpu")
    assert here.contract["elements_per_invocation"] == (4 if here.target.vector_form else 1)
    # the same kernel for the same device in the other form is another cache entry
    forced = session.compiled_for(saxpy, lavapipe.target.replace(vector_form=True))
    assert forced.elements_per_invocation == 4 and forced.cache_key != lavapipe.cache_key
    monkeypatch.setenv("CTHREADS_NO_VECTORIZE", "1")  # the user's choice wins over the device's
    scalar = saxpy.compile(chip="nvidia-h200")
    assert scalar.contract["elements_per_invocation"] == 1 and scalar.cache_key != h200.cache_key
    monkeypatch.delenv("CTHREADS_NO_VECTORIZE")
    monkeypatch.setenv("CTHREADS_VECTORIZE", "1")
    vector = saxpy.compile(chip="lavapipe")
    assert vector.contract["elements_per_invocation"] == 4
    assert vector.cache_key not in (lavapipe.cache_key, forced.cache_key, h200.cache_key)


def test_a_kernel_observing_its_workgroup_keeps_it_in_the_contract():
    data = [float(i) for i in range(64)]
    gpu(reverse32, data).join()  # 64 invocations: the list's length
    assert data[:32] == [float(i) for i in range(31, -1, -1)]
    prep = session.state.prepared[reverse32.source_key]
    build = reverse32.compile()
    assert build.contract["observes_workgroup"] is True
    assert build.contract["physical_workgroup_size"] == (32, 1, 1) == prep.info["workgroup_size"]
    assert reverse32.compile("portable").contract["physical_workgroup_size"] == (32, 1, 1)


def test_the_shipped_lavapipe_profile_is_this_machines_device():
    _, profile, target = profiles.load("lavapipe")
    if session.state.device is None:
        session._current_device()
    if session.state.device.info.name != profile["name"]:
        pytest.skip(f"the device here is {session.state.device.info.name}, not {profile['name']}")
    assert target == session.state.target
    assert saxpy.compile("lavapipe").cache_key == saxpy.compile().cache_key


def test_a_profile_without_float64_raises_the_launchs_located_error(monkeypatch):
    with pytest.raises(GpuCompileError) as compiled:
        wide.compile(chip="portable")
    err = compiled.value
    assert "f64 needs the device feature `shaderFloat64`" in str(err)
    assert (err.filename, err.lineno) == (__file__, F64_LINE)

    # a launch on a device with the portable profile's features raises the same error
    _, _, portable = profiles.load("portable")
    session._current_device()
    monkeypatch.setattr(session.state, "target", portable)
    # an earlier prepare() (any test module's) may have built `wide` for the real device
    monkeypatch.delitem(session.state.prepared, wide.source_key, raising=False)
    try:
        with pytest.raises(GpuCompileError) as launched:
            gpu(wide, [1.0] * 4)
    finally:
        session.state.errors.pop(wide.source_key, None)
    assert str(launched.value) == str(err)
    assert (launched.value.lineno, launched.value.col) == (err.lineno, err.col)
    monkeypatch.undo()
    tools.validate(wide.compile("nvidia-h200").spirv)  # the H200 has float64


def test_limits_of_the_profile_are_the_launchs_limits():
    with pytest.raises(GpuCompileError, match="more than the 16384 bytes of workgroup memory"):
        big_tile.compile(chip="portable")
    big_tile.compile(chip="nvidia-h200")  # 49152 bytes there
    with pytest.raises(GpuCompileError, match="exceeds this device's limits"):
        _wg256().compile(chip="portable")  # Vulkan guarantees only 128 invocations
    assert _wg256().compile(chip="nvidia-h200").contract["physical_workgroup_size"] == (256, 1, 1)


def _wg256():
    @Gpu(workgroup_size=256)
    def wg256(x: list[float]) -> None:
        x[GlobalIdx.x] = float(ThreadIdx.x)

    return wg256


def _invalid(chip) -> GpuInvalidArgument:
    with pytest.raises(GpuInvalidArgument) as info:
        saxpy.compile(chip=chip)
    err = info.value
    assert err.param == "chip" and str(err).startswith("chip: ")
    assert "lavapipe, nvidia-h200, portable" in str(err)  # the shipped names
    return err


def test_every_unresolvable_chip_names_chip_and_lists_the_shipped_profiles(tmp_path):
    assert "no device profile named 'h100'" in str(_invalid("h100"))
    assert "no device profile named 42" in str(_invalid(42))
    missing = tmp_path / "nowhere" / "gpu.json"
    assert "cannot read the device profile" in str(_invalid(str(missing)))
    assert "cannot read" in str(_invalid(missing))  # a Path too
    (tmp_path / "broken.json").write_text("{ not json")
    assert "is not valid JSON" in str(_invalid(tmp_path / "broken.json"))
    (tmp_path / "list.json").write_text("[1, 2]")
    assert "is not a JSON object" in str(_invalid(tmp_path / "list.json"))

    good = json.loads((Path(profiles.__file__).parent / "profiles" / "lavapipe.json").read_text())

    def variant(name, **changes):
        data = json.loads(json.dumps(good))
        for key, value in changes.items():
            section, _, field = key.partition("__")
            if field:
                data[section][field] = value
            elif value is None:
                data.pop(section)
            else:
                data[section] = value
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        return path

    assert "no valid `profile_version`" in str(_invalid(variant("nover", profile_version=None)))
    future = str(_invalid(variant("future", profile_version=99)))
    assert "profile_version 99" in future and "reads up to 1" in future
    assert "no `limits` object" in str(_invalid(variant("nolimits", limits=None)))
    assert "no `features` object" in str(_invalid(variant("nofeat", features=[1])))
    bad_limit = str(_invalid(variant("badlimit", limits__max_push_constants_size="256")))
    assert "limits.max_push_constants_size must be a non-negative integer" in bad_limit
    bad_wg = str(_invalid(variant("badwg", limits__max_compute_work_group_size=[1024, 0])))
    assert "limits.max_compute_work_group_size must be three positive integers" in bad_wg
    bad_feature = str(_invalid(variant("badfeat", features__shader_float64="yes")))
    assert "features.shader_float64 must be true or false" in bad_feature
    assert "malformed" in str(
        _invalid({"profile_version": 1, "limits": {}, "features": {"shader_int64": 1}})
    )


def test_a_profile_mapping_is_accepted():
    _, lavapipe, _ = profiles.load("lavapipe")
    build = many.compile(
        chip=dict(lavapipe, limits=dict(lavapipe["limits"], max_push_constants_size=256))
    )
    assert build.chip == lavapipe["name"] and build.contract["push"]["in_buffer"] is False


NO_DEVICE = """
from cthreads.compiler.spirv import tools
from cthreads.gpu import GlobalIdx, Gpu
from cthreads.gpu import available

@Gpu
def scale(k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] * k

assert not available()
build = scale.compile()
tools.validate(build.spirv)
print(build.chip, build.contract["physical_workgroup_size"][0])
h200 = scale.compile("nvidia-h200")
tools.validate(h200.spirv)
print(h200.chip, h200.contract["physical_workgroup_size"][0])
"""


def test_without_vulkan_compile_uses_the_portable_baseline_and_profiles_still_work(tmp_path):
    env = dict(os.environ, CTHREADS_VULKAN_LIBRARY=str(tmp_path / "no-libvulkan.so.1"))
    script = tmp_path / "nodevice.py"
    script.write_text(textwrap.dedent(NO_DEVICE))
    out = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["portable 128", "nvidia-h200 256"]
