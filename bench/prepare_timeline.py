"""When each step of a warm `prepare()` starts and ends, per thread (issue 19: what lies between
the device being open and prepare() returning).

    python bench/prepare_timeline.py [--rounds 3] [--cold] [--no-pipeline-file] [--open-first MS]
                                     [--env NAME=VALUE ...]

A first fresh process fills the caches; then each round is a fresh process that imports
cthreads.gpu and bench/prepare_kernels/eight.py and calls `prepare()` with the steps wrapped
(times in ms from prepare()'s call): describing the device (instance + enumeration), opening
it (`runtime.get_device`), each kernel's compile step (cache lookup) and pipeline step, and
saving the pipeline cache file. The native open's phases (`stats()["open_ms"]`) are printed
with the open. Nothing is changed but the timing wrappers. `--no-pipeline-file` deletes our pipeline cache
file before each round (the driver's own disk cache stays warm): what loading it costs the first
pipeline. `--open-first MS`: the device is opened MS ms before prepare() is called (does the
driver finish something in the background after vkCreateDevice?). `--cold`: every round on empty caches (ours and the driver's). `--env` sets a variable in the measured processes (e.g. CTHREADS_COPY_QUEUE=0).
`--workers N`: prepare() compiles and builds on N threads (default: up to 8, one per CPU), to
see whether the driver's builds slow each other down.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, threading, time
import cthreads.gpu as g
from cthreads import runtime
from cthreads.launch import session
from cthreads.runtime.device import Device
sys.path.insert(0, sys.argv[1])
import eight
events = []
t0 = [0.0]

def wrap(owner, name, label=None, named=False):
    # named: the first argument is a kernel, whose name joins the label
    fn = getattr(owner, name)
    def timed(*a, **k):
        s = time.perf_counter()
        out = None
        try:
            out = fn(*a, **k)
            return out
        finally:
            e = time.perf_counter()
            tag = f"{label or name} {a[0].name}" if named else label or name
            # a pipeline: whether the driver found it in our pipeline cache (creation feedback)
            pipe = getattr(out[0], "pipeline", None) if label == "pipeline" and out else None
            if pipe is not None:  # whether our pipeline cache served it; the driver's own time
                hit, driver = getattr(pipe, "cache_hit", "n/a"), getattr(pipe, "build_ms", -1)
                tag += f" (pipeline cache hit: {hit}, in the driver {driver:.2f} ms)"
            events.append((tag, threading.current_thread().name, s, e))
    setattr(owner, name, timed)

wrap(runtime, "default_device_info", "describe")
wrap(runtime, "get_device", "open")
wrap(session, "_compile_one", "compile", named=True)
wrap(session, "_pipeline", "pipeline", named=True)
wrap(Device, "save_pipeline_cache", "save cache")
session.state.describe = runtime.default_device_info
session.state.opener = runtime.get_device
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 0
if workers:  # --workers N: prepare() sizes its thread pools from os.cpu_count()
    from cthreads.launch import preparing
    preparing.os = type("Os", (), {"cpu_count": staticmethod(lambda: workers)})
if len(sys.argv) > 2 and float(sys.argv[2]) >= 0:  # --open-first MS: the device opened, then MS of sleep, before prepare()
    runtime.get_device()
    time.sleep(float(sys.argv[2]) / 1e3)
t0[0] = time.perf_counter()
g.prepare()
end = time.perf_counter()
stats = runtime.get_device().stats()
ms = lambda t: round(1e3 * (t - t0[0]), 2)
print(json.dumps({"prepare_ms": ms(end), "open_phases": stats["open_ms"],
                  "events": [(n, th, ms(s), ms(e)) for n, th, s, e in events]}))
"""


def run(env: dict, open_first: float | None = None, workers: int = 0) -> dict:
    kernels = str(BENCH / "prepare_kernels")
    extra = ["-1" if open_first is None else str(open_first), str(workers)]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kernels, *extra],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--open-first", type=float, metavar="MS")
    ap.add_argument("--no-pipeline-file", action="store_true")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--workers", type=int, default=0, metavar="N")
    args = ap.parse_args()

    def fresh() -> tuple[str, dict]:
        home = tempfile.mkdtemp(prefix="prep_tl-")
        env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
        env["__GL_SHADER_DISK_CACHE_PATH"] = os.path.join(home, "glcache")
        os.makedirs(env["__GL_SHADER_DISK_CACHE_PATH"])  # NVIDIA skips a path that does not exist
        env["MESA_SHADER_CACHE_DIR"] = os.path.join(home, "mesa")
        for name in ("CTHREADS_CACHE_DIR", "CTHREADS_VALIDATION", "CTHREADS_NO_DISK_CACHE"):
            env.pop(name, None)
        env.update(item.split("=", 1) for item in args.env)
        return home, env

    home, env = fresh()
    if not args.cold:
        run(env)  # fills our caches and the driver's
    for r in range(args.rounds):
        if args.cold:
            home, env = fresh()
        if args.no_pipeline_file:
            for path in glob.glob(os.path.join(home, ".cache", "cthreads", "pipelines", "*")):
                os.remove(path)
        res = run(env, args.open_first, args.workers)
        print(f"round {r}: prepare() {res['prepare_ms']:.1f} ms")
        for name, thread, s, e in sorted(res["events"], key=lambda x: x[2]):
            print(f"  {s:7.2f} – {e:7.2f}  ({e - s:6.2f})  {name:10s} {thread}")
        phases = ", ".join(f"{k} {v:.1f}" for k, v in res["open_phases"].items() if v >= 0.05)
        print(f"  native open phases (ms): {phases}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
