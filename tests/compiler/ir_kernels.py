"""Hand-built IR kernels for codegen tests (independent of the frontend's progress).

Small constructors keep the IR readable; `ZOO` maps a name to a kernel. Each kernel mirrors a
Python `@Gpu` kernel written in its docstring-like comment.
"""

from __future__ import annotations

from cthreads.compiler import ir
from cthreads.compiler.intrinsics import INTRINSICS

I32, F32, BOOL = ir.I32, ir.F32, ir.BOOL
LF, LI, LB = ir.ListType(F32), ir.ListType(I32), ir.ListType(BOOL)
B, C, U, K = ir.BinOp, ir.CmpOp, ir.UnOp, ir.BuiltinKind


def const(v, t=None):
    if t is None:
        t = BOOL if isinstance(v, bool) else I32 if isinstance(v, int) else F32
    return ir.Const(t, v)


def loc(name, t=I32):
    return ir.LocalRef(t, name)


def par(i, t):
    return ir.ParamRef(t, i)


def gid(axis=0):
    return ir.Builtin(I32, K.GLOBAL_ID, axis)


def bi(kind, axis=0):
    return ir.Builtin(I32, kind, axis)


def bin_(op, a, b):
    return ir.Binary(a.type, op, a, b)


def cmp(op, a, b):
    return ir.Compare(BOOL, op, a, b)


def load(li, idx, t=F32):
    return ir.Load(t, li, idx)


def store(li, idx, v):
    return ir.Store(li, idx, v)


def cast(t, e):
    return ir.Cast(t, e)


def call(name, *args):
    spec = INTRINSICS[name]
    t = {"f": F32, "i": I32, "b": BOOL, "same": args[0].type}[spec.result]
    return ir.Call(t, name, tuple(args))


def for_range(var, start, stop, step, body):
    """`for var in range(start, stop, step)` with a constant step (the frontend's lowering)."""
    cond = cmp(C.LT if step > 0 else C.GT, loc(var), stop)
    return (
        ir.Assign(var, start),
        ir.Loop(cond, tuple(body), (ir.Assign(var, bin_(B.ADD, loc(var), const(step))),)),
    )


def P(name, t, r=False, w=False):
    return ir.Param(name, t, reads=r, writes=w)


def kernel(name, params, body, locals_=None, **kw):
    return ir.Kernel(name, tuple(params), dict(locals_ or {}), tuple(body), **kw)


I = loc("i")

# def saxpy(n: int, a: float, x: list[float], y: list[float]):
#     i: int = GlobalIdx.x
#     if i < n: y[i] = a * x[i] + y[i]
SAXPY = kernel(
    "saxpy",
    [P("n", I32), P("a", F32), P("x", LF, r=True), P("y", LF, r=True, w=True)],
    [
        ir.Assign("i", gid()),
        ir.If(
            cmp(C.LT, I, par(0, I32)),
            (store(3, I, bin_(B.ADD, bin_(B.MUL, par(1, F32), load(2, I)), load(3, I))),),
        ),
    ],
    {"i": I32},
)

# def fill(out: list[float], v: float): out[GlobalIdx.x] = v
FILL = kernel("fill", [P("out", LF, w=True), P("v", F32)], [store(0, gid(), par(1, F32))])

# def horner(x: list[float], c: list[float], out: list[float], deg: int):
#     i = GlobalIdx.x; acc = 0.0
#     for k in range(deg, -1, -1): acc = acc * x[i] + c[k]
#     out[i] = acc
HORNER = kernel(
    "horner",
    [P("x", LF, r=True), P("c", LF, r=True), P("out", LF, w=True), P("deg", I32)],
    [
        ir.Assign("i", gid()),
        ir.Assign("acc", const(0.0)),
        *for_range(
            "k",
            par(3, I32),
            const(-1),
            -1,
            [
                ir.Assign(
                    "acc", bin_(B.ADD, bin_(B.MUL, loc("acc", F32), load(0, I)), load(1, loc("k")))
                )
            ],
        ),
        store(2, I, loc("acc", F32)),
    ],
    {"i": I32, "acc": F32, "k": I32},
)

