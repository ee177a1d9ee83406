"""SPEC §3: prepare()/compile(), the on-disk cache, failing alone, redefinition, inspection."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cthreads.compiler import cache as kcache
from cthreads.gpu import GlobalIdx, Gpu, GpuCompileError, compile, gpu, prepare
from cthreads.gpu.kernel import unregister


@Gpu
def double(x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] * 2.0


def test_prepare_reports_every_kernel():
    report = prepare()
    entry = report["double"]
    assert entry["name"] == "double"
    assert entry["spirv_bytes"] > 0 and entry["spirv_bytes"] % 4 == 0
    assert isinstance(entry["cache_hit"], bool)
    assert entry["compile_ms"] >= 0 and entry["pipeline_ms"] >= 0
    again = compile()
    assert again["double"]["cache_hit"] is True


def test_bad_kernel_fails_alone():
    @Gpu
    def broken(x: list[float]) -> None:
        i: int = GlobalIdx.x
        assert i >= 0
        x[i] = 1.0

    try:
        report = prepare()
        assert isinstance(report["broken"]["error"], GpuCompileError)
        xs = [1.0, 2.0]
        gpu(double, xs).join()  # the others still compile and run
        assert xs == [2.0, 4.0]
        with pytest.raises(GpuCompileError, match="assert") as info:
            gpu(broken, [0.0])
        assert "test_prepare.py" in str(info.value)
    finally:
        unregister(broken)


def test_a_compiler_bug_in_one_kernel_fails_only_that_kernel(monkeypatch):
    from cthreads.errors import GpuInternalCompilerError
    from cthreads.launch import session

    @Gpu
    def trips_the_compiler(x: list[float]) -> None:
        i: int = GlobalIdx.x
        x[i] = 3.0

    real = session._compile_one

    def compile_one(kernel, *args, **kwargs):
        if kernel is trips_the_compiler:
            raise GpuInternalCompilerError("spirv-val refused the module (simulated)")
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(session, "_compile_one", compile_one)
    try:
        for run in (prepare, compile):
            report = run(force=True) if run is compile else run()
            assert isinstance(report["trips_the_compiler"]["error"], GpuInternalCompilerError)
            assert "error" not in report["double"]
        xs = [1.0, 2.0]
        gpu(double, xs).join()
        assert xs == [2.0, 4.0]
        with pytest.raises(GpuInternalCompilerError, match="simulated"):
            gpu(trips_the_compiler, [0.0])
    finally:
        unregister(trips_the_compiler)


REDEF_SOURCE = """
from cthreads.gpu import Gpu, GlobalIdx

@Gpu
def redef(x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] + STEP
"""


def test_redefined_kernel_runs_its_new_body(tmp_path):
    import importlib.util

    xs = [0.0]
    # The same module (same qualified name) executed twice with a new body each time.
    for step, expected in (("1.0", 1.0), ("10.0", 11.0)):
        path = tmp_path / f"redef_{step.replace('.', '_')}.py"
        path.write_text(REDEF_SOURCE.replace("STEP", step))
        spec = importlib.util.spec_from_file_location("redef_mod", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        gpu(mod.redef, xs).join()
        assert xs == [expected]
    unregister(mod.redef)


def test_force_reprepares_and_still_runs():
    xs = [3.0]
    gpu(double, xs, force=True).join()
    assert xs == [6.0]


def test_inspection_without_launch():
    blob = double.spirv()
    assert blob[:4] == (0x07230203).to_bytes(4, "little")
    text = double.disassemble()
    assert "OpEntryPoint GLCompute" in text
    key = double.cache_key()
    assert len(key) == 32 and int(key, 16) >= 0
    contract = double.contract()
    assert contract["params"] == [{"name": "x", "type": "list[f32]", "reads": True, "writes": True}]


WARM_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from cthreads.compiler import cache
from cthreads.gpu import compile
import kernels_for_cache  # defines 3 kernels
report = compile()
print(json.dumps({{"stats": cache.stats, "hits": [v.get("cache_hit") for v in report.values()]}}))
"""

KERNELS = """
from cthreads.gpu import Gpu, GlobalIdx

@Gpu
def k1(x: list[float]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] + 1.0

@Gpu
def k2(n: int, x: list[int]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] // 3

@Gpu
def k3(a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    y[i] = a * x[i]
"""


def test_second_process_with_warm_cache_compiles_nothing(tmp_path):
    (tmp_path / "kernels_for_cache.py").write_text(KERNELS)
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(tmp_path / "cache"))
    script = WARM_SCRIPT.format(tests=str(tmp_path))
    runs = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["stats"]["compiled"] == 3
    assert runs[1]["stats"]["compiled"] == 0
    assert runs[1]["stats"]["disk_hits"] == 3 and runs[1]["hits"] == [True, True, True]
    # nothing was written next to the sources
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "kernels_for_cache.py"] or all(
        p.name in ("cache", "kernels_for_cache.py", "__pycache__") for p in tmp_path.iterdir()
    )


def test_corrupt_cache_entry_is_a_miss(tmp_path):
    store = kcache.KernelCache(tmp_path)
    compiled = double.compiled()
    store.put("abc", compiled)
    assert kcache.KernelCache(tmp_path).get("abc").spirv == compiled.spirv
    data = (tmp_path / "abc.ctk").read_bytes()
    (tmp_path / "abc.ctk").write_bytes(data[: len(data) // 2])  # a write cut short
    assert kcache.KernelCache(tmp_path).get("abc") is None
    assert not (tmp_path / "abc.ctk").exists()


def test_disk_cache_keeps_at_most_max_entries(tmp_path):
    import os
    import time

    store = kcache.KernelCache(tmp_path, max_entries=3)
    compiled = double.compiled()
    for k in range(5):
        store.put(f"k{k}", compiled)
        os.utime(tmp_path / f"k{k}.ctk", (time.time() - 100 + k, time.time() - 100 + k))
    assert store.trim() == 2
    assert sorted(p.name for p in tmp_path.glob("*.ctk")) == ["k2.ctk", "k3.ctk", "k4.ctk"]
