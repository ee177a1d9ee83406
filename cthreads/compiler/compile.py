"""`compile_kernel`: typed IR -> validated SPIR-V plus the launch contract (`CompiledKernel`).

The one entry point launch calls on a cache miss. Codegen errors and `spirv-val` rejections are
compiler bugs, never the user's: both raise `GpuInternalCompilerError` carrying the IR, the
disassembly and the validator's message so the report is actionable.
"""

from __future__ import annotations


from .. import config
from ..errors import GpuCompileError, GpuInternalCompilerError
from . import ir
from .artifact import CompiledKernel
from .spirv import tools
from .spirv.builder import words_to_bytes
from .spirv.codegen import generate
from .spirv.codegen_expr import CodegenError, UnsupportedFeature
from .target import Target


def compile_kernel(
    kernel: ir.Kernel,
    target: Target,
    *,
    validate: bool = True,
    cache_key: str = "",
    ir_text: str | None = None,
    vectorize: bool | None = None,
) -> CompiledKernel:
    """Compile one kernel for `target`.

    `validate` runs `spirv-val --target-env vulkan1.2` (a subprocess, a few ms; launch keeps it on
    for cache misses). `cache_key` is stored as given. `ir_text` defaults to the frontend
    printer's rendering when that module is available. `vectorize` lets element-wise kernels
    take the 4-wide form with 16-byte list accesses (default: `vector_form(target)`);
    `CompiledKernel.elements_per_invocation` says which form was emitted.

    The returned contract's `params` carry reads/writes as the body actually uses the lists (the
    declared flags OR'ed with what codegen saw), so launch never skips downloading a written list.
    """
    from .frontend.depth import SHALLOW, deep_recursion, ir_depth, too_deep

    try:
        # The printer and codegen recurse per level of nesting, like the frontend.
        with deep_recursion(ir_depth(kernel) >= SHALLOW):
            return _compile(kernel, target, validate, cache_key, ir_text, vectorize)
    except RecursionError:
        raise too_deep(kernel.name, kernel.filename, kernel.firstlineno) from None


def _compile(
    kernel: ir.Kernel,
    target: Target,
    validate: bool,
    cache_key: str,
    ir_text: str | None,
    vectorize: bool | None,
) -> CompiledKernel:
    _check_target(kernel, target)
    if ir_text is None:
        ir_text = _print_ir(kernel)
    if vectorize is None:
        vectorize = vector_form(target)
    try:
        words, push, observes, usage, per_invocation = generate(kernel, target, vectorize)
    except UnsupportedFeature as exc:
        raise GpuCompileError(
            str(exc),
            kernel=kernel.name,
            filename=kernel.filename,
            lineno=kernel.firstlineno,
            col=1,
            allowed="list[int] (0/1) instead of list[bool] on this device",
        ) from None
    except (CodegenError, NotImplementedError, KeyError) as exc:
        raise GpuInternalCompilerError(
            f"codegen failed for kernel `{kernel.name}`: {exc}\n{ir_text}",
            hint="this is a bug in cthreads; please report it with the kernel source",
        ) from exc
    spirv = words_to_bytes(words)
    if validate:
        try:
            tools.validate(spirv)
        except tools.ValidationDeferred:
            pass  # a tile kernel without a spirv-val that knows cooperative matrices (tools.py)
        except tools.SpirvValidationError as exc:
            raise GpuInternalCompilerError(
                f"invalid SPIR-V for kernel `{kernel.name}`: {exc.message}\n"
                f"--- IR ---\n{ir_text}\n--- SPIR-V ---\n{_safe_dis(spirv)}",
                hint="this is a bug in cthreads; please report it with the kernel source",
            ) from None
    params = tuple(
        p.replace(reads=p.reads or i in usage.loads, writes=p.writes or i in usage.stores)
        if p.is_list
        else p
        for i, p in enumerate(kernel.params)
    )
    return CompiledKernel(
        name=kernel.name,
        spirv=spirv,
        params=params,
        push=push,
        workgroup_size=tuple(kernel.workgroup_size),
        observes_workgroup=observes,
        cache_key=cache_key,
        ir_text=ir_text,
        elements_per_invocation=per_invocation,
    )


def vector_form(target: Target) -> bool:
    """Whether kernels compiled for `target` may take the 4-wide form: the target's choice
    (`Target.vector_form`: GPUs yes, CPU devices no) unless `CTHREADS_NO_VECTORIZE=1` or
    `CTHREADS_VECTORIZE=1` forces either (config.vector_form; cache.cache_key keys on it)."""
    forced = config.vector_form()
    return target.vector_form if forced is None else forced


_FLOAT16 = ("shaderFloat16", "float16", "Float16")
_INT8 = ("shaderInt8` and `storageBuffer8BitAccess", "storage_8bit", "Int8")
_INT16 = ("shaderInt16", "int16", "Int16")
_STORAGE16 = ("storageBuffer16BitAccess", "storage_16bit", "StorageBuffer16BitAccess")
_TYPE_FEATURES = {
    "f64": (("shaderFloat64", "float64", "Float64"),),
    "i64": (("shaderInt64", "int64", "Int64"),),
    "u64": (("shaderInt64", "int64", "Int64"),),
    "f16": (_FLOAT16,),
    "i8": (_INT8,),
    "u8": (_INT8,),
    "i16": (_INT16,),
    "u16": (_INT16,),
}


