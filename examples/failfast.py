"""Fail fast: a service checks for a usable GPU at startup, not on its first request.

    python examples/failfast.py                                       # ready, self-check, exit 0
    CTHREADS_VULKAN_LIBRARY=/nonexistent/libvulkan.so.1 python examples/failfast.py   # exit 69

`prepare()` opens the device and builds every kernel. When no device is usable it raises
`GPUNotAvailable` (or a subclass: `VulkanLoaderNotFound`, `VulkanNoDevice`, `VulkanInitFailed`,
`VulkanNotBuiltError`) within a fraction of a second, with a message that says what to install
or set. A service should catch it before it accepts traffic, log it, and exit with a status its
supervisor understands (69, EX_UNAVAILABLE, here) — instead of starting "healthy" and failing
every request. `available()` is the non-raising probe for code that can fall back to the CPU.
"""

from __future__ import annotations

import asyncio
import sys
import time

from cthreads.gpu import GlobalIdx, Gpu, GPUNotAvailable, available, device_name, gpu, prepare

EX_UNAVAILABLE = 69


@Gpu
def double(n: int, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = 2.0 * x[i]


def startup() -> int:
    """What a service runs before it listens: 0 when ready, else an exit status."""
    t0 = time.perf_counter()
    try:
        prepare()
    except GPUNotAvailable as exc:
        ms = (time.perf_counter() - t0) * 1e3
        print(
            f"service cannot start: no usable GPU ({type(exc).__name__}, after {ms:.0f} ms)\n"
            f"  {exc}\n"
            f"  CTHREADS_DEVICE picks a device; `python -m cthreads.gpu info` lists them.",
            file=sys.stderr,
        )
        return EX_UNAVAILABLE
    print(f"ready: {device_name()}, kernels built in {(time.perf_counter() - t0) * 1e3:.0f} ms")
    return 0


async def self_check() -> bool:
    x = [1.0, 2.0, 3.0]
    await gpu(double, 3, x)
    return x == [2.0, 4.0, 6.0]


def main() -> int:
    print(f"available(): {available()}")  # never raises
    status = startup()
    if status:
        return status
    ok = asyncio.run(self_check())
    print(
        "self-check passed; a real service would start listening now" if ok else "self-check FAILED"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
