"""`@Gpu` -> `GpuKernel`: signature checks, launch metadata, the kernel registry (SPEC §2).

Decoration is cheap and never touches the device: it validates the signature and records the
source lines; the body is parsed (once) and lowered to IR only when `lower()` first needs it. A
warm launch (the kernel in the disk cache) loads neither `compiler.ir` nor the frontend's
lowering: the source key is made from the code objects (gpu/keying.py), not the syntax tree.
The decorated object still runs as plain Python when called.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

from ..errors import GpuCompileError
from .bracket import launcher as _bracket_launcher
from .keying import key_part, module_values, pin, read_source
from .meta import kernel_meta
from .registry import (  # the registry's public functions stay importable from here too
    claim,
    get_kernel,
    register,
    registered_kernels,
    registry_generation,
    unregister,
)

if TYPE_CHECKING:
    from ..compiler import ir, ir_types
    from ..compiler.frontend.signature import SignatureError
    from ..compiler.frontend.source import KernelSource
    from ..compiler.target import Target

# The signature check (and `compiler.ir_types`) is imported where a kernel is decorated, the
# frontend proper where it is lowered: `import cthreads.gpu` must not load the compiler, nor a
# warm launch `compiler.ir` (issue 19; tests/test_imports.py).

FRONTEND_VERSION = "1"  # bump when the IR a given source lowers to changes
DEFAULT_WORKGROUP = (64, 1, 1)


class GpuKernel:
    """A `@Gpu` kernel: the Python function plus its launch contract and compile inputs.

    Calling it runs the original function as ordinary Python; `kernel[grid](*args)` launches it
    with `grid` in workgroups (gpu/bracket.py). `lower(target)` gives the typed IR;
    `source_key` identifies everything the compiled output depends on except the target.
    """

    __gpu__ = True  # as cthreads-gpu marks its kernels
    # (`_fast_launch` and `_bracket`, read at every launch, are instance attributes with no
    # class default: CPython does not specialise the load of an instance attribute that
    # shadows a class attribute, and such a load costs several times a plain one)
    _fast_launch: Callable[[tuple], Any] | None
    _bracket: Any
    _tuner: Any = None  # an `@autotune` kernel's choices and tuner (gpu/tuning.py)
    _choices: dict[str, Any] = {}  # a variant's autotune choices (gpu/variants.py)
    _physical_width: int | None = None  # a variant's workgroup_size choice, honoured always

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        log: bool = False,
        workgroup_size: int | tuple[int, ...] | None = None,
        constants: dict[str, Any] | None = None,
    ):
        if not isinstance(log, bool):
            raise TypeError(f"@Gpu(log=...) takes True or False; got {log!r}")
        # gpu()'s shortcut to this kernel's C launcher (launch/plan.py, native/launch.c), set
        # once the launcher exists; it re-checks everything itself and returns None when unsure
        self._fast_launch = None
        self._bracket = None  # the last `kernel[grid]` launcher (gpu/bracket.py)
        self._wg = _workgroup(workgroup_size)
        self._explicit_wg = workgroup_size is not None
        self.log = log
        self.version = 1
        from ..compiler.frontend.signature import SignatureError, check_signature

        try:
            self._params = check_signature(fn)
        except SignatureError as err:
            raise _located_signature_error(fn, err) from None
        functools.update_wrapper(self, fn)
        from .variants import check_constants

        # `@Gpu(constants=...)` (and a variant's choices): read like module constants, winning
        # over them; part of the source key through constants()
        self._given = check_constants(fn.__name__, constants, self._params)
        self._fn = fn
        self._text = read_source(fn)  # (lines, first line) as of decoration, or None
        self._kernel_source: KernelSource | None = None  # made (and parsed) when lowering
        self._values: dict[str, object] | None = None  # keying.module_values, on first use
        self._constants: dict[str, object] | None = None
        self._source_key: str | None = None
        self._lowered: dict[str, ir.Kernel] = {}
        self._lock = threading.Lock()
        self.__gpu_kernel_meta__ = kernel_meta(self)

    # ------------------------------------------------------------ plain-Python face

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._given:  # the body reads its constants= (gpu/variants.py)
            from .variants import python_face

            return python_face(self)(*args, **kwargs)
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        from ..compiler.frontend.signature import signature_text

        return (
            f"<GpuKernel {self.qualified_name}{signature_text('', self._params)} v{self.version}>"
        )

    def __reduce__(self) -> str:
        # Pickled by reference, like the function it wraps (`module.qualname` names the kernel),
        # so kernels travel to multiprocessing workers as cthreads-gpu's functions do.
        return self.__qualname__

    # -------------------------------------------- the bracket launch (gpu/bracket.py)

    def __getitem__(self, grid: Any) -> Any:
        """`kernel[grid]`: a launcher; `kernel[grid](*args)` starts the launch and returns a
        started `GpuJob`. `grid` counts workgroups (an int, 1 to 3 ints, or a callable
        `grid(meta)` returning them); `gpu(kernel, *args)` counts invocations (SPEC §4)."""
        last = self._bracket
        if last is not None and last.grid is grid:
            return last
        return _bracket_launcher(self, grid)

    # ---------------------------------------------------------------- inspection

    @property
    def name(self) -> str:
        """The function's name (`saxpy`)."""
        return self._fn.__name__

    @property
    def qualified_name(self) -> str:
        """`module.qualname`: the registry key (a redefinition with the same key replaces)."""
        return f"{self._fn.__module__}.{self._fn.__qualname__}"

    @property
    def signature(self) -> tuple[ir_types.Param, ...]:
        """The parameters as IR params (names and types; `reads`/`writes` come with `lower()`)."""
        return self._params

    @property
    def param_names(self) -> tuple[str, ...]:
        """The parameter names, in order (what `gpu()` expects positionally)."""
        return tuple(p.name for p in self._params)

    @property
    def _source(self) -> KernelSource | None:
        """The source as the frontend reads it (made on first use: it loads the frontend)."""
        if self._kernel_source is None and self._text is not None:
            from ..compiler.frontend.source import KernelSource

            lines, first = self._text
            self._kernel_source = KernelSource(lines, self.filename, first)
        return self._kernel_source

    @property
    def source(self) -> str | None:
        """The kernel's source (dedented `def` block with decorators), or None if unavailable."""
        return self._source.text if self._text is not None else None

    @property
    def filename(self) -> str:
        """The file the kernel was defined in (compile errors point into it)."""
        return self._fn.__code__.co_filename

    @property
    def firstlineno(self) -> int:
        """The line of the kernel's first decorator or `def` in `filename`."""
        return self._text[1] if self._text is not None else self._fn.__code__.co_firstlineno

    @property
    def workgroup_size(self) -> tuple[int, int, int]:
        """The logical workgroup shape (default (64, 1, 1))."""
        return self._wg

    @property
    def options(self) -> dict[str, Any]:
        """The `@Gpu(...)` options (None where the default applies)."""
        return {
            "log": self.log,
            "workgroup_size": self._wg if self._explicit_wg else None,
            "constants": dict(self._given) or None,
        }

    # ------------------------------------------------------------------- compiling

    def _module_values(self) -> dict[str, object]:
        """Every number the body may read from outside, captured once (gpu/keying.py): the
        source key hashes these, and `constants()` takes its values from them."""
        with self._lock:
            if self._values is None:
                self._values = module_values(self._fn) if self._text is not None else {}
            return self._values

    def constants(self) -> dict[str, object]:
        """The int/float/bool values the body reads from outside, captured on first use: the
        `@Gpu(constants=...)` ones and module-level ones (the kernel is compiled with these
        values; later changes to module constants need a redefinition). Walks the body's
        syntax tree: lowering needs this, a launch from the cache does not."""
        values = self._module_values()
        with self._lock:
            if self._constants is None:
                if self._source is None:
                    self._constants = {}
                else:
                    from ..compiler.frontend.constants import collect_constants

                    try:
                        found = collect_constants(
                            self._fn, self._source, set(self.param_names), self._given
                        )
                    except GpuCompileError:
                        found = dict(self._given)  # lower() reports the problem
                    # module values as the key saw them; the given ones as given
                    pinned = pin(found, values)
                    pinned.update((k, v) for k, v in found.items() if k in self._given)
                    self._constants = pinned
            return self._constants

    def lower(self, target: Target | None = None) -> ir.Kernel:
        """The typed IR of this kernel (frontend + default passes). Raises `GpuCompileError`."""
        key = target.key() if target is not None else ""
        cached = self._lowered.get(key)
        if cached is not None:
            return cached
        from ..compiler.frontend import lower_kernel, source_unavailable

        try:
            if self._source is None:
                raise source_unavailable(self.name, self._fn)
            kernel = lower_kernel(
                self._fn,
                name=self.name,
                params=self._params,
                source=self._source,
                workgroup_size=self._wg,
                target=target,
                frozen=self.constants(),
            )
        except GpuCompileError as exc:
            # Users see their kernel's line, not the compiler's frames.
            raise exc.with_traceback(None) from None
        self._lowered[key] = kernel
        return kernel

    def ir_text(self, target: Target | None = None) -> str:
        """`lower(target)` as text (see `cthreads.compiler.printer`)."""
        from ..compiler.printer import format_kernel

        return format_kernel(self.lower(target))

    # -- inspection without launching (SPEC §3) -----------------------------------------------
    def compiled(self, target: Target | None = None) -> Any:
        """The `CompiledKernel` for `target` (default: the current device's target, else the
        default one), from the cache when unchanged. Never launches anything."""
        from ..launch.session import compiled_for

        return compiled_for(self, target)

    def spirv(self, target: Target | None = None) -> bytes:
        """The SPIR-V module as bytes."""
        return self.compiled(target).spirv

    def disassemble(self, target: Target | None = None) -> str:
        """The SPIR-V module as text (`spirv-dis`)."""
        from ..compiler.spirv.tools import disassemble

        return disassemble(self.compiled(target).spirv)

    def cache_key(self, target: Target | None = None) -> str:
        """The key of this kernel's entry in the on-disk cache."""
        return self.compiled(target).cache_key

    def contract(self, target: Target | None = None) -> dict[str, Any]:
        """The launch contract: parameter names and types, which lists it reads and writes,
        and the workgroup shape."""
        return self.compiled(target).contract()

    def compile(self, chip: Any = None, pins: dict[str, Any] | None = None) -> Any:
        """Compile for a device without launching (and without it, for a profile): returns a
        `KernelBuild` with `.spirv`, `.asm`, `.contract`, `.cache_key` and `.chip`.

        `chip` is None (the present device, else the shipped `portable` baseline), the name of
        a shipped profile (`lavapipe`, `nvidia-h200`, `portable`) or the path of a JSON profile
        written by `python -m cthreads.gpu info --json` on the target machine. Raises the
        `GpuCompileError` a launch on that device would, and `GpuInvalidArgument` naming `chip`
        for an unknown name, an unreadable file or a malformed profile. `pins` picks the
        variant of an `@autotune` kernel (unpinned names take their first choice)."""
        from .chip import compile_for
        from .variants import pinned_variant

        return compile_for(pinned_variant(self, pins), chip)

    @property
    def source_key(self) -> str:
        """A hex hash of everything the compiled output depends on apart from the target and
        compiler version: source text and location, signature, options, module constants."""
        key = self._source_key
        if key is None:
            from ..compiler.cache import key_hash
            from ..compiler.frontend.signature import signature_text

            h = key_hash()
            if self._text is not None:
                body = "".join(self._text[0])
            else:  # no source: compiling fails anyway; keep the key stable and distinct
                code = self._fn.__code__
                body = repr((code.co_code, code.co_consts, code.co_names))
            parts = (
                FRONTEND_VERSION,
                self.qualified_name,
                self.filename,
                self.firstlineno,
                body,
                signature_text(self.name, self._params),
                self._wg,
                key_part(self._module_values()),
                key_part(self._given),  # @Gpu(constants=...) and a variant's choices
            )
            for part in parts:
                h.update(repr(part).encode())
                h.update(b"\0")
            key = self._source_key = h.hexdigest()[:32]
            claim(self, key)
        return key


