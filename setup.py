"""Build of cthreads: the C extension `cthreads._native` and the GLSL shaders in `shaders/`.

The extension links only libdl: Vulkan is dlopen'ed at first use, so the package imports on
machines without a Vulkan loader. Each `shaders/*.comp` is compiled with glslangValidator
(`--target-env vulkan1.2`) into `cthreads/_shaders/<name>.spv` and checked with spirv-val.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
TOOLS_HINT = (
    "install them with: apt-get install glslang-tools spirv-tools libvulkan-dev "
    "(Debian/Ubuntu package names)"
)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        sys.exit(f"error: cthreads needs `{name}` to build its shaders; {TOOLS_HINT}")
    return path


def compile_shaders(out_dirs: list[Path]) -> None:
    """Compile every shaders/*.comp to SPIR-V, validate it, and copy it into out_dirs."""
    sources = sorted((ROOT / "shaders").glob("*.comp"))
    if not sources:
        return
    glslang, spirv_val = _tool("glslangValidator"), _tool("spirv-val")
    stage = ROOT / "build" / "shaders"
    stage.mkdir(parents=True, exist_ok=True)
    for src in sources:
        spv = stage / (src.stem + ".spv")
        fresh = spv.exists() and spv.stat().st_mtime >= src.stat().st_mtime
        if not fresh:
            cmd = [glslang, "--target-env", "vulkan1.2", "-o", str(spv), str(src)]
            run = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if run.returncode != 0:
                sys.exit(f"error: glslangValidator failed on {src.name}:\n{run.stdout}{run.stderr}")
            run = subprocess.run(
                [spirv_val, "--target-env", "vulkan1.2", str(spv)],
                capture_output=True,
                text=True,
                check=False,
            )
            if run.returncode != 0:
                spv.unlink(missing_ok=True)
                sys.exit(f"error: spirv-val rejected {src.name}:\n{run.stdout}{run.stderr}")
        for out in out_dirs:
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(spv, out / spv.name)


class BuildExt(build_ext):
    """build_ext that also compiles the shaders (runs for wheels and editable installs)."""

    def run(self) -> None:
        if not Path("/usr/include/vulkan/vulkan.h").exists() and not _header_elsewhere():
            sys.exit(f"error: vulkan/vulkan.h not found; {TOOLS_HINT}")
        outs = [ROOT / "cthreads" / "_shaders"]
        if not self.inplace:
            outs.append(Path(self.build_lib) / "cthreads" / "_shaders")
        compile_shaders(outs)
        super().run()


def _header_elsewhere() -> bool:
    try:
        run = subprocess.run(
            ["cc", "-E", "-x", "c", "-"],
            input="#include <vulkan/vulkan.h>\n",
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return False
    return run.returncode == 0


native = Extension(
    "cthreads._native",
    sources=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "native").glob("*.c")),
    depends=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "native").glob("*.h")),
    libraries=["dl"],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wno-missing-braces"],
)

# In-process SPIR-V validation (optional): Debian's spirv-tools ships SPIRV-Tools as a static
# library with its C header; without them, cthreads runs the spirv-val program instead.
SPIRV_TOOLS_LIB = Path("/usr/lib") / f"{os.uname().machine}-linux-gnu" / "libSPIRV-Tools.a"
extensions = [native]
if SPIRV_TOOLS_LIB.exists() and Path("/usr/include/spirv-tools/libspirv.h").exists():
    extensions.append(
        Extension(
            "cthreads._spirvval",
            sources=["native/spirvval/validate.c"],
            depends=["setup.py"],  # a change of the link flags below relinks it
            extra_objects=[str(SPIRV_TOOLS_LIB)],
            libraries=["stdc++", "m"],
            extra_compile_args=["-std=c11", "-O2", "-Wall"],
            # Keep SPIRV-Tools private to this module: NVIDIA's Vulkan driver carries its own
            # SPIRV-Tools, and when both are loaded our calls must not bind to its copy (that
            # crashed validation on an H200 once a device was open).
            extra_link_args=["-Wl,--exclude-libs,ALL", "-Wl,-Bsymbolic"],
        )
    )

setup(ext_modules=extensions, cmdclass={"build_ext": BuildExt})
