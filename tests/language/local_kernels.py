"""Kernels with local (per-invocation) arrays, `acc = local(float, 64)`: accepted forms (GOOD,
run on the device and in the emulator) and rejected ones (BAD, a golden message each in
golden/local_errors/<name>.txt)."""

# ruff: noqa: F821, F841

from cthreads.gpu import GlobalIdx, Gpu, atomic_add, f16, f64, i64, local, shared, u8

R = 8  # a row of a register tile
BIG = 5000


@Gpu
def row_tile(n: int, x: list[float], y: list[float]) -> None:
    """Each invocation keeps one row of R values: loads, reverses, prefix-sums, stores."""
    acc = local(float, R)
    i: int = GlobalIdx.x
    if i >= n:
        return
    for j in range(R):
        acc[j] = x[i * R + j]
    for j in range(1, R):
        acc[j] += acc[j - 1]
    for j in range(R):
        y[i * R + j] = acc[R - 1 - j] * 0.5 + len(acc)


@Gpu
def fresh_per_invocation(n: int, y: list[int]) -> None:
    """Counts into a local array: every invocation starts from zeros, so each writes 1 + i % 3."""
    cnt = local(int, 4)
    flags = local(bool, 3)
    i: int = GlobalIdx.x
    if i < n:
        for j in range(i % 3 + 1):
            cnt[j % 4] += 1
            flags[j] = True
        total: int = 0
        for j in range(4):
            total += cnt[j]
        y[i] = total + (100 if flags[2] else 0)


@Gpu
def dynamic_index(n: int, k: int, y: list[float]) -> None:
    """A run-time index outside the array: reads give 0.0, writes are dropped (as for lists)."""
    a = local(float, 4)
    i: int = GlobalIdx.x
    if i < n:
        a[k] = 5.0  # dropped when k is outside 0..3
        a[i % 4] = 1.0
        y[i] = a[k] + a[i % 4]


@Gpu(workgroup_size=64)
def with_shared(n: int, x: list[float], y: list[float]) -> None:
    """Both kinds of array in one kernel: the shared one is seen by the workgroup, the local
    one only by its invocation."""
    s = shared(float, 64)
    p = local(float, 2)
    i: int = GlobalIdx.x
    t: int = i % 64
    s[t] = x[i] if i < n else 0.0
    p[0] = s[t] * 2.0
    p[1] = s[t] + 1.0
    if i < n:
        y[i] = p[0] + p[1]


GOOD = [row_tile, fresh_per_invocation, dynamic_index, with_shared]


# -------------------------------------------------------------------------- rejected


def local_index_out_of_range(n: int, y: list[float]) -> None:
    acc = local(float, R)
    acc[R] = 1.0


def local_read_out_of_range(n: int, y: list[float]) -> None:
    acc = local(float, 4)
    y[0] = acc[2 * 2]


def local_in_branch(n: int, y: list[float]) -> None:
    if n > 0:
        acc = local(float, 4)


def local_size_not_constant(n: int, y: list[float]) -> None:
    acc = local(float, n)


def local_too_big(n: int, y: list[float]) -> None:
    a = local(float, 100)
    b = local(int, BIG)


def local_atomic(n: int, y: list[int]) -> None:
    acc = local(int, 4)
    atomic_add(acc, 0, 1)


def local_as_value(n: int, y: list[float]) -> None:
    acc = local(float, 4)
    y[0] = acc


def local_reassigned(n: int, y: list[float]) -> None:
    acc = local(float, 4)
    acc = 1.0


def local_annotated(n: int, y: list[float]) -> None:
    acc: float = local(float, 4)


def local_in_expression(n: int, y: list[float]) -> None:
    y[0] = local(float, 4)[0]


def local_has_no_shape(n: int, y: list[float]) -> None:
    acc = local(float, 4)
    y[0] = acc.shape[0]


BAD = [
    local_index_out_of_range,
    local_read_out_of_range,
    local_in_branch,
    local_size_not_constant,
    local_too_big,
    local_atomic,
    local_as_value,
    local_reassigned,
    local_annotated,
    local_in_expression,
    local_has_no_shape,
]


@Gpu
def narrow_types(n: int, y: list[float]) -> None:
    """Local arrays of the narrow and 64-bit types (what `shared` takes, `local` takes)."""
    h = local(f16, 4)
    b = local(u8, 4)
    d = local(f64, 2)
    w = local(i64, 2)
    i: int = GlobalIdx.x
    if i < n:
        for j in range(4):
            h[j] = f16(i + j) * f16(0.5)
            b[j] = u8(250 + j + i)  # wraps past 255
        d[0] = f64(i) / f64(3)
        w[1] = i64(i) * i64(1000000000)
        y[i] = float(h[3]) + float(b[1]) + float(d[0]) + float(w[1] // i64(1000000000))
