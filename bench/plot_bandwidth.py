"""Plot saxpy bandwidth against n: cthreads, torch, the GLSL twin and cthreads-gpu 0.2.1.

    python bench/plot_bandwidth.py KERNELS.json REF.json OUT.png

KERNELS.json comes from `python -m bench.kernels.run --json`, REF.json from
`bench/saxpy_bandwidth.py` run under the reference package, both from the same device run.
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(kernels_path: str, ref_path: str, out: str) -> None:
    with open(kernels_path) as f:
        kernels = json.load(f)
    with open(ref_path) as f:
        ref = json.load(f)
    rows = [r for r in kernels["rows"] if r["kernel"] == "saxpy"]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    series = [
        ("cthreads", "ours", "o-"),
        ("torch y.add_(x, alpha=a)", "torch", "s--"),
        ("GLSL on cthreads runtime", "glsl", "^:"),
        ("cupy ElementwiseKernel", "cupy", "d:"),
    ]
    for label, key, style in series:
        pts = [(r["n"], r[key]["TBps"]) for r in rows if r.get(key)]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.plot(
        [2 ** r["log2n"] for r in ref["rows"]],
        [r["TBps"] for r in ref["rows"]],
        "x-",
        label=ref.get("package", "cthreads-gpu 0.2.1"),
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (float32 elements)")
    ax.set_ylabel("TB/s (12 bytes per element, wall time per launch)")
    ax.set_title(
        f"saxpy, resident data, {kernels.get('meta', {}).get('device', ref.get('device', ''))}"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
