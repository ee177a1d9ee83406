"""Process events with a device open (SPEC §14): fork, Ctrl-C during a wait, interpreter exit.

Each case runs in a child process with a timeout, so a hang or a crash fails the test, not the
suite. What the implementation does, asserted exactly:
- fork: the child drops the parent's device without touching it and opens its own on first
  use (a `multiprocessing` pool with the fork context works too); the parent is unaffected.
- Ctrl-C: a blocked `join()` (or `await`) raises KeyboardInterrupt promptly, while the kernel
  still runs; the job stays valid and a later `join()` returns its results.
- exit: the implicit teardown runs after the program's own exit handlers (they may launch);
  a kernel still running at exit is waited for `CTHREADS_EXIT_WAIT` seconds, then the device
  is abandoned with a warning instead of hanging the exit.
Kernels that run "until told" use the `gate` shader (shaders/gate.comp): it polls a flag the
host writes, so nothing here depends on how fast the device is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

COMMON = textwrap.dedent(
    """
    import json, os, signal, struct, sys, threading
    import numpy as np
    from cthreads import runtime
    from cthreads.gpu import GlobalIdx, Gpu, VulkanInitFailed, gpu
    from cthreads.runtime import validation_messages

    @Gpu
    def bump(n: int, k: float, x: list[float]) -> None:
        i: int = GlobalIdx.x
        if i < n:
            x[i] = x[i] + k

    def work(k):
        xs = [float(k)] * 64
        gpu(bump, 64, 1.0, xs).join()
        return xs == [k + 1.0] * 64

    def work_in_child(k):
        # a forked child opens its own device, or (NVIDIA) gets the clear refusal
        try:
            return work(k)
        except VulkanInitFailed as exc:
            return "refused" if "forked" in str(exc) and "spawn" in str(exc) else repr(exc)

    def gate(n=1 << 16):
        '''Hold the queue until the returned flag buffer gets a non-zero word.'''
        dev = runtime.get_device()
        pipe = dev.pipeline(runtime.load_shader("gate"), 16)
        # Device-local memory the host maps where there is some (NVIDIA: the BAR): host writes
        # land in GPU memory, which the polling loads see; system memory was not seen.
        flag = dev.buffer(8)
        if not flag.host_visible:
            flag = dev.buffer(8, usage="upload")
        flag.write(np.zeros(2, np.uint32))
        push = struct.pack("<QII", flag.address, n, 1 << 24)
        value = dev.submit([("dispatch", pipe, push, (n // 64, 1, 1))], keep=(flag, pipe))
        return value, flag
    """
)


def _run(body: str, tmp_path, env=None, timeout=90) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(COMMON + textwrap.dedent(body))
    proc = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _last_json(proc: subprocess.CompletedProcess):
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- fork ----------------------------------------------------------------------------------

FORK = """
assert work(1)  # the parent's device is open (and its submission thread runs)
pid = os.fork()
if pid == 0:
    ok = work_in_child(5) if sys.argv[-1] == "launch" else None
    print(json.dumps(["child", ok, validation_messages()]), flush=True)
    sys.exit(3)  # a normal exit (atexit handlers, the implicit teardown), its status kept
_, status = os.waitpid(pid, 0)
print(json.dumps(["parent", os.waitstatus_to_exitcode(status), work(2), validation_messages()]))
"""


@pytest.mark.parametrize("then", ["exit", "launch"])
def test_fork_with_the_device_open(tmp_path, then):
    script = tmp_path / "child.py"
    script.write_text(COMMON + textwrap.dedent(FORK))
    proc = subprocess.run(
        [sys.executable, str(script), then],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    child = next(line for line in lines if line[0] == "child")
    parent = next(line for line in lines if line[0] == "parent")
    # the child opened a fresh device (lavapipe), or was told to use 'spawn' (NVIDIA's driver
    # cannot create a device in a forked child): never a hang, a crash or a wrong result
    if child[1] == "refused":  # the loader reports the driver's refusal itself, and only that
        assert then == "launch" and all("CreateDevice" in m for m in child[2]), child[2]
    else:
        assert child == ["child", True if then == "launch" else None, []]
    assert parent == ["parent", 3, True, []]  # the child exited normally; parent unaffected


POOL = """
import multiprocessing as mp
assert work(1)
with mp.get_context("fork").Pool(2) as pool:
    results = pool.map(work_in_child, range(6))
print(json.dumps([results, work(3), validation_messages()]))
"""


def test_multiprocessing_fork_pool_launches(tmp_path):
    proc = _run(POOL, tmp_path)
    results, parent_ok, messages = _last_json(proc)
    assert results in ([True] * 6, ["refused"] * 6) and parent_ok is True and messages == []


# ---- Ctrl-C --------------------------------------------------------------------------------

INTERRUPT = """
value, flag = gate()
xs = [1.0] * 64
job = gpu(bump, 64, 1.0, xs)  # queued behind the gate: it cannot finish before it opens
# raised in the timer's thread: the blocked join() must notice it without being woken
timer = threading.Timer(0.2, signal.raise_signal, (signal.SIGINT,))
timer.start()
try:
    job.join()
    outcome = "joined"
except KeyboardInterrupt:
    outcome = "interrupted"
timer.join()
pending = not job.done() and xs == [1.0] * 64

import asyncio

async def wait_for(job):
    await job

ys = [1.0] * 64
job2 = gpu(bump, 64, 2.0, ys)
# (as Ctrl-C does: to the process, so the main thread's select() wakes up; a signal raised in
# another thread would not wake an idle event loop, whose SIGINT handler has no wakeup fd)
timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
timer.start()
try:
    asyncio.run(wait_for(job2))
    outcome2 = "awaited"
except KeyboardInterrupt:
    outcome2 = "interrupted"
timer.join()
pending2 = not job2.done()

flag.write(np.ones(1, np.uint32))  # open the gate: everything queued can run now
job.join()  # the interrupted jobs are still valid
job2.join()
print(json.dumps([outcome, pending, outcome2, pending2, xs == [2.0] * 64, ys == [3.0] * 64,
                  validation_messages()]))
"""


def test_ctrl_c_interrupts_join_and_await(tmp_path):
    proc = _run(INTERRUPT, tmp_path)
    assert _last_json(proc) == ["interrupted", True, "interrupted", True, True, True, []]


EXIT_BUSY = """
# never opened. llvmpipe ends each invocation's loop after ~65,535 polls, so there the length
# comes from many invocations (minutes); a GPU polls 2**24 times per invocation, so one wave of
# 65,536 is seconds (estimated 5-10 s on the H200, not measured): past the 0.2 s exit wait, then it ends by
# itself instead of occupying a shared GPU for minutes after the process left
cpu = runtime.get_device().info.type == "cpu"
value, flag = gate(65535 * 64 if cpu else 1 << 16)
xs = [1.0] * 64
job = gpu(bump, 64, 1.0, xs)
print("leaving with the gate closed", flush=True)
"""


def test_exit_with_a_kernel_that_does_not_end(tmp_path):
    """The exit teardown waits CTHREADS_EXIT_WAIT seconds, then abandons the device."""
    proc = _run(EXIT_BUSY, tmp_path, env={"CTHREADS_EXIT_WAIT": "0.2"}, timeout=60)
    assert "leaving with the gate closed" in proc.stdout
    assert "GPU work still running at exit after 0.2 s" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


EXIT_BUSY_SECOND = """
# two devices open (issue 20): the default one idle, a second logical one held by the gate
# (as EXIT_BUSY, llvmpipe's length from many invocations): the exit waits, abandons only that
# one with the warning, and shuts the idle one down as usual
import cthreads.gpu as cg
assert work(1)
second = cg.device(0, logical=1)
dev = second.open()
pipe = dev.pipeline(runtime.load_shader("gate"), 16)
flag = dev.buffer(8)
if not flag.host_visible:
    flag = dev.buffer(8, usage="upload")
flag.write(np.zeros(2, np.uint32))
cpu = dev.info.type == "cpu"
n = 65535 * 64 if cpu else 1 << 16
dev.submit([("dispatch", pipe, struct.pack("<QII", flag.address, n, 1 << 24), (n // 64, 1, 1))],
           keep=(flag, pipe))
ys = [0.0] * 64
job = gpu(bump, 64, 1.0, ys, device=second)  # queued behind the gate
# (no launch on the default device now: lavapipe's logical devices share one pool of shader
# threads, so the gate holds them all; GPUs' devices are independent)
print("leaving with the gate closed", flush=True)
"""


def test_exit_with_a_kernel_that_does_not_end_on_a_second_device(tmp_path):
    proc = _run(EXIT_BUSY_SECOND, tmp_path, env={"CTHREADS_EXIT_WAIT": "0.2"}, timeout=60)
    assert "leaving with the gate closed" in proc.stdout
    assert proc.stderr.count("GPU work still running at exit after 0.2 s") == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


# ---- atexit --------------------------------------------------------------------------------

ATEXIT = """
import atexit

def late():
    ok = work(7)
    print(json.dumps(["at exit", ok, validation_messages()]), flush=True)

atexit.register(late)  # before the first launch opens the device
assert work(1)
print("main done", flush=True)
"""


def test_launch_from_an_atexit_handler(tmp_path):
    proc = _run(ATEXIT, tmp_path)
    assert "main done" in proc.stdout
    assert _last_json(proc) == ["at exit", True, []], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_a_forked_child_the_driver_refuses_gets_the_spawn_advice(monkeypatch):
    # NVIDIA's driver (580) fails vkCreateDevice in a forked child; lavapipe opens one, so the
    # refusal is simulated here: the error must say why and what to do instead
    from cthreads.errors import VulkanInitFailed
    from cthreads.runtime import lifecycle

    class _Refusing:
        def __getattr__(self, name):
            return getattr(real, name)

        def Device(self, *args):  # noqa: N802 - the native type's name
            raise VulkanInitFailed(
                "vkCreateDevice failed", vk_result="VK_ERROR_INITIALIZATION_FAILED"
            )

    real = lifecycle.native.module()
    lifecycle.shutdown()
    monkeypatch.setattr(lifecycle, "_inherited_device", True)
    monkeypatch.setattr(lifecycle.native, "module", lambda: _Refusing())
    with pytest.raises(VulkanInitFailed, match="forked") as info:
        lifecycle.init()
    assert "spawn" in str(info.value) and "VK_ERROR_INITIALIZATION_FAILED" in str(info.value)
    monkeypatch.undo()
    assert lifecycle.init().alive  # the real driver again


def test_a_child_forked_from_a_gpu_user_makes_no_vulkan_call(monkeypatch):
    # a forked child whose parent had a GPU open is refused before any driver call: NVIDIA's
    # driver hung such a child at times (H200, 2026-12-02), so not even an instance is created
    from cthreads.errors import VulkanInitFailed
    from cthreads.runtime import lifecycle

    class _Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"the driver was called in the forked child ({name})")

    lifecycle.shutdown()
    monkeypatch.setattr(lifecycle, "_inherited_device", True)
    monkeypatch.setattr(lifecycle, "_forked_from_gpu", "NVIDIA H200")
    monkeypatch.setattr(lifecycle.native, "loaded_module", lambda: _Untouchable())
    monkeypatch.setattr(lifecycle.native, "module", lambda: _Untouchable())
    for attempt in (lifecycle.init, lifecycle.list_devices):
        with pytest.raises(VulkanInitFailed, match="forked") as info:
            attempt()
        assert "NVIDIA H200" in str(info.value) and "spawn" in str(info.value)
    monkeypatch.undo()
    assert lifecycle.init().alive  # the parent's process itself is unaffected
