"""Feature sections of generated kernels (kernelgen.py): subgroup operations, 2-D and 3-D grids
and the explicit types f64/i64/u32. Each is written into a fraction of kernels; docs/reliability.md
("Differential fuzzing") states what each covers and the comparison rule for its outputs.
"""

from __future__ import annotations

import random

import numpy as np

from .kernelgen_avoid import constant as _constant
from .kernelgen_avoid import not_zero_constant as _not_zero_literal

# extra parameters per feature (appended to kernelgen.SIGNATURE)
SUBGROUP_PARAMS = "out_s: list[float], out_m: list[float]"
TYPED_PARAMS = (
    "ds: list[f64], ls: list[i64], us: list[u32], "
    "out_d: list[f64], out_l: list[i64], out_u: list[u32]"
)
_SUMS = ("add", "inclusive_add", "exclusive_add")
_INT_OPS = ("add", "min", "max", "inclusive_add", "exclusive_add")
# the subgroup_section kinds that apply one of `ops` to one value: kind -> (ops, the value's
# type, the result's type)
_ONE_ARGUMENT = {
    0: (_INT_OPS, "i", "i"),
    1: (("min", "max"), "f", "f"),
    4: (("ballot",), "b", "i"),
    6: (("all", "any"), "b", "b"),
}


def subgroup_section(w, draw, st, avoid=frozenset()) -> dict:
    """Subgroup operations at the top level of the body (uniform control flow: every invocation
    of the workgroup reaches them), before any early return. Float sums go to out_s with the sum
    of magnitudes in out_m (the tolerance rule needs it); other results feed the locals."""
    w.ints += ["ln", "sz", "sg"]
    decls = [
        "    ln: int = subgroup_lane()",
        "    sz: int = subgroup_size()",
        "    sg: int = subgroup_id()",
    ]
    op = w.pick(list(_SUMS))
    w.emit(1, f"sv: float = {w.expr('f', 2)}")
    w.emit(1, f"ss = subgroup_{op}(sv)")
    w.emit(1, f"sm = subgroup_{op}(abs(sv))")
    w.emit(1, "out_s[i] = ss")
    w.emit(1, "out_m[i] = sm")
    for j in range(draw(st.integers(1, 4))):
        t = f"t{j}"
        kind = draw(st.integers(0, 8))
        ty = w.pick(["i", "f"])
        if kind in _ONE_ARGUMENT:
            ops, arg, ty = _ONE_ARGUMENT[kind]
            name = ops[0] if len(ops) == 1 else w.pick(list(ops))  # (one choice: nothing drawn)
            w.emit(1, f"{t} = subgroup_{name}({w.expr(arg, 2)})")
        elif kind == 2:
            lane = w.pick(["0", "1", "3", "7", "(k & 15)", "sz - 1", "(n % 9)"])
            w.emit(1, f"{t} = subgroup_broadcast({w.expr(ty, 2)}, {lane})")
        elif kind == 3:
            if "bcastfirstf" in avoid:  # lavapipe's LLVM backend aborts on float broadcast_first
                ty = "i"
            w.emit(1, f"{t} = subgroup_broadcast_first({w.expr(ty, 2)})")
        elif kind == 5:
            w.emit(1, f"{t} = subgroup_elect()")
            ty = "b"
        elif kind == 7:
            lane = w.pick(["sz - 1 - ln", "ln ^ 1", "(ln + 1) % sz", w.expr("i", 1)])
            w.emit(1, f"{t} = subgroup_shuffle({w.expr(ty, 2)}, {lane})")
        else:
            mask = w.pick(["1", "2", "4", "7", "(k & 7)", w.expr("i", 1)])
            w.emit(1, f"{t} = subgroup_shuffle_xor({w.expr(ty, 2)}, {mask})")
        if ty == "i":
            w.emit(1, w.pick([f"c1 = c1 + {t}", f"c0 = c0 ^ {t}"]))
        elif ty == "f":
            w.emit(1, w.pick([f"f1 = {t}", f"f0 = f0 - {t}"]))
        else:
            w.emit(1, f"b0 = b0 != {t}")
    return {"decls": decls, "rules": {"out_s": ("sum", "out_m"), "out_m": ("sum", "out_m")}}


