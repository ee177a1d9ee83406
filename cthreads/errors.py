"""The whole cthreads exception tree (SPEC §9).

Every GPU error derives from `CThreadsGPUError`; each also inherits the builtin whose meaning
matches (`MemoryError`, `ValueError`, `TypeError`, `TimeoutError`) so generic handlers work.
This module imports nothing from cthreads: the native extension imports it at module init.
"""

from __future__ import annotations


class CThreadsGPUError(RuntimeError):
    """Base of every cthreads GPU error.

    `hint` says what to do; `vk_result` carries the Vulkan result name where one caused it;
    `detail` is the whole human-readable text (what `str()` shows), as in cthreads-gpu.
    Constructed with no message, each class says what went wrong and what to do by itself
    (`default_message`, `default_hint`).
    """

    default_message = "a cthreads GPU operation failed"
    default_hint = "the exception's class says which kind of failure it is (docs/errors.md)"

    def __init__(self, message: str = "", *, hint: str | None = None, vk_result: str | None = None):
        if not message:
            message = self.default_message
            if hint is None:
                hint = self.default_hint
        self.message = message
        self.hint = hint
        self.vk_result = vk_result
        text = message
        if vk_result and vk_result not in text:
            text = f"{text} ({vk_result})"
        if hint and hint not in text:
            text = f"{text}. {hint}" if not text.endswith((".", "!", "?")) else f"{text} {hint}"
        super().__init__(text)

    @property
    def detail(self) -> str:
        """The full message: what went wrong, the VkResult name if any, and what to do.

        cthreads-gpu handlers read `exc.detail`; it is `str(exc)` here (cthreads adds no
        prefix to `str()`, so the two are the same text)."""
        return str(self)


class GPUNotAvailable(CThreadsGPUError):
    """No usable GPU/Vulkan device: raised by `prepare()` when Vulkan cannot be used."""

    default_message = "no usable Vulkan GPU"
    default_hint = (
        "install libvulkan1 and a driver (mesa-vulkan-drivers gives a software device); "
        "`python -m cthreads.gpu info` shows what the loader sees"
    )


class VulkanNotBuiltError(GPUNotAvailable):
    """The native extension was built without Vulkan support (or is missing)."""

    default_message = "the native extension was built without Vulkan support"
    default_hint = (
        "rebuild it with `pip install -e .` (needs a C compiler, libvulkan-dev, glslang-tools and "
        "spirv-tools)"
    )


class VulkanLoaderNotFound(GPUNotAvailable):
    """`libvulkan.so.1` could not be loaded."""

    default_message = "the Vulkan loader (libvulkan.so.1) could not be loaded"
    default_hint = (
        "install it with `apt-get install libvulkan1`, or point CTHREADS_VULKAN_LIBRARY at it"
    )


class VulkanNoDevice(GPUNotAvailable):
    """The Vulkan loader works but reports no usable compute device."""

    default_message = "the Vulkan loader reports no usable compute device"
    default_hint = (
        "install a Vulkan driver (mesa-vulkan-drivers gives a software device); "
        "`python -m cthreads.gpu info` lists the devices the loader sees"
    )


class VulkanInitFailed(GPUNotAvailable):
    """Creating the Vulkan instance or device failed, or the device was lost."""

    default_message = "creating the Vulkan instance or device failed"
    default_hint = (
        "check the driver installation with `vulkaninfo`; CTHREADS_VALIDATION=1 shows the "
        "driver's messages"
    )


class VulkanOutOfMemory(CThreadsGPUError, MemoryError):
    """A device or host allocation made for the GPU failed."""

    default_message = "the device ran out of memory"
    default_hint = (
        "free device buffers (release arenas, drop jobs) or process the data in smaller chunks"
    )