# def intmix(a: list[int], b: list[int], out: list[int]):
#     i = GlobalIdx.x; x = a[i]; y = b[i]
#     out[6*i] = x % y; out[6*i+1] = x // y; out[6*i+2] = x & y; out[6*i+3] = x >> 3
#     out[6*i+4] = x // 4 + x % 8; out[6*i+5] = (x << y) ^ (x | 7) ...
X, Y = loc("x"), loc("y")


def _o(k):
    return bin_(B.ADD, bin_(B.MUL, I, const(6)), const(k))


INTMIX = kernel(
    "intmix",
    [P("a", LI, r=True), P("b", LI, r=True), P("out", LI, w=True)],
    [
        ir.Assign("i", gid()),
        ir.Assign("x", load(0, I, I32)),
        ir.Assign("y", load(1, I, I32)),
        store(2, _o(0), bin_(B.MOD, X, Y)),
        store(2, _o(1), bin_(B.FLOORDIV, X, Y)),
        store(2, _o(2), bin_(B.BIT_AND, X, Y)),
        store(2, _o(3), bin_(B.SHR, X, const(3))),
        store(2, _o(4), bin_(B.ADD, bin_(B.FLOORDIV, X, const(4)), bin_(B.MOD, X, const(8)))),
        store(2, _o(5), bin_(B.BIT_XOR, bin_(B.SHL, X, Y), bin_(B.BIT_OR, X, const(7)))),
    ],
    {"i": I32, "x": I32, "y": I32},
)

# def boolops(p: list[bool], q: list[bool], r: list[bool]):
#     i = GlobalIdx.x; r[i] = (p[i] and q[i]) or not p[i]
BOOLOPS = kernel(
    "boolops",
    [P("p", LB, r=True), P("q", LB, r=True), P("r", LB, w=True)],
    [
        ir.Assign("i", gid()),
        store(
            2,
            I,
            bin_(
                B.OR,
                bin_(B.AND, load(0, I, BOOL), load(1, I, BOOL)),
                ir.Unary(BOOL, U.NOT, load(0, I, BOOL)),
            ),
        ),
    ],
    {"i": I32},
)

# def collatz(xs: list[int], steps: list[int]):
#     i = GlobalIdx.x; v = xs[i]; s = 0
#     while True:
#         if v <= 1: break
#         if v % 2 == 0: v = v // 2
#         else: v = 3 * v + 1
#         s += 1
#     steps[i] = s
V = loc("v")
COLLATZ = kernel(
    "collatz",
    [P("xs", LI, r=True), P("steps", LI, w=True)],
    [
        ir.Assign("i", gid()),
        ir.Assign("v", load(0, I, I32)),
        ir.Assign("s", const(0)),
        ir.Loop(
            const(True),
            (
                ir.If(cmp(C.LE, V, const(1)), (ir.Break(),)),
                ir.If(
                    cmp(C.EQ, bin_(B.MOD, V, const(2)), const(0)),
                    (ir.Assign("v", bin_(B.FLOORDIV, V, const(2))),),
                    (ir.Assign("v", bin_(B.ADD, bin_(B.MUL, const(3), V), const(1))),),
                ),
                ir.Assign("s", bin_(B.ADD, loc("s"), const(1))),
            ),
        ),
        store(1, I, loc("s")),
    ],
    {"i": I32, "v": I32, "s": I32},
)

# def clamp(x: list[float], lo: float, hi: float, out: list[float]):
#     i = GlobalIdx.x; v = x[i]
#     if v < lo: out[i] = lo
#     elif v > hi: out[i] = hi
#     else: out[i] = v
VF = loc("v", F32)
CLAMP = kernel(
    "clamp",
    [P("x", LF, r=True), P("lo", F32), P("hi", F32), P("out", LF, w=True)],
    [
        ir.Assign("i", gid()),
        ir.Assign("v", load(0, I)),
        ir.If(
            cmp(C.LT, VF, par(1, F32)),
            (store(3, I, par(1, F32)),),
            (ir.If(cmp(C.GT, VF, par(2, F32)), (store(3, I, par(2, F32)),), (store(3, I, VF),)),),
        ),
    ],
    {"i": I32, "v": F32},
)