def _type_requirements(kernel: ir.Kernel, type_name: str) -> tuple:
    specs = _TYPE_FEATURES.get(type_name, ())
    if type_name in ("f16", "i16", "u16") and any(
        isinstance(p.type, ir.ListType) and str(p.type.elem) == type_name for p in kernel.params
    ):
        specs += (_STORAGE16,)  # 16-bit list elements are loaded and stored as such
    return specs


def _check_type_features(kernel: ir.Kernel, target: Target) -> None:
    """f64 / i64 / u64 need shaderFloat64 / shaderInt64, f16 shaderFloat16, i8/u8 shaderInt8,
    i16/u16 shaderInt16 (and 16-bit list elements storageBuffer16BitAccess): without them, an
    error at the first line using the type (never a module the driver would reject or crash
    on)."""
    for type_name, line in sorted(kernel.type_lines, key=lambda item: item[1]):
        spec = next(
            (s for s in _type_requirements(kernel, type_name) if not getattr(target, s[1])), None
        )
        if spec is None:
            continue
        feature, _, capability = spec
        raise _error_at(
            kernel,
            line,
            type_name,
            f"{type_name} needs {_lacking(feature, capability)}",
            allowed="float (float32) / int (int32) on this device",
        )


def _lacking(feature: str, capability: str) -> str:
    return (
        f"the device feature `{feature}` (SPIR-V capability {capability}), which this device "
        "lacks (see `python -m cthreads.gpu info`)"
    )


def _error_at(
    kernel: ir.Kernel, line: int, name: str, message: str, allowed: str
) -> GpuCompileError:
    """The user's error `message`, located at `name` on kernel source line `line`."""
    text = _source_line(kernel.filename, line)
    return GpuCompileError(
        message,
        kernel=kernel.name,
        filename=kernel.filename,
        lineno=line or kernel.firstlineno,
        col=(text.find(name) + 1 if text and name in text else 1),
        line=text,
        allowed=allowed,
    )


def _check_target(kernel: ir.Kernel, target: Target) -> None:
    _check_type_features(kernel, target)
    _check_subgroup_features(kernel, target)
    _check_tiles(kernel, target)
    from .frontend.memory import elem_bytes

    used = 0
    workgroup = [a for a in kernel.shared if not a.private]  # local arrays: not workgroup memory
    for arr in workgroup:  # also checked by the frontend when it lowers for a target
        used += elem_bytes(arr.elem) * arr.size
        if used > target.max_shared_memory:
            total = sum(elem_bytes(a.elem) * a.size for a in workgroup)
            raise GpuCompileError(
                f"shared arrays need {total} bytes, more than the "
                f"{target.max_shared_memory} bytes of workgroup memory this device has "
                f"(maxComputeSharedMemorySize); `{arr.name}` declared here crosses the limit",
                kernel=kernel.name,
                filename=kernel.filename,
                lineno=arr.line or kernel.firstlineno,
                col=1,
                allowed="smaller shared arrays (4 bytes per element), e.g. a smaller tile",
            )
    wg = tuple(kernel.workgroup_size)
    n = wg[0] * wg[1] * wg[2]
    if (
        min(wg) < 1
        or any(a > b for a, b in zip(wg, target.max_workgroup_size))
        or n > target.max_workgroup_invocations
    ):
        raise GpuCompileError(
            f"workgroup size {wg} exceeds the device's limits (per axis {target.max_workgroup_size}, "
            f"{target.max_workgroup_invocations} invocations)",
            kernel=kernel.name,
            filename=kernel.filename,
            lineno=kernel.firstlineno,
            col=1,
            allowed="a workgroup size within those limits (64 is the default)",
        )


def _check_subgroup_features(kernel: ir.Kernel, target: Target) -> None:
    """A subgroup operation the device cannot run is the user's error, located at its line."""
    from .frontend.subgroup import FEATURE_CAPABILITY, missing_features

    missing = missing_features(kernel, target)
    if missing is None:
        return
    feature, line, name = missing
    raise _error_at(
        kernel,
        line,
        name,
        f"this subgroup operation needs {_lacking(feature, FEATURE_CAPABILITY[feature])}",
        allowed="shared memory and atomics (they work on every device)",
    )


def _check_tiles(kernel: ir.Kernel, target: Target) -> None:
    """A tile shape or type the device's matrix units lack is the user's error, at its line."""
    if not kernel.tiles:
        return
    from .frontend.tiles import matrix_shape_error

    found = matrix_shape_error(kernel, target.matrix_shapes)
    if found is None:
        return
    line, name, message, allowed = found
    raise _error_at(kernel, line, name, message, allowed)


def _source_line(filename: str, line: int) -> str | None:
    import linecache

    text = linecache.getline(filename, line) if line else ""
    return text.rstrip("\r\n") or None


def _print_ir(kernel: ir.Kernel) -> str:
    try:
        from . import printer  # the frontend's IR printer; optional here
    except ImportError:
        return ""
    for name in ("format_kernel", "print_kernel", "render", "kernel_text"):
        fn = getattr(printer, name, None)
        if callable(fn):
            try:
                return str(fn(kernel))
            except Exception:  # noqa: BLE001 - a printer problem must not hide the result
                return ""
    return ""


def _safe_dis(spirv: bytes) -> str:
    try:
        return tools.disassemble(spirv)
    except Exception as exc:  # noqa: BLE001 - the validator message is what matters
        return f"(disassembly unavailable: {exc})"
