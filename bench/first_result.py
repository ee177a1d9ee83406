"""Time to first result (issue 19): where a fresh process's time goes before its first result,
cold and warm, next to a plain C program's floor measured in the same run.

    python bench/first_result.py [--repeats 5] [--json out.json] [--md out.md]

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
  lists) with the device already open: end to end in an untouched process, and split (in a
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

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
KERNELS = BENCH / "prepare_kernels"
N = 1024  # elements of the first dispatch's lists

# -- the children ----------------------------------------------------------------------------

IMPORTS = r"""
import json, sys, time
t0 = time.perf_counter()
try:
    import numpy
except ImportError:  # numpy is optional for cthreads; its row stays empty
    pass
t1 = time.perf_counter()
import cthreads
t2 = time.perf_counter()
import cthreads.gpu
t3 = time.perf_counter()
print(json.dumps({"numpy_ms": 1e3 * (t1 - t0), "cthreads_ms": 1e3 * (t2 - t1),
                  "gpu_ms": 1e3 * (t3 - t2)}))
"""

IMPORT_ALONE = r"""
import json, sys, time
t0 = time.perf_counter()
import cthreads.gpu
t1 = time.perf_counter()
print(json.dumps({"gpu_alone_ms": 1e3 * (t1 - t0), "loads_numpy": "numpy" in sys.modules,
                  "loads_compiler": "cthreads.compiler.compile" in sys.modules,
                  "loads_frontend": "cthreads.compiler.frontend" in sys.modules,
                  "loads_asyncio": "asyncio" in sys.modules,
                  "modules": sum(m.startswith("cthreads") for m in sys.modules)}))
"""

# the device open, split: the loader (dlopen, as native.loaded_module does), vkCreateInstance,
# enumerate + describe, reading the pipeline cache file, and the native device (vkCreateDevice
# with our features, extensions and queues, our rings and lanes, vkCreatePipelineCache from the
# file's data, the submission thread); run cold (no file) and warm (prepare's file)
DEVICE = r"""
import json, time
import cthreads.gpu
from cthreads import runtime
from cthreads.runtime import lifecycle, native, pipeline_cache
t0 = time.perf_counter()
native.loaded_module()
t0b = time.perf_counter()
lifecycle._get_instance()
t1 = time.perf_counter()
info = runtime.default_device_info()
t2 = time.perf_counter()
data = pipeline_cache.PipelineCacheFile(info).load()
t2b = time.perf_counter()
runtime.init()
t3 = time.perf_counter()
print(json.dumps({"instance_ms": 1e3 * (t1 - t0), "loader_ms": 1e3 * (t0b - t0),
                  "create_instance_ms": 1e3 * (t1 - t0b), "enumerate_ms": 1e3 * (t2 - t1),
                  "cache_file_ms": 1e3 * (t2b - t2), "cache_file_bytes": len(data or b""),
                  "device_ms": 1e3 * (t3 - t2b), "open_ms": 1e3 * (t3 - t0)}))
