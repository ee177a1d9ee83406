"""The autotuner's choice on disk: a second process reuses it without timing; `kernel.tuned()`
and `python -m cthreads.gpu cache` show it; `cache clear --autotune` forgets it (issue 16).

Whether a process timed is read from the tuner's counters it prints, never from wall-clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cthreads.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    import json, sys
    from cthreads.gpu import GlobalIdx, Gpu, autotune, gpu
    from cthreads.gpu import tuning

    @autotune(UNROLL=[1, 2], workgroup_size=[32, 64, 128], key=["n"])
    @Gpu
    def twice(n: int, x: list[float], out: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = x[i] * 2.0 * (float(UNROLL) / UNROLL)

    n = int(sys.argv[1])
    out = [0.0] * n
    gpu(twice, n, [float(i) for i in range(n)], out).join()
    assert out == [2.0 * i for i in range(n)], out[:8]
    print(json.dumps({"stats": tuning.stats, "tuned": twice.tuned()}))
    """
)


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.pop("CTHREADS_AUTOTUNE", None)
    env.update(extra)
    return env


def _run(script: Path, n: int, env: dict) -> dict:
    done = subprocess.run(
        [sys.executable, str(script), str(n)], env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cli(*args: str, env: dict) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cthreads.gpu", "cache", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_second_process_reuses_the_recorded_choice_without_timing(tmp_path):
    script = tmp_path / "tuned_program.py"
    script.write_text(PROGRAM)
    env = _env(tmp_path / "cache")

    first = _run(script, 1000, env)
    assert first["stats"]["tunings"] == 1
    assert first["stats"]["timed_launches"] > 0
    choice = first["tuned"]["n=1024"]
    assert choice["UNROLL"] in (1, 2) and choice["workgroup_size"] in (32, 64, 128)

    second = _run(script, 1000, env)  # same bucket: the record answers
    assert second["stats"] == {"tunings": 0, "timed_launches": 0, "disk_hits": 1}
    assert second["tuned"]["n=1024"] == choice

    third = _run(script, 1024, env)  # 1024 is in the same bucket as 1000
    assert third["stats"]["tunings"] == 0

    listing = _cli(env=env)
    assert "autotune choices" in listing
    assert "twice" in listing and "n=1024" in listing

    records = list((tmp_path / "cache" / "autotune").glob("*.json"))
    assert len(records) == 1
    assert json.loads(records[0].read_text())["choices"]["n=1024"]["choice"] == choice

    cleared = _cli("clear", "--autotune", env=env)
    assert "removed 1 autotune record" in cleared
    assert any((tmp_path / "cache").rglob("*.ctk"))  # the kernel cache stays
    again = _run(script, 1000, env)
    assert again["stats"]["tunings"] == 1  # forgotten: tuned anew


def test_autotune_off_neither_times_nor_records(tmp_path):
    script = tmp_path / "tuned_program.py"
    script.write_text(PROGRAM)
    env = _env(tmp_path / "cache", CTHREADS_AUTOTUNE="0")
    result = _run(script, 300, env)
    assert result["stats"]["tunings"] == 0 and result["stats"]["timed_launches"] == 0
    assert not (tmp_path / "cache" / "autotune").exists()


def test_a_corrupt_record_is_tuned_again(tmp_path):
    script = tmp_path / "tuned_program.py"
    script.write_text(PROGRAM)
    env = _env(tmp_path / "cache")
    _run(script, 100, env)
    (record,) = (tmp_path / "cache" / "autotune").glob("*.json")
    record.write_text("{not json")
    result = _run(script, 100, env)
    assert result["stats"]["tunings"] == 1
    assert json.loads(record.read_text())["choices"]["n=128"]
