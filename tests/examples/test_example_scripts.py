"""Every script in examples/ runs at its small size, as a user runs it (a subprocess), and checks
its own result against numpy; here we check exit codes, output and the files written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(script: str, *args: str, cwd: Path, env: dict | None = None, timeout: float = 120):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd,
                          env=env or os.environ.copy(), capture_output=True, text=True,
                          timeout=timeout, check=False)
    return proc


def ok(proc) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_saxpy(tmp_path):
    out = ok(run("saxpy.py", "--small", cwd=tmp_path))
    assert "saxpy on Python lists" in out and "saxpy on numpy arrays" in out
    assert out.count("matches numpy") == 2


def test_mandelbrot(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="Pillow is in the test extra: pip install -e '.[test]'")
    out = ok(run("mandelbrot.py", "--small", "-o", "m.png", cwd=tmp_path))
    assert "pixels that differ from numpy float32: 0 of 16000" in out
    with Image.open(tmp_path / "m.png") as img:
        assert img.size == (160, 100) and img.mode == "RGB"
        colors = img.getcolors(maxcolors=100_000)
        assert colors is not None and len(colors) > 10     # a picture, not a flat fill


def test_particles(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="Pillow is in the test extra: pip install -e '.[test]'")
    out = ok(run("particles.py", "--small", "-o", "p.gif", cwd=tmp_path))
    assert "max position difference from numpy float32" in out
    with Image.open(tmp_path / "p.gif") as img:
        assert img.n_frames == 4 and img.size == (256, 256)


def test_service_loadtest(tmp_path):
    pytest.importorskip("aiohttp", reason="aiohttp is in the test extra: pip install -e '.[test]'")
    out = ok(run("loadtest.py", "--small", "--json", "lt.json", cwd=tmp_path, timeout=180))
    assert "throughput" in out and "p99" in out
    numbers = json.loads((tmp_path / "lt.json").read_text())
    for mode in ("await", "blocking"):
        r = numbers[mode]
        assert r["errors"] == 0 and r["served"] == r["requests"] == 100
        assert r["distinct_results"] == 1
    # The loop keeps ticking while kernels run under `await job`; `job.join()` stalls it.
    assert numbers["await"]["lag_p50_ms"] < numbers["blocking"]["lag_p50_ms"] / 2, numbers


def test_failfast_without_a_device(tmp_path):
    env = dict(os.environ, CTHREADS_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1")
    proc = run("failfast.py", cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 69, proc.stdout + proc.stderr
    assert "available(): False" in proc.stdout
    assert "service cannot start: no usable GPU (VulkanLoaderNotFound" in proc.stderr
    assert "/nonexistent/libvulkan.so.1" in proc.stderr and "apt-get install libvulkan1" in proc.stderr


def test_failfast_with_a_device(tmp_path):
    out = ok(run("failfast.py", cwd=tmp_path))
    assert "self-check passed" in out


def test_service_refuses_to_start_without_a_device(tmp_path):
    pytest.importorskip("aiohttp", reason="aiohttp is in the test extra: pip install -e '.[test]'")
    env = dict(os.environ, CTHREADS_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1")
    proc = run("service.py", "--port", "0", cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 69 and "service cannot start: no usable GPU" in proc.stderr
    assert "listening" not in proc.stdout


def test_every_example_is_tested_and_documented():
    source = Path(__file__).read_text()
    docs = (EXAMPLES.parent / "docs" / "examples.md").read_text()
    for script in sorted(EXAMPLES.glob("*.py")):
        assert f'"{script.name}"' in source, script.name
        assert f"`{script.name}`" in docs, script.name
