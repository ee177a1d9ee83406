"""Time to first result (issue 19): where a fresh process's time goes before its first result,
cold and warm, next to a plain C program's floor measured in the same run.

    python bench/first_result.py [--repeats 5] [--json out.json] [--md out.md]
    python bench/first_result.py --warm-only [--repeats 10]   # issue 19's warm first dispatch

Every sample is a fresh interpreter (or a fresh run of the C program). "Cold" gives each sample
empty caches: a new directory for cthreads' kernel and pipeline caches (CTHREADS_CACHE_DIR) and
for the driver's own disk caches (MESA_SHADER_CACHE_DIR, NVIDIA's __GL_SHADER_DISK_CACHE_PATH,
XDG_CACHE_HOME); "warm" is a second process on the directory the cold one left. The Khronos
validation layer and CTHREADS_VALIDATION are switched off in every child.

Measured (min and median over the repeats):
- imports: `python -c pass`, numpy alone, `import cthreads`, `import cthreads.gpu`, and the
  largest entries of `-X importtime` below `cthreads.gpu` (numpy imported first, apart);
- opening the device (instance, enumeration, device; cold and on prepare's pipeline cache
  file) against bench/c_floor/floor.c (vkCreateInstance, vkEnumeratePhysicalDevices,
  vkCreateDevice with one queue, no features), and the floor asking what we ask
  (`--like-cthreads`: our features and extensions; `--cache`: our pipeline cache file);
- the first dispatch of one kernel (bench/prepare_kernels/eight.py's saxpy on 1024-element
  lists) with the device already open: end to end in an untouched process (with the garbage
  collections that fell inside it: the split's timers shift when they happen), and split (in a
  second process whose compiler functions are wrapped with timers) into the compiler's import,
  cache lookup, frontend, IR printer, codegen, in-process validation, cache store, pipeline
  creation and the first submit + join; and the whole first `gpu()` call as outermost steps
  that add up to it (source key, device + compile target, compile step, pipeline, launch
  plan, C launcher, the rest of the call, the join), with the imports the launch makes (the
  warm split sets its timers as modules load, so it imports only what a warm launch does);
  the C program's pipeline creation and first dispatch;
- `prepare()` of the eight kernels (device not open yet) against the floor + 60 ms (cold) and
  + 10 ms (warm), issue 19's targets;
- Taichi's first dispatch of the same saxpy with its device open, when `import taichi` works.

`--warm-only` measures the warm first dispatch alone (a cold process fills fresh caches, then
a plain and a split warm process run on them, per repeat): a few seconds, no floor, no prepare.

Needs gcc and the Vulkan headers for the floor (built into a temporary directory).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (siblings in bench/: the script's directory is on sys.path)
from first_result_children import DEVICE, DISPATCH, IMPORT_ALONE, IMPORTS, PREPARE, TAICHI
from first_result_table import markdown, warm_markdown

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
KERNELS = BENCH / "prepare_kernels"
N = 1024  # elements of the first dispatch's lists

# -- running them ----------------------------------------------------------------------------


class Caches:
    """One directory tree for every cache a child may use (ours and the driver's)."""

    def __init__(self, parent: str, bytecode: bool = True):
        self.root = tempfile.mkdtemp(dir=parent)
        self.bytecode = bytecode

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for var in (
            "CTHREADS_VALIDATION",
            "CTHREADS_NO_DISK_CACHE",
            "VK_INSTANCE_LAYERS",
            "VK_LOADER_LAYERS_ENABLE",
            "MESA_SHADER_CACHE_DISABLE",
            "__GL_SHADER_DISK_CACHE",
        ):
            env.pop(var, None)
        root = self.root
        if self.bytecode:
            # compiled bytecode, as after `pip install` (this machine sets PYTHONDONTWRITEBYTECODE
            # and the tree has no __pycache__: every import would compile its source)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(os.path.dirname(root), "pycache")
        env.update(
            CTHREADS_CACHE_DIR=f"{root}/cthreads",
            XDG_CACHE_HOME=f"{root}/xdg",
            MESA_SHADER_CACHE_DIR=f"{root}/mesa",
            __GL_SHADER_DISK_CACHE_PATH=f"{root}/nvidia",
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])),
        )
        os.makedirs(f"{root}/nvidia", exist_ok=True)  # NVIDIA skips a path that does not exist
        return env


