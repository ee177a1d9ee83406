"""The one golden-file switch of the suite: `CTHREADS_UPDATE_GOLDEN=1` rewrites every golden
(IR texts, error texts, `.spvasm`, docs/reference.md) from the current output; without it a
golden that differs or is missing fails the test. Review the diff of a rewrite like code.

Every golden test calls `check_golden` (tests/ is on sys.path through tests/conftest.py), so
there is one variable to remember and one behaviour: a missing golden is never written
silently, since a test that creates its own expectation checks nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "CTHREADS_UPDATE_GOLDEN"


def updating() -> bool:
    """Whether this run rewrites goldens (read per call, so a test can set the variable)."""
    return os.environ.get(ENV, "") not in ("", "0")


def check_golden(path: Path, actual: str, hint: str = "") -> None:
    """Assert `actual` equals the text of golden `path`; under CTHREADS_UPDATE_GOLDEN=1 write
    it instead. `hint` adds how else to bring the golden up to date."""
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    how = f"rerun with {ENV}=1 and review the diff" + (f", or {hint}" if hint else "")
    if not path.exists():
        pytest.fail(f"missing golden file {path}: {how}")
    assert actual == path.read_text(), f"{path.name} differs from its golden: {how}"
