"""A bounded load test of examples/service.py on loopback: fixed request count and concurrency.

    python examples/loadtest.py                  # 500 requests, 32 concurrent, then the same
                                                 # with a blocking handler for comparison
    python examples/loadtest.py --small          # 100 requests, 8 concurrent (the test suite)
    python examples/loadtest.py --url http://127.0.0.1:8080   # a service already running

Starts the service as a child process on 127.0.0.1 (a free port), sends the requests with
aiohttp, stops the service, and reports throughput, p50/p99 latency and the service's event-loop
lag while the requests were in flight (its ticker task sleeps 5 ms; lag = how late it woke up).
With `await job` the lag stays small; with `job.join()` in the handler (`mode=blocking`) every
kernel blocks the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from aiohttp import ClientSession, ClientTimeout

SERVICE = Path(__file__).with_name("service.py")


def start_service() -> tuple[subprocess.Popen, str]:
    """Start service.py on a free loopback port; returns (process, base URL)."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVICE), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("listening on "):
            return proc, line.split()[-1]
    proc.kill()
    raise SystemExit("service did not start:\n" + "".join(lines) + (proc.stdout.read() or ""))


async def run_phase(url: str, requests: int, concurrency: int, query: str) -> dict:
    """`requests` GETs of /tile?query, at most `concurrency` in flight; returns the numbers."""
    latencies: list[float] = []
    results: set[int] = set()
    errors = 0
    todo = iter(range(requests))
    async with ClientSession(timeout=ClientTimeout(total=120)) as session:
        await session.post(f"{url}/stats/reset")

        async def worker() -> None:
            nonlocal errors
            for _ in todo:
                t0 = time.perf_counter()
                async with session.get(f"{url}/tile?{query}") as resp:
                    if resp.status != 200:
                        errors += 1
                        continue
                    body = await resp.json()
                latencies.append(time.perf_counter() - t0)
                results.add(body["iterations"])

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - t0
        async with session.get(f"{url}/stats") as resp:
            stats = await resp.json()
    lat = np.asarray(latencies) * 1e3
    return {
        "requests": requests,
        "concurrency": concurrency,
        "errors": errors,
        "distinct_results": len(results),
        "wall_s": wall,
        "req_per_s": len(latencies) / wall,
        "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)),
        "max_ms": float(lat.max()),
        "served": stats["served"],
        "device": stats["device"],
        "lag_p50_ms": stats["lag_p50_ms"],
        "lag_p99_ms": stats["lag_p99_ms"],
        "lag_max_ms": stats["lag_max_ms"],
    }


def show(label: str, r: dict) -> None:
    print(
        f"{label}: {r['requests']} requests, {r['concurrency']} concurrent, {r['errors']} errors, "
        f"{r['wall_s']:.2f} s\n"
        f"  throughput {r['req_per_s']:.0f} req/s   latency p50 {r['p50_ms']:.1f} ms  "
        f"p99 {r['p99_ms']:.1f} ms  max {r['max_ms']:.1f} ms\n"
        f"  event-loop lag while serving: p50 {r['lag_p50_ms']:.2f} ms  "
        f"p99 {r['lag_p99_ms']:.2f} ms  max {r['lag_max_ms']:.2f} ms",
        flush=True,
    )


async def run(
    url: str, requests: int, concurrency: int, size: int, iters: int, compare: bool
) -> dict[str, dict]:
    query = f"size={size}&iters={iters}"
    await run_phase(url, min(20, requests), min(4, concurrency), query)  # warm up
    out = {"await": await run_phase(url, requests, concurrency, query)}
    show("await job ", out["await"])
    if compare:
        out["blocking"] = await run_phase(url, requests, concurrency, query + "&mode=blocking")
        show("job.join()", out["blocking"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--size", type=int, default=64, help="tile edge in pixels")
    parser.add_argument("--iters", type=int, default=1000, help="maximum iterations per pixel")
    parser.add_argument("--small", action="store_true", help="100 requests, 8 concurrent")
    parser.add_argument("--no-compare", action="store_true", help="skip the blocking run")
    parser.add_argument("--url", help="a running service (default: start one)")
    parser.add_argument("--json", help="write the numbers here")
    opts = parser.parse_args(argv)
    requests, concurrency = (100, 8) if opts.small else (opts.requests, opts.concurrency)
    proc = None
    url = opts.url
    if url is None:
        proc, url = start_service()
    try:
        out = asyncio.run(
            run(url, requests, concurrency, opts.size, opts.iters, not opts.no_compare)
        )
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"device: {out['await']['device']}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(out, indent=1))
    bad = [
        k
        for k, r in out.items()
        if r["errors"] or r["distinct_results"] != 1 or r["served"] != r["requests"]
    ]
    if bad:
        print(f"FAILED: errors or inconsistent results in {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
