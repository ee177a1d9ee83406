"""docs/reliability.md keeps its misuse table in step with tests/misuse/test_misuse.py CASES and
lists every fault-test module of this directory."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def misuse_cases() -> list[tuple[str, str]]:
    """(id, documented exception name) of every CASES row, read from the source (no import:
    the misuse module defines kernels and would register them in this session)."""
    source = (ROOT / "tests/misuse/test_misuse.py").read_text()
    body = source[source.index("CASES = [") :]
    return re.findall(r'^\s+\("([\w-]+)",.*?, (\w+), (?:"|\')', body, re.MULTILINE)


def test_misuse_table_lists_every_case():
    doc = (ROOT / "docs/reliability.md").read_text()
    cases = misuse_cases()
    assert len(cases) >= 40
    rows = dict(re.findall(r"^\| \d+ \| `([\w-]+)` \| (\w+)", doc, re.MULTILINE))
    assert {cid for cid, _ in cases} == set(rows), "regenerate the misuse table"
    for cid, exc in cases:
        assert rows[cid] == exc, (cid, rows[cid], exc)


def test_fault_table_lists_every_fault_module():
    doc = (ROOT / "docs/reliability.md").read_text()
    for path in Path(__file__).parent.glob("test_*.py"):
        if path.stem != Path(__file__).stem:
            assert f"`{path.stem}" in doc, f"{path.name} is missing from the fault table"
