"""The children bench/first_result.py starts, one fresh interpreter each (`python -c CODE`):
imports, the device open split, the first dispatch (plain, or split by timers set on the
launch's and the compiler's functions), prepare() of the eight kernels, Taichi's first dispatch.
Each prints one JSON object as its last line.
"""

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
import gc, json, sys, time
kernels, n, mode, spv_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
T = {}
collections = []  # [start, end] of each garbage collection of this process (any thread)

def _collecting(phase, info, now=time.perf_counter):
    if phase == "start":
        collections.append([now(), None])
    elif collections:
        collections[-1][1] = now()

gc.callbacks.append(_collecting)
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
    import functools, importlib, importlib.abc, threading
    t0 = time.perf_counter()
    for name in () if mode == "hooks-warm" else ("cthreads.compiler.compile", "cthreads.compiler.frontend",
                 "cthreads.compiler.printer", "cthreads.compiler.spirv.tools"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    T["compiler_import_ms"] = 1e3 * (time.perf_counter() - t0)

    main = threading.main_thread()

    def timer(fn, label):
        @functools.wraps(fn)
        def timed(*a, **k):
            if threading.current_thread() is not main:
                return fn(*a, **k)  # (the vector form built behind the launch: not its time)
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
c0 = time.thread_time()  # (this thread's CPU time: what the machine's other load changes least)
t0 = time.perf_counter()
job = g.gpu(eight.saxpy, n, 2.0, x, y)
t1 = time.perf_counter()
in_launch = sum(top.values())  # the outermost steps inside the gpu() call (not the join)
job.join()
t2 = time.perf_counter()
T["first_thread_cpu_ms"] = 1e3 * (time.thread_time() - c0)
# the collections inside the first call (issue 19: a young-generation collection of what the
# imports left, ~1.3 ms on lavapipe, fell there until the device open's thread did it)
T["first_gc_ms"] = 1e3 * sum(e - s for s, e in collections if e is not None and t0 <= s and e <= t2)
try:  # what the first launch ran (a GPU's vector form may replace it a little later)
    from cthreads.launch import session
    first_prep = session.state.prepared[eight.saxpy.source_key]
    T["first_form_elements"] = first_prep.compiled.elements_per_invocation
except (ImportError, AttributeError, KeyError):
    first_prep = None
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
    T.update(compile_ms=first_prep.info["compile_ms"], pipeline_ms=first_prep.info["pipeline_ms"],
             cache_hit=first_prep.info["cache_hit"])
    session.wait_for_vector_forms()  # (the SPIR-V written below is the form later launches run)
    prep = session.state.prepared[eight.saxpy.source_key]
    T["final_form_elements"] = prep.compiled.elements_per_invocation
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
