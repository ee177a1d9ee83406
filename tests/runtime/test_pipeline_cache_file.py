"""The pipeline cache file (runtime/pipeline_cache.py) writes only what changed (issue 19): a
warm process that built its pipelines from the file it read leaves the file alone. No device:
the driver's data is handed in as `get_data`. And which devices have such a file at all
(`CTHREADS_PIPELINE_CACHE`: our file by default, or the driver's own disk cache)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cthreads.runtime import pipeline_cache
from cthreads.runtime.pipeline_cache import PipelineCacheFile

from cthreads.errors import GpuInvalidArgument

INFO = SimpleNamespace(
    vendor_id=0x10DE,
    device_id=0x2335,
    driver_version="580.1",
    pipeline_cache_uuid="ab" * 16,
    nvidia=True,
    driver_name="NVIDIA",
)
LAVAPIPE = SimpleNamespace(vendor_id=0x10005, nvidia=False, driver_name="llvmpipe")


def _file(tmp_path, monkeypatch) -> PipelineCacheFile:
    monkeypatch.setenv("CTHREADS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CTHREADS_PIPELINE_CACHE", "file")
    monkeypatch.delenv("CTHREADS_NO_DISK_CACHE", raising=False)
    return PipelineCacheFile(INFO)


def _count_writes(monkeypatch) -> list:
    writes = []
    real = pipeline_cache.os.replace

    def replace(src, dst):
        writes.append(dst)
        real(src, dst)

    monkeypatch.setattr(pipeline_cache.os, "replace", replace)
    return writes


def test_unchanged_data_is_not_written_again(tmp_path, monkeypatch):
    first = _file(tmp_path, monkeypatch)
    assert first.load() is None  # no file yet
    writes = _count_writes(monkeypatch)
    first.touched(lambda: b"driver data v1")
    assert len(writes) == 1 and first.path.read_bytes() == b"driver data v1"
    first.dirty = True
    first.save(lambda: b"driver data v1")  # the same bytes again: nothing written
    assert len(writes) == 1 and not first.dirty

    warm = _file(tmp_path, monkeypatch)  # a second process: reads what the first wrote
    assert warm.load() == b"driver data v1"
    warm.touched(lambda: b"driver data v1")  # its pipelines all came from the file
    warm.save(lambda: b"driver data v1")
    assert len(writes) == 1
    warm.dirty = True
    warm.save(lambda: b"driver data v2")  # a new pipeline changed the data: written
    assert len(writes) == 2 and warm.path.read_bytes() == b"driver data v2"
    assert not list(warm.path.parent.glob("*.tmp"))


def test_a_failed_write_is_retried_with_the_same_data(tmp_path, monkeypatch):
    cache = _file(tmp_path, monkeypatch)
    real = pipeline_cache.os.replace

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipeline_cache.os, "replace", full_disk)
    cache.touched(lambda: b"data")
    assert cache.dirty and not cache.path.exists()  # unwritten: a later save tries again
    monkeypatch.setattr(pipeline_cache.os, "replace", real)
    cache.save(lambda: b"data")  # the same bytes, but not on disk yet: written now
    assert cache.path.read_bytes() == b"data" and not cache.dirty


def test_a_pipeline_from_the_cache_leaves_the_file_alone():
    from cthreads.runtime.device import Device

    class Native:
        hit = None

        def pipeline(self, spirv, push_size, spec, entry):
            return SimpleNamespace(cache_hit=self.hit)

        def pipeline_cache_data(self):
            return b""

    class File:
        touched_by = []

        def touched(self, get_data):
            self.touched_by.append(native.hit)

    native = Native()
    dev = Device(native, INFO, 1, File())
    for hit in (True, False, None):  # None: the driver does not say (saved, to be safe)
        native.hit = hit
        dev.pipeline(b"", 0)
    assert File.touched_by == [False, None]


def test_the_driver_says_whether_a_pipeline_came_from_the_cache():
    from cthreads import runtime

    if not runtime.available():
        pytest.skip("no Vulkan device")
    pipe = runtime.get_device().pipeline(runtime.load_shader("copy_u32"), 20)
    assert pipe.cache_hit in (True, False, None)
    assert isinstance(pipe.build_ms, float) and 0 < pipe.build_ms < 60_000
    api = tuple(int(v) for v in runtime.get_device().info.api_version.split(".")[:2])
    if api < (1, 3):  # creation feedback is core from Vulkan 1.3; before, nothing is said
        assert pipe.cache_hit is None


@pytest.mark.parametrize("mode, file", [("", True), ("file", True), (" DRIVER ", False)])
def test_which_devices_have_a_pipeline_cache_file(monkeypatch, mode, file):
    monkeypatch.setenv("CTHREADS_PIPELINE_CACHE", mode)
    assert pipeline_cache.uses_file(INFO) is file
    assert pipeline_cache.uses_file(LAVAPIPE) is file


def test_a_device_served_by_the_driver_has_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CTHREADS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CTHREADS_PIPELINE_CACHE", "driver")
    cache = PipelineCacheFile(INFO)
    assert not cache.in_use and cache.path is None and cache.load() is None
    cache.touched(lambda: b"data")
    cache.save(lambda: b"data")
    assert not list(tmp_path.rglob("*"))


def test_a_wrong_pipeline_cache_mode_names_the_variable(monkeypatch):
    monkeypatch.setenv("CTHREADS_PIPELINE_CACHE", "disk")
    with pytest.raises(
        GpuInvalidArgument, match="CTHREADS_PIPELINE_CACHE must be 'file' or 'driver'; got 'disk'"
    ):
        pipeline_cache.uses_file(LAVAPIPE)


def test_pipelines_build_through_no_cache_where_the_driver_serves_them(tmp_path, monkeypatch):
    from cthreads import runtime

    if not runtime.available():
        pytest.skip("no Vulkan device")
    monkeypatch.setenv("CTHREADS_CACHE_DIR", str(tmp_path))
    runtime.shutdown()
    try:
        for mode, knob in (("driver", 0), ("file", 1)):
            monkeypatch.setenv("CTHREADS_PIPELINE_CACHE", mode)
            dev = runtime.get_device()
            assert dev.stats()["knobs"]["pipeline_cache"] == knob
            pipe = dev.pipeline(runtime.load_shader("copy_u32"), 20)
            assert pipe.cache_hit in (False, None)  # (nothing was built here before)
            data = dev._dev.pipeline_cache_data()
            assert (data == b"") is (knob == 0)
            runtime.shutdown()
            files = list((tmp_path / "pipelines").glob("*.bin"))
            assert len(files) == knob, (mode, files)
    finally:
        monkeypatch.delenv("CTHREADS_PIPELINE_CACHE")
        runtime.shutdown()
