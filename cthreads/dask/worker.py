"""What runs inside a dask worker: the device choice, the once-per-process setup (the plugin),
the task that launches a kernel on one chunk, and errors that name the worker.

A worker process opens one device and keeps it: the plugin prepares the kernels at worker
start, so every task finds its pipeline built (`worker_stats()` counts setups and cold
launches). Nothing here pickles a kernel: tasks carry a `KernelRef` and import it.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from distributed import WorkerPlugin, get_worker

from ..errors import CThreadsGPUError
from ..runtime.visibility import rank_device
from .refs import KernelRef, ref_of, resolve

_lock = threading.Lock()
_stats: dict[str, Any] = {
    "setups": 0,  # GpuWorkerPlugin.setup() runs in this process (pipelines built in each)
    "device_selector": None,  # the CTHREADS_DEVICE value this process chose (or was given)
    "prepared": [],  # names of the kernels the last setup prepared
    "launches": {},  # kernel 'module.qualname' -> chunks launched
    "cold_launches": {},  # ... of which found the kernel's pipeline not built yet
}
_device_chosen = False
_device_lock = threading.Lock()  # (not _lock: setup_worker holds that while it calls in)
_kernels: dict[KernelRef, Any] = {}


# ------------------------------------------------------------------------- device choice


def worker_rank(name: Any) -> int:
    """A worker's rank for the round-robin: its name if that is an int (LocalCluster names
    workers 0, 1, ...), else the number the name ends in (`dask worker --nworkers` names them
    `<prefix>-0`, `<prefix>-1`, ... when given `--name <prefix>`), else 0. A worker without a
    name is named by its address, whose port is no rank: 0."""
    if isinstance(name, int):
        return name
    if "://" in str(name):
        return 0
    found = re.search(r"(\d+)$", str(name))
    return int(found.group(1)) if found else 0


def device_selector(
    rank: int, cuda_visible: str | None, infos: list[Any], visible_devices: str | None = None
) -> str | None:
    """The `CTHREADS_DEVICE` index a worker of `rank` uses among the physical devices `infos`,
    given `CUDA_VISIBLE_DEVICES` and `CTHREADS_VISIBLE_DEVICES` (None where unset).

    The visibility rules of the rest of cthreads decide (runtime/visibility.py `rank_device`):
    a variable that names devices (ordinals, `GPU-<uuid>` or a unique prefix, lists) gives
    the first device it leaves visible, the one a plain process would open (dask-cuda puts
    each worker's own GPU first); with none set, the visible devices (GPUs, software ones
    only without a GPU) round-robin by rank. VulkanNoDevice names a value naming nothing."""
    chosen = rank_device(infos, rank, visible_devices, cuda_visible)
    return None if chosen is None else str(chosen.index)


def choose_device(worker_name: Any) -> str | None:
    """Set this process's `CTHREADS_DEVICE` before its first launch (once): the user's own
    value wins; otherwise `device_selector` by the worker's rank and the visibility variables.
    A process whose device is open already keeps it (workers that are threads of one process
    share its device)."""
    global _device_chosen
    if _device_chosen:
        return _stats["device_selector"]
    with _device_lock:
        if not _device_chosen:
            _choose(worker_name)
            _device_chosen = True
    return _stats["device_selector"]


def _choose(worker_name: Any) -> None:
    from .. import config, runtime

    selector = config.device_selector()
    if runtime.current_generation():
        # the process has its device open already (a worker thread in the client's process,
        # LocalCluster(processes=False)): that choice stands, and the environment stays as is
        selector = str(runtime.default_device_info().index)
    elif selector is None:
        selector = device_selector(
            worker_rank(worker_name),
            config.cuda_visible_devices(),
            runtime.list_devices(),
            config.visible_devices(),
        )
        if selector is not None:
            # config.device_selector() reads it when the device opens (the first launch)
            os.environ["CTHREADS_DEVICE"] = selector
    _stats["device_selector"] = selector


# ------------------------------------------------------------------------------ the plugin


def setup_worker(worker_name: Any, refs: tuple[KernelRef, ...]) -> dict:
    """Choose the device, open it, import the kernels and build their pipelines: once per
    process and plugin registration. Returns {kernel name: what prepare() reports for it}.

    Only the named kernels are built, not every kernel the process registered (prepare()):
    a worker in the client's own process may hold many that no task will launch."""
    from .. import gpu
    from ..launch import session

    with _lock:
        choose_device(worker_name)
        gpu.init()
        report = {}
        for ref in refs:
            kernel = _kernels[ref] = resolve(ref)
            report[kernel.name] = dict(session.kernel_for_launch(kernel).info)
        if refs:
            session.state.device.save_pipeline_cache()  # a restarted worker starts warm
        _stats["setups"] += 1
        _stats["prepared"] = sorted(report)
        return report


