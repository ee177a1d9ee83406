"""Atomic read-modify-write of one list (or shared array) element: `atomic_add(xs, i, v)`, ...

Inside a `@Gpu` kernel each is one atomic device operation returning the element's old value
(relaxed memory order; an index outside the list changes nothing and returns 0). On the host they
run as plain Python on the list, so a kernel called directly still works. The compiler
recognises these functions by their `__gpu_builtin__` tag.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, MutableSequence
from typing import Any

from .builtin import tagged

_F32 = struct.Struct("<f")


def _bits(v: float) -> bytes:
    try:
        return _F32.pack(v)
    except OverflowError:
        return _F32.pack(float("inf") if v > 0 else float("-inf"))


def _update(xs: MutableSequence, i: int, fn: Callable[[Any], Any]) -> Any:
    if not 0 <= i < len(xs):
        return type(xs[0])(0) if len(xs) else 0
    old = xs[i]
    xs[i] = fn(old)
    return old


def atomic_add(xs: MutableSequence, i: int, v: Any) -> Any:
    """`xs[i] += v` atomically; returns the old `xs[i]`."""
    return _update(xs, i, lambda old: old + v)


def atomic_min(xs: MutableSequence, i: int, v: Any) -> Any:
    """`xs[i] = min(xs[i], v)` atomically; returns the old `xs[i]`."""
    return _update(xs, i, lambda old: min(old, v))


def atomic_max(xs: MutableSequence, i: int, v: Any) -> Any:
    """`xs[i] = max(xs[i], v)` atomically; returns the old `xs[i]`."""
    return _update(xs, i, lambda old: max(old, v))


def atomic_and(xs: MutableSequence, i: int, v: int) -> int:
    """`xs[i] &= v` atomically (ints); returns the old `xs[i]`."""
    return _update(xs, i, lambda old: old & v)


def atomic_or(xs: MutableSequence, i: int, v: int) -> int:
    """`xs[i] |= v` atomically (ints); returns the old `xs[i]`."""
    return _update(xs, i, lambda old: old | v)


def atomic_xor(xs: MutableSequence, i: int, v: int) -> int:
    """`xs[i] ^= v` atomically (ints); returns the old `xs[i]`."""
    return _update(xs, i, lambda old: old ^ v)


def atomic_exchange(xs: MutableSequence, i: int, v: Any) -> Any:
    """`xs[i] = v` atomically; returns the old `xs[i]`."""
    return _update(xs, i, lambda old: v)


def atomic_compare_exchange(xs: MutableSequence, i: int, expected: Any, new: Any) -> Any:
    """`if xs[i] == expected: xs[i] = new`, atomically; returns the old `xs[i]` (the swap
    happened exactly when it equals `expected`). Floats compare as float32 bit patterns, as on
    the device (so -0.0 differs from 0.0 and a NaN can match itself)."""

    def swap(old):
        if isinstance(old, float) or isinstance(expected, float):
            same = _bits(float(old)) == _bits(float(expected))
        else:
            same = old == expected
        return new if same else old

    return _update(xs, i, swap)


ATOMICS = tagged(
    atomic_add,
    atomic_min,
    atomic_max,
    atomic_and,
    atomic_or,
    atomic_xor,
    atomic_exchange,
    atomic_compare_exchange,
)

__all__ = sorted(ATOMICS)
