"""Frontend and codegen of shared arrays and atomics: accepted forms (IR goldens, spirv-val on
every kernel for several targets) and rejected ones (golden messages)."""

from __future__ import annotations

import inspect

import lang_bad_kernels
import lang_kernels as L
import pytest
from langhelp import GOLDEN, check_golden, relative

from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.printer import format_kernel
from cthreads.compiler.spirv import tools
from cthreads.compiler.target import Target
from cthreads.errors import GpuCompileError
from cthreads.gpu import BlockDim, GlobalIdx, ThreadIdx, atomic_add, atomic_max, copy16, shared
from cthreads.gpu.kernel import GpuKernel
from cthreads.sync import __sync_threads

BAD = [
    fn
    for fn in vars(lang_bad_kernels).values()
    if inspect.isfunction(fn) and fn.__module__ == lang_bad_kernels.__name__
]
TARGETS = {
    "default": Target(),
    "float-add": Target(atomic_float32_add=True),
    "big": Target(max_shared_memory=65536, max_push_constants_size=256),
}
SIDE = 8


@pytest.mark.parametrize("fn", BAD, ids=lambda fn: fn.__name__)
def test_rejected_with_golden_message(fn):
    with pytest.raises(GpuCompileError) as info:
        GpuKernel(fn).lower(Target())  # a target: the shared-memory limit is the device's
    err = info.value
    assert err.allowed, "every compile error says what to write instead"
    assert err.filename == fn.__code__.co_filename and err.line
    check_golden(GOLDEN / "errors" / f"{fn.__name__}.txt", relative(str(err)) + "\n")


def test_every_bad_kernel_has_a_golden():
    files = {p.stem for p in (GOLDEN / "errors").glob("*.txt")}
    assert files <= {fn.__name__ for fn in BAD}, "stale goldens"


@pytest.mark.parametrize(
    "k",
    [L.block_sum, L.histogram_shared, L.matmul, L.tickets, L.shared_bounds],
    ids=lambda k: k.name,
)
def test_ir_golden(k):
    check_golden(GOLDEN / "ir" / f"{k.name}.ir", k.ir_text())


@pytest.mark.skipif(not tools.available("spirv-val"), reason="spirv-tools not installed")
@pytest.mark.parametrize("target", TARGETS, ids=str)
@pytest.mark.parametrize("k", L.ALL, ids=lambda k: k.name)
def test_spirv_val(k, target):
    compile_kernel(k.lower(TARGETS[target]), TARGETS[target], validate=True)


@pytest.mark.skipif(not tools.available("spirv-dis"), reason="spirv-tools not installed")
@pytest.mark.parametrize("k", [L.block_sum, L.histogram], ids=lambda k: k.name)
def test_spvasm_golden(k):
    ck = compile_kernel(k.lower(Target()), Target(), validate=False)
    check_golden(GOLDEN / f"{k.name}.spvasm", tools.disassemble(ck.spirv))


def test_float_add_native_only_where_the_target_has_it():
    dis = {
        name: tools.disassemble(compile_kernel(L.float_atomics.lower(t), t).spirv)
        for name, t in TARGETS.items()
    }
    assert "OpAtomicFAddEXT" in dis["float-add"] and "AtomicFloat32AddEXT" in dis["float-add"]
    assert "OpAtomicFAddEXT" not in dis["default"] and "OpAtomicCompareExchange" in dis["default"]
    # shared arrays always use the loop (the device feature covers buffers only)
    t = TARGETS["float-add"]
    assert "OpAtomicFAddEXT" not in tools.disassemble(
        compile_kernel(L.shared_float_atomics.lower(t), t).spirv
    )


def test_shared_kernels_observe_the_workgroup_and_atomics_are_not_vectorized():
    ck = compile_kernel(L.block_sum.lower(), Target())
    assert ck.observes_workgroup and ck.workgroup_size == (L.WG, 1, 1)
    ck = compile_kernel(L.histogram.lower(), Target())
    assert not ck.observes_workgroup and ck.elements_per_invocation == 1
    contract = ck.contract()["params"][2]
    assert contract["reads"] and contract["writes"]  # atomics read and write the list


def test_shared_size_forms():
    def k(n: int, y: list[float]) -> None:
        a = shared(float, BlockDim.x * 2)
        b = shared(int, SIDE * SIDE + 1)
        c = shared(bool, 3)
        y[0] = float(len(a) + len(b) + len(c))

    kern = GpuKernel(k, workgroup_size=32).lower()
    assert [(s.name, str(s)) for s in kern.shared] == [
        ("a", "f32[64]"),
        ("b", "i32[65]"),
        ("c", "bool[3]"),
    ]
    assert kern.observes_workgroup
    assert "y[0] = 132.0" in format_kernel(kern)


