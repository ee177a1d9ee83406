"""What each benchmark kernel needs: inputs, our launch arguments, the GLSL twin's push block,
and the torch / cupy versions. Plain data plus small functions; run.py does the timing."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import kernels as K

A, B, SEED, MAX_ITER = 0.5, 0.25, 12345, 256


def _floats(n: int) -> np.ndarray:
    return np.resize(np.linspace(-2.0, 2.0, 1021, dtype=np.float32), n)


def _ints(n: int) -> np.ndarray:
    return np.resize(np.arange(-5000, 5011, 7, dtype=np.int32), n)


@dataclass(frozen=True)
class Spec:
    name: str
    kernel: Any
    bytes_per_elem: int  # memory traffic per element (0: compute-bound, rated in elements/s)
    arrays: Callable[[int], dict[str, np.ndarray]]  # name -> host array (bound in a GpuArena)
    args: Callable[[int, dict], tuple]  # our launch arguments
    glsl: str  # shaders/bench_<glsl>.comp
    push: Callable[[int, dict], bytes]  # GLSL push block from n and list addresses by name
    out: str  # the array to compare between implementations
    elems_per_invocation_glsl: int = 1


def _mandel_w(n: int) -> int:
    return 1 << (int(math.log2(n)) + 1) // 2


SPECS = [
    Spec(
        "saxpy", K.saxpy, 12,
        lambda n: {"x": _floats(n), "y": _floats(n)[::-1].copy()},
        lambda n, a: (n, A, a["x"], a["y"]),
        "saxpy", lambda n, p: struct.pack("<QQIf", p["x"], p["y"], n, A), "y",
    ),
    Spec(
        "stencil", K.stencil, 8,
        lambda n: {"x": _floats(n), "out": np.zeros(n, np.float32)},
        lambda n, a: (n, a["x"], a["out"]),
        "stencil", lambda n, p: struct.pack("<QQI4x", p["x"], p["out"], n), "out",
    ),
    Spec(
        "fma8", K.fma8, 8,
        lambda n: {"x": _floats(n), "y": np.zeros(n, np.float32)},
        lambda n, a: (n, A, B, a["x"], a["y"]),
        "fma8", lambda n, p: struct.pack("<QQIff4x", p["x"], p["y"], n, A, B), "y",
    ),
    Spec(
        "hash32", K.hash32, 8,
        lambda n: {"x": _ints(n), "out": np.zeros(n, np.int32)},
        lambda n, a: (n, SEED, a["x"], a["out"]),
        "hash", lambda n, p: struct.pack("<QQIi", p["x"], p["out"], n, SEED), "out",
    ),
    Spec(
        "mandel", K.mandel, 0,
        lambda n: {"out": np.zeros(n, np.int32)},
        lambda n, a: (n, _mandel_w(n), MAX_ITER, a["out"]),
        "mandel", lambda n, p: struct.pack("<QIIi4x", p["out"], n, _mandel_w(n), MAX_ITER), "out",
    ),
]  # fmt: skip

MANDEL_PRECISE = Spec(  # the GLSL twin without contraction: the same results as ours
    "mandel", K.mandel, 0, SPECS[4].arrays, SPECS[4].args, "mandel_precise", SPECS[4].push, "out"
)

SAXPY_VEC4 = Spec(  # the hand-tuned GLSL reference: one vec4 per invocation (n % 4 == 0)
    "saxpy", K.saxpy, 12, SPECS[0].arrays, SPECS[0].args, "saxpy4", SPECS[0].push, "y", 4
)


# ------------------------------------------------------------------------------ torch / cupy


def torch_fn(name: str, n: int, torch: Any) -> tuple[Callable[[], None], str] | None:
    """A closure running the kernel's torch equivalent on resident tensors, and what it is."""
    dev = "cuda"
    if name == "saxpy":
        x = torch.from_numpy(_floats(n)).to(dev)
        y = x.flip(0).contiguous()
        return (lambda: y.add_(x, alpha=A)), "y.add_(x, alpha=a)"
    if name == "stencil":
        x = torch.from_numpy(_floats(n)).to(dev).view(1, 1, n)
        w = torch.tensor([0.25, 0.5, 0.25], device=dev).view(1, 1, 3)
        f = torch.nn.functional.conv1d
        return (lambda: f(x, w, padding=1)), "conv1d(x, [.25,.5,.25], padding=1)"
    if name == "fma8":
        x = torch.from_numpy(_floats(n)).to(dev)
        y = torch.empty_like(x)

        def run() -> None:
            torch.mul(x, A, out=y).add_(B)
            for _ in range(7):
                y.mul_(A).add_(B)

        return run, "eager: 16 in-place ops"
    if name == "hash32":
        x = torch.from_numpy(_ints(n)).to(dev)
        h = torch.empty_like(x)

        def run() -> None:
            torch.bitwise_xor(x, SEED, out=h)
            for _ in range(4):
                h.bitwise_xor_(h << 13)
                h.bitwise_xor_(h >> 17)
                h.bitwise_xor_(h << 5)
                h.mul_(1103515245).add_(12345)

        return run, "eager: 22 ops"
    return None


