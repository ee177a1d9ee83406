"""The GLSL shaders of `shaders/`, compiled to SPIR-V at build time (package data).

`load_shader("saxpy")` returns the bytes of `cthreads/_shaders/saxpy.spv`; `shader_names()`
lists what was built. Used by runtime tests, benchmarks and the demo; never by the compiler.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..errors import VulkanNotBuiltError

SHADER_DIR = Path(__file__).resolve().parent.parent / "_shaders"


def shader_names() -> list[str]:
    """Names of the built shaders (without `.spv`)."""
    return sorted(p.stem for p in SHADER_DIR.glob("*.spv"))


@cache
def load_shader(name: str) -> bytes:
    """SPIR-V bytes of shaders/<name>.comp."""
    path = SHADER_DIR / f"{name}.spv"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise VulkanNotBuiltError(
            f"shader {name!r} is not built (no {path}); built: {', '.join(shader_names()) or 'none'}",
            hint="Rebuild with `pip install -e .` (needs glslang-tools and spirv-tools)",
        ) from None