# def stencil(x: list[float], out: list[float]):
#     i = GlobalIdx.x
#     out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]
STENCIL = kernel(
    "stencil",
    [P("x", LF, r=True), P("out", LF, w=True)],
    [
        ir.Assign("i", gid()),
        store(
            1,
            I,
            bin_(
                B.ADD,
                bin_(
                    B.ADD,
                    bin_(B.MUL, const(0.25), load(0, bin_(B.SUB, I, const(1)))),
                    bin_(B.MUL, const(0.5), load(0, I)),
                ),
                bin_(B.MUL, const(0.25), load(0, bin_(B.ADD, I, const(1)))),
            ),
        ),
    ],
    {"i": I32},
)

# @Gpu(workgroup_size=32)
# def blocks(out: list[int], grid: list[int]):
#     i = GlobalIdx.x
#     out[i] = BlockIdx.x * BlockDim.x + ThreadIdx.x     # == i
#     __sync_threads()
#     grid[i] = out[BlockIdx.x * BlockDim.x + (ThreadIdx.x + 1) % BlockDim.x] + GridDim.x * 0
BX, TX, DX = bi(K.WORKGROUP_ID), bi(K.LOCAL_ID), bi(K.WORKGROUP_SIZE)
BLOCKS = kernel(
    "blocks",
    [P("out", LI, r=True, w=True), P("grid", LI, w=True)],
    [
        ir.Assign("i", gid()),
        store(0, I, bin_(B.ADD, bin_(B.MUL, BX, DX), TX)),
        ir.Barrier(),
        store(
            1,
            I,
            bin_(
                B.ADD,
                load(
                    0,
                    bin_(B.ADD, bin_(B.MUL, BX, DX), bin_(B.MOD, bin_(B.ADD, TX, const(1)), DX)),
                    I32,
                ),
                bin_(B.MUL, bi(K.NUM_WORKGROUPS), const(0)),
            ),
        ),
    ],
    {"i": I32},
    workgroup_size=(32, 1, 1),
    observes_workgroup=True,
)


# Many parameters: 8 lists + 24 scalars = 16 + 64 + 32 + 96 bytes > 128 -> parameter block in a buffer.
def _many():
    params = [P(f"l{j}", LF, r=True, w=(j == 0)) for j in range(8)]
    params += [P(f"s{j}", F32 if j % 3 else I32 if j % 2 else BOOL) for j in range(24)]
    acc = load(1, gid())
    for j in range(24):
        t = params[8 + j].type
        v = par(8 + j, t)
        if t == I32 or t == BOOL:
            v = cast(F32, v)
        acc = bin_(B.ADD, acc, v)
    for j in range(2, 8):
        acc = bin_(B.ADD, acc, load(j, gid()))
    return kernel("many", params, [store(0, gid(), acc)])


MANY = _many()

# Early return / continue / nested loops / len() / bool scalar / assigned scalar parameter.
#   def control(x: list[int], out: list[int], flag: bool, m: int):
#       i = GlobalIdx.x
#       if i >= len(x): return
#       t = 0
#       for a in range(0, m):
#           if a == 3: continue
#           for b in range(a, m): if b > 5: break; t += a * b
#           if t > 1000: return
#       m = m + 1
#       out[i] = t + m if flag else -t
CONTROL = kernel(
    "control",
    [P("x", LI, r=False), P("out", LI, w=True), P("flag", BOOL), P("m", I32)],
    [
        ir.Assign("i", gid()),
        ir.If(cmp(C.GE, I, ir.ListLen(I32, 0)), (ir.Return(),)),
        ir.Assign("t", const(0)),
        *for_range(
            "a",
            const(0),
            loc("m"),
            1,
            [
                ir.If(cmp(C.EQ, loc("a"), const(3)), (ir.Continue(),)),
                *for_range(
                    "b",
                    loc("a"),
                    loc("m"),
                    1,
                    [
                        ir.If(
                            cmp(C.GT, loc("b"), const(5)), (ir.Break(), ir.Assign("t", const(99)))
                        ),
                        ir.Assign("t", bin_(B.ADD, loc("t"), bin_(B.MUL, loc("a"), loc("b")))),
                    ],
                ),
                ir.If(cmp(C.GT, loc("t"), const(1000)), (ir.Return(),), (ir.Continue(),)),
            ],
        ),
        ir.Assign("m", bin_(B.ADD, loc("m"), const(1))),
        store(
            1,
            I,
            ir.Select(
                I32, par(2, BOOL), bin_(B.ADD, loc("t"), loc("m")), ir.Unary(I32, U.NEG, loc("t"))
            ),
        ),
    ],
    {"i": I32, "t": I32, "a": I32, "b": I32, "m": I32},
)


