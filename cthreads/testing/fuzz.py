"""`python -m cthreads.testing.fuzz N [--seed S] [--compile-only]`: a differential fuzz campaign.

Generates N random kernels (kernelgen), runs each on the default device and in the emulator,
and compares (differential). Prints the seed first and the totals last; on a mismatch hypothesis
shrinks it and the minimal kernel is printed as Python source with its inputs (exit status 1);
`--no-shrink` prints the first failing kernel as generated instead (the same kernel the seed
reaches, found in a fraction of the time).
`--compile-only` needs no device: every generated kernel must compile and pass spirv-val.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time


def campaign(
    examples: int,
    seed: int,
    compile_only: bool = False,
    verbose: bool = False,
    shrink: bool = True,
) -> int:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from . import differential as D
    from .kernelgen import kernel_cases

    done = [0]

    @hseed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
        phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink else []),
    )
    @given(case=kernel_cases())
    def run(case):
        done[0] += 1
        if compile_only:
            import cthreads.gpu  # noqa: F401 - loads launch in its import order
            from cthreads.launch.session import compiled_for

            compiled_for(case.load())
        else:
            D.check_kernel(case, None, seed=seed)
        if verbose and done[0] % 50 == 0:
            print(f"  {done[0]} kernels ... {D.STATS.line()}", flush=True)

    t0 = time.perf_counter()
    print(
        f"cthreads fuzz: {examples} kernels, seed {seed}{' (compile only)' if compile_only else ''}",
        flush=True,
    )
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - report any failure with the totals
        print(f"\nFAILED after {done[0]} runs ({time.perf_counter() - t0:.1f} s): {D.STATS.line()}")
        print(f"{type(exc).__name__}: {exc}")
        return 1
    print(
        f"ok in {time.perf_counter() - t0:.1f} s: {D.STATS.line() if not compile_only else f'{done[0]} kernels compiled'}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m cthreads.testing.fuzz", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "examples",
        type=int,
        nargs="?",
        default=int(os.environ.get("CTHREADS_FUZZ_EXAMPLES", "500")),
    )
    p.add_argument("--seed", type=int, default=None, help="default: CTHREADS_FUZZ_SEED or random")
    p.add_argument(
        "--compile-only", action="store_true", help="no device: compile + spirv-val only"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument(
        "--no-shrink",
        action="store_true",
        help="report the first failing kernel as generated (fast; shrinking can take minutes)",
    )
    a = p.parse_args(argv)
    seed = (
        a.seed
        if a.seed is not None
        else int(os.environ.get("CTHREADS_FUZZ_SEED", random.randrange(2**32)))
    )
    if not a.compile_only:
        from ..gpu import available, device_name
        from . import kernelgen

        if available():
            added = kernelgen.avoid_known_deviations(device_name())
            if added:
                print(f"known deviations of {device_name()} avoided: {', '.join(added)}")
    return campaign(a.examples, seed, a.compile_only, a.verbose, shrink=not a.no_shrink)


if __name__ == "__main__":
    sys.exit(main())
