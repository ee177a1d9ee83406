"""Tile kernels compile to SPV_KHR_cooperative_matrix for a device with matrix units (the
nvidia-h200 profile), pass a spirv-val that knows the extension, and shapes, types and misuse
the device or the language refuses are compile errors naming the line.

Validation: Debian 12's spirv-val (2023.1) predates SPV_KHR_cooperative_matrix and rejects its
opcodes as unknown, so these modules are checked by SPIRV-Tools 2025.5 in
`tools.newer_tools_dir()` (`python -m cthreads.compiler.spirv.tools_new` puts it there); where
it is absent, the validation step of these tests skips, saying so, and everything else runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "language"))
import tile_kernels as TK  # noqa: E402

from cthreads.compiler.spirv import grammar_coopmat as G  # noqa: E402
from cthreads.compiler.spirv import tools  # noqa: E402
from cthreads.errors import GpuCompileError  # noqa: E402
from cthreads.gpu import (  # noqa: E402
    Gpu,
    f16,
    f32,
    shared,
    subgroup_id,
    tile_fill,
    tile_load,
    tile_mma,
    tile_store,
    u16,
    u64,
)

H200 = "nvidia-h200"
PROFILES = Path(__file__).resolve().parents[2] / "cthreads" / "compiler" / "profiles"
DEFERRED = (
    "spirv-val check deferred: the installed SPIRV-Tools (Debian 12: 2023.1) predates "
    "SPV_KHR_cooperative_matrix and no newer spirv-val is in "
    f"{tools.newer_tools_dir()} (run `python -m cthreads.compiler.spirv.tools_new`)"
)


def _newer_validate(spirv: bytes) -> None:
    if tools.newer_tool("spirv-val") is None:
        pytest.skip(DEFERRED)
    tools.validate(spirv)


ALL_FORMS = {**TK.FORMS, **TK.SHAPE_FORMS}


@pytest.mark.parametrize("form", sorted(ALL_FORMS))
def test_every_tile_form_compiles_for_the_h200_and_validates(form):
    kernel = ALL_FORMS[form][0]
    build = kernel.compile(chip=H200)
    assert tools.newer_extension(build.spirv) == G.EXTENSION
    words = memoryview(build.spirv).cast("I")
    ops = {w & 0xFFFF for w in words[5:]}  # (a superset: operand words too)
    for op in (G.CoopOp.TypeCooperativeMatrixKHR, G.CoopOp.CooperativeMatrixMulAddKHR):
        assert op in ops
    _newer_validate(build.spirv)


def test_tile_modules_use_the_vulkan_memory_model_and_others_keep_glsl450():
    dis = (
        tools.disassemble(TK.mm_f16_f32.compile(chip=H200).spirv)
        if tools.newer_tool("spirv-dis")
        else None
    )
    if dis is None:
        pytest.skip(DEFERRED.replace("spirv-val", "spirv-dis"))
    assert "OpMemoryModel PhysicalStorageBuffer64 Vulkan" in dis
    assert "OpCapability VulkanMemoryModel" in dis
    assert "OpCooperativeMatrixLoadKHR" in dis and "OpCooperativeMatrixStoreKHR" in dis

    @Gpu
    def plain(x: list[float]):
        x[0] = 1.0

    assert "OpMemoryModel PhysicalStorageBuffer64 GLSL450" in tools.disassemble(
        plain.compile(chip=H200).spirv
    )


def test_every_h200_matrix_shape_has_a_form():
    assert len(TK.SHAPE_FORMS) == len(TK._h200_shapes()) == 11


def test_bf16_tiles_declare_the_bfloat16_type_and_read_through_u16_pointers():
    build = TK.SHAPE_FORMS["shape_16x16x16_bf16_f32"][0].compile(chip=H200)
    words = list(memoryview(build.spirv).cast("I"))
    caps, floats, i = set(), [], 5
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        if op == 17:  # OpCapability
            caps.add(words[i + 1])
        if op == 22:  # OpTypeFloat: (width, encoding or none)
            floats.append(tuple(words[i + 2 : i + n]))
        i += n
    assert (16, G.FPEncoding.BFloat16KHR) in floats
    assert {G.CAPABILITY_BFLOAT16_TYPE, G.CAPABILITY_BFLOAT16_COOPERATIVE_MATRIX} <= caps
    assert G.EXTENSION_BFLOAT16.encode() in build.spirv
    _newer_validate(build.spirv)
    f16_build = TK.mm_f16_f32.compile(chip=H200)  # no bf16 anywhere else
    assert G.EXTENSION_BFLOAT16.encode() not in f16_build.spirv


def test_bf16_host_conversion_rounds_to_nearest_even():
    import numpy as np

    from cthreads.gpu import from_bf16, to_bf16

    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -2.5, 3.4e38, np.inf])
    bits = to_bf16(x)
    assert bits.dtype == np.uint16
    assert list(from_bf16(bits)) == [1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -2.5, np.inf, np.inf]
    nan = to_bf16(np.float32("nan"))
    assert np.isnan(from_bf16(nan))
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    finite = every[np.isfinite(from_bf16(every))]
    assert np.array_equal(to_bf16(from_bf16(finite)), finite)  # every bf16 value round-trips


def test_bf16_is_for_operand_tiles_only():
    @Gpu(workgroup_size=32)
    def bad(h: list[u16]):
        acc = tile_load(h, 0, 16, 16, 16, use="acc")  # noqa: F841

    assert "accumulator tiles hold f32, f16, i32, u32 elements; this is u16" in str(_error(bad))


def test_signed_integer_tiles_say_so_in_the_multiply_add():
    dis_words = list(memoryview(TK.mm_i8.compile(chip=H200).spirv).cast("I"))
    i = 5
    masks = []
    while i < len(dis_words):
        n, op = dis_words[i] >> 16, dis_words[i] & 0xFFFF
        if op == G.CoopOp.CooperativeMatrixMulAddKHR:
            masks.append(dis_words[i + 6] if n > 6 else 0)
        i += n
    signed = (
        G.Operands.MatrixASignedComponentsKHR
        | G.Operands.MatrixBSignedComponentsKHR
        | G.Operands.MatrixCSignedComponentsKHR
        | G.Operands.MatrixResultSignedComponentsKHR
    )
    assert masks == [signed]


def test_the_supplement_numbers_match_a_newer_spirv_grammar():
    path = tools.newer_tools_dir() / "include" / "spirv" / "unified1" / "spirv.core.grammar.json"
    path = os.environ.get("CTHREADS_SPIRV_GRAMMAR_NEW", path)
    if not os.path.exists(path):
        pytest.skip(f"no newer SPIR-V grammar at {path} (tools_new installs one)")
    grammar = json.loads(open(path).read())
    opcodes = {i["opname"]: i["opcode"] for i in grammar["instructions"]}
    for name, number in G.OPCODES.items():
        assert opcodes[name] == number, name
    kinds = {k["kind"]: k for k in grammar["operand_kinds"]}
    for kind, values in G.ENUMS.items():
        known = {e["enumerant"]: int(str(e["value"]), 0) for e in kinds[kind]["enumerants"]}
        for name, number in values.items():
            assert known[name] == number, (kind, name)


# ------------------------------------------------------------------------------------ errors


def _error(kernel, chip=H200) -> GpuCompileError:
    with pytest.raises(GpuCompileError) as info:
        kernel.compile(chip=chip)
    return info.value


def test_a_device_without_matrix_units_refuses_tile_kernels_at_the_first_tile_line():
    err = _error(TK.mm_f16_f32, chip="lavapipe")
    assert "no matrix units" in str(err)
    assert "acc = tile_fill(f32, TM, TN, 0.0)" in str(err)
    assert "emulate" in str(err)


def test_a_shape_the_device_lacks_is_an_error_naming_its_line_and_listing_the_shapes():
    @Gpu(workgroup_size=32)
    def wide(a: list[f16], c: list[f32]):
        acc = tile_fill(f32, 16, 16, 0.0)
        ta = tile_load(a, 0, 32, 16, 32, use="a")  # noqa: F841
        tile_store(c, 0, 16, acc)

    err = str(_error(wide))
    assert "no a 16x32 (M x K) f16" in err
    assert 'ta = tile_load(a, 0, 32, 16, 32, use="a")' in err
    assert "16x16x16 f16xf16->f32" in err


def test_a_multiply_add_combination_the_device_lacks_is_an_error():
    @Gpu(workgroup_size=32)
    def mixed(a: list[f16], c: list[f32]):
        acc = tile_fill(f32, 16, 8, 0.0)
        ta = tile_load(a, 0, 16, 16, 16, use="a")
        tb = tile_load(a, 0, 8, 16, 8, use="b")
        acc = tile_mma(ta, tb, acc)
        tile_store(c, 0, 8, acc)

    mixed.compile(chip=H200)  # 16x8x16 f16 -> f32 exists

    @Gpu(workgroup_size=32)
    def bf(a: list[f16], c: list[f16]):
        acc = tile_fill(f16, 16, 16, 0.0)
        ta = tile_load(a, 0, 16, 16, 16, use="a")
        tb = tile_load(a, 0, 8, 16, 8, use="b")
        acc = tile_mma(ta, tb, acc)

    err = str(_error(bf))
    assert "do not chain" in err and "acc = tile_mma(ta, tb, acc)" in err


@pytest.mark.parametrize(
    "body, words",
    [
        ("acc = tile_fill(f32, 16, 16, 0.0)\n    x[0] = acc", "is a tile"),
        (
            "ta = tile_load(x, 0, 16, 16, 16)\n",
            "tiles hold f16, bf16, i8, u8 elements; this is f32",
        ),
        ("acc = tile_fill(f32, 16, 16)\n    acc2 = acc", "cannot be copied"),
        ("acc = tile_fill(f32, 16, 16)\n    acc = tile_fill(f32, 16, 8)", "keeps the type"),
        ("acc = tile_fill(f32, 16, 16)\n    tile_store(h, 0, 16, acc)", "holds f16 elements"),
        ("acc = tile_fill(f32, n, 16)\n", "known when compiling"),
        ("ta = tile_load(h, 0, 16, 16, 16, use='c')\n", 'use= is "a", "b" or "acc"'),
        ("acc = tile_fill(f32, 16, 16)\n    tile_mma(acc, acc, acc)", "alone has no effect"),
        ("acc = tile_fill(f32, 16, 16)\n    acc = acc * acc", "not defined on tiles"),
    ],
)
def test_tile_misuse_is_a_located_compile_error(tmp_path, body, words):
    src = tmp_path / "bad_tiles.py"
    src.write_text(
        "from cthreads.gpu import Gpu, f16, f32, tile_fill, tile_load, tile_mma, tile_store\n\n"
        "@Gpu(workgroup_size=32)\n"
        "def bad(x: list[float], h: list[f16], n: int):\n"
        f"    {body}\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_tiles", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    err = _error(mod.bad)
    assert words in str(err), str(err)
    assert "bad_tiles.py:" in str(err)


# ------------------------------------------------------------------------------- profiles


def test_profiles_carry_the_matrix_shapes_into_the_target():
    from cthreads.compiler import profiles

    _, _, h200 = profiles.load(H200)
    assert (16, 16, 16, "f16", "f16", "f32", "f32") in h200.matrix_shapes
    assert (16, 8, 32, "u8", "u8", "u32", "u32") in h200.matrix_shapes
    assert len(h200.matrix_shapes) == 11
    assert profiles.load("lavapipe")[2].matrix_shapes == ()
    _, data, _ = profiles.load(H200)
    workgroup = dict(
        data, cooperative_matrix=[dict(data["cooperative_matrix"][0], scope="workgroup")]
    )
    assert profiles.load(workgroup)[2].matrix_shapes == ()  # only subgroup scope is used


def test_a_malformed_matrix_shape_list_names_the_profile_entry():
    from cthreads.compiler import profiles
    from cthreads.errors import GpuInvalidArgument

    _, data, _ = profiles.load(H200)
    bad = dict(data, cooperative_matrix=[{"m": 16, "n": 16, "k": 16, "a": "f17"}])
    with pytest.raises(GpuInvalidArgument, match="cooperative_matrix entry"):
        profiles.load(bad)


def test_the_ir_printer_shows_tile_statements():
    from cthreads.compiler.printer import format_kernel

    text = format_kernel(TK.mm_epilogue.lower())
    assert "tile #old: tile[acc, f32, 16x16]" in text
    assert "#acc = tile_mma(#ta, #tb, #acc)" in text
    assert "tile_store d[" in text and "= #out" in text and "#out = #out - #old" in text


def test_driver_shapes_of_types_tiles_lack_are_left_out_not_errors():
    from cthreads.compiler.target import matrix_shapes

    listed = [
        {"m": 16, "n": 16, "k": 32, "a": "other", "b": "other", "c": "f32", "result": "f32"},
        {"m": 16, "n": 16, "k": 16, "a": "f16", "b": "f16", "c": "f32", "result": "f32"},
    ]
    assert matrix_shapes({"cooperative_matrix": listed}) == (
        (16, 16, 16, "f16", "f16", "f32", "f32"),
    )


def test_packed_loads_read_words_and_their_misuse_is_located():
    _newer_validate(TK.mm_packed.compile(chip=H200).spirv)

    @Gpu(workgroup_size=32)
    def short(w: list[u64]):
        ta = tile_load(w, 0, 4, 16, 2, use="a", elem=f16)  # noqa: F841  (4 bytes a row)

    assert "not a whole number of `w`'s u64 words" in str(_error(short))

    @Gpu(workgroup_size=32)
    def floats(x: list[f32]):
        ta = tile_load(x, 0, 16, 16, 16, use="a", elem=f16)  # noqa: F841

    assert "packed in u32 or u64 words; `x` holds f32" in str(_error(floats))


@Gpu(workgroup_size=32)
def _fits_proven(a: list[f16], c: list[f32]):
    sa = shared(f16, 16 * 24)
    acc = tile_fill(f32, 16, 16)
    for ks in range(0, 2):  # offsets 0 and 8: inside sa, aligned, with a constant stride
        ta = tile_load(sa, ks * 8, 24, 16, 16, use="a")
        tb = tile_load(sa, ks * 8, 24, 16, 16, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, 0, 16, acc)


@Gpu(workgroup_size=32)
def _fits_unknown(a: list[f16], c: list[f32], off: int, s: int):
    sa = shared(f16, 16 * 24)
    acc = tile_fill(f32, 16, 16)
    ta = tile_load(sa, off, 24, 16, 16, use="a")  # constant stride: one bound compare
    tb = tile_load(sa, 0, s, 16, 16, use="b")  # runtime stride: the full test
    acc = tile_mma(ta, tb, acc)
    tile_store(c, off, s, acc)


@Gpu(workgroup_size=128)
def _fits_by_subgroup(c: list[f32]):
    # four subgroups of 32 on NVIDIA, each its 32 rows of sa; the ks loop steps by 16, so an
    # offset is a multiple of 8 (16-byte aligned) and the last one ends inside the array
    sa = shared(f16, 128 * 40)
    row = subgroup_id() * 32 * 40
    acc = tile_fill(f32, 16, 16)
    for ks in range(0, 32, 16):
        ta = tile_load(sa, row + ks, 40, 16, 16, use="a")
        tb = tile_load(sa, row + 16 * 40 + ks, 40, 16, 16, use="b")
        acc = tile_mma(ta, tb, acc)
    tile_store(c, 0, 16, acc)


def _ops(spirv: bytes) -> list[int]:
    words = memoryview(spirv).cast("I")
    out, i = [], 5
    while i < len(words):
        out.append(words[i] & 0xFFFF)
        i += words[i] >> 16
    return out


def test_tile_guards_leave_out_the_tests_that_cannot_fail():
    from cthreads.compiler.spirv.grammar import Op

    proven = _ops(_fits_proven.compile(chip=H200).spirv)
    # the two shared loads always fit: no guard, no division; the list store at offset 0 with
    # the constant stride 16 keeps one bound compare (the list's length is known at run time)
    assert proven.count(Op.SDiv) == 0 and proven.count(Op.SGreaterThanEqual) == 0
    assert proven.count(Op.SLessThanEqual) == 1
    unknown = _ops(_fits_unknown.compile(chip=H200).spirv)
    # the runtime-stride load and store keep the row-room division; the constant-stride load
    # a sign, an alignment and one bound test
    assert unknown.count(Op.SDiv) == 2 and unknown.count(Op.SLessThanEqual) == 1
    for fn in (_fits_proven, _fits_unknown):
        _newer_validate(fn.compile(chip=H200).spirv)


def test_subgroup_id_and_stepped_counters_prove_fragment_loads(tmp_path):
    from cthreads.compiler.spirv.grammar import Op

    # H200 profile: min_subgroup_size 32, so subgroup_id() < 4; ks is 0 or 16 (not 0 .. 31)
    # and every offset a multiple of 8: both loads unguarded, only the list store is tested
    proven = _ops(_fits_by_subgroup.compile(chip=H200).spirv)
    # three branches: the ks loop's, the shared array's zeroing loop's and the store's guard
    assert proven.count(Op.BranchConditional) == 3
    assert proven.count(Op.BitwiseAnd) == 0  # no alignment test: the offsets' residues
    # without a minimum subgroup size (a device that does not say), a subgroup may have one
    # lane: subgroup_id() reaches 127 and the loads keep their guards
    profile = json.loads((PROFILES / "nvidia-h200.json").read_text())
    del profile["limits"]["min_subgroup_size"]
    path = tmp_path / "no-min-subgroup.json"
    path.write_text(json.dumps(profile))
    guarded = _ops(_fits_by_subgroup.compile(chip=str(path)).spirv)
    assert guarded.count(Op.BranchConditional) == 5  # a bound test on each load
    assert guarded.count(Op.BitwiseAnd) == 0  # (alignment needs no subgroup bound)
    for spirv in (proven, guarded):
        assert spirv.count(G.CoopOp.CooperativeMatrixLoadKHR) == 2
    _newer_validate(_fits_by_subgroup.compile(chip=H200).spirv)
