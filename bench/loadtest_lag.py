"""Event-loop lag of examples/service.py under load: `await job` against a blocking `job.join()`.

Runs examples/loadtest.py (which starts the service, sends the requests once with `await job`
in the handler and once with `mode=blocking`) and prints both lags and their ratio. How large
the ratio is depends on how long each kernel runs against the loop's other work: on lavapipe a
tile takes milliseconds of CPU and a blocking join stalls the loop for all of it; on an H200 it
takes microseconds and the two lags come out close. This is a measurement, not a test (the
property is tested in tests/examples/test_example_scripts.py without a clock).

Usage: python bench/loadtest_lag.py [--small] [--requests N] [--concurrency N] [--size N]
                                    [--iters N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

LOADTEST = Path(__file__).resolve().parents[1] / "examples" / "loadtest.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="100 requests, 8 concurrent")
    ap.add_argument("--requests", type=int)
    ap.add_argument("--concurrency", type=int)
    ap.add_argument("--size", type=int, help="tile edge in pixels (loadtest default 64)")
    ap.add_argument("--iters", type=int, help="maximum iterations per pixel (default 1000)")
    ap.add_argument("--json", help="also write the loadtest's numbers and the ratio here")
    opts = ap.parse_args()
    passthrough = ["--small"] if opts.small else []
    for flag in ("requests", "concurrency", "size", "iters"):
        value = getattr(opts, flag)
        if value is not None:
            passthrough += [f"--{flag}", str(value)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lt.json"
        proc = subprocess.run(
            [sys.executable, str(LOADTEST), *passthrough, "--json", str(out)], check=False
        )
        if proc.returncode != 0:
            return proc.returncode
        numbers = json.loads(out.read_text())
    awaited, blocking = numbers["await"], numbers["blocking"]
    ratio = blocking["lag_p50_ms"] / max(awaited["lag_p50_ms"], 1e-6)
    print(f"{'mode':<12}{'lag p50 ms':>12}{'lag p99 ms':>12}{'lag max ms':>12}{'req/s':>10}")
    for label, r in (("await job", awaited), ("job.join()", blocking)):
        print(
            f"{label:<12}{r['lag_p50_ms']:>12.3f}{r['lag_p99_ms']:>12.3f}"
            f"{r['lag_max_ms']:>12.3f}{r['req_per_s']:>10.0f}"
        )
    print(f"blocking / await lag (p50): {ratio:.1f}x")
    if opts.json:
        numbers["lag_p50_ratio"] = ratio
        Path(opts.json).write_text(json.dumps(numbers, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
