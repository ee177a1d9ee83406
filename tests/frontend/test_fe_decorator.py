"""`@Gpu`: forms and options, signature checks, metadata, plain-Python calls, the registry."""

# ruff: noqa: UP006, UP035, UP037, S102 - List, quoted annotations, exec() are under test

from __future__ import annotations

import typing
from typing import Any, List, Optional

import fe_future_kernels
import pytest
from fehelp import kernel

from cthreads.compiler import ir
from cthreads.compiler.target import Target
from cthreads.errors import GpuCompileError
from cthreads.gpu import indices
from cthreads.gpu.indices import GlobalIdx
from cthreads.gpu.kernel import (
    Gpu,
    GpuKernel,
    get_kernel,
    registered_kernels,
    registry_generation,
    unregister,
)


def test_bare_and_called_forms():
    @Gpu
    def a(x: list[float]) -> None:
        x[0] = 1.0

    @Gpu()
    def b(x: list[float]):
        x[0] = 1.0

    @Gpu(log=True, workgroup_size=(16, 16))
    def c(x: list[float]) -> None:
        x[0] = 1.0

    for k in (a, b, c):
        assert isinstance(k, GpuKernel)
        unregister(k)
    assert a.log is False and c.log is True
    assert a.workgroup_size == (64, 1, 1) and c.workgroup_size == (16, 16, 1)
    assert c.lower().workgroup_size == (16, 16, 1)
    assert Gpu(workgroup_size=256)(a.__wrapped__).workgroup_size == (256, 1, 1)


@pytest.mark.parametrize("bad", [0, -1, (1, 2, 3, 4), (), True, "64", 2.0, (8, 0)])
def test_bad_workgroup_size(bad):
    def k(x: list[float]) -> None:
        pass

    with pytest.raises(TypeError, match="workgroup_size"):
        GpuKernel(k, workgroup_size=bad)


def test_bad_options():
    def k(x: list[float]) -> None:
        pass

    with pytest.raises(TypeError, match="options as keywords"):
        Gpu(256)
    with pytest.raises(TypeError, match="log=..."):
        Gpu(log="yes")(k)
    with pytest.raises(TypeError):
        Gpu(k, color="red")  # unknown option
    kern = kernel(k)
    with pytest.raises(TypeError, match="already a @Gpu kernel"):
        Gpu(kern)


def test_workgroup_size_checked_against_target():
    @Gpu(workgroup_size=256)
    def wide(x: list[float]) -> None:
        x[0] = 1.0

    unregister(wide)
    small = Target(max_workgroup_invocations=128, max_workgroup_size=(128, 128, 64))
    with pytest.raises(GpuCompileError) as info:
        wide.lower(small)
    err = info.value
    assert "exceeds this device's limits" in err.reason
    assert err.line[err.col - 1 :].startswith("256")
    assert wide.lower().workgroup_size == (256, 1, 1)  # the default target allows it


# ----------------------------------------------------------------- signatures


def _sig_error(fn) -> GpuCompileError:
    with pytest.raises(TypeError) as info:
        GpuKernel(fn)
    assert isinstance(info.value, GpuCompileError)
    return info.value


def k_str(s: str, x: list[float]) -> None: ...
def k_dict(d: dict, x: list[float]) -> None: ...
def k_nested(x: list[list[float]]) -> None: ...
def k_set(x: set[int]) -> None: ...
def k_optional(x: Optional[int]) -> None: ...  # noqa: UP045
def k_any(x: Any) -> None: ...
def k_bare_list(x: list) -> None: ...
def k_tuple(x: tuple[int, int]) -> None: ...
def k_list_str(x: list[str]) -> None: ...
def k_missing(n, x: list[float]) -> None: ...
def k_args(x: list[float], *rest: int) -> None: ...
def k_kwargs(x: list[float], **opts: int) -> None: ...
def k_kwonly(x: list[float], *, n: int) -> None: ...
def k_default(x: list[float], n: int = 3) -> None: ...
def k_returns(x: list[float]) -> float: ...
def k_float64(x: "numpy.float64") -> None: ...  # noqa: F821


