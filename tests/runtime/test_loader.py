"""Machines without Vulkan: imports work, available() is False, errors say what to do.
Device choice: CTHREADS_DEVICE by index and name. Run in subprocesses (fresh loader state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cthreads.errors import VulkanNoDevice
from cthreads.runtime.info import DeviceInfo, choose

PROBE = textwrap.dedent(
    """
    import json, sys
    import cthreads, cthreads.runtime as rt
    out = {"available": rt.available()}
    try:
        rt.device_name()
    except Exception as exc:
        out["error"] = type(exc).__name__
        out["message"] = str(exc)
        out["mro"] = [c.__name__ for c in type(exc).__mro__]
    else:
        out["name"] = rt.device_name()
    out["compiler_loaded"] = any(m.startswith("cthreads.compiler") for m in sys.modules)
    rt.shutdown()
    out["messages"] = rt.validation_messages()
    print(json.dumps(out))
    """
)


def _probe(**env_changes: str) -> dict:
    env = dict(os.environ)
    env.update(env_changes)
    run = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_missing_loader_library():
    out = _probe(CTHREADS_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1")
    assert out["available"] is False
    assert out["error"] == "VulkanLoaderNotFound"
    assert "/nonexistent/libvulkan.so.1" in out["message"]
    assert "mesa-vulkan-drivers" in out["message"] and "libvulkan1" in out["message"]
    assert "GPUNotAvailable" in out["mro"] and "CThreadsGPUError" in out["mro"]


def test_loader_without_drivers():
    out = _probe(VK_DRIVER_FILES="/nonexistent.json", VK_ICD_FILENAMES="/nonexistent.json")
    assert out["available"] is False
    assert out["error"] in ("VulkanNoDevice", "VulkanLoaderNotFound")
    assert "mesa-vulkan-drivers" in out["message"] or "driver" in out["message"]


def test_runtime_import_does_not_load_the_compiler():
    out = _probe()
    assert out["available"] is True and out["name"]
    assert out["compiler_loaded"] is False
    assert out["messages"] == []


def test_device_selector_by_index_and_name():
    out = _probe(CTHREADS_DEVICE="0")
    assert out["available"] and out["name"]
    part = out["name"].split()[0].upper()  # case-insensitive substring
    assert _probe(CTHREADS_DEVICE=part)["name"] == out["name"]


def test_unmatched_device_selector():
    out = _probe(CTHREADS_DEVICE="no-such-gpu-xyz")
    assert out["available"] is False
    assert out["error"] == "VulkanNoDevice"
    assert "no-such-gpu-xyz" in out["message"] and "available: 0:" in out["message"]


def _info(index, name, type_, usable=True):
    return DeviceInfo(
        index=index,
        name=name,
        type=type_,
        vendor_id=0,
        device_id=0,
        api_version="1.3.0",
        driver_version="1",
        driver_name="d",
        usable=usable,
        unusable_reason=None if usable else "Vulkan 1.2 is required",
    )


def test_choice_policy():
    cpu, igpu, dgpu = (
        _info(0, "llvmpipe", "cpu"),
        _info(1, "Intel UHD", "integrated"),
        _info(2, "NVIDIA H200", "discrete"),
    )
    assert choose([cpu, igpu, dgpu], None) is dgpu
    assert choose([cpu, igpu], None) is igpu
    assert choose([cpu, _info(1, "virt", "virtual")], None).type == "virtual"
    assert choose([cpu], None) is cpu
    assert choose([cpu, igpu, dgpu], "0") is cpu
    assert choose([cpu, igpu, dgpu], "h200") is dgpu
    old = _info(3, "Old GPU", "discrete", usable=False)
    assert choose([cpu, old], None) is cpu
    with pytest.raises(VulkanNoDevice, match="Vulkan 1.2"):
        choose([cpu, old], "old")
    with pytest.raises(VulkanNoDevice, match="found no devices"):
        choose([], None)
    with pytest.raises(VulkanNoDevice, match="available: 0: llvmpipe"):
        choose([cpu], "7")
