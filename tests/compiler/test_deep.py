"""Deep and large kernels (SPEC §2, §14): long elif chains, deeply nested blocks, long
expressions and many list parameters compile and run right, or fail alone with a located
`GpuCompileError` (never a bare RecursionError, never silently wrong results).

The kernels are generated as source files (the compiler reads a kernel's source) and imported.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from cthreads.compiler import ir
from cthreads.compiler.frontend import depth
from cthreads.gpu import GpuCompileError, gpu, prepare
from cthreads.gpu.kernel import GpuKernel, unregister

HEADER = "from cthreads.gpu import Gpu, GlobalIdx\n\n"


def chain_src(name: str, n: int) -> str:
    """`if i == 0: v = 1 elif i == 1: v = 4 ... else: v = -1` with n conditions."""
    s = f"@Gpu\ndef {name}(x: list[int]) -> None:\n    i: int = GlobalIdx.x\n    v: int = 0\n"
    for k in range(n):
        s += f"    {'if' if k == 0 else 'elif'} i == {k}:\n        v = {3 * k + 1}\n"
    return s + "    else:\n        v = -1\n    x[i] = v\n\n"


def chain_expected(n: int, size: int) -> list[int]:
    return [3 * k + 1 if k < n else -1 for k in range(size)]


def nested_src(name: str, n: int) -> str:
    """n nested `if i >= k:` blocks, each setting v = k + 1 and touching the list (a
    bounds-checked access, one more selection) before going deeper."""
    s = f"@Gpu\ndef {name}(x: list[int]) -> None:\n    i: int = GlobalIdx.x\n    v: int = 0\n"
    ind = "    "
    for k in range(n):
        s += f"{ind}if i >= {k}:\n"
        ind += "    "
        s += f"{ind}v = {k + 1}\n{ind}x[i] = x[i] + 1\n"
    return s + "    x[i] = x[i] * 1000 + v\n\n"


def nested_expected(n: int, size: int) -> list[int]:
    return [min(k + 1, n) * 1000 + min(k + 1, n) for k in range(size)]


def sum_src(name: str, n: int) -> str:
    terms = " + ".join(["x[i]"] * n)
    return (
        f"@Gpu\ndef {name}(x: list[int]) -> None:\n    i: int = GlobalIdx.x\n    x[i] = {terms}\n\n"
    )


def params_src(name: str, n: int) -> str:
    ps = ", ".join(f"a{k}: list[int]" for k in range(n))
    body = "".join(f"    a{k}[i] = a{k}[i] + {k}\n" for k in range(n))
    return f"@Gpu\ndef {name}({ps}) -> None:\n    i: int = GlobalIdx.x\n{body}\n"


GOOD_SRC = """@Gpu
def deep_good(x: list[int]) -> None:
    i: int = GlobalIdx.x
    x[i] = x[i] + 1

