"""Workgroup width of kernels that do not observe their workgroup, measured: our kernels from
bench/kernels at each CTHREADS_WORKGROUP, each width in its own process (issue 7: choose the
width per device by measurement).

    python bench/wg_sweep.py [--widths 64,128,256,512,1024] [--kernels saxpy,stencil,mandel]
                             [--log2 20,24,28] [--json out.json]

Prints one row per kernel and size: GB/s (memory-bound) or Melem/s (mandel) per width, and
the best width.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def run_width(width: int, kernels: str, lo: int, hi: int) -> list[dict]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, CTHREADS_WORKGROUP=str(width))
        cmd = [sys.executable, "-m", "bench.kernels.run", "--ours-only", "--quick",
               "--kernels", kernels, "--min-log2", str(lo), "--max-log2", str(hi),
               "--json", out.name]  # fmt: skip
        subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        with open(out.name) as f:
            return json.load(f)["rows"]


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="64,128,256,512,1024")
    ap.add_argument("--kernels", default="saxpy,stencil,mandel")
    ap.add_argument("--log2", default="20,24,28")
    ap.add_argument("--json")
    opts = ap.parse_args()
    widths = [int(w) for w in opts.widths.split(",")]
    sizes = sorted(int(v) for v in opts.log2.split(","))
    table: dict[tuple[str, int], dict[int, float]] = {}
    for w in widths:
        for row in run_width(w, opts.kernels, sizes[0], sizes[-1]):
            if row["log2n"] not in sizes:
                continue
            ours = row["ours"]
            rate = ours["TBps"] * 1e3 if row["bytes_per_elem"] else ours["Gelem_s"] * 1e3
            table.setdefault((row["kernel"], row["log2n"]), {})[w] = rate
    print("| kernel | n | " + " | ".join(f"wg {w}" for w in widths) + " | best |")
    print("|---|---|" + "---|" * (len(widths) + 1))
    rows = []
    for (kernel, lg), rates in sorted(table.items()):
        best = max(rates, key=rates.get)
        cells = " | ".join(_num(rates.get(w)) for w in widths)
        print(f"| {kernel} | 2^{lg} | {cells} | {best} |")
        rows.append({"kernel": kernel, "log2n": lg, "rates": rates, "best": best})
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"unit": "GB/s (mandel: Melem/s)", "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
