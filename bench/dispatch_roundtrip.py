"""Tiny-dispatch round trip through cthreads.runtime: submit one 64-invocation dispatch and
wait for it, many times. Prints microseconds per round trip for:

  reused    the same command tuple submitted again (prerecorded style: no Python-side work)
  rebuilt   push constants packed and the command tuple built anew every time (re-recorded)
  native    `reused` straight on the C device object (no Python wrapper call)
  batch16   16 dependent dispatches per submission, per dispatch
  queued    1000 one-dispatch submissions, then one wait, per submission (coalesced into a
            few batches by the native submitter; see native/README.md)

Usage: python bench/dispatch_roundtrip.py [--iters N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import time

from cthreads import runtime


def _time(fn, iters: int, repeats: int = 5) -> float:
    fn(max(10, iters // 10))  # warm up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(iters)
        samples.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    dev = runtime.get_device()
    pipe = dev.pipeline(runtime.load_shader("fill_u32"), 16)
    buf = dev.buffer(256)
    addr = buf.address
    cmd = ("dispatch", pipe, struct.pack("<QII", addr, 64, 7), (1, 1, 1))
    cmds = [cmd]
    submit, wait = dev.submit, dev.wait
    nsubmit, nwait = dev._dev.submit, dev._dev.wait

    def reused(n):
        for _ in range(n):
            wait(submit(cmds))

    def rebuilt(n):
        for i in range(n):
            push = struct.pack("<QII", addr, 64, i)
            wait(submit([("dispatch", pipe, push, (1, 1, 1))], keep=(buf,)))

    def native(n):
        for _ in range(n):
            nwait(nsubmit(cmds))

    batch = [cmd] * 16

    def batch16(n):
        for _ in range(n // 16 or 1):
            wait(submit(batch))

    def queued(n):
        for _ in range(n // 1000 or 1):
            for _ in range(1000):
                value = submit(cmds)
            wait(value)

    results = {
        "device": dev.info.name,
        "reused_us": _time(reused, args.iters),
        "rebuilt_us": _time(rebuilt, args.iters),
        "native_us": _time(native, args.iters),
        "batch16_per_dispatch_us": _time(batch16, args.iters),  # n dispatches per call
    }
    before = dev.stats().get("queue_submits", 0)
    results["queued1000_per_submit_us"] = _time(queued, max(1000, args.iters // 1000 * 1000))
    calls = 6 * max(1, args.iters // 1000) + 1  # warm-up + 5 repeats, 1000 submits each
    results["queued1000_submits_per_vkQueueSubmit"] = (
        1000 * calls / max(1, dev.stats().get("queue_submits", 0) - before)
    )
    check = [0] * 64
    buf.unpack_into_list(check, "i")
    assert check == [7] * 64 or len(set(check)) == 1, check[:4]
    if args.json:
        print(json.dumps(results))
    else:
        print(f"device: {results['device']}")
        for k, v in results.items():
            if k != "device":
                unit = " us" if k.endswith("_us") else ""
                print(f"{k:38s} {v:9.1f}{unit}")
    runtime.shutdown()


if __name__ == "__main__":
    main()
