"""The IR the frontend produces keeps the codegen contract: every kernel of these tests compiles
to SPIR-V that spirv-val accepts (a contract test from the frontend's side)."""

from __future__ import annotations

import shutil

import fe_kernels
import pytest
import test_fe_differential as diff
from fehelp import kernel

from cthreads.compiler.target import DEFAULT_TARGET

compile_mod = pytest.importorskip("cthreads.compiler.compile")

pytestmark = pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val not installed")

KERNELS = [k.lower() for k in fe_kernels.ALL] + [
    kernel(fn).lower() for fn in (diff.ranges, diff.loopvar, diff.semantics, diff.indexes)
]


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_codegen_accepts_frontend_ir(k):
    compiled = compile_mod.compile_kernel(k, DEFAULT_TARGET, validate=True)
    assert compiled.spirv[:4] == b"\x03\x02\x23\x07"  # SPIR-V magic, little-endian
    assert [p.name for p in compiled.params] == [p.name for p in k.params]