"""

# argv: kernels dir, N, mode, where to write the kernel's SPIR-V (or ""). mode "plain": no
# timers; "hooks": the compiler is imported first (its import measured apart), then its steps
# and the launch's are timed; "hooks-warm": the same timers, each set when its module loads,
# so that a warm launch imports what it imports by itself (and the import time is measured)
DISPATCH = r"""
import json, sys, time
kernels, n, mode, spv_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
T = {}
t0 = time.perf_counter()
import cthreads.gpu as g
from cthreads import runtime
T["import_ms"] = 1e3 * (time.perf_counter() - t0)
t0 = time.perf_counter()
runtime.init()
T["open_ms"] = 1e3 * (time.perf_counter() - t0)
sys.path.insert(0, kernels)
import eight
spent = {}
depth = [0]  # how many timed steps are open: only outermost ones add up to the whole
top = {}
new_modules = []
pending = {}  # module name -> timers to set once it has loaded (hooks-warm)
hooks = mode.startswith("hooks")
if hooks:
    import functools, importlib, importlib.abc
    t0 = time.perf_counter()
    for name in () if mode == "hooks-warm" else ("cthreads.compiler.compile", "cthreads.compiler.frontend",
                 "cthreads.compiler.printer", "cthreads.compiler.spirv.tools"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    T["compiler_import_ms"] = 1e3 * (time.perf_counter() - t0)

    def timer(fn, label):
        @functools.wraps(fn)
        def timed(*a, **k):
            s = time.perf_counter()
            depth[0] += 1
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
                ms = 1e3 * (time.perf_counter() - s)
                spent[label] += ms
                if depth[0] == 0:
                    top[label] = top.get(label, 0.0) + ms
        return timed

    def wrap(module, owner, attr, label, prop=False):
        # prop: `attr` is a property of class `owner` (its getter is timed)
        if module not in sys.modules and mode == "hooks-warm":
            spent[label] = 0.0  # 0 unless the module loads (and the step runs)
            pending.setdefault(module, []).append(lambda: wrap(module, owner, attr, label, prop))
            return
        try:
            obj = importlib.import_module(module)
            for part in filter(None, owner.split(".")):
                obj = getattr(obj, part)
            fn = obj.__dict__[attr] if prop else getattr(obj, attr)
            if prop and not isinstance(fn, property):
                raise AttributeError(attr)
        except (ImportError, AttributeError, KeyError):
            spent[label] = None  # this build has no such step: reported as n/a
            return
        spent[label] = 0.0
        if prop:
            setattr(obj, attr, property(timer(fn.fget, label)))
        else:
            setattr(obj, attr, timer(fn, label))

    class ImportTimer(importlib.abc.MetaPathFinder):
        # times the imports the first launch makes (outermost ones; nested ones are inside)

        def find_spec(self, name, path, target=None):
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            loader = spec.loader
            if loader is None or not hasattr(loader, "exec_module"):
                return spec
            run = loader.exec_module

            def exec_module(module, run=run):
                new_modules.append(name)
                s = time.perf_counter()
                depth[0] += 1
                try:
                    run(module)
                    for later in pending.pop(name, ()):
                        later()
                finally:
                    depth[0] -= 1
                    ms = 1e3 * (time.perf_counter() - s)
                    spent["first_launch_imports_ms"] += ms
                    if depth[0] == 0:
                        top["first_launch_imports_ms"] = top.get("first_launch_imports_ms", 0) + ms

            try:
                loader.exec_module = exec_module
            except AttributeError:
                pass
            return spec

    wrap("cthreads.compiler.cache", "KernelCache", "get", "cache_lookup_ms")
    wrap("cthreads.gpu.kernel", "GpuKernel", "lower", "frontend_ms")
    wrap("cthreads.compiler.compile", "", "_print_ir", "ir_printer_ms")
    wrap("cthreads.compiler.compile", "", "generate", "codegen_ms")
    wrap("cthreads.compiler.spirv.tools", "", "validate", "validation_ms")
    wrap("cthreads.compiler.cache", "KernelCache", "put", "cache_store_ms")
    wrap("cthreads.gpu.kernel", "GpuKernel", "constants", "constants_ms")
    wrap("cthreads.runtime.device", "Device", "submit", "submit_ms")
    wrap("cthreads.runtime.device", "Device", "wait", "wait_ms")
    # the first launch's steps around compile and pipeline (outermost ones are exclusive; the
    # rest of the launch call is gpu() itself, the argument checks, copies and the submit)
    wrap("cthreads.gpu.kernel", "GpuKernel", "source_key", "source_key_ms", prop=True)
    wrap("cthreads.launch.session", "", "_current_device", "device_target_ms")
    wrap("cthreads.launch.session", "", "_compile_one", "compile_step_ms")
    wrap("cthreads.launch.session", "", "_pipeline", "pipeline_step_ms")
    wrap("cthreads.launch.dispatch", "", "plan_of", "plan_ms")
    wrap("cthreads.launch.dispatch", "", "native_launcher", "launcher_ms")
    wrap("cthreads.launch.dispatch", "", "_launch", "general_launch_ms")
    spent["first_launch_imports_ms"] = 0.0
x = [float(i) for i in range(n)]
y = [1.0] * n
if hooks:
    sys.meta_path.insert(0, ImportTimer())
top.clear()
t0 = time.perf_counter()
job = g.gpu(eight.saxpy, n, 2.0, x, y)
t1 = time.perf_counter()
in_launch = sum(top.values())  # the outermost steps inside the gpu() call (not the join)
job.join()
t2 = time.perf_counter()
if hooks:
    del sys.meta_path[0]
    T["first_launch_modules"] = len(new_modules)
    T["first_launch_module_names"] = sorted(new_modules)
    # the part of the gpu() call (not the join) no timed step covers
    T["launch_rest_ms"] = 1e3 * (t1 - t0) - in_launch
    T["first_launch_ir"] = "cthreads.compiler.ir" in new_modules
assert y == [2.0 * i + 1.0 for i in range(n)], "wrong result"
g.gpu(eight.saxpy, n, 2.0, x, y).join()
t3 = time.perf_counter()
T.update(launch_ms=1e3 * (t1 - t0), join_ms=1e3 * (t2 - t1), first_ms=1e3 * (t2 - t0),
         second_ms=1e3 * (t3 - t2))
T.update(spent)
try:
    from cthreads.launch import session
    prep = session.state.prepared[eight.saxpy.source_key]
    T.update(compile_ms=prep.info["compile_ms"], pipeline_ms=prep.info["pipeline_ms"],
             cache_hit=prep.info["cache_hit"])
    if spv_out:
        with open(spv_out, "wb") as f:
            f.write(prep.compiled.spirv)
        T["entry_point"] = prep.compiled.entry_point
except (ImportError, AttributeError, KeyError) as exc:
    T["info_missing"] = repr(exc)
print(json.dumps(T))
"""

PREPARE = r"""
import json, sys, time
t0 = time.perf_counter()
import cthreads.gpu as g
t1 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import eight
t2 = time.perf_counter()
report = g.prepare()
t3 = time.perf_counter()
ok = [r for r in report.values() if "error" not in r]
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "decorate_ms": 1e3 * (t2 - t1),
                  "prepare_ms": 1e3 * (t3 - t2), "decorate_prepare_ms": 1e3 * (t3 - t1),
                  "kernels": len(report), "errors": len(report) - len(ok),
                  "cache_hits": sum(bool(r.get("cache_hit")) for r in ok),
                  "compile_sum_ms": sum(r.get("compile_ms", 0) for r in ok),
                  "compile_max_ms": max((r.get("compile_ms", 0) for r in ok), default=0),
                  "pipeline_sum_ms": sum(r.get("pipeline_ms", 0) for r in ok),
                  "pipeline_max_ms": max((r.get("pipeline_ms", 0) for r in ok), default=0)}))
