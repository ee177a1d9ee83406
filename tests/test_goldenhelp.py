"""One golden switch for the whole suite: every golden test goes through goldenhelp.check_golden
and no test reads a golden-update variable of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from goldenhelp import ENV, check_golden

TESTS = Path(__file__).resolve().parent


def test_update_writes_and_a_difference_fails(tmp_path, monkeypatch):
    path = tmp_path / "g" / "k.ir"
    monkeypatch.setenv(ENV, "1")
    check_golden(path, "new\n")
    assert path.read_text() == "new\n"
    monkeypatch.delenv(ENV)
    check_golden(path, "new\n")
    with pytest.raises(AssertionError, match=f"{ENV}=1"):
        check_golden(path, "other\n")


@pytest.mark.parametrize("value", ["", "0"])
def test_a_missing_golden_fails_and_is_not_written(tmp_path, monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    path = tmp_path / "missing.txt"
    with pytest.raises(pytest.fail.Exception, match="missing golden"):
        check_golden(path, "x")
    assert not path.exists()


def test_no_other_golden_switch():
    """Only goldenhelp reads the environment about goldens, and only by its one name."""
    readers = {}
    for path in TESTS.rglob("*.py"):
        text = path.read_text()
        names = set(re.findall(r"CTHREADS_\w*(?:GOLDEN|REGEN)\w*", text))
        local = re.search(r"environ\S*\(\s*[\"']CTHREADS_\w*GOLDEN", text)
        if path.name != "goldenhelp.py" and (local or names - {ENV}):
            readers[path.relative_to(TESTS).as_posix()] = sorted(names)
    assert not readers, f"use goldenhelp.check_golden and {ENV}: {readers}"
