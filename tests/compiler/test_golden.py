"""`.spvasm` text goldens (spirv-dis, friendly names, no colour) for a handful of kernels.

Regenerate after an intended codegen change with `CTHREADS_REGEN_GOLDEN=1 pytest tests/compiler`
and review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ir_kernels import ZOO

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target

GOLDEN = Path(__file__).with_name("golden")
NAMES = ["saxpy", "boolops", "collatz", "blocks", "many", "control"]


@pytest.mark.skipif(not tools.available("spirv-dis"), reason="spirv-tools not installed")
@pytest.mark.parametrize("name", NAMES)
def test_spvasm_golden(name):
    text = tools.disassemble(compile_kernel(ZOO[name], Target(), validate=False).spirv)
    path = GOLDEN / f"{name}.spvasm"
    if os.environ.get("CTHREADS_REGEN_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden {path}; run with CTHREADS_REGEN_GOLDEN=1"
    assert text == path.read_text(), f"{name}: SPIR-V changed; regenerate goldens if intended"
