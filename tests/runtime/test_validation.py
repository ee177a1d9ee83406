"""The validation layer is on for the suite, and what it reports is captured."""

from __future__ import annotations

from cthreads import config, runtime
from cthreads.runtime import lifecycle


def test_validation_is_enabled_for_the_suite(device):
    assert config.validation_enabled()
    assert lifecycle._instance is not None and lifecycle._instance.validation


def test_layer_messages_are_captured(device):
    # a pipeline layout whose push range is smaller than the shader's block is invalid usage
    runtime.validation_messages(clear=True)
    pipe = device.pipeline(runtime.load_shader("saxpy"), 8)
    messages = runtime.validation_messages(clear=True)
    del pipe
    assert messages, "the validation layer reported nothing for an invalid pipeline layout"
    assert any("push" in m.lower() for m in messages)
    assert runtime.validation_messages() == []
