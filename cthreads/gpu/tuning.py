"""`@autotune`: declared choices for a kernel's constants and workgroup size, and the tuner.

    @autotune(TILE=[8, 16, 32], workgroup_size=[64, 128, 256], key=["n"])
    @Gpu
    def kernel(n: int, ...) -> None: ...

A launch picks one variant (gpu/variants.py) per launch: the `pins=` given, else the choice
recorded for the launch's tuning key (the `key=` arguments, sizes bucketed to powers of two),
else the first choice of every name. The first launch for a new tuning key, autotuning being
on (`CTHREADS_AUTOTUNE`, default on), tunes: every variant runs on copies of the arguments
(lists the kernel writes are copied, so the user's data is written exactly once, by the
winner's launch), one warm-up launch then `REPS` launches timed with device timestamps (wall
time where the device has none), and the fastest is recorded in memory and on disk
(gpu/tuned.py), where a new process on the same device and driver finds it without timing.
A variant that does not compile for the device (too much shared memory, a workgroup over the
limit) is left out of the race. Launches with pins never tune: unpinned names take the recorded
choice, else their first.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from .. import config
from ..errors import GpuCompileError, GpuInternalCompilerError, GpuInvalidArgument
from ..launch import session
from ..launch.dispatch import gpu
from . import registry
from .kernel import GpuKernel
from .variants import WORKGROUP, Space, _is_value, _plain, _same, variant_of

REPS = 3  # timed launches per variant (the minimum counts)
PROGRESS_AFTER_S = 1.0  # a progress line on a terminal once tuning took longer than this
# Counts in this process (tests assert on them, never on timers).
stats = {"tunings": 0, "timed_launches": 0, "disk_hits": 0}

_SKIP = (GpuCompileError, GpuInternalCompilerError)


def _log() -> Any:
    import logging

    return logging.getLogger("cthreads.gpu")


def autotune(*, key: Any = (), **choices: Any) -> Any:
    """Declare autotune choices above `@Gpu`: `@autotune(TILE=[8, 16], workgroup_size=[64,
    256], key=["n"])`. Each name other than `workgroup_size` is a constant the body reads; its
    first value runs until the tuner has measured every variant for the launch's `key=`
    arguments. Raises `GpuInvalidArgument` naming the offending name for an empty or repeated
    choice list, a name the kernel does not read, or a `key` that is not a parameter."""

    def apply(kernel: Any) -> TunedKernel:
        if not isinstance(kernel, GpuKernel):
            raise TypeError(
                f"@autotune goes above @Gpu (it takes a @Gpu kernel); got "
                f"{getattr(kernel, '__name__', type(kernel).__name__)}"
            )
        if kernel._tuner is not None:
            raise TypeError(f"`{kernel.name}` is already an @autotune kernel; apply it once")
        space = _space(kernel, key, choices)
        tuned = TunedKernel.__new__(TunedKernel)
        tuned.__dict__.update(kernel.__dict__)
        tuned._tuner = Tuner(space, kernel)
        registry.replace(kernel, tuned)  # the tuned kernel takes the plain one's place
        return tuned

    return apply


def _space(kernel: GpuKernel, key: Any, choices: dict[str, Any]) -> Space:
    name = kernel.name
    if not choices:
        raise GpuInvalidArgument(
            f"@autotune of kernel `{name}` declares no choices",
            param="autotune",
            hint="e.g. @autotune(TILE=[8, 16, 32], key=['n'])",
        )
    params = kernel.param_names
    if isinstance(key, str):
        key = [key]
    key = tuple(key)
    for k in key:
        if k not in params:
            raise GpuInvalidArgument(
                f"@autotune(key=...) of kernel `{name}` names `{k}`, which is not one of its "
                f"parameters ({', '.join(params)})",
                param="key",
                expected=f"parameter names of `{name}`",
                got=repr(k),
            )
    reads: set[str] | None = None
    if kernel._source is not None:
        from ..compiler.frontend.constants import free_reads

        reads = set(free_reads(kernel._source, set(params)))
    names, values = [], []
    for choice, options in choices.items():
        where = f"@autotune({choice}=...) of kernel `{name}`"
        if not isinstance(options, (list, tuple)) or not options:
            raise GpuInvalidArgument(
                f"{where} needs a non-empty list of values; got {options!r}",
                param=choice,
                expected="a non-empty list",
                got=repr(options),
            )
        if choice == WORKGROUP:
            from .kernel import _workgroup

            if kernel._explicit_wg:
                raise GpuInvalidArgument(
                    f"{where}: the kernel fixes @Gpu(workgroup_size=...) as well",
                    param=choice,
                    hint="declare the workgroup size in one place",
                )
            for v in options:
                _workgroup(v)  # TypeError naming workgroup_size
            options = [v if isinstance(v, int) else tuple(v) for v in options]
        else:
            if choice in params:
                raise GpuInvalidArgument(
                    f"{where}: `{choice}` is a parameter of the kernel; a choice is a "
                    f"compile-time constant the body reads",
                    param=choice,
                )
            if choice in kernel._given:
                raise GpuInvalidArgument(
                    f"{where}: `{choice}` is also in @Gpu(constants=...)",
                    param=choice,
                    hint="declare it in one place",
                )
            if reads is not None and choice not in reads:
                raise GpuInvalidArgument(
                    f"{where}: the kernel body never reads `{choice}`",
                    param=choice,
                    hint="name a constant the body uses, or drop the choice",
                )
            bad = [v for v in options if not _is_value(v)]
            if bad:
                raise GpuInvalidArgument(
                    f"{where}: {bad[0]!r} is not an int, float or bool",
                    param=choice,
                    got=repr(bad[0]),
                )
            options = [_plain(v) for v in options]
        for i, v in enumerate(options):
            if any(_same(v, w) for w in options[:i]):
                raise GpuInvalidArgument(
                    f"{where} lists {v!r} twice",
                    param=choice,
                    hint="give each value once",
                )
        names.append(choice)
        values.append(tuple(options))
    return Space(tuple(names), tuple(values), key)


class TunedKernel(GpuKernel):
    """A `@Gpu` kernel with `@autotune` choices. It launches, compiles and inspects as its
    variants: `gpu(kernel, ...)` and `kernel[grid](...)` pick one per launch; inspection
    (`lower`, `compiled`, `spirv`, ...) shows the first; `compile(pins=...)` any."""

    def __getitem__(self, grid: Any) -> Any:
        return TunedBracket(self, grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run as plain Python with the first choices (what runs before tuning)."""
        return self.default_variant()(*args, **kwargs)

    def default_variant(self) -> GpuKernel:
        """The variant of the first choices (what runs before tuning, and without it)."""
        return variant_of(self, self._tuner.space.first())

    def lower(self, target: Any = None) -> Any:
        return self.default_variant().lower(target)

    def compiled(self, target: Any = None) -> Any:
        return self.default_variant().compiled(target)

    def constants(self) -> dict[str, object]:
        return self.default_variant().constants()

    @property
    def choices(self) -> dict[str, tuple]:
        """The declared choices, by name (first value first)."""
        space = self._tuner.space
        return dict(zip(space.names, space.values))

    def tuned(self) -> dict[str, dict[str, Any]]:
        """The recorded choices on this device: `{tuning key: {name: value}}` (`"n=1024"`),
        from this process and the disk cache."""
        tuner = self._tuner
        record = tuner.load_record(self)
        out = {k: dict(e["choice"]) for k, e in record.get("choices", {}).items()}
        out.update({k: dict(v) for k, v in tuner.chosen.items()})
        return out


