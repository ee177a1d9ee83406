"""Compile and prepare timings for the 8 kernels of kernels.py, each in a fresh process.

- `decorate_ms`: importing the module that defines the 8 `@Gpu` kernels (cthreads.gpu already
  imported);
- `frontend_codegen_cold_ms`: lower + codegen of the 8 (no spirv-val, no driver), first time
  in the process; `..._warm_ms`: the same on fresh kernel objects (median of 5);
- `prepare_cold_ms`: `prepare()` with an empty cache directory (our SPIR-V cache and the
  pipeline caches, ours and the driver's); `prepare_warm_ms`: a second process on those caches.
  Device creation is timed apart (`device_ms`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CODEGEN = r"""
import json, statistics, time
import cthreads.gpu
t0 = time.perf_counter()
from bench.kernels import kernels as K
t1 = time.perf_counter()
from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target
from cthreads.gpu.kernel import GpuKernel
t2 = time.perf_counter()
for k in K.ALL:
    compile_kernel(k.lower(), Target(), validate=False)
t3 = time.perf_counter()
warm = []
for _ in range(5):
    fresh = [GpuKernel(k._fn) for k in K.ALL]
    s = time.perf_counter()
    for k in fresh:
        compile_kernel(k.lower(), Target(), validate=False)
    warm.append(time.perf_counter() - s)
print(json.dumps({"decorate_ms": (t1 - t0) * 1e3, "compiler_import_ms": (t2 - t1) * 1e3,
                  "frontend_codegen_cold_ms": (t3 - t2) * 1e3,
                  "frontend_codegen_warm_ms": statistics.median(warm) * 1e3}))
"""

_PREPARE = r"""
import json, time
from bench.kernels import kernels as K
from cthreads import runtime
from cthreads.gpu import prepare
from cthreads.compiler import cache
t0 = time.perf_counter()
runtime.get_device()
t1 = time.perf_counter()
prepare()
t2 = time.perf_counter()
print(json.dumps({"device_ms": (t1 - t0) * 1e3, "prepare_ms": (t2 - t1) * 1e3,
                  "compiled": cache.stats["compiled"]}))
"""


def _run(code: str, env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("CTHREADS_VALIDATION", None)
    result = {k: round(v, 2) for k, v in _run(_CODEGEN, env).items()}
    with tempfile.TemporaryDirectory(prefix="cthreads-bench-cache-") as tmp:
        env["CTHREADS_CACHE_DIR"] = tmp
        env["__GL_SHADER_DISK_CACHE_PATH"] = tmp  # NVIDIA's own shader cache, also cold
        env["MESA_SHADER_CACHE_DIR"] = tmp
        cold = _run(_PREPARE, env)
        warm = _run(_PREPARE, env)
    result.update(
        device_ms=round(cold["device_ms"], 2),
        prepare_cold_ms=round(cold["prepare_ms"], 2),
        prepare_warm_ms=round(warm["prepare_ms"], 2),
        compiled_cold=cold["compiled"],
        compiled_warm=warm["compiled"],
    )
    return result


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
