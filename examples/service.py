"""An asyncio web service (aiohttp) whose requests run GPU kernels with `await job`.

    python examples/service.py --port 8080
    curl 'http://127.0.0.1:8080/tile?cx=-0.745&cy=0.113&span=0.01&size=64&iters=1000'
    curl 'http://127.0.0.1:8080/stats'

At startup the service calls `prepare()`: the device is opened and every kernel compiled and
built before the first request, and a machine without a usable device stops the service with a
clear message (exit status 69) instead of failing on the first request.

Each request launches a kernel (`gpu(...)` returns at once) and awaits the job: the event loop
keeps serving other requests while the device works. `/tile?...&mode=blocking` calls
`job.join()` instead, which blocks the loop for the kernel's duration — for comparison only.
A ticker task measures the event loop's lag (how late a 5 ms sleep wakes up); `/stats` reports
it, `/stats/reset` starts a new measurement. `examples/loadtest.py` drives it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

import numpy as np
from aiohttp import web

from cthreads.examples_kernels import mandelbrot as tile  # escape counts of a pixel tile
from cthreads.gpu import GPUNotAvailable, device_name, gpu, prepare


class LagMonitor:
    """Samples how late the event loop wakes a task that sleeps `interval` seconds."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.samples: list[float] = []
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.samples.append(time.perf_counter() - t0 - self.interval)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def stats(self) -> dict[str, float]:
        lag = np.asarray(self.samples or [0.0]) * 1e3
        return {
            "samples": len(self.samples),
            "lag_p50_ms": float(np.percentile(lag, 50)),
            "lag_p99_ms": float(np.percentile(lag, 99)),
            "lag_max_ms": float(lag.max()),
        }


def _tile_args(query) -> tuple[int, int, float, float, float, int]:
    size = int(query.get("size", 64))
    iters = int(query.get("iters", 1000))
    cx, cy = float(query.get("cx", -0.745)), float(query.get("cy", 0.113))
    span = float(query.get("span", 0.01))
    if not (1 <= size <= 1024 and 1 <= iters <= 100_000 and span > 0):
        raise ValueError("need 1 <= size <= 1024, 1 <= iters <= 100000, span > 0")
    step = span / size
    return size * size, size, cx - span / 2, cy - span / 2, step, iters


async def handle_tile(request: web.Request) -> web.Response:
    try:
        n, width, x0, y0, step, iters = _tile_args(request.query)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    counts = np.zeros(n, np.int32)
    t0 = time.perf_counter()
    job = gpu(tile, n, width, x0, y0, step, iters, counts)  # returns at once
    if request.query.get("mode") == "blocking":
        job.join()  # blocks the event loop: don't
    else:
        await job  # the loop serves others meanwhile
    request.app["counts"]["served"] += 1
    return web.json_response(
        {
            "pixels": n,
            "iterations": int(counts.sum(dtype=np.int64)),
            "inside": int((counts >= iters).sum()),
            "ms": (time.perf_counter() - t0) * 1e3,
        }
    )


async def handle_stats(request: web.Request) -> web.Response:
    stats = request.app["lag"].stats()
    stats.update(served=request.app["counts"]["served"], device=request.app["device"])
    return web.json_response(stats)


async def handle_reset(request: web.Request) -> web.Response:
    request.app["lag"].samples.clear()
    request.app["counts"]["served"] = 0
    return web.json_response({"ok": True})


async def _start_monitor(app: web.Application) -> None:
    app["lag"].start()


async def _stop_monitor(app: web.Application) -> None:
    await app["lag"].stop()


def make_app() -> web.Application:
    """The application; call `prepare()` before serving it (as `main()` does)."""
    app = web.Application()
    app["lag"] = LagMonitor()
    app["counts"] = {"served": 0}  # mutable: aiohttp's app is frozen once it starts
    app["device"] = device_name()
    app.router.add_get("/tile", handle_tile)
    app.router.add_get("/stats", handle_stats)
    app.router.add_post("/stats/reset", handle_reset)
    app.on_startup.append(_start_monitor)
    app.on_cleanup.append(_stop_monitor)
    return app


async def serve(host: str, port: int) -> None:
    runner = web.AppRunner(make_app())
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0]
    print(f"listening on http://{bound[0]}:{bound[1]}", flush=True)
    try:
        await asyncio.Event().wait()  # until interrupted
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    opts = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        report = prepare()  # open the device, build every kernel
    except GPUNotAvailable as exc:
        print(f"service cannot start: no usable GPU: {exc}", file=sys.stderr)
        return 69  # EX_UNAVAILABLE
    print(
        f"prepared {len(report)} kernel(s) on {device_name()} in "
        f"{(time.perf_counter() - t0) * 1e3:.0f} ms",
        flush=True,
    )
    try:
        asyncio.run(serve(opts.host, opts.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
