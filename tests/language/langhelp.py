"""Paths for the tests/language goldens; `check_golden` is the suite's (tests/goldenhelp.py)."""

from __future__ import annotations

import os
from pathlib import Path

from goldenhelp import check_golden  # noqa: F401 - the suite's one golden switch

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"


def relative(text: str) -> str:
    return text.replace(str(HERE) + os.sep, "")