def _workgroup(value: int | tuple[int, ...] | None) -> tuple[int, int, int]:
    if value is None:
        return DEFAULT_WORKGROUP
    dims = (value,) if isinstance(value, int) and not isinstance(value, bool) else value
    if (
        not isinstance(dims, tuple)
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)
    ):
        raise TypeError(
            f"@Gpu(workgroup_size=...) takes a positive int or a tuple of 1 to 3 positive ints; got {value!r}"
        )
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


def _located_signature_error(fn: Any, err: SignatureError) -> GpuCompileError:
    """The signature error as a `GpuCompileError`, pointing at the parameter when the source
    is available (only on this error path is the source read)."""
    from ..compiler.frontend.signature import signature_node
    from ..compiler.frontend.source import KernelSource

    name = getattr(fn, "__name__", type(fn).__name__)
    source = KernelSource.of(fn) if hasattr(fn, "__code__") else None
    message = err.message
    if source is not None:
        try:
            return source.error(
                name, signature_node(source.function_node(), err), message, err.allowed
            )
        except (SyntaxError, GpuCompileError):
            pass  # no usable `def` source (a lambda, an edited file): report without a location
    return GpuCompileError(message, kernel=name, allowed=err.allowed)


# ------------------------------------------------------------------------- decorator


@overload
def Gpu(fn: Callable[..., Any], /) -> GpuKernel: ...


