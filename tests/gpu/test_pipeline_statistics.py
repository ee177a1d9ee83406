"""`cthreads.gpu.pipeline_statistics(kernel)`: the driver's report on a kernel's pipeline.

The statistics' names are the driver's (NVIDIA, RADV, ANV each name their own), so the tests
with a report assert its structure and value types, never names or numbers. lavapipe of Mesa
22.3 (this project's CI) does not list VK_KHR_pipeline_executable_properties: there the tests
check the None answer and the argument errors; the H200 (NVIDIA lists the extension) runs the
report tests.
"""

from __future__ import annotations

import numpy as np
import pytest

import cthreads.gpu as cg
from cthreads import runtime
from cthreads.errors import GpuCompileError, GpuInvalidArgument
from cthreads.gpu import GlobalIdx, Gpu, ThreadIdx, autotune, gpu, shared
from cthreads.gpu.statistics import PipelineExecutable, executables
from cthreads.sync import __sync_threads

pytestmark = pytest.mark.skipif(not runtime.available(), reason="no Vulkan device")


@Gpu
def add_one(x: list[float]) -> None:
    x[GlobalIdx.x] += 1.0


@Gpu(workgroup_size=64)
def reverse_block(x: list[float]) -> None:
    tile = shared(float, 64)
    t: int = ThreadIdx.x
    tile[t] = x[GlobalIdx.x]
    __sync_threads()
    x[GlobalIdx.x] = tile[63 - t]


@autotune(STEP=[1, 2])
@Gpu
def add_step(x: list[float]) -> None:
    x[GlobalIdx.x] += float(STEP)  # noqa: F821 (an autotune name)


@Gpu
def broken(x: list[float]) -> None:
    x[GlobalIdx.x] = undefined_name  # noqa: F821


def _reports() -> bool:
    return bool(cg.device().info.features["pipeline_statistics"])


def test_the_device_says_whether_it_reports():
    assert isinstance(cg.device().info.features["pipeline_statistics"], bool)


def test_without_the_extension_the_answer_is_none():
    if _reports():
        pytest.skip("this device reports pipeline statistics")
    assert cg.pipeline_statistics(add_one) is None
    assert cg.pipeline_statistics(add_step, pins={"STEP": 2}) is None


def test_the_kernel_still_launches_after_a_report():
    cg.pipeline_statistics(add_one)
    x = np.zeros(300, np.float32)
    gpu(add_one, x).join()
    assert np.array_equal(x, np.ones(300, np.float32))


def test_not_a_kernel_is_refused():
    with pytest.raises(GpuInvalidArgument, match="@Gpu kernel") as info:
        cg.pipeline_statistics(lambda x: x)
    assert info.value.param == "kernel"


def test_pins_on_a_plain_kernel_are_refused():
    with pytest.raises(GpuInvalidArgument, match="declares no autotune choices"):
        cg.pipeline_statistics(add_one, pins={"STEP": 1})


def test_a_kernel_that_does_not_compile_raises_its_compile_error():
    with pytest.raises(GpuCompileError, match="undefined_name"):
        cg.pipeline_statistics(broken)


def test_the_native_call_checks_its_spirv_even_without_the_extension():
    dev = runtime.get_device()
    with pytest.raises(GpuInvalidArgument, match="SPIR-V module"):
        dev.pipeline_statistics(b"\0" * 64, 0)
    with pytest.raises(GpuInvalidArgument, match="push_size"):
        dev.pipeline_statistics(add_one.spirv(), 6)


def test_a_native_report_becomes_executables():
    report = [
        {
            "name": "Compute Shader",
            "description": "the compute stage",
            "subgroup_size": 32,
            "statistics": [
                {"name": "Registers", "description": "per invocation", "value": 40},
                {"name": "Spilled", "description": "bytes", "value": 0},
                {"name": "Occupancy", "description": "fraction", "value": 0.5},
                {"name": "Uses shared memory", "description": "", "value": True},
            ],
        }
    ]
    (exe,) = executables(report)
    assert exe.name == "Compute Shader" and exe.subgroup_size == 32
    assert exe["Registers"] == 40 and exe["Occupancy"] == 0.5 and exe["Uses shared memory"]
    assert exe.as_dict() == {
        "Registers": 40,
        "Spilled": 0,
        "Occupancy": 0.5,
        "Uses shared memory": True,
    }
    with pytest.raises(KeyError, match="'Registers', 'Spilled'"):
        exe["registers"]
    assert executables(None) is None


def _check_report(found):
    assert isinstance(found, list) and found, "a pipeline has at least one executable"
    for exe in found:
        assert isinstance(exe, PipelineExecutable)
        assert isinstance(exe.name, str) and exe.name
        assert isinstance(exe.description, str)
        assert isinstance(exe.subgroup_size, int) and exe.subgroup_size >= 0
        for s in exe.statistics:
            assert isinstance(s.name, str) and s.name
            assert isinstance(s.description, str)
            assert type(s.value) in (bool, int, float)
        assert len(exe.as_dict()) <= len(exe.statistics)


@pytest.mark.parametrize("kernel", [add_one, reverse_block], ids=["plain", "shared"])
def test_a_reporting_device_gives_each_executable_its_statistics(kernel):
    if not _reports():
        pytest.skip("this device does not list VK_KHR_pipeline_executable_properties")
    _check_report(cg.pipeline_statistics(kernel))


def test_each_autotune_variant_has_its_report():
    if not _reports():
        pytest.skip("this device does not list VK_KHR_pipeline_executable_properties")
    _check_report(cg.pipeline_statistics(add_step, pins={"STEP": 2}))
