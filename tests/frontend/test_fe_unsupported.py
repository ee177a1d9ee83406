"""Python statements and displays the kernel language refuses (SPEC §2), each with its reason
and caret, and generator kernels refused at decoration.
"""

# ruff: noqa: F821, F823, F841, FURB163, PIE790, PLC3002, PLW0120, RET501, UP018 - kernels written to probe the compiler

from __future__ import annotations


import pytest
from fehelp import kernel, rejects


# ----------------------------------------------------------- rejected statements


@pytest.mark.parametrize(
    "source_fn, reason, at",
    [
        ("assert_", "`assert` cannot be checked", "assert"),
        ("try_", "`try` is not supported", "try"),
        ("raise_", "kernels cannot raise", "raise"),
        ("with_", "`with` blocks", "with"),
        ("import_", "`import` inside a kernel", "import"),
        ("nonlocal_", "`nonlocal` is not supported", "nonlocal"),
        ("class_", "class definitions", "class"),
        ("setcomp", "set comprehensions", "{v for"),
        ("genexp", "generator expressions", "(v for"),
        ("dict_", "dicts are not supported", "{1: 2}"),
        ("tuple_value", "tuples are not supported", "(1, 2)"),
        ("list_display", "list displays", "[1, 2]"),
        ("attr_assign", "attribute assignment", "x.attr"),
        ("match_", "`match` is not supported", "match"),
    ],
)
def test_rejected_statements(source_fn, reason, at):
    rejects(REJECTS[source_fn], reason, at=at)


def _rejects_table():
    def assert_(x: list[int]) -> None:
        assert x[0]

    def try_(x: list[int]) -> None:
        try:
            pass
        finally:
            pass

    def raise_(x: list[int]) -> None:
        raise RuntimeError

    def with_(x: list[int]) -> None:
        with x:
            pass

    def import_(x: list[int]) -> None:
        import os  # noqa: F401

    v = 0

    def nonlocal_(x: list[int]) -> None:
        nonlocal v

    def class_(x: list[int]) -> None:
        class C:
            pass

    def yield_(x: list[int]) -> None:
        x[0] = 1
        if x[1]:
            x[2] = yield

    def setcomp(x: list[int]) -> None:
        s = {v for v in range(3)}

    def genexp(x: list[int]) -> None:
        g = (v for v in range(3))

    def dict_(x: list[int]) -> None:
        d = {1: 2}

    def tuple_value(x: list[int]) -> None:
        t = (1, 2)

    def list_display(x: list[int]) -> None:
        t = [1, 2]

    def attr_assign(x: list[int]) -> None:
        x.attr = 1

    def match_(x: list[int]) -> None:
        match x[0]:
            case 1:
                pass

    return {f.__name__: f for f in locals().values() if callable(f)}


REJECTS = _rejects_table()


def test_generator_kernel_rejected_at_decoration():
    with pytest.raises(TypeError, match="a kernel cannot be a generator"):
        kernel(REJECTS["yield_"])