@pytest.mark.parametrize(
    "fn, param, reason, at",
    [
        (k_str, "s", "parameter `s` has unsupported type `str`", "str"),
        (k_dict, "d", "parameter `d` has unsupported type `dict`", "dict"),
        (k_nested, "x", "unsupported type `list[list[float]]`", "list[list"),
        (k_set, "x", "unsupported type `set[int]`", "set[int]"),
        (k_optional, "x", "unsupported type `Optional[int]`", "Optional"),
        (k_any, "x", "unsupported type `Any`", "Any"),
        (k_bare_list, "x", "unsupported type `list`", "list"),
        (k_tuple, "x", "unsupported type `tuple[int, int]`", "tuple"),
        (k_list_str, "x", "unsupported type `list[str]`", "list[str]"),
        (k_missing, "n", "parameter `n` has no type annotation", "n, x"),
        (k_args, "rest", "`*rest` is not supported", "rest"),
        (k_kwargs, "opts", "`**opts` is not supported", "opts"),
        (k_kwonly, "n", "keyword-only parameter `n` is not supported", "n: int"),
        (k_default, "n", "parameter `n` has a default value", "3"),
        (k_returns, None, "return annotation is `float`", "float"),
        (k_float64, "x", "unsupported type `numpy.float64`", '"numpy'),
    ],
)
def test_signature_errors(fn, param, reason, at):
    err = _sig_error(fn)
    assert reason in err.reason
    assert err.kernel == fn.__name__
    if param is not None:
        assert f"{param}`" in err.reason
    assert err.allowed
    assert err.filename == __file__
    assert err.line[err.col - 1 :].startswith(at), err.line[err.col - 1 :]
    assert f"in kernel `{fn.__name__}`" in str(err)


def test_signature_error_lists_allowed_types():
    err = _sig_error(k_str)
    assert err.allowed == "int, float, bool, list[int], list[float] or list[bool]"


def test_non_functions_rejected():
    with pytest.raises(TypeError, match="needs a function defined with `def`"):
        Gpu(len)
    with pytest.raises(TypeError, match="cannot compile a lambda"):
        Gpu(lambda x: None)

    async def coro(x: list[float]) -> None:
        pass

    with pytest.raises(TypeError, match="cannot be an async function"):
        Gpu(coro)


def test_accepted_annotation_spellings():
    def k(
        a: int, b: float, c: bool, d: List[int], e: typing.List[float], f: "list[bool]", g: "int"
    ) -> None:
        pass

    types = [str(p.type) for p in kernel(k).signature]
    assert types == ["i32", "f32", "bool", "list[i32]", "list[f32]", "list[bool]", "i32"]


def test_future_annotations_module():
    k = fe_future_kernels.make(fe_future_kernels.scale)
    assert [p.name for p in k.signature] == ["n", "k", "x", "flags"]
    assert str(k.signature[3].type) == "list[bool]"
    assert "flags[%i]" in k.ir_text()
    with pytest.raises(TypeError, match="parameter `s` has unsupported type `str`"):
        fe_future_kernels.make(fe_future_kernels.bad_str)
    with pytest.raises(TypeError, match="return annotation is `int`"):
        fe_future_kernels.make(fe_future_kernels.returns_int)


def test_any_identifier_may_name_a_parameter():
    def k(
        out: list[float], in_: list[float], shared: int, main: float, buffer: int, sample: bool
    ) -> None:
        i = GlobalIdx.x
        uniform = in_[i] * main
        out[i] = uniform + shared + buffer + sample

    text = kernel(k).ir_text()
    assert "%uniform = (mul f32 in_[%i] $main)" in text


# ------------------------------------------------------------- the kernel object


@Gpu
def saxpy(n: int, a: float, x: list[float], y: list[float]) -> None:
    """y = a*x + y"""
    i: int = GlobalIdx.x
    if i >= n:
        return
    y[i] = a * x[i] + y[i]


def test_kernel_api():
    assert saxpy.name == "saxpy"
    assert saxpy.qualified_name == f"{__name__}.saxpy"
    assert saxpy.param_names == ("n", "a", "x", "y")
    assert saxpy.signature == (
        ir.Param("n", ir.I32),
        ir.Param("a", ir.F32),
        ir.Param("x", ir.ListType(ir.F32)),
        ir.Param("y", ir.ListType(ir.F32)),
    )
    assert saxpy.__name__ == "saxpy" and saxpy.__doc__ == "y = a*x + y"
    assert saxpy.__wrapped__.__name__ == "saxpy" and not isinstance(saxpy.__wrapped__, GpuKernel)
    assert saxpy.source.startswith("@Gpu\ndef saxpy(")
    assert saxpy.filename == __file__
    lowered = saxpy.lower()
    assert isinstance(lowered, ir.Kernel)
    assert [(p.reads, p.writes) for p in lowered.params[2:]] == [(True, False), (True, True)]
    assert saxpy.lower() is lowered  # cached
    assert lowered.filename == __file__ and lowered.firstlineno == saxpy.firstlineno
    assert "saxpy" in repr(saxpy) and "list[float]" in repr(saxpy)


