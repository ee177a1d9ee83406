"""Our SPIR-V on a real Vulkan device (lavapipe in CI): results equal numpy / Python references.

Dispatches through `cthreads.runtime` directly (no launch layer), packing the parameter block
from `CompiledKernel.push` the way launch does. Skipped when no device is usable.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from ir_eval import evaluate, f_to_i, wrap
from ir_kernels import ZOO

from cthreads.compiler import ir
from cthreads.compiler.compile import compile_kernel
from cthreads.compiler.target import Target

DTYPES = {"int": np.int32, "float": np.float32, "bool": np.uint8}


@pytest.fixture(scope="module")
def device():
    try:
        import cthreads.runtime as rt

        return rt.get_device()
    except Exception as exc:  # noqa: BLE001 - any failure means: no device here
        pytest.skip(f"no Vulkan device: {exc}")


def run(device, kernel, args, n, *, wg=64, max_groups=65535, pieces=1):
    """Compile and dispatch `kernel` over a logical grid covering `n`; returns the list arrays."""
    ck = compile_kernel(kernel, Target(), validate=True)
    lists, keep = {}, []
    for i, p in enumerate(ck.params):
        if p.is_list:
            arr = np.array(args[i], dtype=DTYPES[p.type.elem.kind])
            buf = device.buffer(max(arr.nbytes, 4))
            buf.write(arr)
            lists[i] = (arr, buf)
            keep.append(buf)
    lwg = ck.workgroup_size[0]
    grid_x = -(-n // lwg)
    total = grid_x * lwg

    def push(base_group):
        vals = []
        for f in sorted(ck.push.fields, key=lambda f: f.offset):
            if f.role == "total":
                vals.append(total)
            elif f.role == "base_group":
                vals.append(base_group)
            elif f.role == "grid_x":
                vals.append(grid_x)
            elif f.role in ("total_y", "total_z"):
                vals.append(1)
            elif f.role == "addr":
                vals.append(lists[f.param][1].address)
            elif f.role == "len":
                vals.append(len(lists[f.param][0]))
            else:
                v = args[f.param]
                vals.append(int(v) if isinstance(v, bool) else v)
        block = struct.pack(ck.push.struct_format(), *vals)
        if not ck.push.in_buffer:
            return block
        pb = device.buffer(len(block))
        pb.write(block)
        keep.append(pb)
        return struct.pack("<Q", pb.address)

    if ck.observes_workgroup:
        pipe = device.pipeline(ck.spirv, ck.push.push_size, None)
        step = -(-grid_x // pieces)
        cmds = [
            ("dispatch", pipe, push(b), (min(step, grid_x - b), 1, 1))
            for b in range(0, grid_x, step)
        ]
    else:
        pipe = device.pipeline(ck.spirv, ck.push.push_size, {0: wg, 1: 1, 2: 1})
        cmds = [("dispatch", pipe, push(0), (min(-(-total // wg), max_groups), 1, 1))]
    device.wait(device.submit(cmds, keep=(*keep, pipe)))
    out = {}
    for i, (arr, buf) in lists.items():
        res = np.empty_like(arr)
        buf.read_into(res)
        out[i] = res
    return out


def test_saxpy_grid_stride_covers_every_index(device):
    n = 5000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32)
    ref = np.float32(2.5) * x + y
    for wg, groups in [(64, 65535), (32, 3), (256, 1)]:  # few groups: each invocation loops
        out = run(device, ZOO["saxpy"], [n - 7, 2.5, x, y], n, wg=wg, max_groups=groups)[3]
        np.testing.assert_allclose(out[: n - 7], ref[: n - 7], rtol=1e-6)
        np.testing.assert_array_equal(out[n - 7 :], y[n - 7 :])  # i >= n untouched


def test_fill_and_out_of_bounds_writes_dropped(device):
    out = np.zeros(100, np.float32)
    res = run(device, ZOO["fill"], [out, 7.0], 1000)[0]  # 1000 invocations, 100 elements
    np.testing.assert_array_equal(res, np.full(100, 7.0, np.float32))


def test_horner(device):
    n, c = 300, np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    x = np.linspace(-2, 2, n, dtype=np.float32)
    res = run(device, ZOO["horner"], [x, c, np.zeros(n, np.float32), 3], n)[2]
    ref = ((c[3] * x + c[2]) * x + c[1]) * x + c[0]
    np.testing.assert_allclose(res, ref, rtol=1e-5, atol=1e-5)


def test_intmix_python_semantics(device):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.integers(-1000, 1000, 200), [-(2**31), 2**31 - 1, -7, 7, -1, 0]])
    b = np.concatenate([rng.integers(-20, 20, 200), [-1, 0, 3, -3, 0, 5]])
    n = len(a)
    res = run(device, ZOO["intmix"], [a, b, np.zeros(6 * n, np.int32)], n)[2].reshape(n, 6)
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        ref = [
            x if y == 0 else x % y,
            0 if y == 0 else wrap(x // y),
            x & y,
            x >> 3,
            x // 4 + x % 8,
            wrap(x << (y & 31)) ^ (x | 7),
        ]
        assert res[i].tolist() == ref, (x, y)


def test_boolops(device):
    p = np.array([0, 1, 0, 1, 2], np.uint8)  # any nonzero byte is True
    q = np.array([0, 0, 1, 1, 1], np.uint8)
    res = run(device, ZOO["boolops"], [p, q, np.full(5, 9, np.uint8)], 5)[2]
    assert res.tolist() == [int((a and b) or not a) for a, b in zip(p.astype(bool), q.astype(bool))]


def test_collatz(device):
    xs = np.arange(1, 200, dtype=np.int32)

    def steps(v):
        s = 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    res = run(device, ZOO["collatz"], [xs, np.zeros_like(xs)], len(xs))[1]
    assert res.tolist() == [steps(int(v)) for v in xs]


def test_clamp_and_stencil(device):
    x = np.linspace(-5, 5, 101, dtype=np.float32)
    res = run(device, ZOO["clamp"], [x, -1.5, 2.0, np.zeros_like(x)], len(x))[3]
    np.testing.assert_array_equal(res, np.clip(x, np.float32(-1.5), np.float32(2.0)))
    res = run(device, ZOO["stencil"], [x, np.zeros_like(x)], len(x))[1]
    xp = np.concatenate([[0], x, [0]]).astype(np.float32)  # out-of-range reads give 0.0
    ref = np.float32(0.25) * xp[:-2] + np.float32(0.5) * xp[1:-1] + np.float32(0.25) * xp[2:]
    np.testing.assert_allclose(res, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pieces", [1, 3])
def test_blocks_barrier_and_split_dispatch(device, pieces):
    n = 32 * 10
    res = run(
        device, ZOO["blocks"], [np.zeros(n, np.int32), np.zeros(n, np.int32)], n, pieces=pieces
    )
    assert res[0].tolist() == list(range(n))  # BlockIdx.x*BlockDim.x+ThreadIdx.x == GlobalIdx.x
    ref = [(i // 32) * 32 + (i % 32 + 1) % 32 for i in range(n)]
    assert res[1].tolist() == ref  # neighbour's write visible after the barrier


def test_many_params_in_buffer(device):
    k = ZOO["many"]
    n = 50
    lists = [np.full(n, j + 1, np.float32) for j in range(8)]
    scalars = []
    for p in k.params[8:]:
        scalars.append(True if p.type.is_bool else 3 if p.type.is_int else 0.5)
    res = run(device, k, [*lists, *scalars], n)[0]
    expect = np.float32(2 + sum(1 if s is True else s for s in scalars) + sum(range(3, 9)))
    np.testing.assert_allclose(res, np.full(n, expect), rtol=1e-6)


def test_control_flow(device):
    n = 8
    res = run(device, ZOO["control"], [np.zeros(5, np.int32), np.zeros(n, np.int32), True, 7], n)[1]

    def ref(m):
        t = 0
        for a in range(m):
            if a == 3:
                continue
            for b in range(a, m):
                if b > 5:
                    break
                t += a * b
            if t > 1000:
                return None
        return t + m + 1

    assert res.tolist() == [ref(7)] * 5 + [0] * 3  # i >= len(x) returns early


def test_every_operator_matches_reference(device):
    k = ZOO["ops"]
    xi = [7, -7, 0, -(2**31), 2**31 - 1, 5, -1, 13, 100, -100, 3, 2, 4, -4, 9, -9, 1]
    yi = [2, 2, 5, -1, 1, 0, -3, -5, 3, 7, 33, -2, 3, 3, -2, -2, 1]
    nan, inf = math.nan, math.inf
    # NaN on either side, both NaN, and both orders of signed zeros: SPEC §14 (min, max,
    # comparisons follow Python on every device; NVIDIA's fmin once gave min(nan, 1.0) == 1.0)
    xf = [1.5, -2.5, 0.0, -0.0, nan, inf, -8.0, 3.0, 1e30, -1e-3, 2.0, -2.0]
    xf += [1.0, 0.0, -0.0, nan, -inf]
    yf = [0.5, 2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -0.0, 1e10, inf, -3.0, 2.5]
    yf += [nan, -0.0, 0.0, nan, nan]
    xb = [0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0]
    yb = [0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1]
    n = len(xi)
    outs = [np.zeros(128 * n, np.int32), np.zeros(128 * n, np.float32), np.zeros(128 * n, np.uint8)]
    res = run(device, k, [xi, yi, xf, yf, xb, yb, *outs], n)
    inputs = {
        0: np.array(xi, np.int32),
        1: np.array(yi, np.int32),
        2: np.array(xf, np.float32),
        3: np.array(yf, np.float32),
        4: np.array(xb, np.uint8),
        5: np.array(yb, np.uint8),
    }
    bad = []
    for s in k.body:
        slot = s.index.rhs.value
        for g in range(n):
            want = evaluate(s.value, inputs, g)
            got = res[s.list_index][g * 128 + slot]
            if s.value.type.is_float:
                ok = _close(float(got), float(want), s.value)
            else:
                ok = int(got) == int(want)
            if not ok:
                bad.append(f"{_describe(s.value)} g={g}: got {got!r}, want {want!r}")
    assert not bad, "\n".join(bad[:40])


# results that are exact selections of an operand: a zero keeps its sign (min(0.0, -0.0) is
# 0.0, min(-0.0, 0.0) is -0.0, -(0.0) is -0.0), whatever the device
_SIGNED = (ir.BinOp.MIN, ir.BinOp.MAX)


def _close(got: float, want: float, e: ir.Expr) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    exact = (isinstance(e, ir.Binary) and e.op in _SIGNED) or isinstance(e, ir.Unary | ir.Select)
    if exact:
        return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)
    if math.isinf(want):
        return got == want
    # pow goes through exp2/log2 on the device; floor(a/b) amplifies the 2.5-ulp division
    rel = 1e-4 if isinstance(e, ir.Binary) and e.op in (ir.BinOp.POW, ir.BinOp.MOD) else 1e-6
    return abs(got - want) <= rel * max(abs(want), 1.0)


def _describe(e: ir.Expr) -> str:
    if isinstance(e, ir.Binary):
        return f"{e.op.value}[{e.lhs.type}]({type(e.rhs).__name__})"
    if isinstance(e, ir.Cast):
        return f"cast {e.operand.type}->{e.type}"
    return type(e).__name__ + (f" {e.op.value}" if hasattr(e, "op") else "")


def test_intrinsics(device):
    from cthreads.compiler.intrinsics import INTRINSICS

    x = np.array([0.3, -0.7, 2.5, 0.0, -3.25, 0.9], np.float32)
    y = np.array([1.5, 0.5, -2.0, -0.0, 4.0, 0.25], np.float32)
    z = np.array([0.5, 2.0, 1.0, 3.0, -1.0, 7.0], np.float32)
    n = len(x)
    res = run(device, ZOO["intrinsics"], [x, y, z, np.zeros(80 * n, np.float32)], n)[3]

    def ref(name, a, b, c):
        m = {
            "log10": math.log10,
            "fabs": abs,
            "fma": lambda p, q, r: p * q + r,
            "exp2": lambda v: 2.0**v,
            "log2": math.log2,
            "degrees": math.degrees,
            "radians": math.radians,
            "copysign": math.copysign,
            "hypot": math.hypot,
            "fmod": math.fmod,
            "pow": _float_pow_ref,
        }.get(name) or getattr(math, name, None)
        args = [a, b, c][: INTRINSICS[name].arity]
        try:
            return float(m(*args))
        except (ValueError, ZeroDivisionError):  # Python raises; the device gives IEEE values
            with np.errstate(all="ignore"):
                f = {"log": np.log, "log2": np.log2, "log10": np.log10}.get(name)
                return float(f(np.float32(a))) if f else math.nan

    bad = []
    for k, (name, spec) in enumerate(sorted(INTRINSICS.items())):
        for g in range(n):
            a, b, c = float(x[g]), float(y[g]), float(z[g])
            if name == "atan2" and a == 0 and b == 0:
                continue  # atan2(+-0, +-0) is undefined in Vulkan (GLSL.std.450 Atan2)
            got = float(res[g * 80 + 2 * k])
            if spec.args == "n":
                want = abs(a)
                got_i = float(res[g * 80 + 2 * k + 1])
                if got_i != abs(f_to_i(a)):
                    bad.append(f"abs(int) g={g}: {got_i}")
            elif spec.result == "i":
                want = float(f_to_i(getattr(math, name)(a)))
            elif spec.result == "b":
                want = float(
                    {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}[name](a)
                )
            else:
                want = ref(name, a, b, c)
            # lavapipe's asin/acos/... are looser than libm; Vulkan allows it (inherited precision)
            loose = ("acosh", "atanh", "asinh", "asin", "acos", "tan", "pow", "exp2")
            tol = 2e-3 if name in loose else 2e-4
            if math.isnan(want) or math.isinf(want):
                ok = math.isnan(got) if math.isnan(want) else got == want
            else:
                ok = abs(got - want) <= tol * max(1.0, abs(want))
            if not ok:
                bad.append(f"{name} g={g} args={(a, b, c)}: got {got}, want {want}")
    assert not bad, "\n".join(bad)


def _float_pow_ref(a, b):
    try:
        r = a**b
    except ZeroDivisionError:  # IEEE pow: (-0.0) ** odd negative is -inf, the emulator's rule
        return math.copysign(math.inf, a) if b.is_integer() and int(b) % 2 else math.inf
    return math.nan if isinstance(r, complex) else r


def test_grid_stride_large_n_each_index_once(device):
    """Every index exactly once when invocations < n: an int counter per element must read 1."""
    from ir_kernels import I32, LI, B, P, bin_, gid, kernel, load, store

    k = kernel(
        "count",
        [P("c", LI, r=True, w=True)],
        [store(0, gid(), bin_(B.ADD, load(0, gid(), I32), ir.Const(I32, 1)))],
    )
    n = 3_000_001
    res = run(device, k, [np.zeros(n, np.int32)], n, wg=64, max_groups=1000)[0]
    assert res.min() == 1 and res.max() == 1
