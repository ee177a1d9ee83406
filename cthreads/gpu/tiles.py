"""Matrix tiles: `a = tile_load(xs, off, ld, 16, 16, use="a")`, `acc = tile_mma(a, b, acc)`, ...

A tile is a small matrix that the invocations of one subgroup hold together, spread over their
registers in a layout only the driver knows (a cooperative matrix, SPV_KHR_cooperative_matrix):
the hardware's matrix units multiply them. Three uses, fixed when the tile is made:

- `"a"`: the left operand, M x K elements of f16 / bf16 / i8 / u8;
- `"b"`: the right operand, K x N elements of the same type;
- `"acc"`: an accumulator, M x N elements of f32 / f16 (float operands) or i32 / u32 (ints).

`tile_mma(a, b, c)` is `a @ b + c`, a new accumulator. `t * s` scales an accumulator by a scalar,
`t + u` / `t - u` add two of one type. Which shapes and types exist is the device's choice
(`cthreads.gpu.matrix_shapes()`; the H200 has 16x16x16, 16x8x16 and 16x8x8 for f16, 16x16x16 for
bf16 -> f32 and 16x{16,8}x32 for i8/u8); a kernel asking for one the device lacks is a compile
error naming the line.

bfloat16: numpy has no bf16, so bf16 data is held as its bit patterns in uint16 arrays (`list[u16]`
parameters, u16 shared arrays); an "a" or "b" tile loaded from one holds bf16 (`to_bf16(x)` makes
the bits from floats, rounding to nearest even; `from_bf16(bits)` gives float32 back), and
`tile_fill(bf16, ...)` rounds its value the same way.

Packed loads: `tile_load(ws, off, ld, 16, 16, use="a", elem=f16)` reads the tile's elements
packed little-endian in the u32 / u64 words of `ws`; offset, stride and the fit rule count words.

Every invocation of the subgroup must reach each tile operation together with the same offset,
stride and scalar (uniform control flow), as with `__sync_threads()` in a workgroup.

Memory: element (r, c) of a row-major tile is `xs[offset + r * stride + c]`, of a column-major one
(`col_major=True`) `xs[offset + c * stride + r]`. The whole tile must lie inside `xs` and
`offset` and `stride` must be multiples of `tile_alignment(...)` elements (Vulkan requires
the rows, or columns, of a tile in memory to start at 16-byte boundaries, or at the row's own
size if smaller); otherwise a load gives a tile of zeros and a store writes nothing, the rule
out-of-range list accesses follow (SPEC §5.6).

On the host (a kernel called as plain Python, or `cthreads.testing.emulate`) a tile is a `Tile`
holding all its elements, and the arithmetic is exact and documented, the same everywhere:
products of f16 / bf16 (or i8/u8) elements are exact, they are added in order k = 0 .. K-1 onto the
accumulator in float32 with one rounding per addition (ints: exactly, wrapped to 32 bits), and an
f16 accumulator is rounded to f16 once at the end of each `tile_mma`. Matrix units may add in
another order or with more precision, so a device result can differ from the host's by float32
rounding of the sums (tests compare with a tolerance proportional to K).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # numpy loads where a host tile is made: `import cthreads.gpu` stays light
    import numpy as np


class MatrixShape(NamedTuple):
    """One tile multiply-add the device runs: A (m x k of `a`) times B (k x n of `b`) plus C
    (m x n of `c`) gives an m x n `result` (`cthreads.gpu.matrix_shapes()`)."""

    m: int
    n: int
    k: int
    a: str
    b: str
    c: str
    result: str


USES = ("a", "b", "acc")
OPERAND_TYPES = ("f16", "bf16", "i8", "u8")  # elements of "a" / "b" tiles
ACCUMULATOR_TYPES = ("f32", "f16", "i32", "u32")
_DTYPES = {  # numpy dtype names
    "f16": "float16",
    "f32": "float32",
    "i8": "int8",
    "u8": "uint8",
    "i32": "int32",
    "u32": "uint32",
    "bf16": "float32",  # a host bf16 tile holds the (exact) float32 values of its elements
}
_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "u8": 1, "i32": 4, "u32": 4}
_STORED = {"bf16": "uint16"}  # how an element lies in memory, where not its _DTYPES
_WORDS = {"u16": "uint16", "u32": "uint32", "u64": "uint64"}  # arrays packed tiles read


class _BF16:
    """`bf16`, the element type of bfloat16 tiles (`tile_fill(bf16, 16, 16, use="a")`); not a
    scalar type of the language: bf16 data lives in u16 lists as bit patterns (`to_bf16`)."""

    __gpu_builtin__ = "tile-type"
    name = "bf16"

    def __repr__(self) -> str:
        return "bf16"

    def __reduce__(self) -> str:
        return "bf16"


bf16 = _BF16()


def to_bf16(x: Any) -> np.ndarray:
    """The bfloat16 bit patterns (uint16, same shape) of `x` rounded from float32 to nearest
    even; NaN stays NaN (quiet), infinities and overflow give infinities."""
    import numpy as np

    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, rounded).astype(np.uint16)


def from_bf16(bits: Any) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (uint16 array or ints): exact."""
    import numpy as np

    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def _elem_name(elem: Any) -> str:
    if elem is float:
        return "f32"
    if elem is int:
        return "i32"
    return getattr(elem, "name", str(elem))


