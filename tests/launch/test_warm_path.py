"""Issue 19: a warm first launch (the kernel in the disk cache) in a fresh process loads what
it needs and nothing of the compiler proper: no `compiler.ir`, no frontend lowering or
constants walk, no json/hashlib (the cache reads marshal, digests are compiler/cache.py's
SHA-512, whose module `random` loads, so no `_sha256` either),
and `prepare()` loads no concurrent.futures (nor the logging it brings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

KERNELS = """
from cthreads.gpu import Gpu, GlobalIdx
import warm_cfg

SCALE = 2.0

@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i] * SCALE + warm_cfg.OFFSET
"""

CFG = "OFFSET = 0.5\n"

PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import cthreads.gpu as g
from cthreads import runtime
from cthreads.launch import preload
imported = set(sys.modules)
runtime.init()
preload.wait()
opened = sorted(set(sys.modules) - imported)  # what the device open loaded (and its thread)
before = set(sys.modules)
import warm_kernels
decorated = set(sys.modules)
x, y = [1.0, 2.0, 3.0], [1.0, 1.0, 1.0]
g.gpu(warm_kernels.saxpy, 3, 2.0, x, y).join()
launched = sorted(set(sys.modules) - decorated)  # what the launch itself loaded
from cthreads.compiler import cache
new = sorted(set(sys.modules) - before)
if sys.argv[2] == "prepare":
    g.prepare()
    new = sorted(set(sys.modules) - before)
print(json.dumps({"y": y, "new": new, "launched": launched, "opened": opened,
                  "stats": cache.stats}))
"""

# what a warm first launch may load of the compiler: these three modules for the key and the
# cache entry (each module more is ~0.15 ms on lavapipe), after what decorating loaded; the
# device open imports them on its thread (launch/preload.py), so the launch itself loads none
LAUNCH_MAY_LOAD = {
    "cthreads.compiler.artifact",
    "cthreads.compiler.cache",
    "cthreads.compiler.target",
}
WARM_MAY_LOAD = {
    "cthreads.compiler",
    "cthreads.compiler.frontend",
    "cthreads.compiler.frontend.signature",  # decorating
    "cthreads.compiler.ir_types",
    *LAUNCH_MAY_LOAD,
}
NEVER_WARM = ("json", "hashlib", "_hashlib", "_sha256", "concurrent.futures", "logging", "textwrap")


def _run(tmp_path, mode: str) -> dict:
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_warm_first_launch_loads_no_ir_no_frontend_lowering(tmp_path):
    (tmp_path / "warm_kernels.py").write_text(KERNELS)
    (tmp_path / "warm_cfg.py").write_text(CFG)
    cold = _run(tmp_path, "launch")
    assert cold["stats"]["compiled"] == 1
    # (a cold process imports the compiler while the device opens, before `before` is taken:
    # launch/preload.py; test_a_cold_process_imports_the_compiler_while_the_device_opens)
    assert cold["y"] == [2.0 * v + 1.0 * 2.0 + 0.5 for v in (1.0, 2.0, 3.0)]
    for mode in ("launch", "prepare"):
        warm = _run(tmp_path, mode)
        assert warm["stats"]["compiled"] == 0 and warm["stats"]["disk_hits"] == 1, warm["stats"]
        assert warm["y"] == cold["y"]
        ours = {m for m in warm["new"] if m.startswith("cthreads.compiler")}
        assert ours <= WARM_MAY_LOAD, sorted(ours - WARM_MAY_LOAD)
        by_launch = {m for m in warm["launched"] if m.startswith("cthreads.compiler")}
        assert not by_launch, sorted(by_launch)  # (the open's thread imported them)
        at_open = {m for m in warm["opened"] if m.startswith("cthreads.compiler")}
        assert LAUNCH_MAY_LOAD <= at_open <= WARM_MAY_LOAD, sorted(at_open)
        loaded = [m for m in warm["new"] + warm["opened"] if m in NEVER_WARM]
        assert not loaded, loaded
        interop = [m for m in warm["new"] if m.startswith("cthreads.interop")]
        assert not interop, interop  # lists only: nothing can be a CUDA object