class TunedBracket:
    """`tuned_kernel[grid]`: each call picks a variant, then is `variant[grid](...)` (the
    grid counts that variant's workgroups; a callable grid sees its choices in meta)."""

    __slots__ = ("kernel", "grid")

    def __init__(self, kernel: TunedKernel, grid: Any) -> None:
        self.kernel, self.grid = kernel, grid

    def __call__(self, *args: Any, **options: Any) -> Any:
        from .bracket import _check_options

        pins = options.pop("pins", None)
        if options:
            _check_options(self.kernel, options)
        grid = self.grid

        def run(variant: GpuKernel, run_args: tuple, **extra: Any) -> Any:
            return variant[grid](*run_args, **{**options, **extra})

        return self.kernel._tuner.launch(self.kernel, args, pins, run)


def launch(fn: GpuKernel, args: tuple, pins: Any, options: dict[str, Any]) -> Any:
    """`gpu(fn, *args, pins=..., **options)` for a tuned kernel, or a plain one given pins."""
    plain = not any(options.values())  # (force=False, timed=False, grid=None, ...)

    def run(variant: GpuKernel, run_args: tuple, **extra: Any) -> Any:
        if plain and not extra:
            # the variant's C launcher, as gpu() would take it first (it declines with None)
            fast = variant._fast_launch
            if fast is not None:
                job = fast(run_args)
                if job is not None:
                    return job
        return gpu(variant, *run_args, **{**options, **extra})

    tuner = fn._tuner
    if tuner is None:
        from .variants import pinned_variant

        return run(pinned_variant(fn, pins), args)
    return tuner.launch(fn, args, pins, run)