def tile_alignment(elem: Any, rows: int, cols: int, col_major: bool = False) -> int:
    """Elements that `offset` and `stride` of a tile load or store must be multiples of: the
    lesser of 16 bytes and the size of one row (row-major) or column (`col_major`), in elements."""
    name = _elem_name(elem)
    size = _BYTES[name]
    line = (rows if col_major else cols) * size
    return max(1, min(16, line) // size)


def tile_fits(
    length: int, offset: int, stride: int, rows: int, cols: int, col_major: bool, align: int
) -> bool:
    """Whether a rows x cols tile at `offset` with `stride` lies inside `length` elements, with
    `offset` and `stride` multiples of `align` (the device rule; codegen_tiles.py mirrors it)."""
    major, inner = (cols, rows) if col_major else (rows, cols)
    if offset < 0 or stride < 0 or offset % align or stride % align:
        return False
    if length - offset < inner:
        return False
    return major == 1 or (length - offset - inner) // (major - 1) >= stride


class Tile:
    """The host form of a tile: `use`, `elem` (a type name), and all `rows x cols` elements in a
    numpy array of the element type."""

    __slots__ = ("data", "elem", "use")

    def __init__(self, use: str, elem: str, data: np.ndarray) -> None:
        self.use, self.elem, self.data = use, elem, data

    @property
    def rows(self) -> int:
        return self.data.shape[0]

    @property
    def cols(self) -> int:
        return self.data.shape[1]

    def __repr__(self) -> str:
        return f"Tile({self.use!r}, {self.elem}, {self.rows}x{self.cols})"

    def __mul__(self, factor: Any) -> Tile:
        return scale(self, factor)

    __rmul__ = __mul__

    def __add__(self, other: Tile) -> Tile:
        return add(self, other, False)

    def __sub__(self, other: Tile) -> Tile:
        return add(self, other, True)


# ---------------------------------------------------------------- exact host arithmetic


def _wrap32(values: np.ndarray, elem: str) -> np.ndarray:
    import numpy as np

    v = values.astype(np.int64) & 0xFFFFFFFF
    if elem == "i32":
        v = np.where(v >= 1 << 31, v - (1 << 32), v)
    return v.astype(_DTYPES[elem])


def fill(use: str, elem: str, rows: int, cols: int, value: Any) -> Tile:
    import numpy as np

    dt = np.dtype(_DTYPES[elem]).type
    if elem == "bf16":
        v = from_bf16(to_bf16(float(value)))[()]
    elif elem in ("f16", "f32"):
        v = dt(float(value))
    else:
        bits = 8 if elem in ("i8", "u8") else 32
        raw = int(value) & ((1 << bits) - 1)
        if elem in ("i8", "i32") and raw >= 1 << (bits - 1):
            raw -= 1 << bits
        v = dt(raw)
    return Tile(use, elem, np.full((rows, cols), v, dtype=dt))


def load(
    data: Any,
    length: int,
    elem: str,
    offset: int,
    stride: int,
    rows: int,
    cols: int,
    use: str,
    col_major: bool,
    word: str | None = None,
) -> Tile | None:
    """The tile at `offset` of `data` (indexable, `length` elements); None when it does not fit
    (the caller gives zeros, or reports the access). `word` ("u32", "u64"): `data` holds the
    elements packed little-endian in words of that type, and offset, stride, length count words."""
    import numpy as np

    stored = _STORED.get(elem, _DTYPES[elem])
    per = _BYTES[elem]
    unit = np.dtype(_WORDS[word]).itemsize if word else per
    line = (rows if col_major else cols) * per
    r_w, c_w = (line // unit, cols) if col_major else (rows, line // unit)
    if line % unit or not tile_fits(
        length, offset, stride, r_w, c_w, col_major, max(1, min(16, line) // unit)
    ):
        return None
    out = np.empty((r_w, c_w), dtype=_WORDS[word] if word else stored)
    for r in range(r_w):
        for c in range(c_w):
            out[r, c] = data[offset + (c * stride + r if col_major else r * stride + c)]
    if word:  # the words' bytes, in memory order along each row (column), as elements
        out = out.T.copy().view(stored).T if col_major else out.view(stored)
    return Tile(use, elem, from_bf16(out) if elem == "bf16" else out)


def store(
    data: Any, length: int, offset: int, stride: int, tile: Tile, col_major: bool, convert=None
) -> bool:
    """Write `tile` into `data`; False (nothing written) when it does not fit. `convert` maps
    a numpy element to the list's representation (default: the Python number)."""
    rows, cols = tile.rows, tile.cols
    align = tile_alignment(tile.elem, rows, cols, col_major)
    if not tile_fits(length, offset, stride, rows, cols, col_major, align):
        return False
    conv = convert or (lambda v: v.item())
    values = to_bf16(tile.data) if tile.elem == "bf16" else tile.data  # bf16: the bit patterns
    for r in range(rows):
        for c in range(cols):
            data[offset + (c * stride + r if col_major else r * stride + c)] = conv(values[r, c])
    return True


def mma(a: Tile, b: Tile, c: Tile) -> Tile:
    """a @ b + c with the documented rounding (module docstring)."""
    import numpy as np

    if c.elem in ("i32", "u32"):
        prod = a.data.astype(np.int64) @ b.data.astype(np.int64)
        return Tile("acc", c.elem, _wrap32(prod + c.data.astype(np.int64), c.elem))
    af, bf = a.data.astype(np.float32), b.data.astype(np.float32)
    acc = c.data.astype(np.float32)
    for k in range(a.cols):  # one float32 rounding per addition, k in order
        acc = acc + np.outer(af[:, k], bf[k, :]).astype(np.float32)
    return Tile("acc", c.elem, acc.astype(_DTYPES[c.elem]))


def scale(t: Tile, factor: Any) -> Tile:
    import numpy as np

    if t.elem in ("i32", "u32"):
        return Tile(t.use, t.elem, _wrap32(t.data.astype(np.int64) * int(factor), t.elem))
    f = np.dtype(_DTYPES[t.elem]).type(float(factor))
    # f16 * f16 and f32 * f32 are exact in float64: one rounding to the element type
    return Tile(t.use, t.elem, (t.data.astype(np.float64) * float(f)).astype(_DTYPES[t.elem]))


def add(x: Tile, y: Tile, subtract: bool) -> Tile:
    import numpy as np

    if x.elem in ("i32", "u32"):
        s = x.data.astype(np.int64) + (-1 if subtract else 1) * y.data.astype(np.int64)
        return Tile(x.use, x.elem, _wrap32(s, x.elem))
    s = x.data.astype(np.float64) + (-1.0 if subtract else 1.0) * y.data.astype(np.float64)
    return Tile(x.use, x.elem, s.astype(_DTYPES[x.elem]))  # exact in float64, one rounding


# ------------------------------------------------------------------------- the language


def _host_elem(xs: Any, use: str) -> str:
    import numpy as np

    dtype = getattr(xs, "dtype", None)
    if dtype == np.uint16 and use != "acc":
        return "bf16"  # bf16 bit patterns (no 16-bit integer tiles exist)
    if dtype is not None:
        for name, dt in _DTYPES.items():
            if dtype == dt:
                return name
    sample = next(iter(xs), 0.0) if len(xs) else 0.0
    if isinstance(sample, float):
        return "f32" if use == "acc" else "f16"
    return "i32" if use == "acc" else "i8"


def tile_fill(elem: Any, rows: int, cols: int, value: Any = 0, use: str = "acc") -> Tile:
    """A `rows x cols` tile of `elem` (f16, bf16, f32, i8, u8, i32, u32), every element `value`;
    `use` "acc" (default), "a" or "b"."""
    return fill(use, _elem_name(elem), rows, cols, value)


def tile_load(
    xs: Any,
    offset: int,
    stride: int,
    rows: int,
    cols: int,
    use: str = "a",
    col_major: bool = False,
    elem: Any = None,
) -> Tile:
    """The `rows x cols` tile whose element (r, c) is `xs[offset + r * stride + c]`
    (`col_major`: `xs[offset + c * stride + r]`), for `use` "a", "b" or "acc"; the element
    type is the list's, or `elem` packed in the list's u32 / u64 words (offset and stride
    count words). Zeros when the tile does not fit in `xs` or is misaligned (module doc)."""
    import numpy as np

    own = _host_elem(xs, use)
    word = None
    if elem is not None and _elem_name(elem) != own:
        word = {np.dtype(v): k for k, v in _WORDS.items()}.get(getattr(xs, "dtype", None), "u32")
        own = _elem_name(elem)
    t = load(xs, len(xs), own, offset, stride, rows, cols, use, col_major, word)
    return t if t is not None else fill(use, own, rows, cols, 0)


def tile_store(xs: Any, offset: int, stride: int, tile: Tile, col_major: bool = False) -> None:
    """Write `tile` into `xs` at `offset` with row `stride` (the layout of `tile_load`); nothing
    when it does not fit or is misaligned."""
    store(xs, len(xs), offset, stride, tile, col_major)


def tile_mma(a: Tile, b: Tile, c: Tile) -> Tile:
    """`a @ b + c`: a (M x K, use "a") times b (K x N, use "b") plus accumulator c (M x N)."""
    return mma(a, b, c)


TILE_FUNCTIONS = {f.__name__: f for f in (tile_fill, tile_load, tile_store, tile_mma)}
for _name, _f in TILE_FUNCTIONS.items():
    _f.__gpu_builtin__ = _name  # type: ignore[attr-defined]

__all__ = [
    "MatrixShape",
    "Tile",
    "bf16",
    "from_bf16",
    "to_bf16",
    "tile_alignment",
    "tile_fill",
    "tile_load",
    "tile_mma",
    "tile_store",
]
