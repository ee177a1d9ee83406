"""The native submission policy's knobs: cthreads/config.py reads the CTHREADS_* variables
(once, checked, naming the variable) and the runtime hands the values to the native Device;
no C file reads the environment (issue 14)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cthreads import config, runtime
from cthreads.runtime import native
from cthreads.errors import GpuArgumentTypeError, GpuInvalidArgument

NATIVE = Path(__file__).resolve().parents[2] / "native"
KNOB_VARIABLES = [variable for variable, *_ in config._NATIVE_KNOBS]


def test_no_native_source_reads_the_environment():
    readers = re.compile(r"\b(getenv|secure_getenv|environ)\b")
    found = [p.name for p in sorted(NATIVE.glob("*.[ch]")) if readers.search(p.read_text())]
    assert found == []


def test_native_knobs_reads_each_variable_in_native_units(monkeypatch):
    for variable in KNOB_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    assert config.native_knobs() == {}  # unset: the device keeps its defaults
    monkeypatch.setenv("CTHREADS_SPIN_US", "7")
    monkeypatch.setenv("CTHREADS_POLL_NS", "250")
    monkeypatch.setenv("CTHREADS_STREAM_US", "0.5")
    monkeypatch.setenv("CTHREADS_COALESCE", "0")
    monkeypatch.setenv("CTHREADS_BATCH_MAX", "9")
    monkeypatch.setenv("CTHREADS_INFLIGHT", "2")
    monkeypatch.setenv("CTHREADS_SPIN_YIELD", " ")  # blank counts as unset
    assert config.native_knobs() == {
        "spin_ns": 7000,
        "poll_ns": 250,
        "stream_ns": 500,
        "coalesce": 0,
        "batch_max": 9,
        "inflight": 2,
    }


@pytest.mark.parametrize(
    ("variable", "raw"),
    [
        ("CTHREADS_SPIN_US", "-1"),
        ("CTHREADS_BG_DELAY_US", "soon"),
        ("CTHREADS_BATCH_MAX", "0"),
        ("CTHREADS_BATCH_MAX", "2.5"),
        ("CTHREADS_INFLIGHT", "3"),
        ("CTHREADS_COALESCE", "yes"),
    ],
)
def test_a_bad_knob_is_refused_naming_the_variable(monkeypatch, variable, raw):
    monkeypatch.setenv(variable, raw)
    with pytest.raises(GpuInvalidArgument, match=variable) as info:
        config.native_knobs()
    assert info.value.param == variable


def test_the_native_device_takes_its_knobs_from_the_argument(monkeypatch, device):
    # the environment says otherwise: the native side must not read it
    monkeypatch.setenv("CTHREADS_BATCH_MAX", "5")
    monkeypatch.setenv("CTHREADS_SPIN_US", "3")
    instance = runtime.lifecycle._get_instance()
    index = device.info.index
    extension = native.module()
    dev = extension.Device(instance, index, None, {"batch_max": 9, "spin_ns": 7000})
    try:
        knobs = dev.stats()["knobs"]
    finally:
        dev.destroy()
    assert (knobs["batch_max"], knobs["spin_ns"], knobs["coalesce"]) == (9, 7000, 1)
    dev = extension.Device(instance, index)
    try:
        defaults = dev.stats()["knobs"]
    finally:
        dev.destroy()
    assert (defaults["batch_max"], defaults["spin_ns"], defaults["inflight"]) == (256, 30000, 1)
    for knobs, error in [
        ({"batch_size": 9}, GpuInvalidArgument),
        ({"inflight": 3}, GpuInvalidArgument),
        ({"spin_ns": -1}, GpuInvalidArgument),
        ({"spin_ns": 1.5}, GpuArgumentTypeError),
        ([("spin_ns", 1)], GpuArgumentTypeError),
    ]:
        with pytest.raises(error):
            extension.Device(instance, index, None, knobs)
