"""A 2-D gravitational n-body simulation whose state lives on the device in a `GpuArena`.

    python examples/particles.py                      # 1024 bodies, 240 steps -> particles.gif
    python examples/particles.py --small -o p.gif     # 128 bodies, 24 steps, checked against numpy

Positions, velocities and masses are bound to an arena once; every step runs two kernels
(`accelerate` reads positions and updates velocities, `drift` moves the bodies) with
`join(download=False)`, so nothing crosses the bus between frames. Launches on one device run
in order, so `drift` sees the velocities `accelerate` wrote without a host wait. Only when a
frame is drawn does `arena.sync("px", "py")` copy the positions back into the numpy arrays.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from cthreads.gpu import GlobalIdx, Gpu, GpuArena, GPUNotAvailable, device_name, gpu, prepare


@Gpu
def accelerate(
    n: int,
    dt: float,
    eps2: float,
    px: list[float],
    py: list[float],
    mass: list[float],
    vx: list[float],
    vy: list[float],
) -> None:
    i: int = GlobalIdx.x
    if i < n:
        xi: float = px[i]
        yi: float = py[i]
        ax: float = 0.0
        ay: float = 0.0
        for j in range(n):
            dx: float = px[j] - xi
            dy: float = py[j] - yi
            r2: float = dx * dx + dy * dy + eps2
            f: float = mass[j] / (r2 * math.sqrt(r2))
            ax += f * dx
            ay += f * dy
        vx[i] += dt * ax
        vy[i] += dt * ay


@Gpu
def drift(
    n: int, dt: float, px: list[float], py: list[float], vx: list[float], vy: list[float]
) -> None:
    i: int = GlobalIdx.x
    if i < n:
        px[i] += dt * vx[i]
        py[i] += dt * vy[i]


def initial_state(n: int, seed: int = 1) -> dict[str, np.ndarray]:
    """A rotating disc of bodies around a heavy centre, as float32 arrays."""
    rng = np.random.default_rng(seed)
    r = 0.1 + 0.9 * np.sqrt(rng.random(n))
    theta = rng.random(n) * 2 * math.pi
    mass = np.full(n, 1.0 / n)
    mass[0] = 1.0  # the centre
    r[0] = 0.0
    speed = np.sqrt((1.0 + np.minimum(r, 1.0) ** 2) / np.maximum(r, 1e-3)) * 0.9
    speed[0] = 0.0
    state = {
        "px": r * np.cos(theta),
        "py": r * np.sin(theta),
        "vx": -speed * np.sin(theta),
        "vy": speed * np.cos(theta),
        "mass": mass,
    }
    return {k: v.astype(np.float32) for k, v in state.items()}


def step_reference(s: dict[str, np.ndarray], dt: float, eps2: float) -> None:
    """One step in numpy float32 (for checking small runs)."""
    f = np.float32
    dx = s["px"][None, :] - s["px"][:, None]
    dy = s["py"][None, :] - s["py"][:, None]
    r2 = dx * dx + dy * dy + f(eps2)
    w = s["mass"][None, :] / (r2 * np.sqrt(r2))
    s["vx"] += f(dt) * (w * dx).sum(axis=1, dtype=f)
    s["vy"] += f(dt) * (w * dy).sum(axis=1, dtype=f)
    s["px"] += f(dt) * s["vx"]
    s["py"] += f(dt) * s["vy"]


def draw(px: np.ndarray, py: np.ndarray, size: int):
    """A frame: bodies as bright dots on black (Pillow image)."""
    from PIL import Image

    img = np.zeros((size, size), np.float32)
    u = ((px / 2.4 + 0.5) * size).astype(np.int64)
    v = ((py / 2.4 + 0.5) * size).astype(np.int64)
    ok = (u >= 0) & (u < size) & (v >= 0) & (v < size)
    for du in (0, 1):  # 2x2 dots
        for dv in (0, 1):
            np.add.at(
                img, (np.minimum(v[ok] + dv, size - 1), np.minimum(u[ok] + du, size - 1)), 1.0
            )
    t = np.clip(np.sqrt(img) / 2.5, 0, 1)
    rgb = np.stack([255 * t, 200 * t**1.5, 120 * t + 60 * (img > 0)], -1)
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))


def simulate(
    n: int, steps: int, frames: int, dt: float = 0.004, eps2: float = 1e-3, size: int = 256
) -> tuple[dict[str, np.ndarray], list]:
    """Run `steps` steps on the device, drawing `frames` frames; returns (final state, images)."""
    s = initial_state(n)
    images: list = []
    every = max(1, steps // frames)
    with GpuArena() as arena:
        arena.bind(**s)  # upload once
        for k in range(steps):
            gpu(accelerate, n, dt, eps2, s["px"], s["py"], s["mass"], s["vx"], s["vy"]).join(
                download=False
            )
            gpu(drift, n, dt, s["px"], s["py"], s["vx"], s["vy"]).join(download=False)
            if (k + 1) % every == 0 and len(images) < frames:
                arena.sync("px", "py")  # download positions only
                images.append(draw(s["px"], s["py"], size))
        arena.sync()  # everything, for the caller
    return s, images


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=240)
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--small", action="store_true", help="128 bodies, 24 steps, verified")
    parser.add_argument("-o", "--output", default="particles.gif", help="animated GIF to write")
    opts = parser.parse_args(argv)
    n, steps, frames = (128, 24, 4) if opts.small else (opts.bodies, opts.steps, opts.frames)
    try:
        prepare()
    except GPUNotAvailable as exc:
        print(f"no usable Vulkan device: {exc}", file=sys.stderr)
        return 1
    print(f"device: {device_name()}")
    t0 = time.perf_counter()
    state, images = simulate(n, steps, frames)
    seconds = time.perf_counter() - t0
    print(
        f"{n} bodies, {steps} steps ({2 * steps} resident launches), {len(images)} frames: "
        f"{seconds:.2f} s"
    )
    if opts.small:
        ref = initial_state(n)
        for _ in range(steps):
            step_reference(ref, 0.004, 1e-3)
        err = max(float(np.abs(state[k] - ref[k]).max()) for k in ("px", "py"))
        print(f"max position difference from numpy float32: {err:.2e}")
        if not err < 1e-3:
            return 2
    images[0].save(opts.output, save_all=True, append_images=images[1:], duration=80, loop=0)
    print(f"wrote {opts.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
