"""Where a fresh process's prepare() time goes, cold (empty caches) and warm (second process):
import, describing the device, opening it, then prepare() of 8 kernels with each kernel's
compile and pipeline-build time (issue 7's prepare targets), and the native device open by
phase (stats()["open_ms"], issue 19; "open_total_ms": the whole native part of the open).

    python bench/prepare_profile.py [--json out.json] [--env NAME=VALUE ...]

--env sets a variable in the measured processes, e.g. CTHREADS_COPY_QUEUE=0 to see what the
copy lane's queue costs vkCreateDevice ("create_device" in "open_phases_ms").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t = [time.perf_counter()]
import cthreads.gpu as g
from cthreads import runtime
t.append(time.perf_counter())
runtime.default_device_info()
t.append(time.perf_counter())
dev = runtime.init()
t.append(time.perf_counter())
opened = dev.stats()
sys.path.insert(0, sys.argv[1])
import eight
t.append(time.perf_counter())
report = g.prepare()
t.append(time.perf_counter())
ms = lambda a, b: round(1e3 * (t[b] - t[a]), 2)
print(json.dumps({
    "import_ms": ms(0, 1), "describe_device_ms": ms(1, 2), "open_device_ms": ms(2, 3),
    "decorate_ms": ms(3, 4), "prepare_ms": ms(4, 5),
    "open_total_ms": round(opened["open_total_ms"], 3),
    "open_phases_ms": {k: round(v, 3) for k, v in opened["open_ms"].items()},
    "compile_ms": [r.get("compile_ms") for r in report.values()],
    "pipeline_ms": [r.get("pipeline_ms") for r in report.values()],
}))
"""


def run(home: str, extra: dict[str, str]) -> dict:
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
    env.pop("CTHREADS_CACHE_DIR", None)
    env.pop("CTHREADS_VALIDATION", None)
    env.update(extra)
    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prepare_kernels")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kernels], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    bad = [e for e in args.env if "=" not in e]
    if bad:
        ap.error(f"--env takes NAME=VALUE, got {bad[0]!r}")
    extra = dict(e.split("=", 1) for e in args.env)
    with tempfile.TemporaryDirectory() as home:
        result = {"cold": run(home, extra), "warm": run(home, extra), "warm2": run(home, extra)}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