@overload
def Gpu(
    fn: None = None,
    /,
    *,
    log: bool = False,
    workgroup_size: int | tuple[int, ...] | None = None,
    constants: dict[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], GpuKernel]: ...


def Gpu(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    log: bool = False,
    workgroup_size: int | tuple[int, ...] | None = None,
    constants: dict[str, Any] | None = None,
) -> GpuKernel | Callable[[Callable[..., Any]], GpuKernel]:
    """Declare a GPU kernel: `@Gpu`, `@Gpu(log=True)`, `@Gpu(workgroup_size=256)`.

    Checks the signature (`int`, `float`, `bool`, `list[int]`, `list[float]`, `list[bool]`
    parameters, `-> None`) and registers the kernel; raises `TypeError` (`GpuCompileError`)
    naming the function and parameter otherwise. Compiling happens on first use.

    `log=True` reports, once, the device the kernel runs on when `prepare()` or its first
    launch builds it: on stderr, or through the `cthreads.gpu` logger at INFO where logging is
    configured to show that. `constants={"TILE": 16}` binds names the body reads as
    compile-time constants of this kernel (ints, floats, bools; see docs/autotune.md).
    """
    if fn is None:
        return functools.partial(Gpu, log=log, workgroup_size=workgroup_size, constants=constants)
    if isinstance(fn, GpuKernel):
        raise TypeError(f"`{fn.name}` is already a @Gpu kernel; apply @Gpu once")
    if not callable(fn):
        raise TypeError(
            f"@Gpu takes options as keywords (@Gpu(workgroup_size=256), @Gpu(log=True)); got {fn!r}"
        )
    try:
        kernel = GpuKernel(fn, log=log, workgroup_size=workgroup_size, constants=constants)
    except GpuCompileError as exc:
        raise exc.with_traceback(None) from None  # point at the user's decorator, not at us
    register(kernel)
    return kernel


__all__ = [
    "Gpu",
    "GpuKernel",
    "get_kernel",
    "registered_kernels",
    "registry_generation",
    "unregister",
]
