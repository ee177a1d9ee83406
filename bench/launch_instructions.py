"""Host instructions per queued launch, counted by valgrind's callgrind (issue 14 / 15): a measure
that shared or noisy machines do not disturb, where `bench/bracket_launch.py` times seconds.

    python bench/launch_instructions.py [--launches 1000] [--cases gpu,empty]

Runs itself under `valgrind --tool=callgrind` (needs valgrind and a C compiler for the
two-function client-request library it builds in a temporary directory), queues `--launches`
launches of saxpy on arena-resident lists (n = 256) per case after a warm round, and prints
the instructions the calling thread executed per launch: `gpu()`, `kernel[grid]` held in a
variable, `k[g](...)` written at the call, `gpu(..., grid=)`, and the empty loop (the harness's
own cost, included in each case). The driver's threads are not counted. `--cases` measures
only those (a quicker before/after of one path).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import subprocess
import sys
import tempfile

CLIENT = r"""
#include <valgrind/callgrind.h>
void zero(void) { CALLGRIND_ZERO_STATS; }
void dump(const char *s) { CALLGRIND_DUMP_STATS_AT(s); }
"""
CASES = ("gpu", "bracket_held", "bracket_at_call", "gpu_grid", "empty")


def child(lib: str, launches: int, names: tuple[str, ...] = CASES) -> None:
    """The measured process (under callgrind): each case zeroes the counters, queues, dumps."""
    from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu, prepare

    @Gpu
    def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            y[i] = a * x[i] + y[i]

    cg = ctypes.CDLL(lib)
    prepare()
    n = 256
    x = [float(i) for i in range(n)]
    y = [0.0] * n
    arena = GpuArena()
    arena.bind(x=x, y=y)
    groups = -(-n // saxpy.workgroup_size[0])
    held = saxpy[groups]
    inv = (n,)
    cases = {
        "gpu": lambda: gpu(saxpy, n, 1.0, x, y),
        "bracket_held": lambda: held(n, 1.0, x, y),
        "bracket_at_call": lambda: saxpy[groups](n, 1.0, x, y),
        "gpu_grid": lambda: gpu(saxpy, n, 1.0, x, y, grid=inv),
        "empty": lambda: None,
    }
    for name in names:
        case = cases[name]
        for _ in range(launches):  # warm: pipelines, launchers, specialised bytecode
            case()
        gpu(saxpy, n, 1.0, x, y).join(download=False)
        cg.zero()
        for _ in range(launches):
            case()
        cg.dump(name.encode())
        gpu(saxpy, n, 1.0, x, y).join(download=False)
    arena.release()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES)
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    names = tuple(filter(None, opts.cases.split(",")))
    if not names or any(n not in CASES for n in names):
        ap.error(f"--cases takes names of {', '.join(CASES)}; got {opts.cases!r}")
    if opts.child:
        child(opts.child, opts.launches, names)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "libclient.so")
        src = os.path.join(tmp, "client.c")
        with open(src, "w") as f:
            f.write(CLIENT)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes"]
        cmd += [f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__)]
        cmd += ["--child", lib, "--launches", str(opts.launches), "--cases", ",".join(names)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        counts = {}
        for path in glob.glob(out + "*"):  # one file per client-request dump (calling thread)
            with open(path) as f:
                text = f.read()
            if "Client Request: " not in text:
                continue
            name = text.split("Client Request: ", 1)[1].split()[0]
            summary = next(ln for ln in text.splitlines() if ln.startswith("summary:"))
            counts[name] = int(summary.split()[1]) // opts.launches
    for name in names:
        print(f"{name:16s} {counts.get(name, 0):8d} instructions per launch")
    if {"bracket_held", "gpu", "empty"} <= set(counts):
        ratio = (counts["bracket_held"] - counts["empty"]) / (counts["gpu"] - counts["empty"])
        print(f"kernel[grid] held / gpu(), harness loop subtracted: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
