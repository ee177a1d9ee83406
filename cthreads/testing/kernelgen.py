"""Hypothesis strategies that write random `@Gpu` kernels as source text, with arguments.

Kernels cover the whole language: typed int/float/bool expression trees (every operator, math
function, cast and conditional expression), list reads at `i`, `i +- k` and computed indices,
if/elif/else, bounded while loops, for-range with varied and runtime steps, break / continue /
early return, and (sometimes) a workgroup barrier, then sometimes with a shared float array read
across invocations and order-independent int atomics (add/min/max/and/or/xor) on a shared array.
A fraction of kernels gets a feature section (kernelgen_features.py): subgroup operations in
uniform control flow, a 2-D or 3-D grid over an input of that shape, or f64/i64/u32 locals,
casts, lists and f64 math (fabs, fma, floor/ceil/trunc, isnan/isinf/isfinite, a final sqrt),
or the narrow types f16/u64/i8/u8/i16/u16 (kernelgen_types.py: parameters, lists, wrapping
arithmetic, promotions and casts, f16 math, subgroup operations, stores).
Choices that keep results well defined on
every conformant device are documented in docs/reliability.md ("What the generator avoids").

This module owns the kernel's layout and its arguments: `kernel_cases` (locals, barrier phases,
shared arrays, outputs, decorator, input values), `KernelCase` and `load_kernel`; the expressions
and statements come from kernelgen_writer.py (`Writer`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from . import kernelgen_features as F
from . import kernelgen_types as NT
from .kernelgen_avoid import AVOID, KNOWN_DEVIATIONS, avoid_known_deviations  # noqa: F401
from .kernelgen_avoid import not_zero_constant as _not_zero_literal
from .kernelgen_writer import TYPE_NAMES, Writer

SIGNATURE = (
    "n: int, a: float, k: int, xs: list[float], ks: list[int], fs: list[bool], "
    "out_f: list[float], out_i: list[int], out_b: list[bool]"
)
OUTPUTS = ("out_f", "out_i", "out_b")
_HEADER = (
    "import math\nfrom cthreads.gpu import GlobalIdx, ThreadIdx, BlockIdx, BlockDim, Gpu\n"
    "from cthreads.gpu import shared, atomic_add, atomic_min, atomic_max, atomic_and, atomic_or, "
    "atomic_xor\nfrom cthreads.gpu import subgroup_add, subgroup_min, subgroup_max, "
    "subgroup_inclusive_add, subgroup_exclusive_add, subgroup_broadcast, subgroup_broadcast_first, "
    "subgroup_ballot, subgroup_elect, subgroup_all, subgroup_any, subgroup_shuffle, "
    "subgroup_shuffle_xor, subgroup_size, subgroup_lane, subgroup_id, f64, i64, u32, "
    "f16, u64, i8, u8, i16, u16\n"
    "from cthreads.sync import __sync_threads\n\n\n"
)
# feature sections (kernelgen_features.py), each in this fraction of kernels
FEATURES = (
    ("base",) * 9
    + ("subgroup",) * 3
    + ("grid",) * 2
    + ("grid3",)
    + ("types",) * 3
    + ("narrow",) * 2
)
# int atomics whose final value does not depend on the order invocations reach them
_ORDER_FREE_ATOMICS = ("add", "min", "max", "and", "or", "xor")


@dataclass
class KernelCase:
    """A generated kernel: its module source and the arguments to launch it with."""

    source: str
    args: tuple
    wg: int = 64
    grid: tuple | None = None  # passed as grid= to gpu() and emulate()
    signature: str = SIGNATURE
    rules: dict = field(default_factory=dict)  # list -> comparison rule (differential.py)

    def fresh_args(self) -> tuple:
        return tuple(
            list(v) if isinstance(v, list) else v.copy() if isinstance(v, np.ndarray) else v
            for v in self.args
        )

    def load(self):
        """Import the source as a module (so inspect.getsource works) and return the kernel."""
        return load_kernel(self.source)

    def __repr__(self) -> str:
        names = [p.split(":")[0].strip() for p in self.signature.split(", ")]
        shown = ",\n    ".join(f"{n}={v!r}" for n, v in zip(names, self.args))
        return f"KernelCase(wg={self.wg}, grid={self.grid}):\n{self.source}\nargs:\n    {shown}\n"


_tmpdir: tempfile.TemporaryDirectory | None = None


def load_kernel(source: str):
    """Write `source` to a temporary module file, import it, return its `kern`."""
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = tempfile.TemporaryDirectory(prefix="cthreads-fuzz-")
    name = "ct_fuzz_" + hashlib.sha1(source.encode()).hexdigest()[:16]
    if name in sys.modules:
        return sys.modules[name].kern
    path = Path(_tmpdir.name) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.kern


def _values(rng: random.Random, kind: str, count: int, wide: bool) -> list:
    if kind == "f":
        out = []
        for _ in range(count):
            r = rng.random()
            if r < 0.7:
                out.append(rng.randint(-40, 40) / 4)
            elif r < 0.95 or not wide:  # float32 values: what the device holds
                out.append(float(np.float32(rng.uniform(-1000, 1000))))
            else:
                out.append(
                    float(np.float32(rng.choice([0.0, -0.0, 1e-3, 3e38, -3e38, 1e-30, 65504.0])))
                )
        return out
    if kind == "i":
        return [
            rng.randint(-20, 20)
            if not wide or rng.random() < 0.8
            else rng.randint(-(2**31), 2**31 - 1)
            for _ in range(count)
        ]
    return [rng.random() < 0.5 for _ in range(count)]


@st.composite
def kernel_cases(draw, max_n: int = 130, features: tuple = FEATURES) -> KernelCase:
    """One random kernel plus arguments for SIGNATURE (extended by the feature's parameters);
    `features`: the feature sections to draw from (FEATURES; a test may ask for one)."""
    feature = draw(st.sampled_from(features))
    dims = {"grid": 2, "grid3": 3}.get(feature, 1)
    barrier = feature == "base" and draw(st.integers(0, 99)) < 15
    wg = draw(st.sampled_from([64, 64, 32, 16])) if barrier else 64
    w = Writer(draw)
    body_lines = []
    # Locals come into scope one by one, so no initializer reads an unassigned name.
    w.ints, w.floats, w.bools = ["i", "n", "k"], ["a"], []
    if dims > 1:  # one invocation per cell of a 2-D or 3-D input xs
        decls, grid_ints, guard = F.grid_decls(dims)
        w.ints += grid_ints
    else:
        decls = ["    i: int = GlobalIdx.x"]
    for name, t, depth in (
        ("c0", "i", 2),
        ("c1", "i", 1),
        ("f0", "f", 2),
        ("f1", "f", 1),
        ("b0", "b", 1),
    ):
        init = w.expr(t, depth)
        if t == "f" and "zeromul" in AVOID:  # a local the compiler knows is 0.0 (#10, #16)
            init = _not_zero_literal(init)
        decls.append(f"    {name}: {TYPE_NAMES[t]} = {init}")
        {"i": w.ints, "f": w.floats, "b": w.bools}[t].append(name)
    counters_at = len(decls)
    extra = {}
    if feature == "subgroup":
        extra = F.subgroup_section(w, draw, st, AVOID)
        decls[1:1] = extra["decls"]
        counters_at += len(extra["decls"])
    elif feature == "types":
        extra = F.typed_section(w, draw, st, AVOID)
    elif feature == "narrow":
        extra = NT.narrow_section(w, draw, st, AVOID)
    if dims > 1:
        body_lines += [guard, "        return"]
    elif draw(st.booleans()):
        body_lines.append("    if i >= n:")
    use_shared = barrier and draw(st.booleans())
    if use_shared:  # workgroup memory: a float per invocation and 4 int atomic accumulators
        decls.insert(1, "    sh = shared(float, BlockDim.x)")
        decls.insert(2, "    acc = shared(int, 4)")
    prelude, w.lines = w.lines, []
    if barrier:
        w.no_return, w.can_write_out_f = True, True
        w.block(1, 3, 1)
        w.emit(1, f"out_f[i] = {w.expr('f', 2)}")
        if use_shared:
            w.emit(1, f"sh[ThreadIdx.x] = {w.expr('f', 2)}")
            op = w.pick(list(_ORDER_FREE_ATOMICS))
            w.emit(1, f"atomic_{op}(acc, ({w.expr('i', 1)}) & 3, {w.expr('i', 1)})")
        w.emit(1, "__sync_threads()")
        w.no_return, w.can_write_out_f = False, False
        mirror = draw(
            st.sampled_from(["BlockDim.x - 1 - ThreadIdx.x", "(ThreadIdx.x + 1) % BlockDim.x", "0"])
        )
        w.emit(1, f"f1 = out_f[BlockIdx.x * BlockDim.x + {mirror}]")
        if use_shared:
            w.emit(1, f"f0 = sh[{mirror}]")
            w.emit(1, f"c1 = c1 + acc[{w.pick(['0', '1', '2', '3', 'ThreadIdx.x & 3'])}]")
        w.block(1, 4, 2)
        body_lines = []
    else:
        if body_lines and body_lines[-1].endswith(":"):
            body_lines.append("        return")
        w.block(1, 6, 2)
    w.emit(1, f"out_i[i] = c0 + c1 + {w.expr('i', 1)}")
    w.emit(1, f"out_b[i] = b0 {w.pick(['and', 'or', '!='])} {w.expr('b', 1)}")
    if not barrier:
        last = w.expr("f", 1)
        w.emit(1, f"out_f[i] = f0 + f1 * {_not_zero_literal(last) if 'zeromul' in AVOID else last}")
    decls[counters_at:counters_at] = [f"    w{c}: int = 0" for c in range(w.counters)]
    signature = SIGNATURE + {
        "subgroup": ", " + F.SUBGROUP_PARAMS,
        "types": ", " + F.TYPED_PARAMS,
        "narrow": ", " + NT.NARROW_PARAMS,
    }.get(feature, "")
    if barrier:
        deco = f"@Gpu(workgroup_size={wg})"
    elif feature == "subgroup" or extra.get("wg64"):
        deco = "@Gpu(workgroup_size=64)"
    elif dims > 1:
        deco = F.grid_decorator(draw, st, dims)
    else:
        deco = "@Gpu"
    source = (
        _HEADER
        + f"{deco}\ndef kern({signature}) -> None:\n"
        + "\n".join(decls + prelude + body_lines + w.lines)
        + "\n"
    )

    grid = None
    if dims > 1:
        shape, grid = F.grid_shape(draw, st, dims)
        n = int(np.prod(shape))
    else:
        n = draw(st.integers(1, max_n))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    wide = draw(st.booleans())

    def length():
        return max(1, n + draw(st.integers(-3, 3)))

    xs = _values(rng, "f", n if dims > 1 else length(), wide)
    if dims > 1:
        xs = np.array(xs, np.float32).reshape(shape)
    args = (
        n,
        _values(rng, "f", 1, wide)[0],
        _values(rng, "i", 1, wide)[0],
        xs,
        _values(rng, "i", length(), wide),
        _values(rng, "b", length(), wide),
        _values(rng, "f", length(), wide),
        _values(rng, "i", length(), wide),
        _values(rng, "b", length(), wide),
    )
    if feature == "subgroup":
        m = length()  # out_s and out_m alike: out_m[j] bounds the order error of out_s[j]
        args += (_values(rng, "f", m, False), _values(rng, "f", m, False))
    elif feature == "types":
        args += F.typed_values(rng, n, length)
    elif feature == "narrow":
        args += NT.narrow_values(rng, n, length)
    return KernelCase(source, args, wg, grid, signature, extra.get("rules", {}))


__all__ = ["SIGNATURE", "KernelCase", "kernel_cases", "load_kernel"]