def run_child(argv: list[str], env: dict[str, str], timeout: float = 300) -> dict:
    """Run one child; its last stdout line is JSON. Adds its wall and CPU time (the CPU share
    shows how much of the wall time the machine's other load took)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise ChildFailed(f"{' '.join(argv[:3])} ...: exit {out.returncode}\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result["child_wall_ms"] = 1e3 * wall
    result["child_cpu_ms"] = 1e3 * cpu
    return result


class ChildFailed(RuntimeError):
    pass


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def py_file(code: str, workdir: str, name: str, *args: str) -> list[str]:
    """A child run from a file: Taichi reads its kernels' source through `inspect`, which
    finds nothing in a `-c` program."""
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(code)
    return [sys.executable, path, *args]


# the C floor's sources (bench/c_floor/floor.h is their shared header)
FLOOR_C = ("floor.c", "floor_steps.c")


def build_floor(workdir: str) -> str | None:
    exe = os.path.join(workdir, "floor")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    p = subprocess.run(
        [cc, "-O2", "-std=c11", "-o", exe, *(str(BENCH / "c_floor" / f) for f in FLOOR_C), "-ldl"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        print(f"note: the C floor did not build:\n{p.stderr[-1500:]}", file=sys.stderr)
        return None
    return exe


IMPORTTIME_CODE = "try:\n    import numpy\nexcept ImportError:\n    pass\nimport cthreads.gpu\n"


def importtime_top(env: dict[str, str], count: int = 12) -> dict:
    """The modules `import cthreads.gpu` loads after numpy, largest self time first, from
    `python -X importtime` (one fresh process)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORTTIME_CODE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = _split_importtime(line)
        rows.append((name, self_us, cum_us))
    # importtime prints a module after its imports: what follows numpy's top-level line is ours
    start = max((i for i, r in enumerate(rows) if r[0] == "numpy"), default=-1) + 1
    ours = rows[start:]
    groups: dict[str, float] = {}
    for name, self_us, _ in ours:
        parts = name.split(".")
        group = ".".join(parts[:2]) if parts[0] == "cthreads" else f"(not ours) {parts[0]}"
        groups[group] = groups.get(group, 0.0) + self_us / 1e3
    top = sorted(ours, key=lambda r: -r[1])[:count]
    return {
        "total_ms": sum(r[1] for r in ours) / 1e3,
        "top": [{"module": n, "self_ms": s / 1e3, "cumulative_ms": c / 1e3} for n, s, c in top],
        "by_package_ms": dict(sorted(groups.items(), key=lambda kv: -kv[1])),
    }


def _split_importtime(line: str) -> tuple[int, int, str]:
    """`import time:   self |  cumulative |   name` -> (self us, cumulative us, name)."""
    self_us, cum_us, name = line.split(":", 1)[1].split("|")
    return int(self_us), int(cum_us), name.strip()


def stats(samples: list[dict], key: str) -> dict | None:
    values = [s[key] for s in samples if isinstance(s.get(key), (int, float))]
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "n": len(values)}


def loadavg() -> str:
    try:
        return "/".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def machine() -> dict:
    info = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "host": platform.node(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--no-taichi", action="store_true")
    ap.add_argument("--warm-only", action="store_true", help="the warm first dispatch alone")
    opts = ap.parse_args()

    work = tempfile.mkdtemp(prefix="cthreads-first-")
    try:
        result = (measure_warm if opts.warm_only else measure)(work, opts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = (warm_markdown if opts.warm_only else markdown)(result)
    print(table)
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1))
    if opts.md:
        Path(opts.md).write_text(table)
    return 0


def dispatch_args(mode: str, spv: str = "") -> list[str]:
    """The first-dispatch child in `mode` ("plain", "hooks", "hooks-warm")."""
    return py(DISPATCH, str(KERNELS), str(N), mode, spv)


def summarize(samples: dict[str, list[dict]]) -> dict:
    return {kind: {k: stats(v, k) for k in v[0] if stats(v, k)} for kind, v in samples.items()}


def measure_warm(work: str, opts) -> dict:
    """--warm-only: per repeat, a cold first dispatch fills fresh caches (discarded), then a
    plain and a split ("hooks-warm") warm process run on them."""
    samples: dict[str, list[dict]] = {}
    load = [loadavg()]
    run_child(dispatch_args("hooks"), Caches(work).env())  # (fills the bytecode cache)
    for _ in range(opts.repeats):
        env = Caches(work).env()
        run_child(dispatch_args("plain"), env)
        samples.setdefault("dispatch_plain_warm", []).append(run_child(dispatch_args("plain"), env))
        split = run_child(dispatch_args("hooks-warm"), env)
        samples.setdefault("dispatch_hooks_warm", []).append(split)
        load.append(loadavg())
    return {
        "machine": machine() | {"loadavg": load},
        "command": "python bench/first_result.py " + " ".join(sys.argv[1:]),
        "repeats": opts.repeats,
        "summary": summarize(samples),
        "samples": samples,
    }