class GpuInvalidArgument(CThreadsGPUError, ValueError):
    """An argument does not satisfy the kernel's or the API's contract.

    `param` names the culprit; `expected` and `got` describe the mismatch.
    """

    default_message = "an argument does not satisfy the kernel's or the API's contract"
    default_hint = (
        "compare the arguments with the kernel's signature (`kernel.contract()` lists them)"
    )

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

    @classmethod
    def non_contiguous(cls, name: str, kind: str, what: str, hint: str) -> GpuInvalidArgument:
        """`name` got a strided (non-C-contiguous) `what` where a C-contiguous `kind` is needed."""
        return cls(
            f"`{name}` expects a C-contiguous {kind}; got a non-contiguous {what}",
            param=name,
            expected="C-contiguous",
            got="non-contiguous",
            hint=hint,
        )

    @classmethod
    def empty(cls, name: str, kind: str, what: str, hint: str | None = None) -> GpuInvalidArgument:
        """`name` got an empty `what` where a `kind` of at least one element is needed."""
        return cls(
            f"`{name}` expects a non-empty {kind}; got an empty {what}",
            param=name,
            expected="at least one element",
            got="0 elements",
            hint=hint,
        )


class GpuArgumentTypeError(GpuInvalidArgument, TypeError):
    """An argument has the wrong Python type or dtype (a `TypeError` and a `GpuInvalidArgument`)."""

    default_message = "an argument has the wrong Python type or element type"
    default_hint = (
        "pass the type the kernel's signature declares (`kernel.signature`), e.g. "
        "arr.astype(numpy.float32) for a list[float]"
    )

    @classmethod
    def expecting(
        cls, name: str, value: object, wants: str, expected: str, hint: str | None = None
    ) -> GpuArgumentTypeError:
        """`name` got a value of the wrong Python type: "`name` expects <wants>; got <type>"."""
        got = type(value).__name__
        return cls(
            f"`{name}` expects {wants}; got {got}",
            param=name,
            expected=expected,
            got=got,
            hint=hint,
        )


class GpuUseAfterDestroy(CThreadsGPUError):
    """An object (arena, buffer, job, device) was used after it was released or shut down."""

    default_message = "an object was used after it was released or its device was shut down"
    default_hint = "create it again (bind in a new GpuArena, launch again) after prepare()"


class GpuTimeout(CThreadsGPUError, TimeoutError):
    """`join(timeout=...)` expired before the device finished; the job stays pending."""

    def __new__(cls, *args: object, **kwargs: object) -> GpuTimeout:
        # OSError is this class's layout base: its __new__, not RuntimeError's, makes the
        # instance, so reducers that call `cls.__new__(cls, *args)` work (tblib's, which
        # `distributed` installs for every exception class: a worker's timeout pickles back)
        return TimeoutError.__new__(cls, *args)

    default_message = "the device did not finish within the timeout"
    default_hint = "the job is still pending: join again with a longer timeout, or await it"


class GpuCompileError(CThreadsGPUError, TypeError):
    """A `@Gpu` kernel uses something outside the kernel language.

    Carries `filename`, `lineno`, `col` (1-based), the source `line` and `allowed` (what to use
    instead); `str()` shows them all with a caret under the culprit.
    """

    default_message = "the kernel uses something outside the kernel language"
    default_allowed = "the constructs listed in docs/language.md"

    def __init__(
        self,
        message: str = "",
        *,
        kernel: str | None = None,
        filename: str | None = None,
        lineno: int | None = None,
        col: int | None = None,
        line: str | None = None,
        allowed: str | None = None,
    ):
        if not message:
            message = self.default_message
            if allowed is None:
                allowed = self.default_allowed
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

    default_message = "the compiler produced invalid SPIR-V (a bug in cthreads)"
    default_hint = (
        "please report it with the kernel's source; `python -m cthreads.gpu compile MODULE.py` "
        "reproduces it without a device"
    )


class GpuDeviceLost(VulkanInitFailed):
    """The device was lost while work was running (VK_ERROR_DEVICE_LOST)."""

    default_message = "the device was lost while work was running"
    default_hint = (
        "call cthreads.gpu.shutdown() and prepare() to open it again, then rebind arenas; split "
        "very long kernels into several launches"
    )


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
