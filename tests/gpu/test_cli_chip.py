"""`python -m cthreads.gpu info --json [PATH]` and `compile --chip` (issue 15 item 3): the device
written as a profile reads back as the same compile target, and a module compiles for a shipped
profile from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cthreads.compiler import profiles
from cthreads.gpu import GlobalIdx, Gpu
from cthreads.launch import session

KERNELS = """
from cthreads.gpu import Gpu, GlobalIdx

@Gpu
def scale(k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] * k
"""


@Gpu
def double(x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] * 2.0


def run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "cthreads.gpu", *args],
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_info_json_round_trips_into_compile(tmp_path):
    printed = run("info", "--json")
    assert printed.returncode == 0, printed.stderr
    profile = json.loads(printed.stdout)
    device = session._current_device().info
    assert profile["profile_version"] == profiles.PROFILE_VERSION
    assert (profile["name"], profile["type"]) == (device.name, device.type)
    assert (profile["vendor_id"], profile["device_id"]) == (device.vendor_id, device.device_id)
    assert profile["api_version"] == device.api_version
    assert profile["driver_version"] == device.driver_version
    assert profile["limits"]["subgroup_size"] == device.limits["subgroup_size"]
    # the driver's count of invocations at once: NVIDIA's SM builtins, 0 where it does not say
    resident = device.limits["resident_invocations"]
    assert profile["limits"]["resident_invocations"] == resident
    assert resident > 0 if device.nvidia else resident >= 0
    assert profile["features"] == device.features and profile["memory_heaps"]

    path = tmp_path / "here.json"
    written = run("info", "--json", str(path))
    assert written.returncode == 0, written.stderr
    assert str(path) in written.stdout and device.name in written.stdout
    assert json.loads(path.read_text()) == profile

    saved, here = double.compile(chip=str(path)), double.compile()
    assert saved.target == here.target == session.state.target
    assert saved.cache_key == here.cache_key and saved.spirv == here.spirv
    assert saved.contract["physical_workgroup_size"] == here.contract["physical_workgroup_size"]
    assert saved.chip == str(path) and here.chip == device.name


def test_info_json_without_a_device_fails_with_a_message(tmp_path):
    env = dict(os.environ, CTHREADS_VULKAN_LIBRARY=str(tmp_path / "no-libvulkan.so.1"))
    out = run("info", "--json", str(tmp_path / "p.json"), env=env)
    assert out.returncode == 1 and "info --json:" in out.stderr
    assert not (tmp_path / "p.json").exists()


def test_compile_for_a_shipped_chip_from_the_command_line(tmp_path):
    module = tmp_path / "kernels.py"
    module.write_text(KERNELS)
    out = run("compile", str(module), "--chip", "nvidia-h200", "--spvasm", str(tmp_path / "asm"))
    assert out.returncode == 0, out.stderr
    assert "scale: " in out.stdout and "bytes of SPIR-V for nvidia-h200" in out.stdout
    contract = json.loads(out.stdout.splitlines()[1])
    assert (
        contract["chip"] == "nvidia-h200" and contract["limits"]["max_push_constants_size"] == 256
    )
    assert "OpEntryPoint GLCompute" in (tmp_path / "asm" / "scale.spvasm").read_text()

    bad = run("compile", str(module), "--chip", "h100")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "--chip: chip: no device profile named 'h100'" in bad.stderr
    assert "lavapipe, nvidia-h200, portable" in bad.stderr
