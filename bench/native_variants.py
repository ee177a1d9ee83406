"""Submission-policy variants side by side, in one invocation: each variant (a set of the
native `CTHREADS_*` knobs, see native/README.md "Policy knobs") runs in its own subprocess and
measures

  queued     host µs per gpu() launch, 1,000 queued launches (resident n=256 saxpy), no join
  +drain     the same including the one join at the end (1,001 launches)
  l+j        launch + join(download=False) of the resident 256-element kernel, µs
  submit     the native Device.submit of one queued dispatch, µs (1,000 then one wait)
  rt         native submit + wait of one tiny dispatch, µs (bench/c_roundtrip's C program
             does the same: the target is l+j <= 1.2 x C)
  py idle / py busy   ns per list.append in the main thread with the device idle, and right
             after 1,000 queued launches while the submitter thread works (syscall-free code:
             a difference means the main thread is being slowed by the other threads)
  polls/l    timeline counter reads (vkGetSemaphoreCounterValue) per queued launch, host+thread
  wakes/1k, lockblk/1k, submits/1k   futex wake-ups of the thread, locks that blocked, and
             vkQueueSubmit calls per 1,000 queued launches
  poll us    one Device.completed() on an idle queue (mostly one counter read: ~0.1 µs when
             the driver reads memory, several µs when it is an ioctl under gVisor)

    python bench/native_variants.py                   # every variant, then the C round trip
    python bench/native_variants.py --only default,bg_block --json out.json
    python bench/native_variants.py --set fast=CTHREADS_BG_SPIN_US=0,CTHREADS_BG_HOT_US=50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> knobs (environment); "default" sets nothing
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "coalesce0": {"CTHREADS_COALESCE": "0"},
    "bg_block": {"CTHREADS_BG_SPIN_US": "0"},
    "bg_cold": {"CTHREADS_BG_HOT_US": "0"},
    "bg_block_cold": {"CTHREADS_BG_SPIN_US": "0", "CTHREADS_BG_HOT_US": "0"},
    "bg_poll5us": {"CTHREADS_BG_POLL_NS": "5000", "CTHREADS_BG_SPIN_US": "50"},
    "host_block": {"CTHREADS_SPIN_US": "0"},
    "yield_old": {"CTHREADS_SPIN_YIELD": "1"},  # sched_yield spins, like before (CPU default)
    "delay0": {"CTHREADS_BG_DELAY_US": "0"},
    "delay50": {"CTHREADS_BG_DELAY_US": "50"},
    "batch64": {"CTHREADS_BATCH_MAX": "64"},
}
KNOB_NAMES = (
    "CTHREADS_COALESCE",
    "CTHREADS_BATCH_MAX",
    "CTHREADS_STREAM_US",
    "CTHREADS_SPIN_US",
    "CTHREADS_POLL_NS",
    "CTHREADS_BG_SPIN_US",
    "CTHREADS_BG_POLL_NS",
    "CTHREADS_BG_HOT_US",
    "CTHREADS_BG_DELAY_US",
    "CTHREADS_LOCK_SPIN_US",
    "CTHREADS_SPIN_YIELD",
)


# ---- the child: one variant ------------------------------------------------------------------


def _append_ns(n: int = 20000) -> float:
    out: list[int] = []
    append = out.append
    t0 = time.perf_counter()
    for i in range(n):
        append(i)
    return (time.perf_counter() - t0) / n * 1e9


def child(reps: int) -> dict:
    from cthreads import runtime
    from cthreads.gpu import GlobalIdx, Gpu, GpuArena, gpu, prepare

    @Gpu
    def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            y[i] = a * x[i] + y[i]

    res: dict = {}
    py_idle_before = _append_ns()
    n = 256
    x, y = [1.0] * n, [0.0] * n
    prepare()
    arena = GpuArena().bind(x=x, y=y)
    dev = runtime.get_device()
    res["device"] = dev.info.name
    for _ in range(100):  # warm up (compile, pool, code paths)
        gpu(saxpy, n, 1.0, x, y).join(download=False)

    # queued launches, with the submission counters over them
    s0 = dev.stats()
    queued, drained = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(1000):
            gpu(saxpy, n, 1.0, x, y)
        t1 = time.perf_counter()
        gpu(saxpy, n, 1.0, x, y).join(download=False)
        t2 = time.perf_counter()
        queued.append((t1 - t0) / 1000 * 1e6)
        drained.append((t2 - t0) / 1001 * 1e6)
    s1 = dev.stats()
    launches = reps * 1001
    c0, c1 = s0.get("counters", {}), s1.get("counters", {})
    d = {k: c1[k] - c0.get(k, 0) for k in c1}
    res["queued_us"] = min(queued)
    res["queued_med_us"] = statistics.median(queued)
    res["drain_us"] = min(drained)
    res["polls_per_launch"] = (d.get("host_polls", 0) + d.get("bg_polls", 0)) / launches
    res["host_polls_per_launch"] = d.get("host_polls", 0) / launches
    res["wakes_per_1k"] = 1000 * d.get("wakes", 0) / launches
    res["lock_blocks_per_1k"] = 1000 * d.get("lock_blocks", 0) / launches
    res["submits_per_1k"] = 1000 * (s1["queue_submits"] - s0["queue_submits"]) / launches
    res["counters"] = d
    res["knobs"] = s1.get("knobs", {})

    # pure Python speed in the main thread while the submitter works (and idle)
    busy = []
    for _ in range(reps):
        for _ in range(1000):
            gpu(saxpy, n, 1.0, x, y)
        busy.append(_append_ns(5000))
        gpu(saxpy, n, 1.0, x, y).join(download=False)
    time.sleep(0.05)  # past the thread's watch window: it sleeps
    res["py_idle_ns"] = min(_append_ns(), py_idle_before)
    res["py_busy_ns"] = statistics.median(busy)

    # launch + join(download=False), resident 256 elements
    lj = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(200):
            gpu(saxpy, n, 1.0, x, y).join(download=False)
        lj.append((time.perf_counter() - t0) / 200 * 1e6)
    res["launch_join_us"] = min(lj)
    res["launch_join_med_us"] = statistics.median(lj)

    # the native submit alone, and the native round trip of a tiny dispatch
    pipe = dev.pipeline(runtime.load_shader("fill_u32"), 16)
    buf = dev.buffer(256)
    import struct

    cmds = [("dispatch", pipe, struct.pack("<QII", buf.address, 64, 7), (1, 1, 1))]
    nsub, nwait = dev._dev.submit, dev._dev.wait
    sub, rt = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(1000):
            v = nsub(cmds)
        sub.append((time.perf_counter() - t0) / 1000 * 1e6)
        nwait(v)
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(300):
            nwait(nsub(cmds))
        rt.append((time.perf_counter() - t0) / 300 * 1e6)
    res["submit_us"] = min(sub)
    res["roundtrip_us"] = min(rt)
    res["roundtrip_med_us"] = statistics.median(rt)

    # the cost of one counter read (Device.completed() on an idle queue) and of a clock read
    dev.wait_idle()
    completed = dev._dev.completed
    t0 = time.perf_counter()
    for _ in range(2000):
        completed()
    res["poll_us"] = (time.perf_counter() - t0) / 2000 * 1e6
    pc = time.perf_counter
    t0 = pc()
    for _ in range(20000):
        pc()
    res["clock_us"] = (pc() - t0) / 20000 * 1e6
    buf.release()
    arena.release()
    runtime.shutdown()
    return res


# ---- the parent: run the variants, print the table --------------------------------------------


def _c_roundtrip(iters: int) -> float | None:
    """bench/c_roundtrip's prerecorded submit + fence wait, µs (None when it cannot be built)."""
    try:
        subprocess.run(
            ["make", "-s", "-C", str(ROOT / "bench" / "c_roundtrip"), "roundtrip"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        from cthreads.runtime.shaders import SHADER_DIR

        out = subprocess.run(
            [
                str(ROOT / "bench" / "c_roundtrip" / "roundtrip"),
                str(SHADER_DIR / "fill_u32.spv"),
                str(iters),
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        rows = {ln.split()[0]: float(ln.split()[1]) for ln in out.splitlines()[1:] if ln.split()}
        return rows.get("prerecorded")
    except Exception as exc:  # noqa: BLE001 — a reference only
        print(f"(C round trip unavailable: {exc})", file=sys.stderr)
        return None


def run_variant(name: str, knobs: dict[str, str], reps: int, timeout: float) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in KNOB_NAMES}
    env.pop("CTHREADS_VALIDATION", None)  # timing: no validation layer
    env.update(knobs)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, __file__, "--child", "--reps", str(reps)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(ROOT),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            res = json.loads(line)
            res["wall_s"] = time.perf_counter() - t0
            return res
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    return {"error": f"rc={p.returncode}: " + " | ".join(tail)}


COLUMNS = [
    ("queued", "queued_us", "{:.2f}"),
    ("+drain", "drain_us", "{:.2f}"),
    ("l+j", "launch_join_us", "{:.1f}"),
    ("submit", "submit_us", "{:.2f}"),
    ("rt", "roundtrip_us", "{:.1f}"),
    ("py idle", "py_idle_ns", "{:.0f}"),
    ("py busy", "py_busy_ns", "{:.0f}"),
    ("polls/l", "polls_per_launch", "{:.3f}"),
    ("wakes/1k", "wakes_per_1k", "{:.1f}"),
    ("lockblk/1k", "lock_blocks_per_1k", "{:.1f}"),
    ("submits/1k", "submits_per_1k", "{:.1f}"),
    ("poll us", "poll_us", "{:.2f}"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated variant names")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        help="extra variant NAME=KNOB=V,KNOB=V (knob names may omit CTHREADS_)",
    )
    ap.add_argument("--budget", type=float, default=75.0, help="seconds for all variants")
    ap.add_argument("--no-c", action="store_true", help="skip the C round trip reference")
    ap.add_argument("--json", default="", help="write every result to this file")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.reps)))
        return

    variants = dict(VARIANTS)
    for spec in args.set:
        name, _, rest = spec.partition("=")
        knobs = {}
        for kv in filter(None, rest.split(",")):
            k, _, v = kv.partition("=")
            knobs[k if k.startswith("CTHREADS_") else "CTHREADS_" + k] = v
        variants[name] = knobs
    if args.only:
        wanted = args.only.split(",")
        variants = {k: variants[k] for k in wanted if k in variants}

    start = time.perf_counter()
    # a throw-away first child: the first process after a cold start measures the warm-up
    # (driver, clocks, sandbox caches), not its knobs
    run_variant("warmup", {}, 1, timeout=30.0)
    results: dict[str, dict] = {}
    for name, knobs in variants.items():
        left = args.budget - (time.perf_counter() - start)
        if left < 3:
            results[name] = {"error": "skipped (budget)"}
            continue
        results[name] = run_variant(name, knobs, args.reps, timeout=max(5.0, min(30.0, left)))
    c_rt = None if args.no_c else _c_roundtrip(2000)

    device = next((r["device"] for r in results.values() if "device" in r), "?")
    print(f"device: {device}   (µs unless noted; best of {args.reps}; knobs: native/README.md)")
    head = f"{'variant':14s}" + "".join(f"{c[0]:>11s}" for c in COLUMNS)
    print(head)
    print("-" * len(head))
    for name, r in results.items():
        if "error" in r:
            print(f"{name:14s}  {r['error']}")
            continue
        cells = "".join(
            f"{c[2].format(r[c[1]]):>11s}" if c[1] in r else f"{'-':>11s}" for c in COLUMNS
        )
        print(f"{name:14s}{cells}")
    if c_rt:
        print(
            f"\nC round trip (prerecorded, fence wait): {c_rt:.1f} µs -> target l+j <= {1.2 * c_rt:.1f} µs"
        )
    print("targets: queued <= 5 µs per launch; l+j <= 1.2 x C round trip")
    for name, knobs in variants.items():
        if knobs:
            print(f"  {name}: " + " ".join(f"{k}={v}" for k, v in knobs.items()))
    r0 = results.get("default", {})
    if "counters" in r0:
        print(f"default counters over {args.reps * 1001} queued launches: {r0['counters']}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"c_roundtrip_us": c_rt, "variants": results}, indent=1)
        )


if __name__ == "__main__":
    main()
