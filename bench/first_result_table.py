"""The markdown table of a bench/first_result.py run (its JSON result -> the rows of
docs/performance.md's "Time to first result" section)."""

from __future__ import annotations

import os
import statistics


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
        "C floor: vkCreateComputePipelines (our saxpy SPIR-V, scalar form only)",
        get("floor_ours_spv_scalar", "create_pipeline_ms"),
    )
    row(
        "first `gpu()` + `join()`, scalar form only (`CTHREADS_NO_VECTORIZE=1`)",
        get("dispatch_scalar_cold", "first_ms"),
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


# the split warm child's steps (first_result_children.DISPATCH "hooks-warm"), in launch order
WARM_STEPS = (
    ("first_launch_imports_ms", "of it, imports the first launch makes (inside the steps below)"),
    ("source_key_ms", "source key (`GpuKernel.source_key`)"),
    ("device_target_ms", "device + compile target (`session._current_device`)"),
    ("compile_step_ms", "kernel from the disk cache (`session._compile_one`)"),
    ("cache_lookup_ms", "of it, `KernelCache.get` (key, read, checksum, decode)"),
    ("pipeline_step_ms", "pipeline creation (the driver; `session._pipeline`)"),
    ("plan_ms", "launch plan (`plan_of`)"),
    ("launcher_ms", "C launcher (`native_launcher`)"),
    ("general_launch_ms", "general launch (argument checks, buffers, submit)"),
    ("launch_rest_ms", "rest of the `gpu()` call"),
    ("join_ms", "`join()` (the device runs it; `Device.wait`)"),
)


def warm_markdown(r: dict) -> str:
    """The table of a `--warm-only` run: the warm first dispatch and its split."""
    s, m = r["summary"], r["machine"]

    def cell(kind: str, key: str) -> str:
        v = s.get(kind, {}).get(key)
        return "–" if v is None else f"{v['min']:.2f} / {v['median']:.2f}"

    plain, split = "dispatch_plain_warm", "dispatch_hooks_warm"
    names = (r["samples"].get(split) or [{}])[0].get("first_launch_module_names", [])
    lines = [
        f"Machine: {m['host']} ({m['cpus']} CPUs), Python {m['python']}; {m['date']}; "
        f"`{r['command']}`; {r['repeats']} repeats; load average before and after each "
        f"repeat: {', '.join(map(str, m['loadavg']))}.",
        "",
        "| warm first dispatch, device open, ms | min / median |",
        "|---|---:|",
        f"| **first `gpu()` + `join()`** (target ≤ 5) | **{cell(plain, 'first_ms')}** |",
        f"| the same, main thread's CPU time | {cell(plain, 'first_thread_cpu_ms')} |",
        f"| garbage collection inside the first call (any thread) | {cell(plain, 'first_gc_ms')} |",
        f"| the same, in the split process | {cell(split, 'first_ms')} |",
        f"| `gpu()` call | {cell(split, 'launch_ms')} |",
    ]
    lines += [f"| {label} | {cell(split, key)} |" for key, label in WARM_STEPS]
    lines.append(f"| second `gpu()` + `join()` | {cell(plain, 'second_ms')} |")
    lines += ["", f"Modules the first launch imports: {', '.join(names) or 'none'}."]
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
