"""`@Gpu(log=True)` is visible as a user runs a script: no logging configuration at all."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from cthreads.gpu import Gpu, GlobalIdx, gpu, prepare, device_name

    @Gpu(log=True)
    def loud(n: int, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = x[i] + 1.0

    @Gpu
    def quiet(n: int, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = x[i] + 1.0

    CONFIGURE
    if "prepare" in sys.argv:
        prepare()
    x = [1.0, 2.0]
    gpu(loud, 2, x).join()
    gpu(loud, 2, x).join()
    gpu(quiet, 2, x).join()
    assert x == [4.0, 5.0]
    print("device:", device_name())
""")


def run(tmp_path, *args, configure=""):
    script = tmp_path / "logged.py"
    script.write_text(SCRIPT.replace("CONFIGURE", configure))
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    device = proc.stdout.split("device: ", 1)[1].strip()
    return proc, device


def test_log_true_shows_on_stderr_without_logging_config(tmp_path):
    proc, device = run(tmp_path)
    line = f"@Gpu(log=True): kernel `loud` runs on {device}"
    assert proc.stderr.count(line) == 1, proc.stderr  # once, not once per launch
    assert "quiet" not in proc.stderr
    assert "runs on" not in proc.stdout  # stdout stays the program's


def test_log_true_after_prepare(tmp_path):
    proc, device = run(tmp_path, "prepare")  # prepare() builds it, not gpu()
    assert proc.stderr.count(f"kernel `loud` runs on {device}") == 1, proc.stderr


def test_log_true_goes_through_logging_when_configured(tmp_path):
    configure = "import logging; logging.basicConfig(level=logging.INFO, stream=sys.stdout)"
    proc, device = run(tmp_path, configure=configure)
    assert f"INFO:cthreads.gpu:@Gpu(log=True): kernel `loud` runs on {device}" in proc.stdout
    assert "runs on" not in proc.stderr
