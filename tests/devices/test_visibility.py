"""Which devices a process sees (runtime/visibility.py): faked device lists and environment values.

The rules are pure functions over lists of DeviceInfo, so every case here is a made-up machine
(NVIDIA GPUs with CUDA UUIDs, an AMD GPU, lavapipe); the last tests read the real environment
through config and the real lavapipe device.
"""

from __future__ import annotations

import re

import pytest

from cthreads import config, runtime
from cthreads.errors import GpuInvalidArgument, VulkanNoDevice
from cthreads.runtime import lifecycle
from cthreads.runtime.info import DeviceInfo
from cthreads.runtime.visibility import (
    cuda_selection,
    default_device,
    rank_device,
    uuid_matches,
    visible,
)

NV = 0x10DE
H200_UUID = "418fbc3c-8e36-8050-1c09-65fcbba2e1c3"  # what nvidia-smi -L printed for the H200


def _info(index, name, type_="discrete", vendor=NV, uuid="", usable=True):
    return DeviceInfo(
        index=index, name=name, type=type_, vendor_id=vendor, device_id=0, api_version="1.3.0",
        driver_version="1", driver_name="x", uuid=uuid, usable=usable,
        memory_heaps=[{"size": 2**30, "device_local": True}],
    )  # fmt: skip


# Vulkan order: lavapipe first (as the loader may list it), then two H200s, an AMD GPU
LAVAPIPE = _info(0, "llvmpipe (LLVM 15.0.6, 256 bits)", "cpu", 0x10005, "6d657361-3232-2e33")
H0 = _info(1, "NVIDIA H200", uuid=H200_UUID)
H1 = _info(2, "NVIDIA H200", uuid="9a1b2c3d-0000-1111-2222-333344445555")
AMD = _info(3, "AMD Radeon RX 7900", vendor=0x1002, uuid="00000000-aaaa-bbbb-cccc-dddddddddddd")
MACHINE = [LAVAPIPE, H0, H1]


@pytest.fixture
def device():
    """The default runtime device (skips where there is no Vulkan device)."""
    if not runtime.available():
        pytest.skip("no Vulkan device")
    return runtime.get_device()


def names(infos):
    return [i.index for i in infos]


def test_by_default_gpus_in_rank_order_and_software_only_without_a_gpu():
    assert names(visible(MACHINE, None, None)) == [1, 2]
    assert names(visible([LAVAPIPE], None, None)) == [0]
    igpu = _info(4, "Intel UHD", "integrated", 0x8086)
    assert names(visible([igpu, LAVAPIPE, H1], None, None)) == [2, 4]  # discrete first
    broken = _info(5, "NVIDIA old", usable=False)
    assert names(visible([broken, LAVAPIPE], None, None)) == [0]  # unusable: never listed


@pytest.mark.parametrize(
    "value, expected",
    [
        ("0", [1]),
        ("1", [2]),
        ("1,0", [2, 1]),  # CUDA's order
        (" 1 , 0 ", [2, 1]),
        (f"GPU-{H200_UUID}", [1]),
        ("GPU-418fbc3c", [1]),  # a unique prefix, as CUDA accepts
        ("GPU-9a1b,0", [2, 1]),
        ("0,5,1", [1]),  # the list ends at the first ordinal naming no device
        ("0,0,1", [1]),  # ... or at a repeat
        ("0,MIG-1234,1", [1]),  # ... or at a MIG instance (no Vulkan device)
        ("GPU-ffff,0", []),  # a UUID naming nothing ends it too: no NVIDIA GPU left
        ("-1", []),
    ],
)
def test_cuda_visible_devices_reads_as_cuda_does(value, expected):
    assert names(cuda_selection([H0, H1], value)) == expected


def test_cuda_visible_devices_hides_nvidia_only_and_software_comes_back_with_no_gpu():
    assert names(visible(MACHINE, None, "1")) == [2]  # one GPU: lavapipe stays hidden
    assert names(visible(MACHINE + [AMD], None, "1")) == [2, 3]  # not CUDA's to hide
    assert names(visible(MACHINE + [AMD], None, "1,0")) == [2, 1, 3]
    # no NVIDIA GPU visible and no other GPU: the software device is what is left
    assert names(visible(MACHINE, None, "")) == [0]
    assert names(visible(MACHINE, None, "-1")) == [0]


def test_cuda_prefix_matching_several_devices_names_none():
    twins = [_info(1, "A", uuid="abcd0000-0000"), _info(2, "B", uuid="abcd1111-0000")]
    assert cuda_selection(twins, "GPU-abcd") == []
    assert names(cuda_selection(twins, "GPU-abcd1")) == [2]


