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


def test_the_device_opens_on_the_calling_thread_while_kernels_compile(monkeypatch):
    # the opener must outlive the first pipeline builds (NVIDIA: a device opened on a thread
    # that had ended made them wait 6-14 ms in the driver)
    order, opened_on, compiled_on = [], [], []

    class State:
        def describe(self):
            order.append("describe")
            return "info"

    def open_device(st):
        opened_on.append(threading.get_ident())
        order.append("open")
        return "device"

    def compile_one(kernel, target):
        compiled_on.append(threading.get_ident())
        return (kernel, target)

    monkeypatch.setattr(preparing.session, "_current_device", open_device)
    monkeypatch.setattr(preparing, "_warm_up", lambda st, ks: order.append("warm up"))
    monkeypatch.setattr(preparing, "target_from_info", lambda info: f"target of {info}")
    compiled, device = preparing._compile_while_opening(State(), ["a", "b", "c"], compile_one, 2)
    assert device == "device" and compiled == [(k, "target of info") for k in "abc"]
    assert order.index("describe") < order.index("open") and "warm up" in order
    assert opened_on == [threading.get_ident()]
    assert threading.get_ident() not in compiled_on


def test_compiling_while_opening_raises_what_describing_or_compiling_raised(monkeypatch):
    class State:
        def describe(self):
            return "info"

    class Broken(State):
        def describe(self):
            raise RuntimeError("no device")

    monkeypatch.setattr(preparing.session, "_current_device", lambda st: "device")
    monkeypatch.setattr(preparing, "_warm_up", lambda st, ks: None)
    monkeypatch.setattr(preparing, "target_from_info", lambda info: info)
    with pytest.raises(RuntimeError, match="no device"):
        preparing._compile_while_opening(Broken(), ["a"], lambda k, t: k, 1)

    def failing(kernel, target):
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):  # reaches the caller once the device is open
        preparing._compile_while_opening(State(), ["a"], failing, 1)
