"""Is the fp32 matmul held by its shared-memory loads? Ours against two GLSL twins (issue 18).

    python bench/sgemm_twins.py [--sizes 2048,4096,8192] [--launches 5] [--json out.json]

All of bench/sgemm.py's variants run at ~30 TFLOP/s on the H200 (0.6 x torch fp32) whatever
their block, register tile or K step, so something they share sets the pace. A count says what
it could be: per K step an invocation of the 8 x 8 register tile reads 16 floats from shared
memory and does 64 FMAs, and a subgroup's 4-byte shared read takes the SM's shared-memory pipe
about as long as four of its FMA instructions take the FMA pipes, so the reads alone could
hold the kernel near half the FMA peak. shaders/sgemm_body.glsl is the GLSL twin of
`128x128x8 t8x8 bcontig multiples`; `bench_sgemm` reads the shared tiles 4 bytes at a time as
ours does, `bench_sgemm4` (the one difference) 16 bytes at a time from vec4 shared arrays.
If glsl4 runs well ahead of glsl and glsl near ours, 16-byte shared -> register loads are what
the compiler has to learn next; if both twins sit with ours, the limit is elsewhere.

Each row: the size, ours / glsl / glsl4 best device ms of --launches timed launches, TFLOP/s,
torch.matmul's (TF32 off) where torch and CUDA exist, ratios, and every result checked against
torch (numpy float64 up to 2048 without torch) within sgemm.tolerance. M = N = K, multiples of
128. Exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the siblings
import sgemm  # noqa: E402

from cthreads import runtime  # noqa: E402
from cthreads.gpu import GpuArena, device_name  # noqa: E402
from cthreads.residency.arena import lookup  # noqa: E402

OURS = "128x128x8 t8x8 bcontig multiples"
TWINS = ("bench_sgemm", "bench_sgemm4")  # shaders/*.comp: 4-byte and 16-byte shared reads


def _twin_ms(shader: str, a, b, c, launches: int) -> float | None:
    """Best device ms of the GLSL twin `shader` over `launches` (arrays bound in an arena)."""
    dev = runtime.get_device()
    s = a.shape[0]
    push = struct.pack(
        "<QQQIII", *(lookup(x).buffer.address for x in (a, b, c)), s, s, s
    )  # a, b, c addresses, then m, n, k (std430: 8-byte pointers first)
    pipe = dev.pipeline(runtime.load_shader(shader), len(push))
    cmds = [("dispatch", pipe, push, ((s // 128) * (s // 128), 1, 1))]
    keep = (*(lookup(x).buffer for x in (a, b, c)), pipe)
    dev.wait(dev.submit(cmds, keep=keep))  # warm
    best = None
    for _ in range(launches):
        v = dev.submit(cmds, keep=keep, timed=True)
        dev.wait(v)
        ms = dev.elapsed_ms(v)
        if ms:
            best = ms if best is None else min(best, ms)
    return best


def bench(s: int, launches: int) -> dict:
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (s, s)).astype(np.float32)
    b = rng.uniform(-1, 1, (s, s)).astype(np.float32)
    t_ms, ref = sgemm._torch(a, b, launches)
    if ref is None and s <= 2048:
        ref = a.astype(np.float64) @ b.astype(np.float64)
    tol, flop = sgemm.tolerance(a, b), 2.0 * s**3
    row: dict = {"bench": "sgemm_twins", "n": s, "tolerance": tol}
    if t_ms:
        row["torch"] = {"ms": t_ms, "TFLOPs": flop / t_ms / 1e9}
    for which in ("ours", *TWINS):
        c = np.full((s, s), np.nan, np.float32)
        with GpuArena() as arena:
            arena.bind(a=a, b=b, c=c)
            if which == "ours":
                ms = sgemm.run(OURS, a, b, c, launches)
            else:
                ms = _twin_ms(which, a, b, c, launches)
            arena.sync("c")
        entry: dict = {"ms": ms, "TFLOPs": flop / ms / 1e9 if ms else None}
        if ms and t_ms:
            entry["over_torch"] = t_ms / ms
        if ref is not None:
            err = float(np.nan_to_num(np.abs(c.astype(np.float64) - ref), nan=np.inf).max())
            entry.update(max_abs_error=err, ok=err <= tol)
        row[which] = entry
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--json")
    opts = ap.parse_args()
    sizes = [int(x) for x in opts.sizes.split(",")]
    if any(s % 128 for s in sizes):
        ap.error("--sizes: the twins need multiples of 128")
    print(f"# {device_name()}", flush=True)
    rows, ok = [], True
    for s in sizes:
        row = bench(s, opts.launches)
        rows.append(row)
        print(json.dumps(row), flush=True)
        cells = []
        for which in ("ours", *TWINS):
            e = row[which]
            ok = ok and e.get("ok", True)
            ratio = f" {e['over_torch']:.2f}x torch" if "over_torch" in e else ""
            tflops = f"{e['TFLOPs']:.1f}" if e["TFLOPs"] else "-"
            cells.append(
                f"{which} {tflops} TFLOP/s{ratio} ({'ok' if e.get('ok', True) else 'BAD'})"
            )
        print(f"# {s}: " + " | ".join(cells), flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps({"device": device_name(), "rows": rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
