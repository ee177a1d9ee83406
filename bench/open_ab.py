"""Where a warm device open spends its time beyond the driver's floor (issue 19): the C floor
asking for each part of what native/device.c asks (bench/c_floor/floor.c --ask), next to our
own open, in fresh processes interleaved round by round, on warm driver caches.

    python bench/open_ab.py [--rounds 8] [--json out.json]

Per round, each a fresh process:
- `floor --ask P` for P = none, all, and all but one part (features, atomicf, extmem, extsem,
  coopmat, bf16, execprops, copyq): vkCreateDevice's time, so `all - (all but X)` is what
  asking for X costs the driver;
- `floor --app cthreads` (the application name we give) and the floor run *inside* a Python
  process (built as a shared library, called through ctypes) with nothing, numpy (also with
  one OpenBLAS thread) or cthreads.gpu imported first: whether the process we run in slows
  vkCreateInstance;
- ours: `runtime.default_device_info()` (instance + enumeration) and `runtime.init()` (the
  device), with the native open's phases: plain, after importing numpy, and with
  CTHREADS_COPY_QUEUE=0.
Prints min / median per row (ms) and writes every sample with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PARTS = ("features", "atomicf", "extmem", "extsem", "coopmat", "bf16", "execprops", "copyq")

OURS = r"""
import json, sys, time
if sys.argv[1:] == ["numpy"]:
    import numpy
t0 = time.perf_counter()
import cthreads.gpu
from cthreads import runtime
t1 = time.perf_counter()
runtime.default_device_info()
t2 = time.perf_counter()
dev = runtime.init()
t3 = time.perf_counter()
s = dev.stats()
print(json.dumps({"describe_ms": 1e3 * (t2 - t1), "open_ms": 1e3 * (t3 - t2),
                  "create_device_ms": s["open_ms"]["create_device"],
                  "open_total_ms": s["open_total_ms"]}))
"""

IN_PYTHON = r"""
import ctypes, importlib, sys
for name in sys.argv[2].split(",") if sys.argv[2] else ():
    importlib.import_module(name)
lib = ctypes.CDLL(sys.argv[1])
argv = (ctypes.c_char_p * 2)(b"floor", None)
sys.stdout.flush()
lib.floor_main(1, argv)
"""


def build(work: str) -> tuple[str, str]:
    srcs = [str(BENCH / "c_floor" / f) for f in ("floor.c", "floor_steps.c")]
    exe, so = os.path.join(work, "floor"), os.path.join(work, "floor.so")
    subprocess.run(["gcc", "-O2", "-std=c11", "-o", exe, *srcs, "-ldl"], check=True)
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-std=c11",
            "-shared",
            "-fPIC",
            "-Dmain=floor_main",
            "-o",
            so,
            *srcs,
            "-ldl",
        ],
        check=True,
    )
    return exe, so


def child(cmd: list[str], env: dict) -> dict:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--json")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="open_ab-")
    exe, so = build(work)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    env.pop("CTHREADS_VALIDATION", None)
    env["CTHREADS_CACHE_DIR"] = os.path.join(work, "ct")
    py = [sys.executable, "-c"]
    runs: dict[str, tuple[list[str], dict]] = {
        "floor plain": ([exe], {}),
        "floor all": ([exe, "--ask", "all"], {}),
        **{
            f"floor all but {p}": ([exe, "--ask", ",".join(q for q in PARTS if q != p)], {})
            for p in PARTS
        },
        "floor --app cthreads": ([exe, "--app", "cthreads"], {}),
        "floor in python, nothing imported": ([*py, IN_PYTHON, so, ""], {}),
        "floor in python, numpy imported": ([*py, IN_PYTHON, so, "numpy"], {}),
        "floor in python, numpy (OPENBLAS_NUM_THREADS=1)": (
            [*py, IN_PYTHON, so, "numpy"],
            {"OPENBLAS_NUM_THREADS": "1"},
        ),
        "floor in python, cthreads.gpu imported": ([*py, IN_PYTHON, so, "cthreads.gpu"], {}),
        "ours": ([*py, OURS], {}),
        "ours, numpy imported first": ([*py, OURS, "numpy"], {}),
        "ours CTHREADS_COPY_QUEUE=0": ([*py, OURS], {"CTHREADS_COPY_QUEUE": "0"}),
    }
    for cmd, extra in runs.values():  # warm the driver's caches once per kind of process
        child(cmd, dict(env, **extra))
    samples: dict[str, list[dict]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, (cmd, extra) in runs.items():
            samples[name].append(child(cmd, dict(env, **extra)))
    print(f"{'ms, min / median over ' + str(args.rounds):58s} instance  device")
    for name, rows in samples.items():
        inst = [r.get("create_instance_ms", r.get("describe_ms")) for r in rows]
        dev = [r["create_device_ms"] for r in rows]
        print(
            f"{name:58s} {min(inst):6.1f} / {statistics.median(inst):5.1f}"
            f"  {min(dev):6.1f} / {statistics.median(dev):5.1f}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(samples, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
