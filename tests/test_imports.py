"""Every module of the package imports alone in a fresh interpreter, and the packages form the
DAG of docs/DESIGN (runtime and compiler never load each other; residency loads no launch, gpu
or compiler module; launch loads no part of the `cthreads.gpu` face).

A fresh interpreter per module costs a Python start and the whole import chain each (~90
modules); instead one driver process, which has imported nothing from cthreads, forks children
down the package tree (see DRIVER): each module is imported in exactly the state a fresh
`python -c "import M"` reaches, at a fraction of the cost. Where fork is missing, each module
gets its own `python -c`.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cthreads"

# (importer package, packages it must never load, why)
FORBIDDEN = [
    (
        "cthreads.runtime",
        ("cthreads.compiler", "cthreads.launch", "cthreads.residency", "cthreads.gpu"),
        "runtime never imports the compiler",
    ),
    (
        "cthreads.compiler",
        (
            "cthreads.runtime",
            "cthreads._native",
            "cthreads.launch",
            "cthreads.residency",
            "cthreads.gpu",
        ),
        "the compiler sees the device only as a Target",
    ),
    (
        "cthreads.residency",
        ("cthreads.launch", "cthreads.gpu", "cthreads.compiler"),
        "residency uses runtime; launch finds residents through it",
    ),
    ("cthreads.launch", ("cthreads.gpu",), "cthreads.gpu is the face above launch"),
    (
        "cthreads.errors",
        (
            "cthreads.runtime",
            "cthreads.compiler",
            "cthreads.launch",
            "cthreads.gpu",
            "cthreads.residency",
            "cthreads._native",
        ),
        "errors imports nothing from cthreads",
    ),
]

DRIVER = r"""
import json, os, sys, traceback
assert not [m for m in sys.modules if m == "cthreads" or m.startswith("cthreads.")]
out_dir, names = sys.argv[1], sys.argv[2:]
# Third-party libraries are no part of the graph under test: loading them once here saves
# every child the time.
for lib in ("numpy", "hypothesis", "hypothesis.strategies"):
    try:
        __import__(lib)
    except ImportError:
        pass

# Importing `a.b.c` first imports `a`, then `a.b`, then runs `a/b/c.py`: a process that has
# imported exactly `a.b` is in the state a fresh `import a.b.c` reaches before c's body runs. So
# the children fork down the package tree, each importing its module after its package did.
parts = [name.split(".") for name in names]
tree = sorted({".".join(p[:k]) for p in parts for k in range(1, len(p) + 1)})  # with packages
children = {}
for name in tree:
    children.setdefault(name.rpartition(".")[0], []).append(name)
tokens_r, tokens_w = os.pipe()           # a jobserver: one token per core for importing
os.write(tokens_w, b"x" * max(2, os.cpu_count() or 2))

def import_one(name):
    if name.endswith(".__main__"):
        sys.argv = [name, "--help"]      # an entry point: `python -m pkg --help`
        try:
            __import__(name)
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
    else:
        __import__(name)

def visit(name, inherited_error):
    result = {"ok": True, "error": ""}
    if inherited_error:
        result = {"ok": False, "error": inherited_error}
    else:
        os.read(tokens_r, 1)
        try:
            import_one(name)
        except BaseException:
            result = {"ok": False, "error": traceback.format_exc()}
        finally:
            os.write(tokens_w, b"x")
    result["loaded"] = sorted(m for m in sys.modules if m.startswith("cthreads."))
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(result, f)
    pids = []
    for sub in children.get(name, ()):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                visit(sub, result["error"])
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)

with open(os.devnull, "w") as null:
    os.dup2(null.fileno(), 1)            # --help text and prints are not our output
for top in children.get("", ()):
    pid = os.fork()
    if pid == 0:
        try:
            visit(top, "")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
