"""Issue 6, item 6: the suite runs under the Khronos layer with synchronization validation, and
both are really active.

tests/conftest.py sets VK_LAYER_ENABLES (sync validation within command buffers and across
queue submissions). cthreads cannot be made to race — native/record.c puts a full barrier before
every command — so a small stand-alone Vulkan program (sync_hazard.c, built here with the C
compiler the native extension needs anyway) races on purpose, under the suite's environment and
on the same loader, layer and driver. Core validation inside a cthreads process is covered in
tests/runtime/test_validation.py; the subprocess case is here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SYNC_FLAG = "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
HAZARD = "SYNC-HAZARD-WRITE-AFTER-WRITE"


@pytest.fixture(scope="module")
def racy(tmp_path_factory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("sync") / "sync_hazard"
    src = Path(__file__).with_name("sync_hazard.c")
    proc = subprocess.run(
        [cc, "-O0", "-o", str(exe), str(src), "-lvulkan"],
        check=False,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot build sync_hazard.c (Vulkan headers missing?): {proc.stderr[-500:]}")
    return exe


def run_racy(exe: Path, mode: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [str(exe), mode], check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and "DONE" in proc.stdout, proc.stdout + proc.stderr
    return proc.stdout


def test_suite_enables_synchronization_validation():
    if os.environ.get("CTHREADS_VALIDATION") != "1":
        pytest.skip("validation is off for this run")
    enables = os.environ.get("VK_LAYER_ENABLES", "")
    if SYNC_FLAG not in enables:
        pytest.skip(f"VK_LAYER_ENABLES overridden for this run: {enables!r}")
    assert "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT" in enables


@pytest.mark.parametrize("mode", ["within", "across"])
def test_a_race_is_reported_under_the_suite_environment(racy, mode):
    if SYNC_FLAG not in os.environ.get("VK_LAYER_ENABLES", ""):
        pytest.skip("synchronization validation is not enabled for this run")
    out = run_racy(racy, mode, dict(os.environ))
    assert HAZARD in out, out  # `within`: one command buffer; `across`: two submissions
    assert "DONE" in out


def test_no_report_without_the_race_or_without_the_setting(racy):
    assert HAZARD not in run_racy(racy, "barrier", dict(os.environ))  # the control
    env = {k: v for k, v in os.environ.items() if k != "VK_LAYER_ENABLES"}
    assert "SYNC-HAZARD" not in run_racy(racy, "within", env)  # the setting is what turns it on


INVALID_CALL = textwrap.dedent(
    """
    import json
    from cthreads import runtime
    dev = runtime.get_device()
    pipe = dev.pipeline(runtime.load_shader("saxpy"), 8)  # push range smaller than the shader's
    print(json.dumps(runtime.validation_messages()))
    """
)


def test_an_invalid_call_in_a_fresh_process_is_reported():
    env = dict(os.environ, CTHREADS_VALIDATION="1")
    proc = subprocess.run(
        [sys.executable, "-c", INVALID_CALL],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    messages = json.loads(proc.stdout.strip().splitlines()[-1])
    assert messages and any("push" in m.lower() for m in messages), messages