def measure(work: str, opts) -> dict:
    floor = build_floor(work)
    samples: dict[str, list[dict]] = {}
    notes: list[str] = []

    def add(kind: str, sample: dict) -> dict:
        samples.setdefault(kind, []).append(sample)
        return sample

    taichi = not opts.no_taichi
    load = [loadavg()]
    # a discarded first pass fills the bytecode cache (PYTHONPYCACHEPREFIX under `work`)
    warmup = Caches(work)
    run_child(py(DISPATCH, str(KERNELS), str(N), "hooks", ""), warmup.env())
    run_child(py(PREPARE, str(KERNELS)), warmup.env())
    for rep in range(opts.repeats):
        # the C floor: cold (fresh driver caches), then warm on what it left
        if floor:
            c = Caches(work)
            add("floor_cold", run_child([floor], c.env()))
            add("floor_warm", run_child([floor], c.env()))
        c = Caches(work)
        env = c.env()
        add("python_start", run_child(py("print('{}')"), env))
        add("imports", run_child(py(IMPORTS), env))
        add("import_alone", run_child(py(IMPORT_ALONE), env))
        add("device", run_child(py(DEVICE), env))
        raw = Caches(work, bytecode=False).env()
        add("import_no_bytecode", run_child(py(IMPORT_ALONE), raw))
        for mode in ("plain", "hooks"):
            c = Caches(work)
            spv = os.path.join(c.root, "saxpy.spv") if mode == "hooks" else ""
            args = py(DISPATCH, str(KERNELS), str(N), mode, spv)
            cold = add(f"dispatch_{mode}_cold", run_child(args, c.env()))
            warm_mode = "hooks-warm" if mode == "hooks" else mode
            add(
                f"dispatch_{mode}_warm",
                run_child(py(DISPATCH, str(KERNELS), str(N), warm_mode, ""), c.env()),
            )
            if spv and floor and os.path.exists(spv):
                # the driver alone on the same SPIR-V (fresh driver caches, bda device)
                d = Caches(work)
                add(
                    "floor_ours_spv",
                    run_child([floor, "--bda", spv, cold.get("entry_point", "main")], d.env()),
                )
        if floor:
            # the scalar form alone (CTHREADS_NO_VECTORIZE=1: no 4-wide variant in the module),
            # the driver's pipeline creation on it: what the vector form costs a first dispatch
            c = Caches(work)
            spv = os.path.join(c.root, "saxpy_scalar.spv")
            env = dict(c.env(), CTHREADS_NO_VECTORIZE="1")
            scalar = run_child(py(DISPATCH, str(KERNELS), str(N), "plain", spv), env)
            add("dispatch_scalar_cold", scalar)
            if os.path.exists(spv):
                entry = scalar.get("entry_point", "main")
                add(
                    "floor_ours_spv_scalar",
                    run_child([floor, "--bda", spv, entry], Caches(work).env()),
                )
        c = Caches(work)
        add("prepare_cold", run_child(py(PREPARE, str(KERNELS)), c.env()))
        add("prepare_warm", run_child(py(PREPARE, str(KERNELS)), c.env()))
        add("device_warm", run_child(py(DEVICE), c.env()))  # (prepare's pipeline cache file)
        if floor:
            # the driver alone asked what we ask for (features, extensions) and loading the
            # pipeline cache file prepare left, on the same warm driver caches
            files = sorted(Path(c.root, "cthreads", "pipelines").glob("*.bin"))
            extra = ["--cache", str(files[0])] if files else []
            add("floor_like_warm", run_child([floor, "--like-cthreads", *extra], c.env()))
        if taichi:
            c = Caches(work)
            try:
                child = py_file(TAICHI, work, "taichi_first.py", str(N))
                add("taichi_cold", run_child([*child, ""], c.env()))
                add("taichi_warm_1", run_child([*child, f"{c.root}/taichi"], c.env()))
                add("taichi_warm", run_child([*child, f"{c.root}/taichi"], c.env()))
            except ChildFailed as exc:
                taichi = False
                notes.append(f"Taichi skipped: {str(exc).strip().splitlines()[-1][:200]}")
        load.append(loadavg())
        print(f"repeat {rep + 1}/{opts.repeats} done, load {load[-1]}", file=sys.stderr)
    if not floor:
        notes.append("C floor skipped: gcc or the Vulkan headers are missing")
    tops = importtime_top(Caches(work).env())
    summary = summarize(samples)
    flags = samples["import_alone"][0]
    dev_name = samples["floor_cold"][0]["device"] if floor else "?"
    return {
        "machine": machine() | {"device": dev_name, "loadavg": load},
        "command": "python bench/first_result.py " + " ".join(sys.argv[1:]),
        "repeats": opts.repeats,
        "notes": notes,
        "import_flags": {k: v for k, v in flags.items() if k.startswith("loads") or k == "modules"},
        "importtime": tops,
        "summary": summary,
        "samples": samples,
    }


if __name__ == "__main__":
    raise SystemExit(main())
