"""Differential testing: run a kernel on the device and in the emulator, compare every list.

Ints and bools must match exactly; floats must match exactly unless an approximate operation
(Vulkan's precision table, tolerance.py) reaches them. To see where approximations may lead, the
emulator runs once exactly and again with every approximate result pushed to the edge of its
bound (all up, all down, alternating up/down, random signs); where they can differ from the
exact run, it also reruns that with float32 subnormal results flushed (#31) and with `%`, `//`
and fmod as the unfused float32 recipe (#32). An output that differs between
those runs is checked against their range widened by half its width plus 2 ULP (floats) or not
at all (ints and bools that an approximation can flip: an unstable result). A float output the
approximations reach (a 'probe' run, moving them far past their bounds, changes it) gets the
2 ULP even where every run agrees: their moves rounded away there (#27). Per-list rules
(KernelCase.rules) add an absolute slack: float subgroup sums (order unspecified) and f64
results (f64 ULPs); f16 lists are compared with slack in f16 ULPs. A case's `grid` goes to both gpu() and emulate(); numpy arrays are compared
flat. See docs/reliability.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from . import semantics as S
from .emulate import emulate
from .kernelgen import KernelCase, load_kernel
from .tolerance import Perturber, f64_bound, subgroup_sum_bound, ulp, ulp16, ulp64
from .translate_stmt import translate

_FLT_MIN = 2.0**-126


@dataclass
class Stats:
    """Totals over a campaign (the fuzz entry and the CI test print them)."""

    kernels: int = 0
    compared: int = 0
    tolerant: int = 0  # float elements compared within a widened range
    unstable: int = 0  # elements left unchecked: an approximation could change them
    mismatches: int = 0

    def line(self) -> str:
        return (
            f"{self.kernels} kernels, {self.compared} elements compared "
            f"({self.tolerant} within ulp tolerance, {self.unstable} unstable skipped), "
            f"{self.mismatches} mismatches"
        )


STATS = Stats()


@dataclass
class Mismatch:
    list: str
    index: int
    device: Any
    emulator: list  # exact run first, then perturbed runs

    def __str__(self) -> str:
        exact = self.emulator[0]
        extra = (
            ""
            if len(set(map(repr, self.emulator))) == 1
            else f" (perturbed runs: {self.emulator[1:]})"
        )
        return f"{self.list}[{self.index}]: device {self.device!r}, emulator {exact!r}{extra}"


@dataclass
class Report:
    compared: int = 0
    tolerant: int = 0
    unstable: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)


class DifferentialMismatch(AssertionError):
    """Device and emulator disagree beyond the stated bounds: a compiler or runtime bug."""


def _same_float(d: float, e: float) -> bool:
    if math.isnan(d) or math.isnan(e):
        return math.isnan(d) and math.isnan(e)
    if d == e:
        return True  # also 0.0 == -0.0: the sign of zero is not compared
    return abs(d) < _FLT_MIN and abs(e) < _FLT_MIN  # subnormals may be flushed (Vulkan allows)


def _same_f64(d: float, e: float) -> bool:
    if math.isnan(d) or math.isnan(e):
        return math.isnan(d) and math.isnan(e)
    return d == e or (abs(d) < 2.0**-1022 and abs(e) < 2.0**-1022)


def _same_f16(d: float, e: float) -> bool:
    if math.isnan(d) or math.isnan(e):
        return math.isnan(d) and math.isnan(e)
    return d == e or (abs(d) < 2.0**-14 and abs(e) < 2.0**-14)  # f16 subnormals may flush


def compare_float(
    d: float,
    runs: list[float],
    extra: float = 0.0,
    f64: bool = False,
    f16: bool = False,
    reached: bool = False,
) -> str:
    """'ok', 'tolerant', 'unstable' or 'bad' for device value `d` against emulator runs.
    `extra`: an absolute bound the device may add on top (an order-dependent sum, an f64
    approximation: tolerance.py); `f64`: the values are doubles (f64 ULPs and subnormals);
    `f16`: half floats (the slack counts f16 ULPs, f16 subnormals may flush); `reached`: an
    approximation reaches the value (the probe run moved it), so where the runs agree, their
    moves rounded away, and a device value inside the bounds may round 2 ULP off (#27)."""
    same, spacing = (_same_f64, ulp64) if f64 else (_same_f16, ulp16) if f16 else (_same_float, ulp)
    nans = sum(1 for v in runs if math.isnan(v))
    if nans == len(runs):
        return "ok" if math.isnan(d) else "bad"
    if nans:
        return "unstable"
    lo, hi = min(runs), max(runs)
    if lo == hi or all(same(v, runs[0]) for v in runs):
        if same(d, runs[0]):
            return "ok"
        if extra and not math.isnan(d):
            if extra == math.inf:
                return "unstable"
            if abs(d - runs[0]) <= extra:
                return "tolerant"
        if reached and math.isfinite(runs[0]) and math.isfinite(d):
            slack = 2 * spacing(runs[0]) + extra
            return "tolerant" if abs(d - runs[0]) <= slack else "bad"
        return "bad"
    if math.isnan(d):
        return "bad"
    # Each run moves every approximation by its whole bound, one sign pattern per run; the
    # pattern with every sign flipped is as legal and moves the output about as far the other
    # way (to first order), so the runs' spread is taken on both sides of the exact run (fuzz
    # seed 28, H200: atan2 and degrees moved the same output in opposite senses, so the runs
    # moving all up or all down cancelled, and only one random run moved, the other way).
    mirrored = [2 * runs[0] - v for v in runs[1:]]
    if all(math.isfinite(v) for v in mirrored):
        lo, hi = min(lo, *mirrored), max(hi, *mirrored)
    width = hi - lo
    slack = (
        0.5 * width + 2 * max(spacing(lo), spacing(hi)) + extra if width != math.inf else math.inf
    )
    return "tolerant" if lo - slack <= d <= hi + slack else "bad"


def _flat(v):
    """A list argument's contents as a flat Python list (numpy arrays: row-major)."""
    if hasattr(v, "reshape"):
        return v.reshape(-1).tolist()
    return list(v)


def emulator_runs(
    kernel: Any, args: tuple, *, perturbed: int = 4, seed: int = 0, grid: Any = None
) -> list[list[list]]:
    """Final list contents per emulator run: exact first, then perturbed (if the kernel has
    approximate operations): all up, all down, the two alternating patterns, the two
    patterns by operation name, and `perturbed - 2` random ones; last, if the exact run
    produced a float32 subnormal, the exact run again with subnormal results flushed to zero,
    as a device may (#31), and if the unfused recipe gives a `%`, `//` or fmod of the exact run
    another value, the exact run again with every one computed so (#32). Any run but the exact
    one that hits undefined behaviour is dropped."""
    tr = translate(kernel)
    modes: list = [None]
    if tr.uses_approx:
        modes += [1, -1, "alt+", "alt-", "name0", "name1"] + ["random"] * max(0, perturbed - 2)
    results = []
    exact = None  # the exact run's Perturber: it records the operands of every `%` and fmod
    S.subnormal_seen = False
    for k, mode in enumerate(modes):
        copies = _copies(args)
        hook = Perturber(
            None if mode == "flush" else mode,
            seed * 1000 + k,
            None if exact is None else exact.remainders,
        )
        exact = exact or hook
        S.set_perturbation(hook)
        S.set_flush(mode == "flush")
        try:
            emulate(kernel, *copies, oob="device", grid=grid)
        except S.KernelUndefined:
            if mode is None:
                raise
            continue
        finally:
            S.set_perturbation(None)
            S.set_flush(False)
        results.append([_flat(c) for c in copies if _is_list(c)])
        if mode is None:  # extra runs, iterated over below after the perturbed ones
            modes += ["flush"] * S.subnormal_seen + ["recipe"] * hook.recipe_differs
    return results


def probe_run(kernel: Any, args: tuple, *, grid: Any = None) -> list[list] | None:
    """Final list contents of a run that moves every approximation PROBE_SCALE times its bound
    (alternating up and down): an output it changes is one the approximations reach. None if
    the kernel has none, or the run hits undefined behaviour."""
    if not translate(kernel).uses_approx:
        return None
    copies = _copies(args)
    S.set_perturbation(Perturber("probe"))
    try:
        emulate(kernel, *copies, oob="device", grid=grid)
    except S.KernelUndefined:
        return None
    finally:
        S.set_perturbation(None)
    return [_flat(c) for c in copies if _is_list(c)]


def _is_list(a) -> bool:
    return isinstance(a, list) or hasattr(a, "reshape")


def _copies(args: tuple) -> tuple:
    return tuple(list(a) if isinstance(a, list) else a.copy() if _is_list(a) else a for a in args)


def run_device(kernel: Any, args: tuple, grid: Any = None) -> list[list]:
    from cthreads.gpu import gpu

    copies = _copies(args)
    gpu(kernel, *copies, grid=grid).join()
    return [_flat(c) for c in copies if _is_list(c)]


def _extra(
    rule, li: int, idx: int, names: list[str], runs: list[list[list]], values: list
) -> float:
    """The absolute slack a comparison rule (KernelCase.rules) allows for one element."""
    if rule is None:
        return 0.0
    if rule[0] == "sum":  # ("sum", magnitudes list): a float subgroup sum, order unspecified
        mi = names.index(rule[1])
        mags = [run[mi][idx] for run in runs]
        return subgroup_sum_bound(max(abs(m) for m in mags) if mags else math.inf)
    if rule[0] == "f64":  # ("f64", last operation): exact, or one approximate op at the end
        return max(f64_bound(rule[1], v) for v in values)
    raise KeyError(rule)


def compare(
    names: list[str],
    device: list[list],
    runs: list[list[list]],
    rules: dict | None = None,
    types: list[str] | None = None,
    probe: list[list] | None = None,
) -> Report:
    """Compare the device's lists with the emulator runs; `probe`: probe_run's lists, which
    mark the float outputs an approximation reaches."""
    report = Report()
    rules = rules or {}
    for li, name in enumerate(names):
        dev = device[li]
        f64 = bool(types) and types[li] == "list[f64]"
        f16 = bool(types) and types[li] == "list[f16]"
        for idx, d in enumerate(dev):
            values = [run[li][idx] for run in runs]
            if isinstance(values[0], float):
                extra = _extra(rules.get(name), li, idx, names, runs, values)
                # f32(): a list the device never stored to keeps the caller's (float64) values
                dv = float(d) if f64 else S.f32(float(d))
                same = _same_f64 if f64 else _same_f16 if f16 else _same_float
                reached = probe is not None and not same(probe[li][idx], values[0])
                verdict = compare_float(dv, values, extra, f64, f16, reached)
            elif all(v == values[0] for v in values):
                verdict = "ok" if d == values[0] and type(d) is type(values[0]) else "bad"
            else:
                verdict = "unstable"
            if verdict == "bad":
                report.mismatches.append(Mismatch(name, idx, d, values))
            elif verdict == "unstable":
                report.unstable += 1
            else:
                report.compared += 1
                report.tolerant += verdict == "tolerant"
    return report


def check_kernel(
    kernel_or_source: Any,
    args: tuple,
    *,
    perturbed: int = 4,
    seed: int = 0,
    device_runs=None,
    grid: Any = None,
    rules: dict | None = None,
) -> Report:
    """Run on the device and in the emulator and compare; raise `DifferentialMismatch` with the
    kernel's source and inputs if they disagree. `kernel_or_source`: a @Gpu kernel, a module
    source defining `kern`, or a `KernelCase` (then `args` may be None).
    `device_runs` replaces the device (a function (kernel, args, grid) -> lists), for
    self-tests. `grid` goes to both gpu() and emulate(); `rules`: KernelCase.rules."""
    source = None
    if isinstance(kernel_or_source, KernelCase):
        source, args = (
            kernel_or_source.source,
            kernel_or_source.fresh_args() if args is None else args,
        )
        grid = kernel_or_source.grid if grid is None else grid
        rules = kernel_or_source.rules if rules is None else rules
        kernel = load_kernel(source)
    elif isinstance(kernel_or_source, str):
        source = kernel_or_source
        kernel = load_kernel(source)
    else:
        kernel = kernel_or_source
    tr = translate(kernel)
    lists = [(p, t) for p, t in tr.params if t.startswith("list[")]
    names, types = [p for p, _ in lists], [t for _, t in lists]
    runs = emulator_runs(kernel, args, perturbed=perturbed, seed=seed, grid=grid)
    probe = probe_run(kernel, args, grid=grid)
    device = (device_runs or run_device)(kernel, args, grid)
    report = compare(names, device, runs, rules, types, probe)
    STATS.kernels += 1
    STATS.compared += report.compared
    STATS.tolerant += report.tolerant
    STATS.unstable += report.unstable
    STATS.mismatches += bool(report.mismatches)
    if report.mismatches:
        shown = "\n  ".join(str(m) for m in report.mismatches[:12])
        more = len(report.mismatches) - 12
        text = source if source is not None else f"kernel `{tr.name}` in {tr.filename}"
        raise DifferentialMismatch(
            f"device and emulator disagree on {len(report.mismatches)} element(s):\n  {shown}"
            + (f"\n  ... and {more} more" if more > 0 else "")
            + f"\nkernel:\n{text}\nargs: {args!r}"
            + (f"\ngrid: {grid!r}" if grid is not None else "")
        )
    return report


__all__ = [
    "STATS",
    "DifferentialMismatch",
    "Report",
    "Stats",
    "check_kernel",
    "compare_float",
    "emulator_runs",
    "probe_run",
]