def torch_copy(n: int, torch: Any) -> Callable[[], None]:
    """8 B/element roofline: a device-to-device copy of n float32."""
    x = torch.ones(n, device="cuda")
    y = torch.empty_like(x)
    return lambda: y.copy_(x)


_CUPY_SRC = {
    "saxpy": ("float32 x, float32 a", "float32 y", "y = a * x + y"),
    "fma8": (
        "float32 x, float32 a, float32 b", "float32 y",
        "float v = x; for (int k = 0; k < 8; k++) v = v * a + b; y = v;",
    ),
    "hash32": (
        "int32 x, int32 seed", "int32 y",
        ("int h = x ^ seed; for (int r = 0; r < 4; r++) { h ^= h << 13; h ^= h >> 17; "
        "h ^= h << 5; h = (int)((unsigned)h * 1103515245u + 12345u); } y = h;"),
    ),
    "stencil": (
        "raw float32 x, int32 n", "float32 y",
        ("float l = i > 0 ? x[i - 1] : 0.f; float r = i + 1 < n ? x[i + 1] : 0.f; "
        "y = 0.25f * l + 0.5f * x[i] + 0.25f * r;"),
    ),
    "mandel": (
        "int32 w, int32 max_iter", "int32 y",
        ("float fw = (float)w; float cx = -2.f + 3.f * (float)(i % w) / fw; "
        "float cy = -1.5f + 3.f * (float)(i / w) / fw; float zx = 0.f, zy = 0.f; int it = 0; "
        "while (it < max_iter && zx * zx + zy * zy < 4.f) { float t = zx * zx - zy * zy + cx; "
        "zy = 2.f * zx * zy + cy; zx = t; it++; } y = it;"),
    ),
}  # fmt: skip


def cupy_fn(name: str, n: int, cp: Any) -> Callable[[], None] | None:
    """A closure running the kernel as a cupy ElementwiseKernel (compiled CUDA C++)."""
    ins, outs, body = _CUPY_SRC[name]
    kern = cp.ElementwiseKernel(ins, outs, body, f"bench_{name}")
    f32, i32 = cp.float32, cp.int32
    if name == "saxpy":
        x = cp.asarray(_floats(n))
        y = x[::-1].copy()
        return lambda: kern(x, f32(A), y)
    if name == "fma8":
        x = cp.asarray(_floats(n))
        y = cp.empty_like(x)
        return lambda: kern(x, f32(A), f32(B), y)
    if name == "hash32":
        x = cp.asarray(_ints(n))
        y = cp.empty_like(x)
        return lambda: kern(x, i32(SEED), y)
    if name == "stencil":
        x = cp.asarray(_floats(n))
        y = cp.empty_like(x)
        return lambda: kern(x, i32(n), y)
    y = cp.empty(n, dtype=i32)
    return lambda: kern(i32(_mandel_w(n)), i32(MAX_ITER), y)
