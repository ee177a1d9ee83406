"""Paths for the tests/language goldens (`check_golden` is the suite's, tests/goldenhelp.py) and
`load_bench`, which imports a bench/ script as a module."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from goldenhelp import check_golden  # noqa: F401 - the suite's one golden switch

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"


def relative(text: str) -> str:
    return text.replace(str(HERE) + os.sep, "")


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py as a module (bench/ is not a package), for tests of its kernels."""
    path = HERE.parents[1] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