def test_gpu_kernel_meta():
    meta = saxpy.__gpu_kernel_meta__
    assert meta["symbol"] == "saxpy" and meta["local_size_x"] == 64
    assert [p["name"] for p in meta["params"]] == ["n", "a", "x", "y"]
    assert meta["params"][0] == {
        "name": "n",
        "pass_as": "value",
        "kind": "int",
        "schema": {"kind": "int", "spirv_type": "int", "elem_bytes": 4},
    }
    assert meta["params"][2]["pass_as"] == "ref" and meta["params"][2]["elem_kind"] == "float"
    assert meta["types"] == {"n": "int", "a": "float", "x": "list[float]", "y": "list[float]"}

    def flags(b: list[bool]) -> None:
        pass

    assert kernel(flags).__gpu_kernel_meta__["params"][0]["elem_bytes"] == 1  # one byte per bool


def test_decoration_is_lazy():
    def broken(x: list[float]) -> None:
        x[0] = undefined_name  # noqa: F821 - only lowering notices

    k = Gpu(broken)
    unregister(k)
    assert k._source is not None and k._source._tree is None  # body not even parsed
    with pytest.raises(GpuCompileError, match="undefined_name"):
        k.lower()


def test_called_directly_runs_python():
    x, y = [1.0, 2.0, 3.0], [10.0, 20.0, 30.0]
    assert saxpy(3, 2.0, x, y) is None
    assert y == [12.0, 20.0, 30.0]  # one invocation on the host: GlobalIdx.x == 0
    for i in range(3):
        with indices.invocation(group_id=i):
            saxpy(3, 2.0, x, y)
    assert y == [14.0, 24.0, 36.0]


def test_source_key():
    def make(value):
        def k(x: list[float]) -> None:
            x[0] = value

        return kernel(k)

    a, b, a2 = make(1.0), make(2.0), make(1.0)
    assert a.source_key == a2.source_key
    assert a.source_key != b.source_key  # constants are part of the key
    assert len(a.source_key) == 32 and a.source_key == a.source_key
    assert (
        kernel(saxpy.__wrapped__, workgroup_size=128).source_key
        != kernel(saxpy.__wrapped__).source_key
    )


def test_constants_are_read_once():
    box = {"v": 1}

    def make():
        scale = box["v"]

        def k(x: list[int]) -> None:
            x[0] = scale

        return k

    fn = make()
    k = kernel(fn)
    key = k.source_key
    assert "x[0] = 1" in k.ir_text()
    fn.__closure__[0].cell_contents = 5  # later changes are not seen by this kernel object
    assert k.source_key == key and "x[0] = 1" in k.ir_text()
    assert "x[0] = 5" in kernel(fn).ir_text()  # a new definition reads the new value


def test_source_unavailable():
    ns: dict = {"Gpu": Gpu}
    exec("@Gpu\ndef from_exec(x: list[float]) -> None:\n    x[0] = 1.0\n", ns)
    k = ns["from_exec"]
    unregister(k)
    assert k.source is None
    assert isinstance(k.source_key, str)
    with pytest.raises(
        GpuCompileError, match="source code of kernel `from_exec` is not available"
    ) as info:
        k.lower()
    assert "exec()" in info.value.allowed
    x = [0.0]
    k(x)  # still runs as Python
    assert x == [1.0]


def test_indented_kernel_with_multiline_string():
    class Holder:
        @staticmethod
        def k(x: list[float]) -> None:
            """A docstring
            whose continuation is not indented."""
            x[0] = bad_name  # noqa: F821

    with pytest.raises(GpuCompileError) as info:
        kernel(Holder.k).lower()
    err = info.value
    assert err.line.strip() == "x[0] = bad_name  # noqa: F821"
    assert err.line[err.col - 1 :].startswith("bad_name")


# ------------------------------------------------------------------- registry


def test_registry_and_redefinition():
    before = registry_generation()

    @Gpu
    def twice(x: list[float]) -> None:
        x[0] = 1.0

    first = twice
    assert get_kernel(first.qualified_name) is first and first.version == 1
    assert first in registered_kernels()

    @Gpu
    def twice(x: list[float]) -> None:
        x[0] = 2.0

    assert twice is not first and twice.version == 2
    assert get_kernel(twice.qualified_name) is twice
    assert first not in registered_kernels()
    assert sum(k.qualified_name == twice.qualified_name for k in registered_kernels()) == 1
    assert "x[0] = 2.0" in twice.ir_text() and "x[0] = 1.0" in first.ir_text()
    assert registry_generation() >= before + 2
    assert not unregister(first)  # not the registered one any more
    assert unregister(twice) and get_kernel(twice.qualified_name) is None
    assert not unregister(twice.qualified_name)


def test_module_level_kernel_is_registered():
    assert get_kernel(f"{__name__}.saxpy") is saxpy
