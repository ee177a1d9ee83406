"""`python -m cthreads.gpu info | compile | cache` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys

KERNELS = """
from cthreads.gpu import Gpu, GlobalIdx

@Gpu
def scale(k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] * k

@Gpu
def bad(x: list[float]) -> None:
    x[0] = "no"
"""


def run(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "cthreads.gpu", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_info_compile_and_cache_clear(tmp_path):
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CTHREADS_VALIDATION", None)
    info = run("info", env=env)
    assert info.returncode == 0, info.stderr
    assert "default device: [0]" in info.stdout and "max_push_constants_size" in info.stdout
    assert str(tmp_path / "cache") in info.stdout

    module = tmp_path / "kernels.py"
    module.write_text(KERNELS)
    out = run(
        "compile",
        str(module),
        "--spv",
        str(tmp_path / "spv"),
        "--spvasm",
        str(tmp_path / "asm"),
        env=env,
    )
    assert out.returncode == 1  # one kernel does not compile
    assert '"name": "scale"' in out.stdout and '"writes": true' in out.stdout
    assert "bad: does not compile" in out.stderr and "kernels.py:11" in out.stderr
    assert (tmp_path / "spv" / "scale.spv").read_bytes()[:4] == (0x07230203).to_bytes(4, "little")
    assert "OpEntryPoint GLCompute" in (tmp_path / "asm" / "scale.spvasm").read_text()

    assert any((tmp_path / "cache").rglob("*.ctk"))
    cleared = run("cache", "clear", env=env)
    assert cleared.returncode == 0 and "removed" in cleared.stdout
    assert not (tmp_path / "cache").exists()
