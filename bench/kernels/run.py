"""Kernel benchmark: our codegen vs the same kernels hand-written in GLSL (through our runtime),
torch and cupy, plus compile/prepare timings. One call on lavapipe or on a GPU machine:

    python -m bench.kernels.run --json out.json --md out.md [--max-log2 28] [--quick]
                                [--compare-scalar] [--kernels saxpy,fma8]

Per kernel and size n: the lists are bound in a GpuArena; K launches are queued and one
`join(download=False)` ends them; the wall time per launch is reported (what users see), and
device time where the device has timestamps. The GLSL twin (`shaders/bench_*.comp`) runs on the
same device buffers with the same workgroup width, K submits then one wait. torch and cupy are
timed with CUDA events. `--compare-scalar` re-measures ours with CTHREADS_NO_VECTORIZE=1 in a
subprocess (the scalar form) and adds it as a column.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `python bench/kernels/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "bench.kernels"

import numpy as np

from cthreads import runtime
from cthreads.gpu import GpuArena, gpu, prepare
from cthreads.residency.arena import lookup

from . import compile_times, suite

CPU_CAP_LOG2 = {"mandel": 20}  # on CPU devices (lavapipe): keep the run short


def _loop(launch, finish, budget: float, kmax: int) -> tuple[float, int, object]:
    """Per-launch wall seconds over K queued launches (K sized to fill `budget`)."""
    finish(launch())  # warm-up (pipeline, caches, clocks)
    t0 = time.perf_counter()
    finish(launch())
    one = max(time.perf_counter() - t0, 1e-7)
    k = int(min(max(budget / one, 3), kmax))
    t0 = time.perf_counter()
    last = None
    for _ in range(k):
        last = launch()
    finish(last)
    return (time.perf_counter() - t0) / k, k, last


def _rate(spec: suite.Spec, n: int, seconds: float | None) -> dict:
    if not seconds:
        return {}
    out = {"us": round(seconds * 1e6, 3), "Gelem_s": round(n / seconds / 1e9, 3)}
    if spec.bytes_per_elem:
        out["TBps"] = round(spec.bytes_per_elem * n / seconds / 1e12, 4)
    return out


def measure_ours(spec: suite.Spec, n: int, budget: float, kmax: int) -> dict:
    arrays = spec.arrays(n)
    with GpuArena().bind(**arrays):
        args = spec.args(n, arrays)
        wall, k, job = _loop(
            lambda: gpu(spec.kernel, *args), lambda j: j.join(download=False), budget, kmax
        )
        dev_ms = job.elapsed_ms
    res = {"k": k, **_rate(spec, n, wall)}
    if dev_ms:
        res["device"] = _rate(spec, n, dev_ms * 1e-3)
    return res


def glsl_dispatch(spec: suite.Spec, n: int, arrays: dict, wg: int) -> tuple[list, tuple]:
    """(commands, keep) of one dispatch of the GLSL twin over `arrays` (bound in an arena):
    `wg` wide, enough workgroups for one step per invocation, at most the device's limit."""
    dev = runtime.get_device()
    push = spec.push(n, {name: lookup(a).buffer.address for name, a in arrays.items()})
    pipe = dev.pipeline(runtime.load_shader(f"bench_{spec.glsl}"), len(push), {0: wg})
    max_groups = int(dev.info.limits["max_compute_work_group_count"][0])
    groups = min(-(-n // (wg * spec.elems_per_invocation_glsl)), max_groups)
    keep = (*(lookup(a).buffer for a in arrays.values()), pipe)
    return [("dispatch", pipe, push, (groups, 1, 1))], keep


def measure_glsl(spec: suite.Spec, n: int, budget: float, kmax: int, wg: int) -> dict:
    dev = runtime.get_device()
    arrays = spec.arrays(n)
    with GpuArena().bind(**arrays):
        cmds, keep = glsl_dispatch(spec, n, arrays, wg)
        wall, k, _ = _loop(lambda: dev.submit(cmds, keep=keep), dev.wait, budget, kmax)
        v = dev.submit(cmds, keep=keep, timed=True)
        dev.wait(v)
        dev_ms = dev.elapsed_ms(v)
    res = {"k": k, **_rate(spec, n, wall)}
    if dev_ms:
        res["device"] = _rate(spec, n, dev_ms * 1e-3)
    return res


def check(spec: suite.Spec, n: int, wg: int) -> dict:
    """One launch of ours and of the GLSL twin from the same inputs: do the outputs agree?"""
    outs = []
    dev = runtime.get_device()
    for which in ("ours", "glsl"):
        arrays = spec.arrays(n)
        with GpuArena().bind(**arrays) as arena:
            if which == "ours":
                gpu(spec.kernel, *spec.args(n, arrays)).join(download=False)
            else:
                cmds, keep = glsl_dispatch(spec, n, arrays, wg)
                dev.wait(dev.submit(cmds, keep=keep))
            arena.sync(spec.out)
            outs.append(arrays[spec.out].copy())
    a, b = outs
    if a.dtype.kind == "f":
        diff = float(np.max(np.abs(a.astype(np.float64) - b)))
        return {"equal": bool(np.array_equal(a, b)), "max_abs_diff": diff}
    return {"equal": bool(np.array_equal(a, b)), "mismatches": int(np.sum(a != b))}


def _cuda_time(fn, budget: float, kmax: int, sync, event_cls) -> tuple[float, int]:
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    k = int(min(max(budget / one, 3), kmax))
    start, end = event_cls(), event_cls()
    start.record()
    for _ in range(k):
        fn()
    end.record()
    end.synchronize()
    return end_minus_start(start, end) / k, k


def end_minus_start(start, end) -> float:
    try:  # torch
        return start.elapsed_time(end) * 1e-3
    except AttributeError:  # cupy
        import cupy

        return cupy.cuda.get_elapsed_time(start, end) * 1e-3


def measure_torch(spec, n, budget, kmax) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    made = suite.torch_fn(spec.name, n, torch)
    out = {}
    if made is not None:
        fn, what = made
        sec, k = _cuda_time(
            fn, budget, kmax, torch.cuda.synchronize, lambda: torch.cuda.Event(enable_timing=True)
        )
        out = {"op": what, "k": k, **_rate(spec, n, sec)}
    copy = suite.torch_copy(n, torch)
    sec, _ = _cuda_time(
        copy, budget, kmax, torch.cuda.synchronize, lambda: torch.cuda.Event(enable_timing=True)
    )
    out["copy_TBps"] = round(8 * n / sec / 1e12, 4)
    del made, copy
    torch.cuda.empty_cache()
    return out


def measure_cupy(spec, n, budget, kmax) -> dict | None:
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no cupy, or no CUDA device
        return None
    fn = suite.cupy_fn(spec.name, n, cp)
    sec, k = _cuda_time(fn, budget, kmax, cp.cuda.Device().synchronize, cp.cuda.Event)
    del fn
    cp.get_default_memory_pool().free_all_blocks()
    return {"k": k, **_rate(spec, n, sec)}


def _ratio(a: dict | None, b: dict | None, key: str = "Gelem_s") -> float | None:
    if not a or not b or not a.get(key) or not b.get(key):
        return None
    return round(a[key] / b[key], 3)


def markdown(result: dict) -> str:
    meta = result["meta"]
    lines = [
        f"# Kernel benchmark: {meta['device']} ({meta['date']})",
        "",
        (
            f"Command: `{meta['command']}`. Wall time per launch over K queued launches, as GB/s of "
            "bytes read + written (compute-bound mandel: Melem/s). ours scalar = CTHREADS_NO_VECTORIZE=1;"
            " glsl = the same kernel hand-written in GLSL on our runtime; glsl alt = saxpy with one vec4 "
            "per invocation, mandel with `precise` values (no fma contraction: the same results as "
            "ours); copy roof = torch device-to-device copy."
        ),
        "",
        "| kernel | n | ours | ours scalar | glsl | glsl alt | torch | cupy | copy roof | ours/glsl | ours/glsl alt | ours/torch | ours/cupy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(d, key):
        if not d:
            return "–"
        v = d.get(key) if key in d else d.get("Gelem_s")
        return "–" if v is None else _num(v * 1e3)

    for row in result["rows"]:
        key = "TBps" if row["bytes_per_elem"] else "Gelem_s"
        t = row.get("torch") or {}
        lines.append(
            f"| {row['kernel']} | 2^{row['log2n']} | {cell(row['ours'], key)} | "
            f"{cell(row.get('ours_scalar'), key)} | {cell(row['glsl'], key)} | "
            f"{cell(row.get('glsl4'), key)} | {cell(t if 'op' in t else None, key)} | "
            f"{cell(row.get('cupy'), key)} | {_num(t['copy_TBps'] * 1e3) if 'copy_TBps' in t else '–'} | "
            f"{_fmt(_ratio(row['ours'], row['glsl']))} | {_fmt(_ratio(row['ours'], row.get('glsl4')))} | "
            f"{_fmt(_ratio(row['ours'], t))} | "
            f"{_fmt(_ratio(row['ours'], row.get('cupy')))} |"
        )
    ct = result.get("compile")
    if ct:
        lines += ["", "## Compile and prepare (8 kernels)", "", "| what | ms |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in ct.items() if not isinstance(v, (dict, list))]
    checks = result.get("checks")
    if checks:
        lines += ["", "ours vs glsl outputs: " + ", ".join(f"{k}: {v}" for k, v in checks.items())]
    return "\n".join(lines) + "\n"


def _num(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--min-log2", type=int, default=16)
    ap.add_argument("--max-log2", type=int, default=28)
    ap.add_argument("--quick", action="store_true", help="log2 sizes step 4, shorter timing")
    ap.add_argument("--kernels", default="", help="comma-separated subset")
    ap.add_argument("--compare-scalar", action="store_true")
    ap.add_argument("--ours-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-compile-times", action="store_true")
    opts = ap.parse_args(argv)

    dev = runtime.get_device()
    cpu = dev.info.type == "cpu"
    max_log2 = min(opts.max_log2, 24) if cpu else opts.max_log2
    step = 4 if opts.quick else 2
    budget = (0.02 if opts.quick else 0.05) if cpu else (0.05 if opts.quick else 0.2)
    kmax = 20 if cpu else 500
    wg = min(256, int(dev.info.limits.get("max_compute_work_group_invocations", 256)))
    names = [s for s in opts.kernels.split(",") if s]
    specs = [s for s in suite.SPECS if not names or s.name in names]
    prepare()
    rows, checks = [], {}
    for spec in specs:
        top = min(max_log2, CPU_CAP_LOG2.get(spec.name, 99)) if cpu else max_log2
        if not opts.ours_only:
            checks[spec.name] = check(spec, 1 << opts.min_log2 | 3, wg)
            if spec.name == "mandel":
                checks["mandel_precise"] = check(suite.MANDEL_PRECISE, 1 << opts.min_log2 | 3, wg)
        for lg in range(opts.min_log2, top + 1, step):
            n = 1 << lg
            row = {"kernel": spec.name, "log2n": lg, "n": n, "bytes_per_elem": spec.bytes_per_elem,
                   "ours": measure_ours(spec, n, budget, kmax)}  # fmt: skip
            if not opts.ours_only:
                row["glsl"] = measure_glsl(spec, n, budget, kmax, wg)
                if spec.name == "saxpy":
                    row["glsl4"] = measure_glsl(suite.SAXPY_VEC4, n, budget, kmax, wg)
                if spec.name == "mandel":
                    row["glsl4"] = measure_glsl(suite.MANDEL_PRECISE, n, budget, kmax, wg)
                if not cpu:
                    row["torch"] = measure_torch(spec, n, budget, kmax)
                    row["cupy"] = measure_cupy(spec, n, budget, kmax)
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {
        "meta": {
            "device": dev.info.name,
            "driver": getattr(dev.info, "driver_version", ""),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "command": " ".join(["python -m bench.kernels.run", *(argv or sys.argv[1:])]),
            "physical_wg": wg,
        },
        "rows": rows,
        "checks": checks,
    }
    if opts.compare_scalar and not opts.ours_only:
        _add_scalar(result, opts)
    if not opts.no_compile_times and not opts.ours_only:
        result["compile"] = compile_times.measure()
        print(json.dumps(result["compile"]), flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1))
    if opts.md:
        Path(opts.md).write_text(markdown(result))
    if not opts.ours_only:
        print(markdown(result))
    return 0


def _add_scalar(result: dict, opts) -> None:
    """Our scalar form (CTHREADS_NO_VECTORIZE=1), measured in a subprocess, as a column."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scalar.json"
        cmd = [sys.executable, "-m", "bench.kernels.run", "--ours-only", "--no-compile-times",
               "--json", str(out), "--min-log2", str(opts.min_log2), "--max-log2", str(opts.max_log2),
               *(["--quick"] if opts.quick else []), *(["--kernels", opts.kernels] if opts.kernels else [])]  # fmt: skip
        env = dict(os.environ, CTHREADS_NO_VECTORIZE="1")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        subprocess.run(cmd, env=env, check=True, cwd=root, stdout=subprocess.DEVNULL)
        scalar = {(r["kernel"], r["log2n"]): r["ours"] for r in json.loads(out.read_text())["rows"]}
    for row in result["rows"]:
        row["ours_scalar"] = scalar.get((row["kernel"], row["log2n"]))


if __name__ == "__main__":
    sys.exit(main())