def _f64_math(w, draw, st, avoid) -> str:
    """One statement with an f64 math function the compiler has (intrinsics: F64_INTRINSICS),
    each exact on every conformant device as generated: `fabs`; `fma` with a product that is
    exact in f64 (a power-of-two factor, or two float32 values: 24 + 24 bits), so a device that
    splits it into OpFMul + OpFAdd rounds once too; `floor/ceil/trunc` guarded like int(x);
    `isnan/isinf/isfinite`."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return w.pick(["d0 = math.fabs(d0) - d1", "d1 = math.fabs(d1 - d0)"])
    if kind == 1:
        return f"d0 = math.fma(d0, {w.pick(['0.5', '2.0', '-0.25', '1024.0'])}, d1)"
    if kind == 2:
        a, b = w.expr("f", 1), w.expr("f", 1)
        if "zeromul" in avoid:  # lavapipe folds a literal zero factor (mismatch #8)
            a, b = _not_zero_literal(a), _not_zero_literal(b)
        return f"d0 = math.fma(f64({a}), f64({b}), {w.pick(['d0', 'd1'])})"
    if kind == 3:
        fn = w.pick(["floor", "ceil", "trunc"])
        d = w.pick(["d0", "d1"])
        return f"c0 = c0 ^ (math.{fn}({d}) if abs({d}) < 1e6 else 0)"
    return f"b0 = b0 != math.{w.pick(['isnan', 'isinf', 'isfinite'])}({w.pick(['d0', 'd1'])})"


def typed_section(w, draw, st, avoid=frozenset()) -> dict:
    """f64 / i64 / u32 locals, casts and list parameters, at the top level; results written to
    out_d / out_l / out_u and mixed back into the int/float locals through explicit casts."""
    idx = lambda: w.pick(  # noqa: E731 - a thunk: each call draws a new index
        ["i", "i", "n - 1 - i", "i + 1", f"({w.expr('i', 1)}) % len(ds)"]
    )
    de, ie = w.expr("f", 2), w.expr("i", 1)
    if "zeromul" in avoid:  # an f64 local the compiler folds to 0.0 reaches `d0 * d1` (#28)
        de, ie = _not_zero_literal(de), _not_zero_literal(ie)
    w.emit(1, f"d0: f64 = f64({de})")
    w.emit(1, f"d1: f64 = {w.pick([f'ds[{idx()}]', f'f64({ie})', '0.1', '1e-9'])}")
    w.emit(1, f"l0: i64 = i64({w.expr('i', 1)}) * i64({w.expr('i', 1)})")
    he = w.expr("i", 1)
    he = f"({he}) & 65535" if _constant(he) else he  # a negative constant is a compile error
    w.emit(1, f"h: u32 = u32({he}) ^ us[{idx()}]")
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.integers(0, 3))
        if kind == 3:
            w.emit(1, _f64_math(w, draw, st, avoid))
        elif kind == 0:
            w.emit(
                1,
                w.pick(
                    [
                        f"d0 = d0 {w.pick(['+', '-', '*'])} d1",
                        f"d0 = d0 * ds[{idx()}] + f64(c0)",
                        "d0 = d0 * 0.1",
                        f"d0 = {w.pick(['min', 'max'])}(d0, d1)",
                        "d0 = abs(d0) - d1",
                        "d0 += f64(l0)",
                        f"d1 = f64({w.expr('f', 1)}) * 1e-9 + d1",
                    ]
                ),
            )
        elif kind == 1:
            w.emit(
                1,
                w.pick(
                    [
                        f"l0 = l0 + ls[{idx()}]",
                        "l0 = l0 * i64(c1)",
                        f"l0 = l0 ^ ls[{idx()}]",
                        f"l0 = l0 >> {draw(st.integers(0, 63))}",
                        f"l0 = l0 << {draw(st.integers(0, 40))}",
                        f"l0 = l0 {w.pick(['//', '%'])} (ls[{idx()}] | 1)",
                        "l0 = -l0",
                        "l0 = l0 * i64(65537) * i64(c0)",
                    ]
                ),
            )
        else:
            w.emit(
                1,
                w.pick(
                    [
                        "h ^= h >> 16",
                        "h *= u32(0x7FEB352D)",
                        "h *= u32(0x846CA68B)",
                        f"h ^= h >> {draw(st.integers(1, 31))}",
                        "h += u32(l0)",
                        f"h = h + us[{idx()}]",
                        "h = h - u32(c0)",
                        f"h = (h << {draw(st.integers(1, 31))}) | (h >> 7)",
                    ]
                ),
            )
    final = w.pick(["exact", "exact", "sqrt"])
    w.emit(1, "out_d[i] = math.sqrt(abs(d0))" if final == "sqrt" else "out_d[i] = d0")
    w.emit(1, "out_l[i] = l0")
    w.emit(1, "out_u[i] = h")
    w.emit(1, w.pick(["c1 = c1 + int(h >> 20)", "c0 = c0 ^ int(l0)", "c1 = int(h & u32(1023))"]))
    w.emit(1, w.pick(["f1 = float(d0)", "f0 = f0 + float(d1)", "b0 = b0 != (d0 < d1)"]))
    return {"rules": {"out_d": ("f64", final)}}


def typed_values(rng: random.Random, n: int, length) -> tuple:
    ds = np.array(
        [
            rng.choice(
                [rng.randint(-40, 40) / 4, rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 1e-5]
            )
            for _ in range(length())
        ],
        np.float64,
    )
    ls = np.array(
        [
            rng.choice(
                [
                    rng.randint(-20, 20),
                    rng.randint(-(2**40), 2**40),
                    rng.randint(-(2**63), 2**63 - 1),
                ]
            )
            for _ in range(length())
        ],
        np.int64,
    )
    us = np.array([rng.randint(0, 2**32 - 1) for _ in range(length())], np.uint32)
    outs = (
        np.array([rng.uniform(-9, 9) for _ in range(length())], np.float64),
        np.array([rng.randint(-99, 99) for _ in range(length())], np.int64),
        np.array([rng.randint(0, 99) for _ in range(length())], np.uint32),
    )
    return (ds, ls, us) + outs


_AXES = ("x", "y", "z")


def grid_decls(dims: int) -> tuple[list[str], list[str], str]:
    """A `dims`-D grid kernel (one invocation per cell of xs, shape (ny, nx) or (nz, ny, nx)):
    its declarations (coordinates, extents from xs.shape, flat index i), the int locals they
    add, and the guard that returns outside the array."""
    axes = _AXES[:dims]
    decls = [f"    {a}: int = GlobalIdx.{a}" for a in axes]
    decls += [f"    n{a}: int = xs.shape[{dims - 1 - k}]" for k, a in enumerate(axes)]
    decls.append("    i: int = y * nx + x" if dims == 2 else "    i: int = (z * ny + y) * nx + x")
    guard = "    if " + " or ".join(f"{a} >= n{a}" for a in axes) + ":"
    return decls, list(axes) + [f"n{a}" for a in axes], guard


def grid_decorator(draw, st, dims: int) -> str:
    sizes = ["(8, 8)", "(4, 2)"] if dims == 2 else ["(4, 4, 4)", "(8, 2, 2)", "(2, 2, 1)"]
    return draw(st.sampled_from(["@Gpu"] + [f"@Gpu(workgroup_size={s})" for s in sizes]))


def grid_shape(draw, st, dims: int = 2) -> tuple[tuple, tuple]:
    """The shape of the input (ny, nx) or (nz, ny, nx) and the launch grid (nx', ny'[, nz']),
    sometimes larger than it (the guard returns there)."""
    if dims == 2:
        ny, nx = draw(st.integers(1, 12)), draw(st.integers(1, 20))
        extra = draw(st.sampled_from([(0, 0), (0, 0), (3, 1), (1, 2)]))
        return (ny, nx), (nx + extra[0], ny + extra[1])
    nz, ny, nx = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 8))
    extra = draw(st.sampled_from([(0, 0, 0), (0, 0, 0), (3, 1, 1), (1, 2, 0), (0, 0, 2)]))
    return (nz, ny, nx), (nx + extra[0], ny + extra[1], nz + extra[2])


__all__ = [
    "grid_decls",
    "grid_decorator",
    "grid_shape",
    "subgroup_section",
    "typed_section",
    "typed_values",
]
