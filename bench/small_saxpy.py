"""Small-n saxpy by device time, ours against its GLSL twins (issue 14). Per size, on the same
resident buffers in one process, every variant is launched in turn (interleaved), for R rounds;
each launch is timed with device timestamps and waited for, so launch cost and queueing stay
out of it. Reported: the median per variant, GB/s (12 B per element), and each over `glsl`.

    python bench/small_saxpy.py [--log2 14,16,18,20,22,24] [--reps 300] [--widths 128,256,512]
                                [--shapes auto,vec4,spread,scalar] [--quick] [--json out.json]

Our shapes (cthreads/launch/sizing.py forced through `SPREAD_BELOW`): `auto` what the device
does by default (GPUs: the vector form under the device's rule, `spread_below`; CPU devices: the
scalar form), `vec4` the vector form (CTHREADS_VECTORIZE), one invocation per 4-element block
at every n, `spread` one invocation per element at every n (the vector-form kernel runs such a
dispatch scalar, codegen_vec.py), `scalar` the kernel compiled without the vector form
(CTHREADS_NO_VECTORIZE).
Twins (shaders/bench_saxpy*.comp, same workgroup width): `glsl` one float per invocation,
`glsl4` one vec4 per invocation. Every shape of ours is checked against numpy first (bit-exact).
`--widths` repeats the run per workgroup width (CTHREADS_WORKGROUP, one process each: the width
is fixed when a kernel is prepared) and prints one table over all of them.
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

if __package__ in (None, ""):  # `python bench/small_saxpy.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench.kernels import suite
from bench.kernels.kernels import saxpy
from bench.kernels.run import glsl_dispatch
from cthreads import runtime
from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu
from cthreads.launch import session, sizing

FORCED = {"auto": None, "vec4": 0, "spread": 1 << 32, "scalar": None}
TWINS = (
    "glsl",
    "glsl4",
)  # shaders/bench_saxpy.comp (a float per invocation), bench_saxpy4 (a vec4)


@Gpu
def saxpy_scalar(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]


def _prepared(kernel, vector: bool) -> None:
    """Compile `kernel` in the vector form (CTHREADS_VECTORIZE, for `saxpy`: lavapipe's own
    target keeps the scalar form) or the scalar one (CTHREADS_NO_VECTORIZE, `saxpy_scalar`);
    the knobs are read at compile time."""
    names = ("CTHREADS_VECTORIZE", "CTHREADS_NO_VECTORIZE")
    old = {k: os.environ.pop(k, None) for k in names}
    os.environ[names[0] if vector else names[1]] = "1"
    try:
        x = np.ones(8, np.float32)
        gpu(kernel, 8, suite.A, x, x.copy()).join()
    finally:
        for k, v in old.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v


def _kernel(shape: str):
    """The kernel a shape launches: `auto` the form this device compiles by default."""
    if shape == "auto":
        vector = session.target_from_info(runtime.get_device().info).vector_form
        return saxpy if vector else saxpy_scalar
    return saxpy_scalar if shape == "scalar" else saxpy


def _ours(shape: str, n: int, x, y):
    kernel = _kernel(shape)

    def launch() -> float:
        sizing.SPREAD_BELOW = FORCED[shape]
        job = gpu(
            kernel, n, suite.A, x, y, timed=True
        )  # timed: the general path, sizing.dispatches
        job.join(download=False)
        return job.elapsed_ms

    return launch


def _twin(name: str, n: int, arrays: dict, wg: int):
    dev = runtime.get_device()
    spec = suite.SPECS[0] if name == "glsl" else suite.SAXPY_VEC4
    cmds, keep = glsl_dispatch(spec, n, arrays, wg)

    def launch() -> float:
        v = dev.submit(cmds, keep=keep, timed=True)
        dev.wait(v)
        return dev.elapsed_ms(v)

    return launch


def check(shapes: list[str], n: int) -> dict[str, bool]:
    """One launch of each of our shapes on fresh inputs: bit-equal to numpy's a * x + y?"""
    out = {}
    for shape in shapes:
        arrays = suite.SPECS[0].arrays(n)
        want = np.float32(suite.A) * arrays["x"] + arrays["y"]
        with GpuArena().bind(**arrays) as arena:
            _ours(shape, n, arrays["x"], arrays["y"])()
            arena.sync("y")
        out[shape] = bool(np.array_equal(arrays["y"], want))
    return out


def one_size(n: int, shapes: list[str], reps: int, wg: int) -> dict:
    arrays = suite.SPECS[0].arrays(n)
    x, y = arrays["x"], arrays["y"]
    with GpuArena().bind(**arrays):
        runs = {s: _ours(s, n, x, y) for s in shapes}
        runs.update({t: _twin(t, n, arrays, wg) for t in TWINS})
        for launch in runs.values():  # warm-up: pipelines, caches, clocks
            launch()
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(reps):
            for k, launch in runs.items():
                ms = launch()
                if ms:
                    times[k].append(ms)
    row: dict = {"log2n": n.bit_length() - 1, "n": n, "reps": reps}
    for k, ts in times.items():
        if ts:
            us = statistics.median(ts) * 1e3
            row[k] = {"us": round(us, 3), "GBps": round(12 * n / us / 1e3, 1)}
    base = row.get("glsl", {}).get("us")
    for k in times:
        if base and k in row:
            row[k]["over_glsl"] = round(base / row[k]["us"], 3)
    return row


