"""The generated grammar module matches a fresh generation from the installed JSON grammar."""

from __future__ import annotations

import pytest

from cthreads.compiler.spirv import gen_grammar, grammar


def test_regeneration_matches_committed_file():
    if not (gen_grammar.GRAMMAR_DIR / gen_grammar.CORE).exists():
        pytest.skip("spirv-headers grammar JSON not installed")
    assert (
        gen_grammar.generate() == gen_grammar.OUTPUT.read_text()
    ), "grammar.py is stale: run `python -m cthreads.compiler.spirv.gen_grammar`"


def test_known_numbers():
    # Fixed by the SPIR-V specification; a generator bug would shift them.
    assert grammar.MAGIC == 0x07230203
    assert grammar.Op.Nop == 0
    assert grammar.Op.IAdd == 128
    assert grammar.Op.ExtInst == 12
    assert grammar.Op.LoopMerge == 246
    assert grammar.Capability.Shader == 1
    assert grammar.Capability.PhysicalStorageBufferAddresses == 5347
    assert grammar.StorageClass.PhysicalStorageBuffer == 5349
    assert grammar.Decoration.NonWritable == 24
    assert grammar.SelectionControl.None_ == 0
    assert grammar.Dim._1D == 0
    assert grammar.GLSLstd450.Pow == 26
    assert grammar.GLSLstd450.FMin == 37
    assert grammar.OPNAMES[128] == "IAdd"
    assert grammar.Op.IAdd in grammar.HAS_RESULT and grammar.Op.Store not in grammar.HAS_RESULT
