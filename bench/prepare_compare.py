"""Decoration and prepare() time for 8 kernels, cold (empty caches) and warm (second process),
for whichever `cthreads` is importable — run it under ours and under cthreads-gpu 0.2.1 in the
same session to compare (issue 7).

    python bench/prepare_compare.py [--json out.json]

Each measurement is a fresh subprocess with HOME and XDG_CACHE_HOME pointing at one temporary
directory (empty for the cold run, reused for the warm run), so no earlier cache helps.
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
t0 = time.perf_counter()
import cthreads.gpu as g
t1 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import eight
t2 = time.perf_counter()
g.prepare()
t3 = time.perf_counter()
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "decorate_ms": 1e3 * (t2 - t1), "prepare_ms": 1e3 * (t3 - t2)}))
"""


def run(cache_home: str) -> dict:
    env = dict(os.environ, HOME=cache_home, XDG_CACHE_HOME=os.path.join(cache_home, ".cache"))
    env.pop("CTHREADS_CACHE_DIR", None)
    env.pop("CTHREADS_VALIDATION", None)
    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prepare_kernels")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kernels],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    opts = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import package_label

    with tempfile.TemporaryDirectory() as home:
        report = {"package": package_label(), "cold": run(home), "warm": run(home)}
    for phase in ("cold", "warm"):
        r = report[phase]
        r["decorate_plus_prepare_ms"] = r["decorate_ms"] + r["prepare_ms"]
    print(json.dumps(report, indent=2))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