def bucket(value: int) -> int:
    """Sizes by the power of two at or above them (1000 and 1024 tune once)."""
    return 1 << (value - 1).bit_length() if value > 1 else value


class Tuner:
    """An `@autotune` kernel's space, its variants (made lazily) and the choices made."""

    def __init__(self, space: Space, kernel: GpuKernel) -> None:
        self.space = space
        self.key_index = tuple(kernel.param_names.index(k) for k in space.key)
        # per key parameter: (index, "name=", whether it is a list)
        self._key_plan = tuple(
            (i, f"{kernel.signature[i].name}=", kernel.signature[i].is_list) for i in self.key_index
        )
        self.arity = len(kernel.param_names)
        self.generation = -1  # the device generation `chosen` belongs to
        self.variants: dict[tuple, GpuKernel] = {}
        self.chosen: dict[str, dict[str, Any]] = {}  # tuning key -> choice, this process
        self.lock = threading.RLock()
        self._record: tuple[str, str] | None = None  # (device identity, record key)
        self.label = ""  # the device as `python -m cthreads.gpu cache` shows it

    # -- keys and records -------------------------------------------------------------------
    def tuning_key(self, kernel: GpuKernel, args: tuple) -> str:
        """`n=1024,x=4096`: the `key=` arguments, sizes (ints, list lengths) bucketed."""
        parts = []
        for i, label, is_list in self._key_plan:
            value = args[i]
            if is_list:
                value = bucket(_count(value))
            elif type(value) is int:
                value = bucket(value)
            elif _is_value(value):
                value = _plain(value)
                if type(value) is int:
                    value = bucket(value)
            parts.append(f"{label}{value!r}")
        return ",".join(parts)

    def record_key(self, kernel: GpuKernel) -> tuple[str, str]:
        """(device identity, record key) for the current device, opening it if need be."""
        from ..compiler import cache as kcache
        from . import tuned as store

        with session.state.lock:
            device = session._current_device()
            identity = store.device_identity(device.info)
            self.label = store.device_label(device.info)
            if self._record is None or self._record[0] != identity:
                self.chosen.clear()  # measured on another device
                base = kcache.cache_key(kernel.source_key, session.state.target.key())
                self._record = (identity, store.record_key(base, self.space.describe(), identity))
            return self._record

    def load_record(self, kernel: GpuKernel) -> dict[str, Any]:
        from . import tuned as store

        return store.load(self.record_key(kernel)[1])

    # -- launching ----------------------------------------------------------------------------
    def launch(self, kernel: GpuKernel, args: tuple, pins: Any, run: Any) -> Any:
        space = self.space
        fixed = space.check_pins(kernel.name, pins) if pins is not None else {}
        if len(fixed) == len(space.names):
            return run(variant_of(kernel, fixed), args)
        if not config.autotune_enabled() or len(args) != self.arity:
            # (a wrong arity fails in the launch of the first variant, worded as gpu() words it)
            return run(variant_of(kernel, {**space.first(), **fixed}), args)
        if self.generation != session.state.generation or session.state.generation < 0:
            # a new device (or none open yet): choices made on another one do not apply
            self.record_key(kernel)
            self.generation = session.state.generation
        tkey = self.tuning_key(kernel, args)
        chosen = self.chosen.get(tkey)
        if chosen is None:
            with self.lock:
                chosen = self.chosen.get(tkey)
                if chosen is None:
                    entry = self.load_record(kernel).get("choices", {}).get(tkey)
                    chosen = self._valid(entry)
                    if chosen is not None:
                        stats["disk_hits"] += 1
                        self.chosen[tkey] = chosen
                        _log().info(
                            "autotune: kernel %s %s: %s (recorded)",
                            kernel.name,
                            tkey,
                            _text(chosen),
                        )
                    elif fixed:
                        chosen = space.first()  # pinned launches never tune
                    else:
                        best = self.tune(kernel, tkey, args, run)
                        return run(variant_of(kernel, best), args)
        return run(variant_of(kernel, {**chosen, **fixed}), args)

    def _valid(self, entry: Any) -> dict[str, Any] | None:
        """A recorded choice, if it is still a point of the space."""
        if not isinstance(entry, dict) or not isinstance(entry.get("choice"), dict):
            return None
        choice = entry["choice"]
        if set(choice) != set(self.space.names):
            return None
        try:
            picked = self.space.check_pins("", {k: _from_json(v) for k, v in choice.items()})
        except GpuInvalidArgument:
            return None
        return {n: picked[n] for n in self.space.names}  # in declaration order

    def tune(self, kernel: GpuKernel, tkey: str, args: tuple, run: Any) -> dict[str, Any]:
        """Time every variant on copies of `args`; record and return the fastest choice."""
        from . import tuned as store
        from .timing import timing_args

        t0 = time.perf_counter()
        stats["tunings"] += 1
        points = self.space.points()
        times: dict[str, float] = {}
        skipped: dict[str, str] = {}
        first_error: BaseException | None = None
        clock = "device"
        copies = None
        progress = _Progress(kernel.name, tkey, len(points), t0)
        try:
            for i, point in enumerate(points):
                variant = variant_of(kernel, point)
                try:
                    prep = session.kernel_for_launch(variant)
                except _SKIP as exc:
                    first_error = first_error or exc
                    skipped[_text(point)] = getattr(exc, "reason", None) or str(exc)
                    continue
                if copies is None:
                    copies = timing_args(args, prep.compiled.params)
                best = None
                for rep in range(REPS + 1):
                    started = time.perf_counter()
                    job = run(variant, copies.args, timed=True, force=False)
                    job.join(download=False)
                    wall = (time.perf_counter() - started) * 1e3
                    if rep == 0:
                        continue  # warm-up: first-use costs stay out of the race
                    stats["timed_launches"] += 1
                    ms = job.elapsed_ms
                    if ms is None:
                        ms, clock = wall, "wall"
                    best = ms if best is None else min(best, ms)
                times[_text(point)] = best
                progress.step(i + 1)
        finally:
            if copies is not None:
                copies.release()
            progress.done()
        if not times:
            raise first_error.with_traceback(None)  # type: ignore[union-attr]
        winner = min(points, key=lambda p: times.get(_text(p), float("inf")))
        spent = (time.perf_counter() - t0) * 1e3
        self.chosen[tkey] = winner
        identity, rkey = self.record_key(kernel)
        header = {
            "kernel": kernel.qualified_name,
            "space": self.space.describe(),
            "device": self.label,
            "device_identity": identity,
        }
        entry = {
            "choice": {k: _to_json(v) for k, v in winner.items()},
            "ms": times,
            "skipped": skipped,
            "clock": clock,
            "tuning_ms": round(spent, 3),
        }
        store.store(rkey, header, tkey, entry)
        _log().info(
            "autotune: kernel %s %s: %s chosen among %d variants (%s, %.3f ms) in %.1f ms",
            kernel.name,
            tkey,
            _text(winner),
            len(times),
            clock,
            times[_text(winner)],
            spent,
        )
        return winner


def _count(value: Any) -> int:
    if isinstance(value, list):
        return len(value)
    size = getattr(value, "size", None)
    if isinstance(size, int):
        return size
    view = memoryview(value)
    return view.nbytes // max(1, view.itemsize)


def _text(point: dict[str, Any]) -> str:
    return ",".join(f"{k}={v!r}" for k, v in point.items())


def _to_json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _from_json(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class _Progress:
    """One line on stderr, rewritten per variant, once tuning passed PROGRESS_AFTER_S and
    only when stderr is a terminal."""

    def __init__(self, name: str, tkey: str, total: int, t0: float) -> None:
        self.name, self.tkey, self.total, self.t0 = name, tkey, total, t0
        self.shown = False
        self.tty = bool(getattr(sys.stderr, "isatty", lambda: False)())

    def step(self, done: int) -> None:
        if not self.tty:
            return
        spent = time.perf_counter() - self.t0
        if spent < PROGRESS_AFTER_S and not self.shown:
            return
        self.shown = True
        sys.stderr.write(
            f"\rcthreads.gpu: autotuning {self.name} ({self.tkey}): {done}/{self.total} "
            f"variants, {spent:.1f} s"
        )
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


__all__ = ["TunedKernel", "autotune", "bucket", "stats"]
