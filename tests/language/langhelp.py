"""Golden-file helper for tests/language (CTHREADS_UPDATE_GOLDEN=1 rewrites the files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("CTHREADS_UPDATE_GOLDEN", "") not in ("", "0")


def relative(text: str) -> str:
    return text.replace(str(HERE) + os.sep, "")


def check_golden(path: Path, actual: str) -> None:
    if UPDATE or not path.exists():
        if not UPDATE and os.environ.get("CI"):
            pytest.fail(f"missing golden file {path} (run with CTHREADS_UPDATE_GOLDEN=1)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
    assert actual == path.read_text(), (
        f"{path.name} changed; rerun with CTHREADS_UPDATE_GOLDEN=1 if intended"
    )