def test_our_variable_takes_precedence_and_may_ask_for_software_devices():
    assert names(visible(MACHINE, "0", "1")) == [0]  # CUDA_VISIBLE_DEVICES ignored
    assert names(visible(MACHINE, "2,llvmpipe", None)) == [2, 0]  # in its order
    assert names(visible(MACHINE, "h200", None)) == [1, 2]  # a name: every device holding it
    assert names(visible(MACHINE, f"GPU-{H200_UUID}", None)) == [1]
    assert names(visible(MACHINE, "9a1b2c3d", None)) == [2]  # a UUID prefix without GPU-
    assert names(visible(MACHINE, "1,1,NVIDIA", None)) == [1, 2]  # repeats once
    assert visible(MACHINE, "", None) == []  # set but empty: nothing


def test_our_variable_is_strict_about_entries_naming_nothing():
    with pytest.raises(GpuInvalidArgument) as err:
        visible(MACHINE, "1,Radeon", None)
    assert err.value.param == "CTHREADS_VISIBLE_DEVICES" and "'Radeon'" in str(err.value)
    with pytest.raises(GpuInvalidArgument, match="CTHREADS_VISIBLE_DEVICES"):
        visible(MACHINE, "7", None)


def test_default_device_is_the_selector_else_the_first_visible():
    assert default_device(MACHINE, None, None, "1").index == 2
    assert default_device(MACHINE, None, None, None).index == 1
    assert default_device(MACHINE, "llvmpipe", None, "1").index == 0  # CTHREADS_DEVICE wins
    assert default_device(MACHINE, None, "llvmpipe", None).index == 0
    with pytest.raises(VulkanNoDevice, match="CTHREADS_VISIBLE_DEVICES=''"):
        default_device(MACHINE, None, "", None)
    with pytest.raises(VulkanNoDevice, match="no devices"):
        default_device([], None, None, None)


def test_rank_device_names_first_and_round_robins_only_when_nothing_is_named():
    for rank in range(3):  # named: the device a plain process opens, whatever the rank
        for cuda in ("1", f"GPU-{H1.uuid}", "GPU-9a1b", "1,0"):
            assert rank_device(MACHINE, rank, None, cuda) is default_device(
                MACHINE, None, None, cuda
            )
            assert rank_device(MACHINE, rank, None, cuda) is H1
        assert rank_device(MACHINE + [AMD], rank, "0", "1") is LAVAPIPE
    assert [rank_device(MACHINE, r, None, None).index for r in range(3)] == [1, 2, 1]
    assert rank_device([_info(0, "gone", usable=False)], 0, None, "0") is None
    with pytest.raises(VulkanNoDevice, match=re.escape("CUDA_VISIBLE_DEVICES='GPU-ffff'")):
        rank_device(MACHINE + [AMD], 0, None, "GPU-ffff")  # not the AMD GPU instead


def test_uuid_matches_reads_nvidia_smi_forms():
    assert uuid_matches(MACHINE, f"GPU-{H200_UUID.upper()}") == [H0]
    assert uuid_matches(MACHINE, H200_UUID.replace("-", "")) == [H0]
    assert uuid_matches(MACHINE, "NVIDIA") is None  # not written as a UUID: a name


def test_config_reads_both_variables_unset_empty_and_set(monkeypatch):
    monkeypatch.delenv("CTHREADS_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert config.visible_devices() is None and config.cuda_visible_devices() is None
    monkeypatch.setenv("CTHREADS_VISIBLE_DEVICES", "")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-418f,1")
    assert config.visible_devices() == "" and config.cuda_visible_devices() == "GPU-418f,1"


def test_the_real_device_reports_its_uuid_and_the_variables_apply(monkeypatch, device):
    here = lifecycle.list_devices()
    assert all(re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", i.uuid) for i in here)
    assert device.info.uuid and device.info.memory > 0
    monkeypatch.delenv("CTHREADS_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    if device.info.vendor_id == 0x10DE:  # NVIDIA's: hidden by an empty list, as CUDA reads it
        assert device.info not in lifecycle.visible_devices()
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"GPU-{device.info.uuid}")
    # (lavapipe is not NVIDIA's: CUDA_VISIBLE_DEVICES never hides it)
    assert device.info in lifecycle.visible_devices()
    monkeypatch.setenv("CTHREADS_VISIBLE_DEVICES", f"GPU-{device.info.uuid[:8]}")
    assert lifecycle.visible_devices()[0].uuid == device.info.uuid
    monkeypatch.setenv("CTHREADS_VISIBLE_DEVICES", "no such device")
    with pytest.raises(GpuInvalidArgument, match="CTHREADS_VISIBLE_DEVICES"):
        lifecycle.visible_devices()
