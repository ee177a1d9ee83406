"""The §9 exception classes as cthreads-gpu code uses them: `.detail`, a message of their own
when raised bare, the structured fields, and pickling (errors cross process boundaries in
multiprocessing pools and test runners)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from cthreads import errors
from cthreads.gpu import (
    CThreadsGPUError,
    GpuArgumentTypeError,
    GpuCompileError,
    GpuInvalidArgument,
    GPUNotAvailable,
    VulkanNoDevice,
    VulkanOutOfMemory,
)

CLASSES = [getattr(errors, name) for name in errors.__all__]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_bare_error_says_what_went_wrong_and_what_to_do(cls):
    exc = cls()
    text = str(exc)
    # each class has its own words, not an inherited or empty message
    assert "default_message" in vars(cls), cls
    assert text.startswith(cls.default_message)
    what_to_do = cls.default_allowed if cls is GpuCompileError else cls.default_hint
    assert what_to_do in text
    assert exc.detail == text
    # also when raised as a class, as `raise VulkanNoDevice` does
    with pytest.raises(cls) as info:
        raise cls
    assert str(info.value) == text


def test_default_messages_are_distinct():
    messages = [cls.default_message for cls in CLASSES]
    assert len(set(messages)) == len(messages)


def test_detail_is_the_text_a_handler_prints():
    # cthreads-gpu: `detail` is the description given to the constructor; str() adds nothing
    # here, so the two agree.
    assert VulkanNoDevice("no device with timeline semaphores").detail == (
        "no device with timeline semaphores"
    )
    exc = VulkanOutOfMemory(
        "allocating `x` (4 GiB) failed",
        hint="use smaller inputs",
        vk_result="VK_ERROR_OUT_OF_DEVICE_MEMORY",
    )
    assert (
        exc.detail
        == str(exc)
        == ("allocating `x` (4 GiB) failed (VK_ERROR_OUT_OF_DEVICE_MEMORY). use smaller inputs")
    )
    try:
        raise GpuArgumentTypeError("`x` expects list[float]", param="x")
    except CThreadsGPUError as e:  # the cthreads-gpu handler shape
        assert e.detail == "`x` expects list[float]"


def test_given_messages_are_unchanged():
    # a message given explicitly gets no default hint appended
    assert str(GpuInvalidArgument("bad n", param="n")) == "bad n"
    assert str(GPUNotAvailable("no GPU", hint="install a driver")) == "no GPU. install a driver"
    assert str(CThreadsGPUError("it broke.", hint="retry")) == "it broke. retry"
    # a hint without a message keeps the hint and gains the class's message
    exc = GPUNotAvailable(hint="check the cable")
    assert str(exc) == f"{GPUNotAvailable.default_message}. check the cable"
    compile_error = GpuCompileError("`dict` is not a kernel type", kernel="k", allowed="int")
    assert str(compile_error) == "in kernel `k`: `dict` is not a kernel type\nallowed instead: int"


FIELDS = (
    "message",
    "hint",
    "vk_result",
    "param",
    "expected",
    "got",
    "kernel",
    "filename",
    "lineno",
    "col",
    "line",
    "allowed",
    "reason",
)


def _same(a, b):
    assert type(a) is type(b)
    assert str(a) == str(b) and a.detail == b.detail and a.args == b.args
    for name in FIELDS:
        assert getattr(a, name, None) == getattr(b, name, None), name


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_pickle_round_trip(cls):
    _same(cls(), pickle.loads(pickle.dumps(cls())))


def test_pickle_keeps_structured_fields():
    cases = [
        GpuArgumentTypeError(
            "`x` expects list[float]; got float64",
            param="x",
            expected="float32",
            got="float64",
            hint="use astype",
        ),
        VulkanOutOfMemory(
            "out of memory", hint="smaller", vk_result="VK_ERROR_OUT_OF_DEVICE_MEMORY"
        ),
        GpuCompileError(
            "no dicts",
            kernel="k",
            filename="m.py",
            lineno=3,
            col=5,
            line="    d = {}\n",
            allowed="lists",
        ),
    ]
    for exc in cases:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            _same(exc, pickle.loads(pickle.dumps(exc, protocol)))


def test_pickle_an_error_raised_by_a_launch():
    import numpy as np

    from cthreads.gpu import GlobalIdx, Gpu, gpu

    @Gpu
    def halve(n: int, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = x[i] * 0.5

    with pytest.raises(GpuArgumentTypeError) as info:
        gpu(halve, 2, np.zeros(2))
    again = pickle.loads(pickle.dumps(info.value))
    _same(info.value, again)
    assert again.param == "x" and "astype(numpy.float32)" in again.detail


def test_every_class_pickles_under_tblib_as_distributed_installs_it():
    # distributed installs tblib's reducers for every exception class: they make the instance
    # with `cls.__new__(cls, *args)`, which RuntimeError's __new__ refused for GpuTimeout
    pytest.importorskip("tblib")
    code = (
        "import pickle\n"
        "from tblib import pickling_support\n"
        "import cthreads.errors as e\n"
        "pickling_support.install()\n"
        "for c in [c for c in vars(e).values() if isinstance(c, type) and issubclass(c, e.CThreadsGPUError)]:\n"
        "    err = c()\n"
        "    back = pickle.loads(pickle.dumps(err))\n"
        "    assert type(back) is c and str(back) == str(err) and back.hint == err.hint, c\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