"""

# argv: N, offline cache dir or "" (no offline cache)
TAICHI = r"""
import json, sys, time
n, cache = int(sys.argv[1]), sys.argv[2]
t0 = time.perf_counter()
import taichi as ti
t1 = time.perf_counter()
if cache:
    ti.init(arch=ti.vulkan, offline_cache=True, offline_cache_file_path=cache, log_level=ti.WARN)
else:
    ti.init(arch=ti.vulkan, offline_cache=False, log_level=ti.WARN)
x = ti.field(ti.f32, shape=n)
y = ti.field(ti.f32, shape=n)

@ti.kernel
def saxpy(a: ti.f32):
    for i in x:
        y[i] = a * x[i] + y[i]

ti.sync()
t2 = time.perf_counter()
saxpy(2.0)
ti.sync()
t3 = time.perf_counter()
saxpy(2.0)
ti.sync()
t4 = time.perf_counter()
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "init_ms": 1e3 * (t2 - t1),
                  "first_ms": 1e3 * (t3 - t2), "second_ms": 1e3 * (t4 - t3),
                  "arch": str(ti.lang.impl.current_cfg().arch)}))
"""


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


def build_floor(workdir: str) -> str | None:
    exe = os.path.join(workdir, "floor")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    p = subprocess.run(
        [cc, "-O2", "-std=c11", "-o", exe, str(BENCH / "c_floor" / "floor.c"), "-ldl"],
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
    opts = ap.parse_args()

    work = tempfile.mkdtemp(prefix="cthreads-first-")
    try:
        result = measure(work, opts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = markdown(result)
    print(table)
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1))
    if opts.md:
        Path(opts.md).write_text(table)
    return 0


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
                add("taichi_cold", run_child(py(TAICHI, str(N), ""), c.env()))
                add("taichi_warm_1", run_child(py(TAICHI, str(N), f"{c.root}/taichi"), c.env()))
                add("taichi_warm", run_child(py(TAICHI, str(N), f"{c.root}/taichi"), c.env()))
            except ChildFailed as exc:
                taichi = False
                notes.append(f"Taichi skipped: {str(exc).strip().splitlines()[-1][:200]}")
        load.append(loadavg())
        print(f"repeat {rep + 1}/{opts.repeats} done, load {load[-1]}", file=sys.stderr)
    if not floor:
        notes.append("C floor skipped: gcc or the Vulkan headers are missing")
    tops = importtime_top(Caches(work).env())
    summary = {kind: {k: stats(v, k) for k in v[0] if stats(v, k)} for kind, v in samples.items()}
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


# -- the table -------------------------------------------------------------------------------


def markdown(r: dict) -> str:
    s = r["summary"]
    m = r["machine"]

    def get(kind: str, key: str) -> dict | None:
        return s.get(kind, {}).get(key)

    def cell(v: dict | None) -> str:
        return "–" if v is None else f"{v['min']:.1f} / {v['median']:.1f}"

    def med(kind: str, key: str) -> float | None:
        v = get(kind, key)
        return None if v is None else v["median"]

    def add_keys(kind: str, keys: tuple[str, ...]) -> dict | None:
        """min and median of the per-sample sums of keys."""
        rows = r["samples"].get(kind)
        if not rows or any(k not in rows[0] for k in keys):
            return None
        sums = [sum(x[k] for k in keys) for x in rows]
        return {"min": min(sums), "median": statistics.median(sums), "n": len(sums)}

    floor_keys = ("create_instance_ms", "enumerate_ms", "create_device_ms")
    floor = add_keys("floor_cold", floor_keys)
    lines = [
        f"Machine: {m['host']} ({m['cpus']} CPUs), device {m['device']}, Python {m['python']}; "
        f"{m['date']}; `{r['command']}`; {r['repeats']} repeats, each sample a fresh process; "
        f"load average (1/5/15 min) before and after each repeat: {', '.join(map(str, m['loadavg']))}.",
        "",
        "ms, min / median | cold (empty caches) | warm (second process) | floor / target",
        "|---|---:|---:|---:|",
    ]
    lines[-2] = "| " + lines[-2].replace(" | ", " | ") + " |"

    def row(name: str, cold: dict | None, warm: dict | None = None, note: str = "") -> None:
        lines.append(
            f"| {name} | {cell(cold)} | {cell(warm) if warm is not None else ''} | {note} |"
        )

    row("`python -c pass` (interpreter start, child wall)", get("python_start", "child_wall_ms"))
    row("`import numpy` (apart)", get("imports", "numpy_ms"))
    row("`import cthreads` (after numpy)", get("imports", "cthreads_ms"))
    row(
        "`import cthreads.gpu` (after numpy, cthreads)",
        get("imports", "gpu_ms"),
        note="target ≤ 30",
    )
    fl = r["import_flags"]
    row(
        "`import cthreads.gpu` alone",
        get("import_alone", "gpu_alone_ms"),
        note=f"loads numpy: {fl.get('loads_numpy')}, compiler: {fl.get('loads_compiler')}, "
        f"asyncio: {fl.get('loads_asyncio')}; {fl.get('modules')} cthreads modules",
    )
    row(
        "`import cthreads.gpu` alone, environment as given (no bytecode written)",
        get("import_no_bytecode", "gpu_alone_ms"),
        note=f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}",
    )
    row(
        "C floor: vkCreateInstance",
        get("floor_cold", "create_instance_ms"),
        get("floor_warm", "create_instance_ms"),
    )
    row(
        "C floor: vkEnumeratePhysicalDevices + properties",
        get("floor_cold", "enumerate_ms"),
        get("floor_warm", "enumerate_ms"),
    )
    row(
        "C floor: vkCreateDevice (1 queue, no features)",
        get("floor_cold", "create_device_ms"),
        get("floor_warm", "create_device_ms"),
    )
    row("**C floor: instance + enumerate + device**", floor, add_keys("floor_warm", floor_keys))
    row(
        "C floor asking what we ask: vkCreateDevice (our features, extensions)",
        None,
        get("floor_like_warm", "create_device_ms"),
        note="warm column: against the plain floor's vkCreateDevice above",
    )
    row(
        "C floor: vkCreatePipelineCache from our pipeline cache file",
        None,
        get("floor_like_warm", "create_pipeline_cache_ms"),
        note="the file prepare() left",
    )
    d, dw = "device", "device_warm"
    row("ours: instance (loader dlopen included)", get(d, "instance_ms"), get(dw, "instance_ms"))
    row("of which: `_native` + loader dlopen", get(d, "loader_ms"), get(dw, "loader_ms"))
    row("of which: vkCreateInstance", get(d, "create_instance_ms"), get(dw, "create_instance_ms"))
    row("ours: enumerate + describe", get(d, "enumerate_ms"), get(dw, "enumerate_ms"))
    size = get(dw, "cache_file_bytes")
    row(
        "ours: read the pipeline cache file",
        get(d, "cache_file_ms"),
        get(dw, "cache_file_ms"),
        note="" if size is None else f"warm: {size['median'] / 1024:.0f} KiB (8 kernels + saxpy)",
    )
    row(
        "ours: native device (features, queues, rings, lanes, pipeline cache from the file)",
        get(d, "device_ms"),
        get(dw, "device_ms"),
    )
    ours_open, ours_warm = get(d, "open_ms"), get(dw, "open_ms")
    floor_warm = add_keys("floor_warm", floor_keys)
    ratios = [
        f"{kind} {ours['median'] / base['median']:.2f} × floor"
        for kind, ours, base in (("cold", ours_open, floor), ("warm", ours_warm, floor_warm))
        if ours and base
    ]
    row("**ours: device open**", ours_open, ours_warm, note=", ".join(ratios))
    lines.append("| *first dispatch, device open (saxpy, 1024-float lists)* | | | |")
    taichi_cold = med("taichi_cold", "first_ms")
    target = "" if taichi_cold is None else f"target ≤ {0.8 * taichi_cold:.1f} (0.8 × Taichi)"
    row(
        "**first `gpu()` + `join()`, untouched process**",
        get("dispatch_plain_cold", "first_ms"),
        get("dispatch_plain_warm", "first_ms"),
        note="; ".join(filter(None, [target, "warm target ≤ 5"])),
    )
    h, hw = "dispatch_hooks_cold", "dispatch_hooks_warm"
    row("split: compiler import", get(h, "compiler_import_ms"), note="(not imported when warm)")
    for key, name in (
        ("constants_ms", "cache key: module constants (`GpuKernel.constants`)"),
        ("cache_lookup_ms", "kernel cache lookup"),
        ("frontend_ms", "frontend (`lower`)"),
        ("ir_printer_ms", "IR printer (text for error reports)"),
        ("codegen_ms", "codegen"),
        ("validation_ms", "validation (spirv-val in process)"),
        ("cache_store_ms", "kernel cache store"),
        ("compile_ms", "= compile, as launch reports it"),
        ("pipeline_ms", "pipeline creation (`device.pipeline`)"),
        ("submit_ms", "`Device.submit`"),
        ("wait_ms", "`Device.wait` (llvmpipe compiles the shader here)"),
    ):
        row(f"split: {name}", get(h, key), get(hw, key))
    lines.append(
        "| *the whole first `gpu()` call, step by step (outermost steps; they add up)* | | | |"
    )
    for key, name in (
        ("source_key_ms", "source key (first `GpuKernel.source_key`: module values, hash)"),
        ("device_target_ms", "device + compile target (`session._current_device`)"),
        ("compile_step_ms", "compile step (`session._compile_one`: cache module, key, lookup)"),
        ("pipeline_step_ms", "pipeline step (`session._pipeline`)"),
        ("plan_ms", "launch plan (`dispatch.plan_of`)"),
        ("launcher_ms", "C launcher build (`plan.native_launcher`)"),
        ("general_launch_ms", "general launch path (`dispatch._launch`), where taken"),
        ("launch_rest_ms", "rest of the `gpu()` call (checks, copies, submit)"),
        ("join_ms", "`job.join()`"),
    ):
        row(f"step: {name}", get(h, key), get(hw, key))
    mods = [x.get("first_launch_modules") for x in r["samples"].get(hw) or []]
    names = next((x.get("first_launch_module_names") for x in r["samples"].get(hw) or []), None)
    row(
        "of which: imports the first launch makes (inside the steps)",
        get(h, "first_launch_imports_ms"),
        get(hw, "first_launch_imports_ms"),
        note="" if not mods else f"warm: {mods[0]} modules ({', '.join(names or [])})",
    )
    sub_cold = _submit(r["samples"].get(h))
    sub_warm = _submit(r["samples"].get(hw))
    row("split: first submit + join (first − compile − pipeline)", sub_cold, sub_warm)
    row("second `gpu()` + `join()` (same process)", get(h, "second_ms"), get(hw, "second_ms"))
    row(
        "C floor: vkCreateComputePipelines (tiny shader, empty cache)",
        get("floor_cold", "create_pipeline_ms"),
        get("floor_warm", "create_pipeline_ms"),
    )
    row(
        "C floor: vkCreateComputePipelines (our saxpy SPIR-V)",
        get("floor_ours_spv", "create_pipeline_ms"),
    )
    row(
        "C floor: first dispatch + fence wait (tiny shader)",
        get("floor_cold", "first_dispatch_ms"),
        get("floor_warm", "first_dispatch_ms"),
    )
    if "taichi_cold" in s:
        row(
            "Taichi: first kernel call + sync (device open)",
            get("taichi_cold", "first_ms"),
            get("taichi_warm", "first_ms"),
        )
        row(
            "Taichi: import + ti.init",
            add_keys("taichi_cold", ("import_ms", "init_ms")),
            add_keys("taichi_warm", ("import_ms", "init_ms")),
        )
    else:
        row(
            "Taichi: first dispatch",
            None,
            None,
            note="not measured: " + "; ".join(r["notes"]) or "skipped",
        )
    lines.append(
        "| *`prepare()` of bench/prepare_kernels/eight.py, fresh process, device not open* | | | |"
    )
    pc, pw = "prepare_cold", "prepare_warm"
    fmed = floor["median"] if floor else None
    row("import `cthreads.gpu`", get(pc, "import_ms"), get(pw, "import_ms"))
    row("decorate 8 kernels", get(pc, "decorate_ms"), get(pw, "decorate_ms"))
    row(
        "**`prepare()` (opens the device)**",
        get(pc, "prepare_ms"),
        get(pw, "prepare_ms"),
        note=""
        if fmed is None
        else f"targets ≤ {fmed + 60:.1f} cold / ≤ {fmed + 10:.1f} warm (floor + 60 / + 10)",
    )
    row("prepare: sum of kernels' compile", get(pc, "compile_sum_ms"), get(pw, "compile_sum_ms"))
    row("prepare: sum of kernels' pipeline", get(pc, "pipeline_sum_ms"), get(pw, "pipeline_sum_ms"))
    row(
        "child CPU time / wall (whole prepare child)",
        get(pc, "child_cpu_ms"),
        get(pw, "child_cpu_ms"),
        note=_share(r, pc),
    )
    lines.append("")
    lines.append(
        "`-X importtime` of `import cthreads.gpu` after numpy (one process, self time): "
        + ", ".join(f"{t['module']} {t['self_ms']:.1f}" for t in r["importtime"]["top"][:8])
        + f"; total {r['importtime']['total_ms']:.1f} ms, by package: "
        + ", ".join(f"{k} {v:.1f}" for k, v in list(r["importtime"]["by_package_ms"].items())[:8])
        + "."
    )
    for note in r["notes"]:
        lines.append(f"\nNote: {note}")
    return "\n".join(lines) + "\n"


def _submit(rows: list[dict] | None) -> dict | None:
    if not rows or any(k not in rows[0] for k in ("first_ms", "compile_ms", "pipeline_ms")):
        return None
    v = [x["first_ms"] - x["compile_ms"] - x["pipeline_ms"] for x in rows]
    return {"min": min(v), "median": statistics.median(v), "n": len(v)}


def _share(r: dict, kind: str) -> str:
    rows = r["samples"].get(kind) or []
    shares = [x["child_cpu_ms"] / x["child_wall_ms"] for x in rows if x.get("child_wall_ms")]
    return "" if not shares else f"CPU/wall {statistics.median(shares):.2f} (median)"


if __name__ == "__main__":
    raise SystemExit(main())
