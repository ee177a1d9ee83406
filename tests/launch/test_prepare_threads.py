"""prepare()'s threads (launch/preparing.py `_Call`, `_map`): plain threading, no
concurrent.futures (issue 19). Results keep the input order; an error reaches the caller
after every call has ended."""

from __future__ import annotations

import threading

import pytest

from cthreads.launch import preparing


def test_map_keeps_order_and_uses_threads():
    seen = set()

    def f(x):
        seen.add(threading.get_ident())
        return x * x

    assert preparing._map(f, list(range(20)), 4) == [x * x for x in range(20)]
    assert threading.get_ident() not in seen
    assert preparing._map(f, [3], 4) == [9] and preparing._map(f, [], 4) == []


def test_map_raises_after_all_calls_ended():
    done = []

    def f(x):
        if x == 2:
            raise ValueError("two")
        done.append(x)
        return x

    with pytest.raises(ValueError, match="two"):
        preparing._map(f, list(range(6)), 3)
    assert sorted(done) == [0, 1, 3, 4, 5]


def test_call_returns_or_raises():
    assert preparing._Call(lambda: 5).result() == 5
    with pytest.raises(KeyError):
        preparing._Call(lambda: {}["x"]).result()
