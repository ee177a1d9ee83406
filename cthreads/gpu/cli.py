"""`python -m cthreads.gpu`: look at devices, compile a module's kernels, manage the cache.

python -m cthreads.gpu info                      devices, the default, limits, features, cache
python -m cthreads.gpu info --json [PATH]        the default device as a JSON profile
python -m cthreads.gpu compile MODULE.py [--chip CHIP] [--spv DIR] [--spvasm DIR]
python -m cthreads.gpu cache [show]              the cache and the recorded autotune choices
python -m cthreads.gpu cache clear [--autotune]  remove it all (or only the autotune choices)
"""

from __future__ import annotations

import argparse
import json
import runpy
import shutil
import sys
from pathlib import Path

from .. import config
from ..errors import CThreadsGPUError, GpuCompileError


def _dir_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


def cmd_info(opts: argparse.Namespace) -> int:
    from .. import runtime

    if opts.json is not None:
        return _info_json(opts.json)

    try:
        devices = runtime.list_devices()
    except CThreadsGPUError as exc:
        print(f"no Vulkan: {exc}")
        devices = []
    chosen = None
    if devices:
        try:
            chosen = runtime.get_device().info
        except CThreadsGPUError as exc:
            print(f"no usable device: {exc}")
    for info in devices:
        mark = "*" if chosen is not None and info.index == chosen.index else " "
        print(
            f"{mark} [{info.index}] {info.name} ({info.type}), Vulkan {info.api_version}, "
            f"driver {info.driver_name} {info.driver_version}"
            + (f", uuid {info.uuid}" if info.uuid else "")  # (for CTHREADS_VISIBLE_DEVICES)
        )
    if chosen is not None:
        print(
            f"\ndefault device: [{chosen.index}] {chosen.name}"
            + (f" (CTHREADS_DEVICE={config.device_selector()})" if config.device_selector() else "")
        )
        print("limits:")
        for key, value in sorted(chosen.limits.items()):
            print(f"  {key}: {value}")
        heaps = ", ".join(
            f"{h['size'] / 2**30:.1f} GiB{' device-local' if h.get('device_local') else ''}"
            for h in chosen.memory_heaps
        )
        print(f"memory heaps: {heaps}")
        print(
            "features: "
            + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in sorted(chosen.features.items()))
        )
    root = config.cache_dir()
    count, size = _dir_size(root)
    print(f"\ncache: {root} ({count} files, {size / 1024:.1f} KiB)")
    return 0 if chosen is not None else 1


def _info_json(dest: str) -> int:
    """The default device as a profile (`kernel.compile(chip=PATH)` reads it back): on stdout
    for `-`, else written to `dest`."""
    from .chip import present_profile

    try:
        present = present_profile()
    except CThreadsGPUError as exc:  # e.g. a CTHREADS_DEVICE that names no device
        present, why = None, str(exc)
    else:
        why = "no usable Vulkan device (see `python -m cthreads.gpu info`)"
    if present is None:
        print(f"info --json: {why}", file=sys.stderr)
        return 1
    name, profile = present
    text = json.dumps(profile, indent=2) + "\n"
    if dest == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(dest).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"info --json: cannot write {dest}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote the profile of {name} to {dest}")
    return 0


def cmd_compile(opts: argparse.Namespace) -> int:
    from ..compiler import profiles
    from .kernel import registered_kernels

    if opts.chip is not None:
        try:
            profiles.load(opts.chip)  # a bad --chip is one message, not one per kernel
        except CThreadsGPUError as exc:
            print(f"--chip: {exc}", file=sys.stderr)
            return 2
    before = {id(k) for k in registered_kernels()}
    runpy.run_path(opts.module, run_name="__cthreads_compile__")
    kernels = [k for k in registered_kernels() if id(k) not in before]
    if not kernels:
        print(f"{opts.module}: no @Gpu kernels found")
        return 1
    failures = 0
    for kernel in kernels:
        try:
            build = kernel.compile(chip=opts.chip)
        except GpuCompileError as exc:
            failures += 1
            print(f"{kernel.name}: does not compile\n{exc}\n", file=sys.stderr)
            continue
        print(
            f"{kernel.name}: {len(build.spirv)} bytes of SPIR-V for {build.chip}, "
            f"cache key {build.cache_key}"
        )
        print("  " + json.dumps(build.contract))
        for folder, suffix in ((opts.spv, ".spv"), (opts.spvasm, ".spvasm")):
            if folder:
                out = Path(folder)
                out.mkdir(parents=True, exist_ok=True)
                path = out / f"{kernel.name}{suffix}"
                if suffix == ".spv":
                    path.write_bytes(build.spirv)
                else:
                    path.write_text(build.asm)
                print(f"  wrote {path}")
    return 1 if failures else 0


def cmd_cache(opts: argparse.Namespace) -> int:
    from . import tuned

    root = config.cache_dir()
    count, size = _dir_size(root)
    if opts.action == "clear":
        if opts.autotune:
            removed = tuned.clear()
            print(f"removed {removed} autotune record(s) from {tuned.folder()}")
            return 0
        if root.exists():
            shutil.rmtree(root)
        print(f"removed {count} files ({size / 1024:.1f} KiB) from {root}")
        return 0
    print(f"{root}: {count} files, {size / 1024:.1f} KiB")
    records = tuned.records()
    if records:
        print(f"autotune choices ({tuned.folder()}):")
    for record in records:
        print(f"  {record.get('kernel')} on {record.get('device')}")
        for key, entry in sorted(record.get("choices", {}).items()):
            choice = ", ".join(f"{k}={v}" for k, v in entry.get("choice", {}).items())
            print(f"    {key or '(no key)'}: {choice} (tuned in {entry.get('tuning_ms')} ms)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cthreads.gpu", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="devices, the default device, limits, features, cache")
    info.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="print the default device as a JSON profile (or write it to PATH), for "
        "`kernel.compile(chip=PATH)` and `compile --chip PATH` on other machines",
    )
    comp = sub.add_parser(
        "compile", help="compile every @Gpu kernel of a module and print its contract"
    )
    comp.add_argument("module", help="path of a Python file defining @Gpu kernels")
    comp.add_argument(
        "--chip",
        metavar="CHIP",
        help="compile for a shipped profile (lavapipe, nvidia-h200, portable) or a JSON profile "
        "written by `info --json` (default: the present device, else portable)",
    )
    comp.add_argument("--spv", metavar="DIR", help="write each kernel's SPIR-V here")
    comp.add_argument("--spvasm", metavar="DIR", help="write each kernel's disassembly here")
    cache = sub.add_parser(
        "cache", help="show or clear the on-disk cache (kernels, pipelines, autotune choices)"
    )
    cache.add_argument("action", nargs="?", default="show", choices=["clear", "show"])
    cache.add_argument(
        "--autotune",
        action="store_true",
        help="with clear: remove only the recorded autotune choices",
    )
    opts = parser.parse_args(argv)
    handler = {"info": cmd_info, "compile": cmd_compile, "cache": cmd_cache}[opts.command]
    return handler(opts)
