"""spirv-tools wrappers: clear errors when a program is missing, messages when validation fails."""

from __future__ import annotations

import pytest
from ir_kernels import SAXPY

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target

needs = pytest.mark.skipif(not tools.available("spirv-val"), reason="spirv-tools not installed")


def test_missing_tool_says_how_to_install(monkeypatch):
    tools.find.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        with pytest.raises(tools.SpirvToolsNotFound, match="apt-get install spirv-tools"):
            tools.validate(b"", in_process=False)
        assert not tools.available("spirv-val")
    finally:
        tools.find.cache_clear()


@needs
def test_validate_rejects_garbage():
    with pytest.raises(tools.SpirvValidationError):
        tools.validate(b"\x03\x02\x23\x07" + b"\0" * 8)


@needs
def test_disassemble_and_optimize_roundtrip():
    spirv = compile_kernel(SAXPY, Target()).spirv
    text = tools.disassemble(spirv)
    assert "OpEntryPoint GLCompute %main" in text and "PhysicalStorageBuffer64 GLSL450" in text
    assert "%saxpy = OpFunction" in text
    raw = tools.disassemble(spirv, friendly_names=False)
    assert "%saxpy" not in raw
    if tools.available("spirv-opt"):
        opt = tools.optimize(spirv)
        tools.validate(opt)  # spirv-opt -O keeps our modules valid


def test_in_process_validation_agrees_with_spirv_val():
    if tools._in_process_validator() is None:
        pytest.skip("cthreads._spirvval was not built (no SPIRV-Tools static library)")
    from cthreads.runtime.shaders import load_shader

    good = load_shader("saxpy")
    tools.validate(good)  # in-process
    tools.validate(good, in_process=False)  # the program
    bad = good[:-4] + b"\0\0\0\0"
    messages = []
    for in_process in (True, False):
        with pytest.raises(tools.SpirvValidationError) as info:
            tools.validate(bad, in_process=in_process)
        messages.append(str(info.value))
    assert all("word count" in m.lower() for m in messages), messages


def test_in_process_validator_keeps_spirv_tools_private():
    """NVIDIA's Vulkan driver carries its own SPIRV-Tools: if ours exported its symbols (or
    bound to the driver's), validation crashed once a device was open. Only the module's entry
    point may be visible."""
    if tools._in_process_validator() is None:
        pytest.skip("cthreads._spirvval was not built (no SPIRV-Tools static library)")
    import ctypes

    from cthreads import _spirvval

    lib = ctypes.CDLL(_spirvval.__file__)
    assert hasattr(lib, "PyInit__spirvval")
    for symbol in ("spvValidate", "spvContextCreate", "spvDiagnosticDestroy"):
        assert not hasattr(lib, symbol), f"{symbol} is exported by {_spirvval.__file__}"
