"""The warm (or cold) first dispatch of two or more source trees, interleaved in one run (issue
19): "before" and "after" under the same machine load.

    python bench/first_result_ab.py TREE [TREE ...] [--repeats 20] [--cold] [--json out.json]

Per repeat and tree (the trees' order alternating between repeats): fresh caches, one cold
first-dispatch child (bench/first_result_children.DISPATCH, plain mode, as
`first_result.py --warm-only` runs it), then, unless `--cold`, one warm child on the caches it
left. Each tree runs with PYTHONPATH=TREE (its own built extension) and compiled bytecode of
its own. Prints min / first quartile / median per tree of the first `gpu()` + `join()`, the
garbage collections inside it, the main thread's CPU time, the launch and join parts, the
device open and the second launch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from first_result_children import DISPATCH

BENCH = Path(__file__).resolve().parent
KEYS = (
    "first_ms",
    "first_gc_ms",
    "first_thread_cpu_ms",
    "launch_ms",
    "join_ms",
    "open_ms",
    "second_ms",
)
UNSET = (
    "CTHREADS_VALIDATION",
    "CTHREADS_NO_DISK_CACHE",
    "VK_INSTANCE_LAYERS",
    "VK_LOADER_LAYERS_ENABLE",
    "PYTHONDONTWRITEBYTECODE",
    "MESA_SHADER_CACHE_DISABLE",
)


def env_for(tree: str, root: str, work: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(
        CTHREADS_CACHE_DIR=f"{root}/cthreads",
        XDG_CACHE_HOME=f"{root}/xdg",
        MESA_SHADER_CACHE_DIR=f"{root}/mesa",
        PYTHONPATH=tree,
        PYTHONPYCACHEPREFIX=os.path.join(work, "pycache-" + tree.strip("/").replace("/", "_")),
    )
    return env


def run(env: dict[str, str]) -> dict:
    argv = [sys.executable, "-c", DISPATCH, str(BENCH / "prepare_kernels"), "1024", "plain", ""]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def quartiles(values: list[float]) -> tuple[float, float, float]:
    v = sorted(values)
    return v[0], v[len(v) // 4], statistics.median(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--cold", action="store_true", help="time the cold child, no warm one")
    ap.add_argument("--json")
    opts = ap.parse_args()
    trees = [str(Path(t).resolve()) for t in opts.trees]
    samples: dict[str, list[dict]] = {t: [] for t in trees}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as work:
        for tree in trees:  # (compiles each tree's bytecode)
            run(env_for(tree, tempfile.mkdtemp(dir=work), work))
        for r in range(opts.repeats):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                env = env_for(tree, tempfile.mkdtemp(dir=work), work)
                result = run(env)
                if not opts.cold:
                    result = run(env)
                samples[tree].append({k: result.get(k) for k in KEYS})
            load.append(os.getloadavg()[0])
    summary = {
        t: {k: quartiles([s[k] for s in rows]) for k in KEYS if rows[0].get(k) is not None}
        for t, rows in samples.items()
    }
    kind = "cold" if opts.cold else "warm"
    print(f"{kind} first dispatch, {opts.repeats} repeats, ms: min / first quartile / median")
    for tree, row in summary.items():
        print(tree)
        for key, (lo, q1, med) in row.items():
            print(f"  {key:22s} {lo:7.2f} / {q1:7.2f} / {med:7.2f}")
    print("load average (1 min) before and after each repeat:", " ".join(f"{x:.2f}" for x in load))
    if opts.json:
        Path(opts.json).write_text(
            json.dumps(
                {
                    "command": " ".join(sys.argv),
                    "kind": kind,
                    "samples": samples,
                    "summary_min_q1_median": summary,
                    "load1": load,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
