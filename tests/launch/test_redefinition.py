"""Redefining a kernel (SPEC §3: `@Gpu def k` run again with the same name, as notebooks and
generated-kernel loops do): what was built for the old definition (pipeline, launcher,
compiled form in memory) is freed once the old kernel object is unreferenced and no launch in
flight uses it, so the count of live pipelines stays bounded. A re-run of the same source
keeps its pipeline."""

from __future__ import annotations

import gc
import linecache

from cthreads.compiler import cache as kcache
from cthreads.gpu import GlobalIdx, Gpu, gpu
from cthreads.launch import session
from cthreads.runtime import get_device

SOURCE = """
@Gpu
def redefined(n: int, y: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        y[i] = {value}
"""


def define(value: float, tag: str):
    """Run the `def` (a fresh kernel object named `redefined`) from a source whose text
    `inspect` can read, as a notebook cell's."""
    text = SOURCE.format(value=value)
    filename = f"<redefinition {tag}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {"Gpu": Gpu, "GlobalIdx": GlobalIdx, "__name__": "redefinitions"}
    exec(compile(text, filename, "exec"), scope)
    return scope.pop("redefined")


def launch(kernel, value: float) -> None:
    y = [0.0] * 8
    gpu(kernel, 8, y).join()
    assert y == [value] * 8


def live_pipelines() -> int:
    gc.collect()
    launch(define(-1.0, "probe"), -1.0)  # a launch that builds: it frees what was orphaned
    gc.collect()
    return get_device().stats()["pipelines"]


def test_redefinitions_do_not_keep_pipelines():
    before = live_pipelines()
    prepared = len(session.state.prepared)
    for k in range(60):
        kernel = define(float(k), str(k))  # another source each time: another pipeline
        launch(kernel, float(k))
    del kernel
    after = live_pipelines()
    assert after - before <= 2, (before, after)
    assert len(session.state.prepared) - prepared <= 2


def test_a_rerun_of_the_same_source_keeps_its_pipeline():
    first = define(7.0, "same")
    launch(first, 7.0)
    prep = session.state.prepared[first.source_key]
    compiled = kcache.stats["compiled"]
    for _ in range(5):
        first = define(7.0, "same")  # the old object goes as the new one is bound
        launch(first, 7.0)
    assert session.state.prepared[first.source_key] is prep
    assert kcache.stats["compiled"] == compiled


def test_a_launch_in_flight_keeps_its_pipeline():
    kernel = define(3.0, "in flight")
    y = [0.0] * 100_000
    job = gpu(kernel, len(y), y)
    del kernel
    gc.collect()
    launch(define(4.0, "next"), 4.0)  # frees the old definition's pipeline...
    job.join()  # ...once this launch no longer holds it
    assert y == [3.0] * 100_000


def test_the_in_memory_kernel_cache_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(kcache.KernelCache, "MAX_MEMORY", 3)
    store = kcache.KernelCache(tmp_path)
    compiled = define(5.0, "cache").compiled()
    for k in range(5):
        store.put(f"k{k}", compiled)
    assert list(store._memory) == ["k2", "k3", "k4"]  # the oldest went first
    hits = kcache.stats["disk_hits"]
    assert store.get("k0") is not None  # from the disk again
    assert kcache.stats["disk_hits"] == hits + 1 and "k0" in store._memory
    store.forget("k0")
    assert "k0" not in store._memory