def test_shared_memory_limit_follows_the_target():
    def k(n: int, y: list[float]) -> None:
        a = shared(float, 8192)  # 32 KiB
        y[0] = a[0]

    with pytest.raises(GpuCompileError, match="maxComputeSharedMemorySize") as info:
        GpuKernel(k).lower(Target())
    assert info.value.line.strip().startswith("a = shared(float, 8192)")
    GpuKernel(k).lower(Target(max_shared_memory=32768))  # fits where the device allows it
    lowered = GpuKernel(k).lower()  # no target: inspection works, compiling checks the limit
    with pytest.raises(GpuCompileError, match=r"`a` declared here crosses the limit") as info:
        compile_kernel(lowered, Target())
    assert info.value.lineno == lowered.shared[0].line


def test_atomic_result_forms():
    def k(n: int, h: list[int], f: list[float], y: list[float]) -> None:
        i: int = GlobalIdx.x
        old: float = atomic_add(h, i, 2)  # int old value into a float local
        y[i] = atomic_max(f, i, 1)  # int value promoted to the float element type
        a = b = atomic_add(h, 0, 1)
        y[i + 1] = old + a + b

    text = format_kernel(GpuKernel(k).lower())
    assert "%$old1 = atomic_add i32 h[%i] 2" in text
    assert "atomic_max f32 f[%i] 1.0" in text
    assert "%old = (f32 %$old1)" in text


def test_barrier_orders_workgroup_memory():
    def k(n: int, y: list[float]) -> None:
        t = shared(float, 64)
        t[ThreadIdx.x] = 1.0
        __sync_threads()
        y[GlobalIdx.x] = t[63 - ThreadIdx.x]

    dis = tools.disassemble(compile_kernel(GpuKernel(k).lower(), Target()).spirv)
    # Workgroup execution and memory scope, AcquireRelease | WorkgroupMemory: y is written
    # only after the barrier, so list memory needs no ordering there (SPEC §8)
    assert dis.count("OpControlBarrier %int_2 %int_2 %int_264") == 2  # zero-fill + the user's
    assert "Workgroup" in dis


def _barrier_semantics(k) -> list[int]:
    dis = tools.disassemble(compile_kernel(GpuKernel(k).lower(), Target()).spirv)
    return [int(line.rsplit("_", 1)[1]) for line in dis.splitlines() if "OpControlBarrier" in line]


def test_barriers_order_list_memory_where_a_written_list_comes_before():
    def before(n: int, y: list[float]) -> None:
        y[GlobalIdx.x] = 1.0  # written before: a neighbour may read it after the barrier
        __sync_threads()
        y[GlobalIdx.x] = y[GlobalIdx.x ^ 1] + 1.0

    def in_loop(n: int, x: list[float], y: list[float]) -> None:
        t = shared(float, 64)
        for i in range(4):
            t[ThreadIdx.x] = x[GlobalIdx.x + i]
            __sync_threads()  # the next iteration's barrier follows this one's y store
            y[GlobalIdx.x] = t[63 - ThreadIdx.x]

    def read_only(n: int, x: list[float], y: list[float]) -> None:
        t = shared(float, 64)
        acc = 0.0
        for i in range(4):
            t[ThreadIdx.x] = x[GlobalIdx.x + i]  # x is never written: nothing to order
            __sync_threads()
            acc += t[63 - ThreadIdx.x]
            __sync_threads()
        y[GlobalIdx.x] = acc

    def copied_then_written(n: int, y: list[float]) -> None:
        t = shared(float, 256)
        copy16(t, 4 * ThreadIdx.x, y, 4 * ThreadIdx.x)  # reads y: the neighbour writes it below
        __sync_threads()
        y[GlobalIdx.x] = t[255 - ThreadIdx.x]

    # AcquireRelease | WorkgroupMemory is 264; with UniformMemory (list memory) 328
    assert sorted(_barrier_semantics(copied_then_written)) == [264, 328]
    assert _barrier_semantics(before) == [328]
    # (the 264: the barrier after the shared arrays' zero-fill, in the entry function)
    assert sorted(_barrier_semantics(in_loop)) == [264, 328]
    assert _barrier_semantics(read_only) == [264, 264, 264]


def test_shared_names_do_not_leak_into_host_python():
    assert shared(int, 3) == [0, 0, 0] and shared(bool, 1) == [False]
    with pytest.raises(ValueError):
        shared(float, 0)
    with pytest.raises(TypeError):
        shared(str, 4)
    xs = [1.0, -0.0]
    assert atomic_add(xs, 5, 1.0) == 0.0 and xs == [1.0, -0.0]  # out of range: nothing
    from cthreads.gpu import atomic_compare_exchange

    assert atomic_compare_exchange(xs, 1, 0.0, 9.0) == -0.0 and xs[1] == -0.0  # bits differ
    assert atomic_compare_exchange(xs, 1, -0.0, 9.0) == -0.0 and xs[1] == 9.0