"""


def package_modules() -> list[str]:
    """Every Python module under cthreads/ (packages included), C extensions left out."""
    names = ["cthreads"]
    extension = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="cthreads.", onerror=lambda _: None):
        spec = info.module_finder.find_spec(info.name.rsplit(".", 1)[-1])
        if spec is not None and spec.origin and spec.origin.endswith(extension):
            continue
        names.append(info.name)
    return sorted(names)


def _walk_without_importing() -> list[str]:
    # pkgutil.walk_packages imports packages to find their children; do it by directory so that
    # the test process itself proves nothing.
    names = ["cthreads"]

    def walk(path: Path, prefix: str) -> None:
        for info in pkgutil.iter_modules([str(path)]):
            name = prefix + info.name
            spec = info.module_finder.find_spec(info.name)
            if spec is None or (spec.origin or "").endswith(
                tuple(importlib.machinery.EXTENSION_SUFFIXES)
            ):
                continue
            names.append(name)
            if info.ispkg:
                walk(path / info.name, name + ".")

    walk(PACKAGE, "cthreads.")
    return sorted(names)


MODULES = _walk_without_importing()


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYTHONSTARTUP", None)
    # children are forked from a process that loaded numpy: keep its BLAS single-threaded
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _import_all(tmp_path: Path) -> dict[str, dict]:
    if hasattr(os, "fork"):
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER, str(tmp_path), *MODULES],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        results = {}
        for name in MODULES:
            path = tmp_path / f"{name}.json"
            results[name] = (
                json.loads(path.read_text())
                if path.exists()
                else {"ok": False, "error": "the child died", "loaded": []}
            )
        return results

    def one(name: str) -> dict:  # pragma: no cover - platforms without fork
        probe = f"import sys, json; import {name}; print(json.dumps(sorted(sys.modules)))"
        proc = subprocess.run(
            [sys.executable, "-c", probe],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode:
            return {"ok": False, "error": proc.stderr, "loaded": []}
        loaded = json.loads(proc.stdout.splitlines()[-1])
        return {"ok": True, "error": "", "loaded": [m for m in loaded if m.startswith("cthreads.")]}

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return dict(zip(MODULES, pool.map(one, MODULES)))


@pytest.fixture(scope="module")
def imports(tmp_path_factory) -> dict[str, dict]:
    return _import_all(tmp_path_factory.mktemp("imports"))


def test_the_walk_finds_the_package():
    assert len(MODULES) >= 60, MODULES
    for name in (
        "cthreads.launch.dispatch",
        "cthreads.residency.arena",
        "cthreads.gpu.kernel",
        "cthreads.testing.emulate",
        "cthreads.compiler.spirv.codegen",
    ):
        assert name in MODULES
    assert not any(name.endswith(("_native", "_spirvval")) for name in MODULES)
    assert MODULES == package_modules()


def test_every_module_imports_alone(imports):
    failed = {name: r["error"] for name, r in imports.items() if not r["ok"]}
    assert not failed, "\n\n".join(f"{name}:\n{err}" for name, err in failed.items())


@pytest.mark.parametrize("importer,forbidden,why", FORBIDDEN, ids=[f[0] for f in FORBIDDEN])
def test_the_package_graph(imports, importer, forbidden, why):
    bad = {}
    for name, result in imports.items():
        if name == importer or name.startswith(importer + "."):
            loaded = [m for m in result["loaded"] if m.startswith(forbidden)]
            if loaded:
                bad[name] = loaded
    assert not bad, f"{why}: {bad}"


def test_a_cycle_is_caught(tmp_path):
    # the driver reports a module that fails to import (the check can fail)
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("from .b import B\nA = 1\n")
    (pkg / "b.py").write_text("from .a import A\nB = 2\n")
    out = tmp_path / "out"
    out.mkdir()
    env = dict(_env(), PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(out), "cyc.b"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "cyc.b.json").read_text())
    assert not result["ok"] and "circular import" in result["error"]


# Issue 19: `import cthreads.gpu` loads only what every program needs. The compiler loads where a
# kernel is decorated, compiled or launched uncompiled; asyncio (with ssl and socket) on the
# first `await job`. Checked in a truly fresh interpreter (the DRIVER above preloads numpy and
# hypothesis, which may load asyncio themselves).
LAZY_PROBE = r"""
import json, sys
import cthreads
after_package = sorted(sys.modules)
import cthreads.gpu as g
after_gpu = sorted(sys.modules)
missing = [n for n in g.__all__ if not hasattr(g, n)]
print(json.dumps({"package": after_package, "gpu": after_gpu, "missing": missing}))
"""

# what no plain `import` may load: the compiler's packages, asyncio's network stack, and
# concurrent.futures with the logging it loads (~10 ms on lavapipe; prepare() and large copies
# load them)
NOT_AT_IMPORT = ("cthreads.compiler", "asyncio", "ssl", "socket", "concurrent.futures", "logging")


def _fresh(probe: str, path: Path | None = None) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", probe] if path is None else [sys.executable, str(path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _offending(modules: list[str]) -> list[str]:
    return [m for m in modules if m in NOT_AT_IMPORT or m.startswith("cthreads.compiler.")]


def test_importing_cthreads_gpu_loads_no_compiler_and_no_asyncio():
    result = _fresh(LAZY_PROBE)
    assert not _offending(result["package"]), result["package"]
    assert not _offending(result["gpu"]), _offending(result["gpu"])
    assert "cthreads.compiler" not in result["gpu"]
    # nor numpy (~70 ms on CI): host tiles and arrays load it where they are made
    assert "numpy" not in result["gpu"]
    # nor the pipeline-statistics report (its dataclasses, ~2 ms): loaded when first asked for
    assert "cthreads.gpu.statistics" not in result["gpu"]
    assert "cthreads.launch.session" in result["gpu"]  # its fork hook is installed at import
    assert not result["missing"], result["missing"]


def test_decorating_after_a_bare_import_works_without_asyncio():
    # the lazy imports in gpu/kernel.py are reached (and work) from a bare `import cthreads.gpu`;
    # decorating needs no device and still loads no asyncio
    probe = r"""