"""


@pytest.fixture
def load(tmp_path):
    """Write generated kernels to a module file, import it; its kernels are unregistered after
    the test (so no other test's prepare() compiles them)."""
    loaded: list = []

    def _load(*sources: str):
        path = tmp_path / f"deep_kernels_{len(loaded)}.py"
        path.write_text(HEADER + "".join(sources))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        loaded.append(module)
        return module

    yield _load
    for module in loaded:
        for value in vars(module).values():
            if isinstance(value, GpuKernel):
                unregister(value)
        sys.modules.pop(module.__name__, None)


def _device_or_skip():
    import cthreads.gpu as g

    if not g.available():
        pytest.skip("no Vulkan device")


SIZE = 600


# ------------------------------------------------------------------------ elif chains


@pytest.mark.parametrize("n", [ir.ELIF_FLATTEN - 1, ir.ELIF_FLATTEN, 120, 500])
def test_long_elif_chain_gives_python_results(load, n):
    """Chains past ~78 conditions were silently wrong on lavapipe (its 80-deep selection stack);
    500 raised RecursionError. Long chains are emitted flat now."""
    _device_or_skip()
    m = load(chain_src(f"chain{n}", n))
    xs = [0] * SIZE
    gpu(getattr(m, f"chain{n}"), xs).join()
    assert xs == chain_expected(n, SIZE)


def test_long_chain_is_emitted_without_nested_merges(load):
    m = load(chain_src("chain200", 200))
    text = m.chain200.disassemble()
    # one selection per link behind the flag plus one per condition: at most 2 open at once
    assert text.count("OpSelectionMerge") >= 2 * 200 - 1
    assert "elif_done" in text


def test_chain_with_break_and_return_in_links(load):
    _device_or_skip()
    src = (
        "@Gpu\ndef chain_ctl(x: list[int]) -> None:\n    i: int = GlobalIdx.x\n"
        "    v: int = 0\n    for k in range(3):\n"
    )
    for k in range(12):
        kw = "if" if k == 0 else "elif"
        act = ("break", "continue", "return")[k % 3]
        src += f"        {kw} i % 12 == {k}:\n            v = v + {k + 1}\n            {act}\n"
    src += "        else:\n            v = v + 100\n    x[i] = v\n\n"
    m = load(src)
    xs = [-5] * 48
    gpu(m.chain_ctl, xs).join()
    want = []
    for i in range(48):
        r = i % 12
        act = ("break", "continue", "return")[r % 3]
        want.append(-5 if act == "return" else (r + 1) * (1 if act == "break" else 3))
    assert xs == want


# ----------------------------------------------------------------------- nested blocks


def test_nested_ifs_at_the_limit_give_python_results(load):
    _device_or_skip()
    n = ir.MAX_NESTING
    m = load(nested_src("nest_ok", n))
    xs = [0] * 100
    gpu(m.nest_ok, xs).join()
    assert xs == nested_expected(n, 100)


def test_nested_ifs_past_the_limit_are_a_located_error(load):
    n = ir.MAX_NESTING + 1
    m = load(nested_src("nest_deep", n))
    with pytest.raises(GpuCompileError) as info:
        m.nest_deep.lower()
    err = info.value
    assert f"nested {n} levels deep" in err.reason and str(ir.MAX_NESTING) in err.reason
    assert err.filename.endswith(".py") and err.lineno > 1 and err.col > 1
    assert err.line.strip() == f"if i >= {n - 1}:"


def test_long_chain_counts_two_levels(load):
    """A flat chain (ELIF_FLATTEN conditions or more) nested ~60 deep still fits the limit."""
    _device_or_skip()
    outer = ir.MAX_NESTING - 2
    s = "@Gpu\ndef nest_chain(x: list[int]) -> None:\n    i: int = GlobalIdx.x\n"
    s += "    v: int = 0\n    w: int = 0\n"
    ind = "    "
    for k in range(outer):
        s += f"{ind}if x[i] > {-k - 1}:\n"  # always true, unknown to the compiler
        ind += "    "
        s += f"{ind}w = w + 1\n"
    for k in range(20):
        s += f"{ind}{'if' if k == 0 else 'elif'} i == {k}:\n{ind}    v = {k + 7}\n"
    s += "    x[i] = v * 1000 + w\n\n"
    m = load(s)
    xs = [0] * 30
    gpu(m.nest_chain, xs).join()
    assert xs == [(k + 7 if k < 20 else 0) * 1000 + outer for k in range(30)]


# ------------------------------------------------------------------- long expressions


def test_600_term_sum_compiles_and_runs(load):
    """It raised RecursionError in the frontend (and took prepare() down for every kernel)."""
    _device_or_skip()
    m = load(sum_src("sum600", 600))
    xs = list(range(-50, 50))
    gpu(m.sum600, xs).join()
    assert xs == [600 * v for v in range(-50, 50)]


def test_recursion_error_becomes_a_located_compile_error(load, monkeypatch):
    """Should the compiler still run out of depth, the error is the kernel's, at its line."""
    monkeypatch.setattr(depth, "RECURSION_LIMIT", 0)  # leave Python's default (1000) in place
    m = load(sum_src("sum900", 900))
    with pytest.raises(GpuCompileError) as info:
        m.sum900.lower()
    err = info.value
    assert "nests too deeply" in err.reason
    assert (
        err.filename.endswith(".py") and err.lineno == 6
    )  # header 1-2, decorator 3, def 4, body 5-6
    assert err.line.strip().startswith("x[i] = x[i] + x[i]")


def test_statement_past_max_depth_is_refused_before_recursing(load, monkeypatch):
    monkeypatch.setattr(depth, "MAX_AST_DEPTH", 100)
    m = load(sum_src("sum150", 150))
    with pytest.raises(GpuCompileError) as info:
        m.sum150.lower()
    assert "more than the 100" in info.value.reason
    assert info.value.line.strip().startswith("x[i] =")


def test_recursion_limit_is_restored():
    before = sys.getrecursionlimit()
    with depth.deep_recursion():
        with depth.deep_recursion():
            assert sys.getrecursionlimit() >= depth.RECURSION_LIMIT
        assert sys.getrecursionlimit() >= depth.RECURSION_LIMIT
    assert sys.getrecursionlimit() == before


def test_prepare_compiles_deep_kernels_and_fails_only_the_bad_one(load, monkeypatch):
    _device_or_skip()
    m = load(sum_src("psum600", 600), chain_src("pchain500", 500), GOOD_SRC)
    report = prepare()
    for name in ("psum600", "pchain500", "deep_good"):
        assert "error" not in report[name], report[name]
    # a kernel past the depth the compiler takes fails alone; the others still compile and run
    monkeypatch.setattr(depth, "RECURSION_LIMIT", 0)
    bad = load(sum_src("psum1200", 1200), GOOD_SRC.replace("deep_good", "deep_good2"))
    report = prepare()
    err = report["psum1200"]["error"]
    assert isinstance(err, GpuCompileError) and err.lineno and err.filename.endswith(".py")
    assert "error" not in report["deep_good2"] and "error" not in report["psum600"]
    xs = [1, 2, 3]
    gpu(bad.deep_good2, xs).join()
    assert xs == [2, 3, 4]
    ys = [0] * 600
    gpu(m.pchain500, ys).join()
    assert ys == chain_expected(500, 600)


# -------------------------------------------------------------------- many parameters


@pytest.mark.parametrize("n", [64, 100])
def test_many_list_parameters_compile_validate_and_run(load, n):
    """64 lists gave `body` an OpTypeFunction of 257 parameters (spirv-val allows 255): an
    internal compiler error. Past the limit the body reads the parameter block itself."""
    m = load(params_src(f"params{n}", n))
    kernel = getattr(m, f"params{n}")
    compiled = kernel.compiled()  # spirv-val runs on every compile
    assert compiled.spirv
    _device_or_skip()
    lists = [[10 * k + j for j in range(37)] for k in range(n)]
    gpu(kernel, *lists).join()
    assert lists == [[10 * k + j + k for j in range(37)] for k in range(n)]


def test_few_parameters_keep_passing_them_to_body(load):
    """The usual form is unchanged: main loads the block once and passes the values."""
    m = load(params_src("params3", 3))
    text = m.params3.disassemble()
    assert text.count("OpFunctionParameter") >= 7  # g, 3 addresses, 3 lengths (scalar body)


def test_generated_sources_are_valid_python(tmp_path):
    for src in (chain_src("c", 3), nested_src("n", 3), sum_src("s", 3), params_src("p", 3)):
        compile(HEADER + src, str(Path(tmp_path) / "x.py"), "exec")
