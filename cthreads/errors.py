"""The whole cthreads exception tree (SPEC §9).

Every GPU error derives from `CThreadsGPUError`; each also inherits the builtin whose meaning
matches (`MemoryError`, `ValueError`, `TypeError`, `TimeoutError`) so generic handlers work.
This module imports nothing from cthreads: the native extension imports it at module init.
"""

from __future__ import annotations


class CThreadsGPUError(RuntimeError):
    """Base of every cthreads GPU error.

    `hint` says what to do; `vk_result` carries the Vulkan result name where one caused it.
    """

    def __init__(self, message: str = "", *, hint: str | None = None, vk_result: str | None = None):
        self.message = message
        self.hint = hint
        self.vk_result = vk_result
        text = message
        if vk_result and vk_result not in text:
            text = f"{text} ({vk_result})"
        if hint and hint not in text:
            text = f"{text}. {hint}" if not text.endswith((".", "!", "?")) else f"{text} {hint}"
        super().__init__(text)


class GPUNotAvailable(CThreadsGPUError):
    """No usable GPU/Vulkan device: raised by `prepare()` when Vulkan cannot be used."""


class VulkanNotBuiltError(GPUNotAvailable):
    """The native extension was built without Vulkan support (or is missing)."""


class VulkanLoaderNotFound(GPUNotAvailable):
    """`libvulkan.so.1` could not be loaded."""


class VulkanNoDevice(GPUNotAvailable):
    """The Vulkan loader works but reports no usable compute device."""


class VulkanInitFailed(GPUNotAvailable):
    """Creating the Vulkan instance or device failed, or the device was lost."""


class VulkanOutOfMemory(CThreadsGPUError, MemoryError):
    """A device or host allocation made for the GPU failed."""


class GpuInvalidArgument(CThreadsGPUError, ValueError):
    """An argument does not satisfy the kernel's or the API's contract.

    `param` names the culprit; `expected` and `got` describe the mismatch.
    """

    def __init__(
        self,
        message: str = "",
        *,
        param: str | None = None,
        expected: str | None = None,
        got: str | None = None,
        hint: str | None = None,
    ):
        self.param = param
        self.expected = expected
        self.got = got
        super().__init__(message, hint=hint)


class GpuArgumentTypeError(GpuInvalidArgument, TypeError):
    """An argument has the wrong Python type or dtype (a `TypeError` and a `GpuInvalidArgument`)."""


class GpuUseAfterDestroy(CThreadsGPUError):
    """An object (arena, buffer, job, device) was used after it was released or shut down."""


class GpuTimeout(CThreadsGPUError, TimeoutError):
    """`join(timeout=...)` expired before the device finished; the job stays pending."""


class GpuCompileError(CThreadsGPUError, TypeError):
    """A `@Gpu` kernel uses something outside the kernel language.

    Carries `filename`, `lineno`, `col` (1-based), the source `line` and `allowed` (what to use
    instead); `str()` shows them all with a caret under the culprit.
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: str | None = None,
        filename: str | None = None,
        lineno: int | None = None,
        col: int | None = None,
        line: str | None = None,
        allowed: str | None = None,
    ):
        self.kernel = kernel
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.line = line
        self.allowed = allowed
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.filename is not None:
            where = f"{self.filename}:{self.lineno}:{self.col}: "
        head = (
            f"{where}in kernel `{self.kernel}`: {self.reason}"
            if self.kernel
            else where + self.reason
        )
        parts = [head]
        if self.line is not None and self.col is not None:
            parts.append("    " + self.line.rstrip())
            parts.append("    " + " " * max(self.col - 1, 0) + "^")
        if self.allowed:
            parts.append(f"allowed instead: {self.allowed}")
        return "\n".join(parts)


class GpuInternalCompilerError(CThreadsGPUError):
    """The compiler produced invalid SPIR-V (a bug in cthreads, never the user's fault)."""


class GpuDeviceLost(VulkanInitFailed):
    """The device was lost while work was running (VK_ERROR_DEVICE_LOST)."""


__all__ = [
    "CThreadsGPUError",
    "GPUNotAvailable",
    "GpuArgumentTypeError",
    "GpuCompileError",
    "GpuDeviceLost",
    "GpuInternalCompilerError",
    "GpuInvalidArgument",
    "GpuTimeout",
    "GpuUseAfterDestroy",
    "VulkanInitFailed",
    "VulkanLoaderNotFound",
    "VulkanNoDevice",
    "VulkanNotBuiltError",
    "VulkanOutOfMemory",
]