def _shape_of(n: int) -> str:
    """What `auto` dispatches at `n`: workgroups and invocations per element."""
    prep = session.state.prepared.get(_kernel("auto").source_key)
    sizing.SPREAD_BELOW = None
    info = runtime.get_device().info
    below = sizing.spread_below(prep.plan, prep.physical_wg, info)
    groups = sizing.grid_stride_groups(prep.plan, prep.physical_wg, n, info)
    per = 1 if n < below else prep.compiled.elements_per_invocation
    return f"{groups} x {prep.physical_wg} ({per}/inv; spread below {below})"


def table(rows: list[dict], shapes: list[str]) -> str:
    """The markdown table of `rows` (one per size, or per width and size)."""
    cols = shapes + list(TWINS)
    lines = [
        "| width | n | " + " | ".join(f"{c} GB/s" for c in cols) + " | "
        + " | ".join(f"{s}/glsl" for s in shapes) + " | auto/glsl4 | auto dispatch |",
        "|---" * (len(cols) + len(shapes) + 4) + "|",
    ]  # fmt: skip
    for r in rows:
        rates = " | ".join(str(r.get(c, {}).get("GBps", "–")) for c in cols)
        ratios = " | ".join(f"{r[s]['over_glsl']:.2f}" if s in r else "–" for s in shapes)
        a4 = f"{r['glsl4']['us'] / r['auto']['us']:.2f}" if "auto" in r and "glsl4" in r else "–"
        lines.append(
            f"| {r['width']} | 2^{r['log2n']} | {rates} | {ratios} | {a4} | {r['auto_dispatch']} |"
        )
    return "\n".join(lines)


def per_width(widths: list[int], argv: list[str]) -> tuple[dict, list[dict]]:
    """This script once per width in its own process; (meta of the last, all rows)."""
    meta, rows = {}, []
    for w in widths:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "rows.json"
            env = dict(os.environ, CTHREADS_WORKGROUP=str(w))
            cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--json", str(out)]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            got = json.loads(out.read_text())
        meta = got["meta"]
        rows += got["rows"]
        print(f"width {w}: done, checks {meta['checks']}", flush=True)
    return meta, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", default="14,16,18,20,22,24", help="comma-separated log2 sizes")
    ap.add_argument("--reps", type=int, default=300, help="timed launches per variant and size")
    ap.add_argument("--shapes", default="auto,vec4,spread,scalar")
    ap.add_argument("--widths", default="", help="comma-separated workgroup widths to compare")
    ap.add_argument("--quick", action="store_true", help="sizes up to 2^18, 5 rounds (lavapipe)")
    ap.add_argument("--json")
    opts = ap.parse_args(argv)
    shapes = [s for s in opts.shapes.split(",") if s]
    bad = [s for s in shapes if s not in FORCED]
    if bad:
        ap.error(f"--shapes: unknown {bad}; choose from {', '.join(FORCED)}")
    if opts.widths:
        keep = ["--log2", opts.log2, "--reps", str(opts.reps), "--shapes", opts.shapes]
        meta, rows = per_width(
            [int(w) for w in opts.widths.split(",")], keep + ["--quick"] * opts.quick
        )
        meta["width"] = opts.widths
    else:
        meta, rows = measure(shapes, [int(v) for v in opts.log2.split(",") if v], opts)
    print(f"\n{meta['device']}, median device time of {meta['reps']} launches per variant; "
          f"checks {meta['checks']}")  # fmt: skip
    print(table(rows, shapes))
    if opts.json:
        Path(opts.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0 if all(meta["checks"].values()) else 1


def measure(shapes: list[str], sizes: list[int], opts) -> tuple[dict, list[dict]]:
    reps = opts.reps
    if opts.quick:
        sizes, reps = [s for s in sizes if s <= 18] or [14], min(reps, 5)
    dev = runtime.get_device()
    _prepared(saxpy, vector=True)
    if "scalar" in shapes or not session.target_from_info(dev.info).vector_form:
        _prepared(saxpy_scalar, vector=False)
    checks = check(shapes, (1 << sizes[0]) + 3)
    wg = session.state.prepared.get(saxpy.source_key).physical_wg
    rows = []
    try:
        for lg in sizes:
            rows.append({"width": wg, **one_size(1 << lg, shapes, reps, wg)})
            rows[-1]["auto_dispatch"] = _shape_of(1 << lg)
            print(json.dumps(rows[-1]), flush=True)
    finally:
        sizing.SPREAD_BELOW = None
    return {"device": dev.info.name, "width": wg, "reps": reps, "checks": checks}, rows


if __name__ == "__main__":
    raise SystemExit(main())
