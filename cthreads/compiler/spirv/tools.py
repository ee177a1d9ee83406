"""Thin wrappers over the spirv-tools programs: `spirv-val`, `spirv-dis`, `spirv-opt`.

Located on PATH (Debian package `spirv-tools`); a missing program raises `SpirvToolsNotFound`
saying how to install it. Modules travel through stdin/stdout, never temporary files.
Validation runs in-process through the `cthreads._spirvval` extension when it was built
(SPIRV-Tools' C API, ~0.4 ms a module); otherwise `spirv-val` costs a process start per module.
"""

from __future__ import annotations

import functools
import shutil

from ...errors import CThreadsGPUError

TARGET_ENV = "vulkan1.2"


class SpirvToolsNotFound(CThreadsGPUError, FileNotFoundError):
    """A spirv-tools program is not installed."""


class SpirvValidationError(CThreadsGPUError):
    """`spirv-val` rejected a module; `message` is its output."""


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

    return subprocess.run([find(tool), *args], input=data, capture_output=True, check=False)


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
    p = _run("spirv-dis", [*args, "-o", "-", "-"], spirv)
    if p.returncode != 0:
        raise CThreadsGPUError(f"spirv-dis failed: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout.decode()


def optimize(spirv: bytes, flags: tuple[str, ...] = ("-O",), target_env: str = TARGET_ENV) -> bytes:
    """`spirv-opt` with `flags` (performance passes by default); returns the new module."""
    p = _run("spirv-opt", [f"--target-env={target_env}", *flags, "-o", "-", "-"], spirv)
    if p.returncode != 0:
        raise CThreadsGPUError(f"spirv-opt failed: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout
