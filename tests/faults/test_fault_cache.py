"""Interrupted cache writes (issue 6, item 5): a process killed while writing a compiled kernel
(or the driver's pipeline cache) never leaves an entry that loads wrong. Each case runs child
processes on one private CTHREADS_CACHE_DIR: the first dies at the chosen point (exit status 9,
as if killed), the next ones must compile, launch and compute correctly, and afterwards every
`*.ctk` in the directory decodes. Leftover temporary files are allowed: they are never read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cthreads.compiler.cache import decode

CHILD = textwrap.dedent(
    """
    import json, os, sys
    from cthreads.compiler import cache
    from cthreads.runtime import pipeline_cache

    class Patched:
        # the module's `os`, with one function replaced by a simulated kill
        def __init__(self, real, **over):
            self._real, self._over = real, over
        def __getattr__(self, name):
            return self._over.get(name) or getattr(self._real, name)

    def die(*args):
        os._exit(9)

    class HalfWriter:
        def __init__(self, f):
            self.f = f
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.f.close()
        def write(self, data):
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            os.fsync(self.f.fileno())
            os._exit(9)

    mode = sys.argv[1]
    if mode == "kill-before-rename":
        cache.os = Patched(os, replace=die)
    elif mode == "kill-mid-write":
        cache.os = Patched(os, fdopen=lambda fd, m: HalfWriter(os.fdopen(fd, m)))
    elif mode == "kill-pipeline-cache-save":
        pipeline_cache.os = Patched(os, replace=die)

    from cthreads.gpu import GlobalIdx, Gpu, gpu
    from cthreads.runtime import validation_messages

    @Gpu
    def poly(n: int, x: list[float], out: list[int]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = int(x[i] * x[i]) * 3 + i % 7

    x = [float(v) for v in range(100)]
    out = [0] * 100
    gpu(poly, 100, x, out).join()
    ok = out == [v * v * 3 + v % 7 for v in range(100)]
    print(json.dumps({"ok": ok, "compiled": cache.stats["compiled"],
                      "disk_hits": cache.stats["disk_hits"], "messages": validation_messages()}))
    """
)


def run_child(script, cache_dir, mode="plain"):
    env = dict(os.environ, CTHREADS_CACHE_DIR=str(cache_dir))
    env.pop("CTHREADS_NO_DISK_CACHE", None)
    return subprocess.run(
        [sys.executable, str(script), mode],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def good_run(script, cache_dir) -> dict:
    proc = run_child(script, cache_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"] and result["messages"] == [], result
    return result


def entries(cache_dir):
    return sorted((cache_dir / "spirv").glob("*.ctk"))


def assert_all_entries_decode(cache_dir):
    for path in entries(cache_dir):
        decode(path.read_bytes())  # raises ValueError on a damaged entry


@pytest.mark.parametrize("mode", ["kill-before-rename", "kill-mid-write"])
def test_kernel_cache_write_killed(tmp_path, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache_dir = tmp_path / "cache"

    killed = run_child(script, cache_dir, mode)
    assert killed.returncode == 9, (killed.returncode, killed.stderr[-3000:])
    temps = list((cache_dir / "spirv").glob(".*.tmp"))
    assert temps, "the child died before writing anything: the simulation is off"
    if mode == "kill-mid-write":
        with pytest.raises(ValueError):
            decode(temps[0].read_bytes())  # a torn write: it must never be read as an entry
    assert entries(cache_dir) == []

    first = good_run(script, cache_dir)
    assert first["compiled"] == 1 and first["disk_hits"] == 0  # nothing usable was left
    assert len(entries(cache_dir)) == 1
    assert_all_entries_decode(cache_dir)
    second = good_run(script, cache_dir)
    assert second["compiled"] == 0 and second["disk_hits"] == 1  # the entry is good
    assert_all_entries_decode(cache_dir)


@pytest.mark.parametrize("damage", ["truncate", "flip-byte"])
def test_damaged_kernel_cache_entry_is_rebuilt(tmp_path, damage):
    """What a non-atomic writer or a bad disk would leave: detected by the checksum."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache_dir = tmp_path / "cache"
    good_run(script, cache_dir)
    (path,) = entries(cache_dir)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) - 9] ^= 0x10  # inside the SPIR-V words
    path.write_bytes(bytes(data))

    rebuilt = good_run(script, cache_dir)
    assert rebuilt["compiled"] == 1 and rebuilt["disk_hits"] == 0
    assert_all_entries_decode(cache_dir)
    assert good_run(script, cache_dir)["disk_hits"] == 1


def test_pipeline_cache_save_killed_and_garbage_pipeline_cache(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache_dir = tmp_path / "cache"

    killed = run_child(script, cache_dir, "kill-pipeline-cache-save")
    assert killed.returncode == 9, (killed.returncode, killed.stderr[-3000:])
    assert list((cache_dir / "pipelines").glob("*.tmp"))  # the leftover
    assert not list((cache_dir / "pipelines").glob("*.bin"))
    good_run(script, cache_dir)
    (pipeline_file,) = (cache_dir / "pipelines").glob("*.bin")

    # a damaged driver cache file: the driver must reject it and the run must stay clean
    data = pipeline_file.read_bytes()
    pipeline_file.write_bytes(data[:16] + b"\xa5" * (len(data) - 16))
    good_run(script, cache_dir)
    pipeline_file.write_bytes(b"not a pipeline cache")
    good_run(script, cache_dir)


TWO_KERNELS = textwrap.dedent(
    """
    import json
    from cthreads.compiler import cache
    from cthreads.gpu import GlobalIdx, Gpu, gpu
    from cthreads.runtime import validation_messages

    @Gpu
    def plus_one(n: int, x: list[float], out: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = x[i] + 1.0

    @Gpu
    def times_three(n: int, x: list[float], out: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = x[i] * 3.0

    x = [float(v) for v in range(50)]
    a, b = [0.0] * 50, [0.0] * 50
    gpu(plus_one, 50, x, a).join()
    gpu(times_three, 50, x, b).join()
    ok = a == [v + 1.0 for v in x] and b == [v * 3.0 for v in x]
    print(json.dumps({"ok": ok, "compiled": cache.stats["compiled"],
                      "disk_hits": cache.stats["disk_hits"], "messages": validation_messages()}))
    """
)


def test_swapped_kernel_cache_entries_are_misses(tmp_path):
    """Two entries with valid checksums under each other's names (a copied or restored cache
    directory): the file name is not trusted, each is a miss, recompiled and overwritten."""
    script = tmp_path / "two.py"
    script.write_text(TWO_KERNELS)
    cache_dir = tmp_path / "cache"
    assert good_run(script, cache_dir)["compiled"] == 2
    first, second = entries(cache_dir)
    data_first, data_second = first.read_bytes(), second.read_bytes()
    first.write_bytes(data_second)
    second.write_bytes(data_first)
    assert_all_entries_decode(cache_dir)  # both still pass their checksums

    swapped = good_run(script, cache_dir)  # `ok`: the right kernel ran for each
    assert swapped["compiled"] == 2 and swapped["disk_hits"] == 0, swapped
    for path in entries(cache_dir):
        decode(path.read_bytes(), path.stem)  # overwritten with the entry of its own key
    again = good_run(script, cache_dir)
    assert again["compiled"] == 0 and again["disk_hits"] == 2, again


def test_cache_entry_names_its_key(tmp_path):
    from cthreads.compiler.cache import KernelCache, encode

    store = KernelCache(tmp_path)
    store.put("k1", _any_compiled())
    (tmp_path / "k2.ctk").write_bytes((tmp_path / "k1.ctk").read_bytes())
    assert KernelCache(tmp_path).get("k1") is not None
    assert KernelCache(tmp_path).get("k2") is None  # a copy under another name: a miss
    assert not (tmp_path / "k2.ctk").exists()
    with pytest.raises(ValueError, match="stored under key 'k1'"):
        decode(encode(_any_compiled(), "k1"), "k2")


def _any_compiled():
    from cthreads.gpu import GlobalIdx, Gpu
    from cthreads.gpu.kernel import unregister

    @Gpu
    def cache_key_probe(n: int, out: list[int]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            out[i] = i

    try:
        return cache_key_probe.compiled()
    finally:
        unregister(cache_key_probe)
