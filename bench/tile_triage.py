"""Triage of matmul_tiles.py's `wide` kernel: which part holds it at ~0.24x torch.matmul.

    python3 bench/tile_triage.py [--size 4096] [--dtype f16|bf16] [--launches 10] [--json out]
    python3 bench/tile_triage.py --spirv-stats [--dtype f16]   # no device: H200 profile SPIR-V

Four kernels of `wide`'s shape (workgroup 256 = 2 x 4 subgroups, 4 x 4 accumulators of 16 x 16
each, block 128 x 256, BK 32, u64 words, padded shared rows), written from
matmul_tiles_kernel.py's own generator pieces, each isolating one part of the K loop:

- `mma_only`: the shared blocks filled once, the a and b fragments loaded once before the K
  loop; the loop does only the multiply-adds (as many per workgroup as `full`): the peak our
  SPIR-V reaches for the MMAs themselves.
- `shared_mma`: the shared blocks filled once; every K step loads its fragments from shared
  memory and multiplies (wide's own inner loop), with no global copies and no barriers in the
  loop: MMAs plus fragment loads and their bounds guards. One store a step into a padding word
  of shared memory keeps the driver from hoisting the then loop-invariant loads.
- `copy_only`: the global loads into registers, their stores to shared memory and both
  barriers of every K step, no fragment loads or MMAs: the staging alone (one word of each
  block read a step, so that the driver keeps the stores and with them the loads).
- `full`: `wide` as matmul_tiles.py runs it, checked against numpy at --check-size.

Each line gives the median device time of --launches timed launches and 2 M N K / time as
TFLOP/s ("equivalent" for the partial kernels, whose results mean nothing and are not checked),
the ratio to torch.matmul where torch and CUDA exist, and the driver's register, stack and
shared-memory figures where it reports them (they set how many workgroups share an SM: a
partial kernel with fewer registers may run more of them than `full`, and look better for it).
Reading them: `mma_only` is the ceiling of our SPIR-V's MMA issue; `shared_mma` below it is the
fragment loads' (and their guards') cost; `copy_only` (nothing to hide its global-load latency
behind) bounds the staging; `full` well below the slower of `shared_mma` and `copy_only` means
the two do not overlap (wide's 190 registers a invocation leave one workgroup an SM, so each
of its two barriers a K step drains the SM's MMA pipes).

--spirv-stats compiles the four for the shipped `nvidia-h200` profile, validates them with
spirv-val and counts instructions in the K loop (the outermost loop holding MMAs or barriers)
and in its innermost loop: MMAs, tile loads, loads/stores by storage class, bounds-guard
compares, selects, branches, barriers, and the memory operands on shared accesses.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the siblings
import matmul_tiles_kernel as mtk  # noqa: E402

from cthreads.compiler.spirv import grammar, tools  # noqa: E402

BASE = "wide"


# -- the kernels ---------------------------------------------------------------------------------
def _texts(dtype: str) -> tuple[dict[str, str], mtk.Built]:
    """Module text of each triage kernel for `dtype`, and the block sizes (those of `wide`)."""
    text, built = mtk.kernel_text(dtype, BASE)
    v = mtk.VARIANTS[BASE]
    tile, _, acc, _, size = mtk.TYPES[dtype]
    # wide's module up to its body: imports, constants, shared arrays, block indices
    head = text[: text.index("    acc00 = tile_fill")]
    epw = 8 // size  # elements per u64 word
    pa, pb = built.bm * built.bk // epw // built.wg, built.bk * built.bn // epw // built.wg
    fill = [f"acc{i}{j} = tile_fill({acc}, 16, 16)" for i in range(v.ra) for j in range(v.rb)]
    first = mtk._copy("", "", "", v.by16) + ["__sync_threads()"]  # the first block, once
    tiles = mtk._tiles(v, tile, "")  # one TK slice from shared: bases, fragment loads, MMAs
    mmas = [line for line in tiles if line.startswith("acc")]
    frags = [line for line in tiles if not line.startswith("acc")]
    # wide's tail: the offset o of the subgroup's part of C, the accumulator stores
    stores = [line[4:] for line in text[text.index("    o = (bm + wr)") :].splitlines()]
    ks_loop = "for ks in range(0, BK, TK):"
    bodies = {
        # ks = 0 names the first slice for the fragment loads; the K loop keeps wide's ks loop
        "mma_only": fill
        + first
        + ["ks = 0"]
        + frags
        + mtk._block("for kk in range(0, k, BK):", mtk._block(ks_loop, mmas))
        + stores,
        # wide's own ks loop, and one store a step into a padding word of sa (words KW.., which
        # no copy writes and no tile reads): with no store or barrier in the loop the driver
        # could hoist the loop-invariant fragment loads out of it, leaving mma_only
        "shared_mma": fill
        + first
        + mtk._block(
            "for kk in range(0, k, BK):",
            ["sa[(t % BM) * LDA + KW] = u64(kk)"] + mtk._block(ks_loop, tiles),
        )
        + stores,
        # chk reads one word of each block a step, and a store depends on it: shared arrays
        # that are only written are dead to the driver, and with them the global loads
        "copy_only": fill
        + [f"x{i}: u64 = 0" for i in range(pa)]
        + [f"y{i}: u64 = 0" for i in range(pb)]
        + ["chk: u64 = 0"]
        + first
        + mtk._block(
            "for kk in range(0, k, BK):",
            ["chk = chk ^ sa[((t + 1) % BM) * LDA] ^ sb[((t + 1) % BK) * LDB]"]
            + mtk._prefetch(pa, pb)
            + ["__sync_threads()"]  # wide's first barrier (one buffer: reads done)
            + mtk._block("if kk + BK < k:", mtk._unload(pa, pb, "", ""))
            + ["__sync_threads()"],
        )
        + mtk._block("if chk == 1:", ["c[bm * n + bn] = 1.0"])
        + stores,
    }
    texts = {
        name: head + "".join(f"    {line}\n" for line in body) for name, body in bodies.items()
    }
    texts["full"] = text
    return texts, built


def kernels(dtype: str) -> tuple[dict[str, object], mtk.Built]:
    """The four kernels for `dtype` (each written to a module: the compiler reads source)."""
    texts, built = _texts(dtype)
    out = {}
    for name, text in texts.items():
        path = mtk._GEN_DIR / f"tile_triage_{dtype}_{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out[name] = mod.mm
    return out, built


# -- --spirv-stats: the H200 module, without a device --------------------------------------------
_INSTR = re.compile(r"^\s*(?:(%\S+) = )?(Op\w+)\s*(.*)$")
_COMPARES = {
    "OpULessThan", "OpSLessThan", "OpULessThanEqual", "OpSLessThanEqual", "OpUGreaterThan",
    "OpSGreaterThan", "OpUGreaterThanEqual", "OpSGreaterThanEqual", "OpIEqual", "OpINotEqual",
}  # fmt: skip
_DIVS = {"OpSDiv", "OpUDiv", "OpSMod", "OpUMod", "OpSRem"}
_CONVERTS = {"OpUConvert", "OpSConvert", "OpFConvert", "OpBitcast", "OpConvertUToF"}


def _flags(value: int, enum: type) -> str:
    """The names of the bits set in `value`, of a bit enum of grammar.py."""
    bits = {n: b for n, b in vars(enum).items() if isinstance(b, int) and not n.endswith("KHR")}
    return "|".join(n for n, b in bits.items() if value & b)


def _parse(asm: str):
    """(blocks: label -> instructions, block order, id -> type id, pointer type -> storage
    class, id -> integer constant) of a disassembly."""
    blocks, order, types, storage, consts, label = {}, [], {}, {}, {}, None
    for line in asm.splitlines():
        m = _INSTR.match(line)
        if not m:
            continue
        rid, op, rest = m.groups()
        args = rest.split()
        if op == "OpTypePointer":
            storage[rid] = args[0]
        elif op == "OpConstant" and args[1].lstrip("-").isdigit():
            consts[rid] = int(args[1])
        elif rid and args and args[0].startswith("%"):
            types[rid] = args[0]
        if op == "OpLabel":
            label = rid
            blocks[label], _ = [], order.append(label)
        elif label is not None:
            blocks[label].append((op, args))
            if op == "OpFunctionEnd":
                label = None
    return blocks, order, types, storage, consts


def _loops(blocks: dict) -> dict[str, set[str]]:
    """Each loop header -> the blocks of its loop (reached from the header without passing its
    merge block or re-entering the header)."""
    succ = {
        b: [a for op, args in ins if op.startswith("OpBranch") or op == "OpSwitch" for a in args]
        for b, ins in blocks.items()
    }
    loops = {}
    for head, ins in blocks.items():
        merge = next((args[0] for op, args in ins if op == "OpLoopMerge"), None)
        if merge is None:
            continue
        seen, todo = {head}, [head]
        while todo:
            for s in succ[todo.pop()]:
                if s in blocks and s not in seen and s != merge:
                    seen.add(s)
                    todo.append(s)
        loops[head] = seen
    return loops


def region_stats(asm: str) -> dict[str, dict]:
    """Instruction counts of the K loop and of its innermost loop (static: a loop body that runs
    BK / TK times a step is counted once)."""
    blocks, order, types, storage, consts = _parse(asm)
    loops = _loops(blocks)

    def has(body: set[str], ops: set[str]) -> bool:
        return any(op in ops for b in body for op, _ in blocks[b])

    tops = [h for h in loops if not any(h in body for g, body in loops.items() if g != h)]
    key_ops = {"OpCooperativeMatrixMulAddKHR", "OpControlBarrier"}
    k_loop = max((h for h in tops if has(loops[h], key_ops)), key=order.index)
    inner = [h for h in loops if h in loops[k_loop] and h != k_loop]
    regions = {"K loop": loops[k_loop]}
    if inner:
        regions["inner loop"] = loops[inner[-1]]

    def where(ptr: str) -> str:
        return storage.get(types.get(ptr, ""), "?")

    out = {}
    for name, body in regions.items():
        n, flags, barriers = Counter(), Counter(), Counter()
        for b in body:
            for op, args in blocks[b]:
                n[op] += 1
                # the pointer operand, and how many operands come before the memory operands
                at = {
                    "OpLoad": (1, 2),
                    "OpStore": (0, 2),
                    "OpCooperativeMatrixLoadKHR": (1, 4),
                    "OpCooperativeMatrixStoreKHR": (0, 4),
                }.get(op)
                if at:
                    sc = where(args[at[0]])
                    n[f"{op}[{sc}]"] += 1
                    if sc == "Workgroup":
                        memop = " ".join(a for a in args[at[1] :] if not a.startswith("%"))
                        flags[f"{op}: {memop or 'none'}"] += 1
                if op in ("OpControlBarrier", "OpMemoryBarrier"):
                    sem = consts.get(args[-1], -1)
                    barriers[f"{op} {_flags(sem, grammar.MemorySemantics)} ({sem})"] += 1
        total = sum(v for k, v in n.items() if "[" not in k)  # without the by-class keys
        fn = n["OpLoad[Function]"] + n["OpStore[Function]"]
        out[name] = {
            "blocks": len(body),
            "instr": total,
            "instr_no_fn": total - fn,
            "mma": n["OpCooperativeMatrixMulAddKHR"],
            "tile_ld": n["OpCooperativeMatrixLoadKHR"],
            "ld_glob": n["OpLoad[PhysicalStorageBuffer]"],
            "ld_shr": n["OpLoad[Workgroup]"],
            "st_shr": n["OpStore[Workgroup]"],
            "ldst_fn": fn,
            "select": n["OpSelect"],
            "br_cond": n["OpBranchConditional"],
            "compare": sum(n[o] for o in _COMPARES),
            "and": n["OpLogicalAnd"],
            "div_mod": sum(n[o] for o in _DIVS),
            "convert": sum(n[o] for o in _CONVERTS),
            "barriers": dict(barriers),
            "shared_operands": dict(flags),
        }
    return out


def spirv_stats(dtype: str) -> list[dict]:
    """Compile, validate and count each kernel for the H200 profile; print a table."""
    built, _ = kernels(dtype)
    print(f"# {dtype}, chip nvidia-h200, spirv-val {tools.newer_tool('spirv-val')}")
    print("# static counts: the inner (ks) loop body runs BK/TK = 2 times a K step, counted once;")
    print("# instr_no_fn leaves out loads/stores of Function variables (the driver's mem2reg)")
    rows, cols = [], None
    for name, k in built.items():
        build = k.compile(chip="nvidia-h200")
        tools.validate(build.spirv)  # raises on failure (ValidationDeferred without the tools)
        stats = region_stats(build.asm)
        rows.append({"kernel": name, "dtype": dtype, "spirv_bytes": len(build.spirv), **stats})
        for region, st in stats.items():
            if cols is None:
                cols = [c for c, v in st.items() if isinstance(v, int)]
                print(f"{'kernel':10} {'region':10} " + " ".join(f"{c:>7}" for c in cols))
            print(f"{name:10} {region:10} " + " ".join(f"{st[c]:7}" for c in cols))
        print(f"{'':10} spirv-val ok, {len(build.spirv)} bytes")
        k_loop = stats["K loop"]
        for what in ("barriers", "shared_operands"):
            for key, count in k_loop[what].items():
                print(f"{'':10} K loop {what}: {count} x {key}")
    return rows


# -- the device run ------------------------------------------------------------------------------
def _time(k, args, grid: int, launches: int) -> tuple[float, str]:
    """(median ms per launch, "device" timestamps or "wall" where the driver gives none)."""
    from cthreads.gpu import gpu

    gpu(k, *args, grid=grid).join(download=False)  # warm: pipeline built, buffers resident
    dev, wall = [], []
    for _ in range(launches):
        t0 = time.perf_counter()
        job = gpu(k, *args, grid=grid, timed=True)
        job.join(download=False)
        wall.append((time.perf_counter() - t0) * 1e3)
        if job.elapsed_ms:
            dev.append(job.elapsed_ms)
    return (statistics.median(dev), "device") if dev else (statistics.median(wall), "wall")


def _regs(k) -> dict:
    """The driver's register and spill figures for `k`'s pipeline (names as it spells them)."""
    from cthreads.gpu import pipeline_statistics

    found = {}
    for exe in pipeline_statistics(k) or []:
        for name, value in exe.as_dict().items():
            # NVIDIA: Register Count, Stack Size, Shared Memory Size (they set the occupancy;
            # its Local Memory Size reads 2**36 whatever the kernel)
            if re.search(r"regist|spill|stack|shared|scratch", name, re.I):
                found[name] = value
    return found


def _check(full, built: mtk.Built, dtype: str, s: int) -> dict:
    """`full` at s x s x s against numpy, with matmul_tiles.py's tolerance."""
    from matmul_tiles import _inputs, _numpy, as_words

    from cthreads.gpu import GpuArena

    ka, kb, va, vb = _inputs(s, dtype)
    ref, bound = _numpy(va, vb, dtype)
    c = np.zeros((s, s), np.float32)
    wa, wb = as_words(ka, BASE), as_words(kb, BASE)
    with GpuArena() as arena:
        arena.bind(a=wa, b=wb, c=c)
        grid = (s // built.bm) * (s // built.bn) * built.wg
        _time(full, (wa, wb, c, s, s, s), grid, 1)
        arena.sync("c")
    err, tol = float(np.abs(c - ref).max()), s * 2.0**-23 * bound
    return {"check_size": s, "max_abs_error": err, "tolerance": tol, "ok": err <= tol}


def bench(s: int, dtype: str, launches: int, check_size: int) -> list[dict]:
    """Time the four kernels at s x s x s (one arena: the inputs uploaded once), print a line
    each, then check `full` at check_size."""
    from matmul_tiles import _NEEDS, _inputs, _torch, as_words

    from cthreads.gpu import GpuArena, device_name, matrix_shapes

    print(f"# {device_name()}, {dtype}, M=N=K={s}, median of {launches} launches", flush=True)
    if _NEEDS[dtype] not in {tuple(x) for x in matrix_shapes()}:
        print(f"# no {_NEEDS[dtype]} multiply-add on this device: nothing to measure")
        return []
    built_k, built = kernels(dtype)
    print("# partial kernels (all but full) compute nothing meaningful: not checked")
    ka, kb, va, vb = _inputs(s, dtype)
    t_ms = _torch(va, vb, dtype, launches)[0]
    wa, wb = as_words(ka, BASE), as_words(kb, BASE)
    c = np.zeros((s, s), np.float32)
    grid = (s // built.bm) * (s // built.bn) * built.wg
    rows = []
    with GpuArena() as arena:
        arena.bind(a=wa, b=wb, c=c)
        for name, k in built_k.items():
            ms, clock = _time(k, (wa, wb, c, s, s, s), grid, launches)
            row = {"kernel": name, "dtype": dtype, "m": s, "ms": ms, "clock": clock}
            row.update(TFLOPs=2.0 * s**3 / ms / 1e9, driver=_regs(k))
            if t_ms:
                row.update(torch_ms=t_ms, over_torch=t_ms / ms)
            rows.append(row)
            line = f"{name:10} {ms:8.3f} ms ({clock})  {row['TFLOPs']:6.1f} TFLOP/s"
            line += "" if name == "full" else " (equivalent, unchecked)"
            if t_ms:
                line += f"  {row['over_torch']:.2f}x torch ({t_ms:.3f} ms)"
            line += "".join(f"  {key}={value}" for key, value in row["driver"].items())
            print(line, flush=True)
    rows[-1].update(_check(built_k["full"], built, dtype, check_size))
    ok, err, tol = rows[-1]["ok"], rows[-1]["max_abs_error"], rows[-1]["tolerance"]
    verdict = "ok" if ok else "FAILED"
    print(
        f"# full at {check_size}^3 against numpy: {verdict} (max error {err:.3g}, tolerance {tol:.3g})"
    )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--check-size", type=int, default=512, help="full's numpy check (256k)")
    ap.add_argument("--json")
    ap.add_argument("--spirv-stats", action="store_true", help="no device: SPIR-V counts")
    opts = ap.parse_args()
    _, built = _texts(opts.dtype)
    for what, s in (("--size", opts.size), ("--check-size", opts.check_size)):
        if s % built.bm or s % built.bn or s % built.bk:
            ap.error(f"{what} must be a multiple of {built.bm}, {built.bn} and {built.bk}")
    if opts.spirv_stats:
        rows = spirv_stats(opts.dtype)
    else:
        rows = bench(opts.size, opts.dtype, opts.launches, opts.check_size)
    if opts.json:
        Path(opts.json).write_text(json.dumps({"rows": rows}, indent=1))
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
