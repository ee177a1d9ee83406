"""`.spvasm` text goldens (spirv-dis, friendly names, no colour) for a handful of kernels.

Regenerate after an intended codegen change with `CTHREADS_UPDATE_GOLDEN=1 pytest tests/compiler`
and review the diff like code.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from goldenhelp import check_golden
from ir_kernels import ZOO

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target

GOLDEN = Path(__file__).with_name("golden")
NAMES = ["saxpy", "boolops", "collatz", "blocks", "many", "control"]
VECTOR = ["saxpy"]  # golden of the 4-wide form, `<name>_x4.spvasm`


@pytest.mark.skipif(not tools.available("spirv-dis"), reason="spirv-tools not installed")
@pytest.mark.parametrize("name", NAMES)
def test_spvasm_golden(name):
    """The scalar form (one logical invocation per grid-stride step)."""
    ck = compile_kernel(ZOO[name], Target(), validate=False, vectorize=False)
    check_golden(GOLDEN / f"{name}.spvasm", tools.disassemble(ck.spirv))


@pytest.mark.skipif(not tools.available("spirv-dis"), reason="spirv-tools not installed")
@pytest.mark.parametrize("name", VECTOR)
def test_spvasm_golden_vector(name):
    """The 4-wide form: vec4 loads/stores of every list in full blocks, scalar tail."""
    ck = compile_kernel(ZOO[name], Target(), validate=False, vectorize=True)
    assert ck.elements_per_invocation == 4
    check_golden(GOLDEN / f"{name}_x4.spvasm", tools.disassemble(ck.spirv))