def test_a_changed_module_constant_is_a_miss(tmp_path):
    # the key is made without the syntax tree, yet a module attribute the body reads
    # (warm_cfg.OFFSET) is part of it: a new value compiles anew and is used
    (tmp_path / "warm_kernels.py").write_text(KERNELS)
    (tmp_path / "warm_cfg.py").write_text(CFG)
    first = _run(tmp_path, "launch")
    (tmp_path / "warm_cfg.py").write_text("OFFSET = 4.25\n")  # (another size: no stale bytecode)
    second = _run(tmp_path, "launch")
    assert second["stats"]["compiled"] == 1
    assert [b - a for a, b in zip(first["y"], second["y"])] == [3.75, 3.75, 3.75]


PREPARE_FRESH = """
import json, sys
sys.path.insert(0, sys.argv[1])
import cthreads.gpu as g
from cthreads.compiler import cache
from cthreads.launch import session
import warm_kernels

@g.Gpu
def broken(x: list[float]) -> None:
    i: int = g.GlobalIdx.x
    assert i >= 0
    x[i] = 1.0

assert session.state.device is None  # prepare() opens it (on its own thread)
report = g.prepare()
x, y = [1.0, 2.0, 3.0], [1.0, 1.0, 1.0]
g.gpu(warm_kernels.saxpy, 3, 2.0, x, y).join()
print(json.dumps({"y": y, "stats": cache.stats, "names": sorted(report),
                  "errors": sorted(k for k, v in report.items() if "error" in v),
                  "hits": {k: v.get("cache_hit") for k, v in report.items()}}))
"""


def test_prepare_in_a_fresh_process_builds_every_kernel_and_one_bad_one_fails_alone(tmp_path):
    (tmp_path / "warm_kernels.py").write_text(KERNELS)
    (tmp_path / "warm_cfg.py").write_text(CFG)
    runs = []
    for _ in range(2):  # cold, then warm on the cache the first left
        env = dict(os.environ, CTHREADS_CACHE_DIR=str(tmp_path / "cache"))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
        out = subprocess.run(
            [sys.executable, "-c", PREPARE_FRESH, str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for run in runs:
        assert run["names"] == ["broken", "saxpy"] and run["errors"] == ["broken"]
        assert run["y"] == [2.0 * v + 1.0 * 2.0 + 0.5 for v in (1.0, 2.0, 3.0)]
    assert runs[0]["hits"]["saxpy"] is False and runs[1]["hits"]["saxpy"] is True
    assert runs[1]["stats"]["compiled"] == 0 and runs[1]["stats"]["disk_hits"] == 1


# Issue 19: a cold process (empty kernel cache) imports the compiler on a thread while the
# device opens (launch/preload.py); fork() waits for that import, so a child never inherits
# it half done; a process with a warm cache starts no such import, and collects the young
# generations on that thread instead (not in its first launch).
PRELOAD = """
import gc, json, os, sys, threading
young = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 1
                    and young.append(threading.current_thread().name))
from cthreads import runtime
from cthreads.launch import preload
runtime.init()
preload._join()  # (imports and collection)
pid = os.fork()
if pid == 0:
    from cthreads.compiler.compile import compile_kernel  # (would hang on a half-done import)
    os._exit(0 if callable(compile_kernel) else 3)
_, status = os.waitpid(pid, 0)
print(json.dumps({"young": "cthreads-preload" in young, "child": os.waitstatus_to_exitcode(status),
                  "loaded": "cthreads.compiler.compile" in sys.modules}))
"""


def _preload_run(cache_dir) -> dict:
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(cache_dir))
    env.pop("CTHREADS_NO_DISK_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", PRELOAD], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_cold_process_imports_the_compiler_while_the_device_opens(tmp_path):
    cold = _preload_run(tmp_path / "empty")
    cold.pop("young")  # (its import may or may not collect on the thread by itself)
    assert cold == {"child": 0, "loaded": True}  # joined before the fork
    (tmp_path / "warm" / "spirv").mkdir(parents=True)
    (tmp_path / "warm" / "spirv" / "entry").write_bytes(b"")
    warm = _preload_run(tmp_path / "warm")
    assert warm == {"young": True, "child": 0, "loaded": False}
