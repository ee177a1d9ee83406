"""Where a forked child hangs after the parent used several stream lanes (H200 probe, issue 16).

The parent runs work on three streams, forks, and the child tries again; both sides arm
faulthandler to print every thread's stack after 15 s and exit, so a hang names its line.
    python bench/fork_lanes_probe.py          (CTHREADS_LANE_QUEUES=1 to share one queue)
"""

import faulthandler
import json
import os
import sys

import numpy as np

from cthreads.gpu import DeviceArray, GlobalIdx, Gpu, Stream, gpu
from cthreads.runtime import get_device


@Gpu
def add_k(n: int, k: float, x: list[float]) -> None:
    i: int = GlobalIdx.x
    if i < n:
        x[i] = x[i] + k


def lanes(k: int) -> list[float]:
    streams = [Stream(), Stream(), Stream()]
    xs = [DeviceArray.from_numpy(np.zeros(1024, np.float32)) for _ in streams]
    for _ in range(k):
        for s, x in zip(streams, xs):
            gpu(add_k, 1024, 1.0, x, stream=s)
    return [float(x.numpy()[7]) for x in xs]


print("lane queues:", get_device().stats().get("lane_queues"), flush=True)
print("parent before fork:", lanes(3), flush=True)
pid = os.fork()
if pid == 0:
    faulthandler.dump_traceback_later(15, exit=True)
    print("child: forked", flush=True)
    try:
        print("child:", json.dumps(lanes(2)), flush=True)
    except Exception as exc:  # noqa: BLE001 - the probe reports whatever happens
        print("child raised:", repr(exc)[:300], flush=True)
    print("child: exiting", flush=True)
    sys.exit(3)
faulthandler.dump_traceback_later(40, exit=True)
_, status = os.waitpid(pid, 0)
print("parent: child status", os.waitstatus_to_exitcode(status), flush=True)
print("parent after fork:", lanes(4), flush=True)