import json, sys
import cthreads.gpu as g

@g.Gpu
def k(x: list[float], a: float):
    x[g.GlobalIdx.x] = a

meta = k.__gpu_kernel_meta__
print(json.dumps({"asyncio": "asyncio" in sys.modules, "repr": repr(k),
                  "kinds": [p["kind"] for p in meta["params"]], "key": len(k.source_key)}))
"""
    result = _fresh(probe)
    assert not result["asyncio"]
    assert result["repr"].startswith("<GpuKernel __main__.k(")
    assert result["kinds"][0] == "list" and result["key"] == 32


# Issue 19: decorating a kernel needs its signature and source lines only: no IR node classes
# (compiler.ir, ~40 ms on lavapipe), no lowering, no syntax tree, no tokenizer run.
DECORATE_PROBE = r"""
import json, sys
import cthreads.gpu as g
before = set(sys.modules)
import tokenize
compiled = []
real = tokenize._compile
tokenize._compile = lambda *a: compiled.append(1) or real(*a)

@g.Gpu
def k(n: int, a: float, x: list[float], y: list[float]) -> None:
    i: int = g.GlobalIdx.x
    if i < n:
        y[i] = a * x[i] + y[i]  # a comment

meta = k.__gpu_kernel_meta__
print(json.dumps({"new": sorted(set(sys.modules) - before), "tokenized": len(compiled),
                  "kinds": [p["kind"] for p in meta["params"]], "first": k.firstlineno,
                  "lines": len(k._text[0])}))
"""

# what decorating may load of the compiler: the signature check and the value types
DECORATION_MAY_LOAD = {
    "cthreads.compiler",
    "cthreads.compiler.frontend",
    "cthreads.compiler.frontend.signature",
    "cthreads.compiler.ir_types",
    "cthreads.compiler.target",  # (the frozen record the value types are made of)
}


def test_decorating_loads_no_ir_and_runs_no_tokenizer(tmp_path):
    script = tmp_path / "decorate_probe.py"  # a file: `python -c` code has no source lines
    script.write_text(DECORATE_PROBE)
    result = _fresh(script.read_text(), path=script)
    ours = {m for m in result["new"] if m.startswith("cthreads.compiler")}
    assert ours <= DECORATION_MAY_LOAD, sorted(ours - DECORATION_MAY_LOAD)
    assert not result["tokenized"]  # the block's extent came from the code object
    assert result["kinds"] == ["int", "float", "list", "list"]
    assert result["lines"] == 5
