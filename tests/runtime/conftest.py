"""Fixtures for runtime tests: the default device and the shaders of `shaders/` as pipelines.

These tests use only GLSL shaders compiled at build time, never the cthreads compiler.
"""

from __future__ import annotations

import struct

import pytest

from cthreads import runtime


@pytest.fixture
def device():
    if not runtime.available():
        pytest.skip("no Vulkan device")
    return runtime.get_device()


# name -> push-constant layout (struct format) of each shader
PUSH = {
    "saxpy": "<QQIf",
    "fill_u32": "<QII",
    "add_i32": "<QIi",
    "copy_u8": "<QQII",
    "copy_u32": "<QQI",
    "scale_spec": "<QI",
    "spin": "<QII",
}


class Kernels:
    """Pipelines for the test shaders on one device, made once per device generation."""

    def __init__(self, dev):
        self.dev = dev
        self._pipes = {}

    def pipe(self, name, spec=None):
        key = (name, tuple(sorted((spec or {}).items())))
        if key not in self._pipes:
            size = (struct.calcsize(PUSH[name]) + 3) // 4 * 4
            self._pipes[key] = self.dev.pipeline(runtime.load_shader(name), size, spec)
        return self._pipes[key]

    def dispatch(self, name, n, *args, spec=None, groups=None):
        push = struct.pack(PUSH[name], *args)
        if groups is None:
            groups = (max(1, -(-n // 64)), 1, 1)
        return ("dispatch", self.pipe(name, spec), push, groups)


_kernels: dict[int, Kernels] = {}


@pytest.fixture
def kernels(device):
    k = _kernels.get(id(device))
    if k is None or k.dev is not device:
        _kernels.clear()
        k = _kernels[id(device)] = Kernels(device)
    return k