def intrinsics_kernel():
    """One store per intrinsic: out[k] = float(f(x[i], y[i], z[i]))."""
    x, y, z = load(0, gid()), load(1, gid()), load(2, gid())
    body = []
    for k, (name, spec) in enumerate(sorted(INTRINSICS.items())):
        if spec.args == "n":
            exprs = [call(name, x), call(name, cast(I32, x))]
        else:
            exprs = [call(name, *[x, y, z][: spec.arity])]
        for j, e in enumerate(exprs):
            if e.type != F32:
                e = cast(F32, e)
            body.append(store(3, bin_(B.ADD, bin_(B.MUL, gid(), const(80)), const(2 * k + j)), e))
    return kernel(
        "intrinsics",
        [P("x", LF, r=True), P("y", LF, r=True), P("z", LF, r=True), P("out", LF, w=True)],
        body,
    )


def ops_kernel():
    """Every BinOp / UnOp / CmpOp / Cast on every type it applies to; results into out lists."""
    xi, yi = load(0, gid(), I32), load(1, gid(), I32)
    xf, yf = load(2, gid()), load(3, gid())
    xb, yb = load(4, gid(), BOOL), load(5, gid(), BOOL)
    body, n = [], [0]

    def out(e):
        li = {"int": 6, "float": 7, "bool": 8}[e.type.kind]
        body.append(store(li, bin_(B.ADD, bin_(B.MUL, gid(), const(128)), const(n[0])), e))
        n[0] += 1

    int_ops = [
        B.ADD,
        B.SUB,
        B.MUL,
        B.FLOORDIV,
        B.MOD,
        B.POW,
        B.MIN,
        B.MAX,
        B.BIT_AND,
        B.BIT_OR,
        B.BIT_XOR,
        B.SHL,
        B.SHR,
    ]
    float_ops = [B.ADD, B.SUB, B.MUL, B.DIV, B.FLOORDIV, B.MOD, B.POW, B.MIN, B.MAX]
    bool_ops = [B.AND, B.OR, B.BIT_AND, B.BIT_OR, B.BIT_XOR, B.MIN, B.MAX]
    for op in int_ops:
        out(bin_(op, xi, yi))
    for op in float_ops:
        out(bin_(op, xf, yf))
    for op in bool_ops:
        out(bin_(op, xb, yb))
    for c in (const(-3), const(0), const(1), const(-1), const(4), const(7), const(10)):
        for op in (B.FLOORDIV, B.MOD, B.POW):
            out(bin_(op, xi, c))
    for c in (const(2.0), const(0.5), const(1.0), const(0.0), const(-3.0)):
        out(bin_(B.POW, xf, c))
    out(ir.Unary(I32, U.NEG, xi))
    out(ir.Unary(I32, U.INVERT, xi))
    out(ir.Unary(F32, U.NEG, xf))
    out(ir.Unary(BOOL, U.NOT, xb))
    for op in C:
        out(cmp(op, xi, yi))
        out(cmp(op, xf, yf))
        out(cmp(op, xb, yb))
    for src in (xi, xf, xb):
        for t in (I32, F32, BOOL):
            out(cast(t, src))
    out(ir.Select(F32, xb, xf, yf))
    out(ir.Select(I32, cmp(C.LT, xi, yi), xi, yi))
    out(ir.Select(BOOL, xb, yb, xb))
    return kernel(
        "ops",
        [
            P(nm, t, r=True)
            for nm, t in [("xi", LI), ("yi", LI), ("xf", LF), ("yf", LF), ("xb", LB), ("yb", LB)]
        ]
        + [P("oi", LI, w=True), P("of", LF, w=True), P("ob", LB, w=True)],
        body,
    )


ZOO = {
    k.name: k
    for k in [SAXPY, FILL, HORNER, INTMIX, BOOLOPS, COLLATZ, CLAMP, STENCIL, BLOCKS, MANY, CONTROL]
    + [intrinsics_kernel(), ops_kernel()]
}
