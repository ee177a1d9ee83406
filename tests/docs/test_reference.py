"""docs/reference.md is generated from the compiler's tables and must match them exactly."""

from __future__ import annotations

from pathlib import Path

from goldenhelp import check_golden

from cthreads.compiler import reference
from cthreads.compiler.frontend.memory import ATOMIC_OPS
from cthreads.compiler.frontend.subgroup import SUBGROUP_OPS
from cthreads.compiler.intrinsics import INTRINSICS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_reference_page_is_up_to_date():
    text = reference.render()
    check_golden(PAGE, text, hint="run `python -m cthreads.compiler.reference > docs/reference.md`")


def test_reference_lists_every_table_entry():
    text = reference.render()
    for name in (*INTRINSICS, *ATOMIC_OPS, *SUBGROUP_OPS):
        assert f"`{name}" in text, name