class GpuWorkerPlugin(WorkerPlugin):
    """Opens the worker's device once and builds the pipelines of `kernels` when a worker
    starts, so tasks launch on warm pipelines; a kernel that does not compile fails the
    registration (`client.register_plugin` raises its GpuCompileError, worker named).

    `client.register_plugin(GpuWorkerPlugin([saxpy]))` (or `cthreads.dask.register(client,
    saxpy)`); workers that join later, or restart after a crash, run it too. Kernels are given
    as `@Gpu` objects or `'module.qualname'` strings and travel by name."""

    name = "cthreads"  # one per cluster: registering again replaces it

    def __init__(self, kernels: Any = (), *, name: str | None = None):
        if not isinstance(kernels, (list, tuple)):
            kernels = (kernels,)
        self.kernels = tuple(ref_of(k, "kernels") for k in kernels)
        if name is not None:
            self.name = name

    async def setup(self, worker: Any) -> None:
        # prepare() compiles and builds pipelines for seconds: off the worker's event loop,
        # which must keep answering the scheduler's heartbeats meanwhile.
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, setup_worker, worker.name, self.kernels)
        except CThreadsGPUError as exc:
            raise named(exc, _where(worker)) from None


def worker_stats() -> dict[str, Any]:
    """This process's counters (`client.run(cthreads.dask.worker_stats)` gathers them)."""
    from ..launch import session

    with _lock:
        stats = copy.deepcopy(_stats)
    stats["pid"] = os.getpid()
    device = session.state.device  # (never opened here: None until the first prepare/launch)
    stats["device"] = device.info.name if device is not None else None
    return stats


# ------------------------------------------------------------------------------- errors


def _where(worker: Any) -> str:
    if worker is None:
        return f"in a dask task of the local scheduler (pid {os.getpid()})"
    return f"on dask worker {worker.address} (name {worker.name!r}, pid {os.getpid()})"


def named(exc: CThreadsGPUError, where: str) -> CThreadsGPUError:
    """A copy of `exc` (same class and fields, so it pickles back to the client as itself)
    whose message starts with where it was raised (`on dask worker tcp://...`)."""
    out = copy.copy(exc)
    out.args = (f"{where}: {exc}",)
    if isinstance(getattr(out, "message", None), str):
        out.message = f"{where}: {out.message}"
    out.__traceback__ = None
    return out


# ------------------------------------------------------------------------------ one chunk


@dataclass(frozen=True)
class BlockSpec:
    """One map_blocks call as plain data: the kernel's name, what fills each parameter
    (`("array", k)`: the k-th chunk; `("n",)`: the chunk length; `("value", v)`: a scalar)
    and the positions of the written parameters, which are the outputs."""

    ref: KernelRef
    slots: tuple
    outputs: tuple[int, ...]


def _kernel(ref: KernelRef) -> Any:
    kernel = _kernels.get(ref)
    if kernel is None:
        kernel = _kernels[ref] = resolve(ref)
    return kernel


def _is_warm(kernel: Any) -> bool:
    from ..launch import session

    prep = session.state.prepared.get(kernel.source_key)
    return prep is not None and prep.generation == session.state.generation


def _launch(spec: BlockSpec, chunks: tuple) -> Any:
    from .. import gpu

    kernel = _kernel(spec.ref)
    length = len(chunks[0])
    args = []
    for position, slot in enumerate(spec.slots):
        if slot[0] == "array":
            chunk = chunks[slot[1]]
            # a chunk may be shared with other tasks: the kernel writes into a private copy
            if position in spec.outputs:
                args.append(np.array(chunk, copy=True, order="C"))
            else:
                args.append(np.ascontiguousarray(chunk))
        elif slot[0] == "n":
            args.append(length)
        else:
            args.append(slot[1])
    if length:
        warm = _is_warm(kernel)
        gpu.gpu(kernel, *args).join()
        key = str(spec.ref)
        with _lock:
            _stats["launches"][key] = _stats["launches"].get(key, 0) + 1
            if not warm:
                _stats["cold_launches"][key] = _stats["cold_launches"].get(key, 0) + 1
    outs = tuple(args[p] for p in spec.outputs)
    return outs[0] if len(outs) == 1 else outs


def run_block(spec: BlockSpec, *chunks: np.ndarray) -> Any:
    """The task: launch `spec`'s kernel on one chunk of each array and return the written
    parameters. cthreads errors come back to the client as their own class, worker named."""
    try:
        worker = get_worker()
    except ValueError:  # run by a local dask scheduler, not a distributed worker
        worker = None
    try:
        if worker is not None:
            choose_device(worker.name)
        return _launch(spec, chunks)
    except CThreadsGPUError as exc:
        raise named(exc, _where(worker)) from None
