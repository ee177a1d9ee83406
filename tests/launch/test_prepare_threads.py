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


def test_open_while_describes_first_and_raises_what_describing_raised(monkeypatch):
    order = []

    class State:
        def describe(self):
            order.append("describe")
            return "info"

    monkeypatch.setattr(
        preparing.session, "_current_device", lambda st: order.append("open") or "device"
    )
    opening, info = preparing._open_while(State(), lambda: order.append("work"))
    assert info == "info" and opening.result() == "device"
    assert order.index("describe") < order.index("open") and "work" in order

    class Broken(State):
        def describe(self):
            raise RuntimeError("no device")

    with pytest.raises(RuntimeError, match="no device"):
        preparing._open_while(Broken(), lambda: None)
    with pytest.raises(ZeroDivisionError):  # work() raising waits for the opening first
        preparing._open_while(State(), lambda: 1 / 0)
