"""2-D/3-D launches (issue 8 item 5): `gpu(..., grid=(nx, ny[, nz]))`, the .y/.z index builtins,
`x.shape[k]` of multi-dimensional numpy arrays, on the device (lavapipe in CI) against numpy and
against the emulator; errors for bad grids and shapes."""

from __future__ import annotations

import numpy as np
import pytest

from cthreads.gpu import (
    BlockDim,
    BlockIdx,
    GlobalIdx,
    Gpu,
    GpuArena,
    GpuArgumentTypeError,
    GpuCompileError,
    GpuInvalidArgument,
    GridDim,
    ThreadIdx,
    atomic_add,
    available,
    gpu,
)
from cthreads.testing.emulate import emulate

pytestmark = pytest.mark.skipif(not available(), reason="no Vulkan device")

AXIS = 1  # a module constant as a shape axis


@Gpu
def laplacian(a: list[float], out: list[float]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    h: int = a.shape[0]
    w: int = a.shape[AXIS]
    if 0 < x < w - 1 and 0 < y < h - 1:
        i: int = y * w + x
        out[i] = a[i - 1] + a[i + 1] + a[i - w] + a[i + w] - 4.0 * a[i]


def _laplacian_ref(a: np.ndarray) -> np.ndarray:
    ref = np.zeros_like(a)
    c = a[1:-1, 1:-1]
    ref[1:-1, 1:-1] = ((a[1:-1, :-2] + a[1:-1, 2:]) + a[:-2, 1:-1]) + a[2:, 1:-1] - 4.0 * c
    return ref


@Gpu(workgroup_size=(8, 4))
def indices(w: int, h: int, out: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    if x < w and y < h:
        i: int = (y * w + x) * 8
        out[i] = x
        out[i + 1] = y
        out[i + 2] = ThreadIdx.x
        out[i + 3] = ThreadIdx.y
        out[i + 4] = BlockIdx.x
        out[i + 5] = BlockIdx.y
        out[i + 6] = GridDim.y
        out[i + 7] = BlockDim.y


@Gpu
def fill3(v: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    z: int = GlobalIdx.z
    d0: int = v.shape[0]
    d1: int = v.shape[1]
    d2: int = v.shape[2]
    if x < d2 and y < d1 and z < d0:
        v[(z * d1 + y) * d2 + x] = x + 100 * y + 10000 * z


@Gpu(workgroup_size=(2, 2, 2))
def fill3_blocks(v: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    z: int = GlobalIdx.z
    if x < v.shape[2] and y < v.shape[1] and z < v.shape[0]:
        v[(z * v.shape[1] + y) * v.shape[2] + x] = BlockIdx.z * 100 + ThreadIdx.z * 10 + GridDim.z


@Gpu
def count_cells(hits: list[int]) -> None:
    # only .x is read: a 2-D launch still runs the body once per (x, y) cell
    i: int = GlobalIdx.x
    if i < len(hits):
        atomic_add(hits, i, 1)


@Gpu
def shapes_of(a: list[float], b: list[int], out: list[int]) -> None:
    if GlobalIdx.x == 0:
        out[0] = a.shape[0]
        out[1] = a.shape[1]
        out[2] = a.shape[2]
        out[3] = len(a)
        out[4] = b.shape[0]


@Gpu(workgroup_size=(1, 2))
def wide_rows(w: int, out: list[int]) -> None:
    x: int = GlobalIdx.x
    y: int = GlobalIdx.y
    if x < w:
        out[y * w + x] = BlockIdx.x * 4 + ThreadIdx.y * 2 + GridDim.y


@Gpu(workgroup_size=1)
def tall(out: list[int]) -> None:
    y: int = GlobalIdx.y
    if GlobalIdx.x == 0 and y < len(out):
        out[y] = y + 1


def test_laplacian_on_2d_array():
    a = np.random.default_rng(0).standard_normal((123, 77)).astype(np.float32)
    out = np.zeros_like(a)
    gpu(laplacian, a, out, grid=(77, 123)).join()
    np.testing.assert_allclose(out, _laplacian_ref(a), atol=1e-5)
    emulated = np.zeros_like(a)
    emulate(laplacian, a, emulated, grid=(77, 123))
    np.testing.assert_allclose(emulated, out, atol=1e-5)


def test_laplacian_with_resident_arrays():
    a = np.random.default_rng(1).standard_normal((40, 33)).astype(np.float32)
    out = np.zeros_like(a)
    with GpuArena() as arena:
        arena.bind(a=a, out=out)
        for _ in range(2):
            gpu(laplacian, a, out, grid=(33, 40))
        arena.sync()
    np.testing.assert_allclose(out, _laplacian_ref(a), atol=1e-5)


def test_index_builtins_relations_in_2d():
    w, h = 21, 13
    out = np.full((h, w, 8), -1, np.int32)
    gpu(indices, w, h, out, grid=(w, h)).join()
    yy, xx = np.mgrid[0:h, 0:w]
    assert (out[..., 0] == xx).all() and (out[..., 1] == yy).all()
    assert (out[..., 2] == xx % 8).all() and (out[..., 3] == yy % 4).all()
    assert (out[..., 4] == xx // 8).all() and (out[..., 5] == yy // 4).all()
    assert (out[..., 0] == out[..., 4] * 8 + out[..., 2]).all()
    assert (out[..., 1] == out[..., 5] * out[..., 7] + out[..., 3]).all()
    assert (out[..., 6] == -(-h // 4)).all() and (out[..., 7] == 4).all()
    emulated = np.full_like(out, -1)
    emulate(indices, w, h, emulated, grid=(w, h))
    assert (emulated == out).all()


def test_3d_fill_free_shape_and_declared_shape():
    v = np.zeros((5, 6, 7), np.int32)
    gpu(fill3, v, grid=(7, 6, 5)).join()
    z, y, x = np.mgrid[0:5, 0:6, 0:7]
    assert (v == x + 100 * y + 10000 * z).all()
    e = np.zeros_like(v)
    emulate(fill3, e, grid=(7, 6, 5))
    assert (e == v).all()
    b = np.zeros((5, 6, 7), np.int32)
    gpu(fill3_blocks, b, grid=(7, 6, 5)).join()
    assert (b == (z // 2) * 100 + (z % 2) * 10 + 3).all()


def test_every_cell_runs_once_even_if_the_kernel_reads_only_x():
    hits = np.zeros(1000, np.int32)
    gpu(count_cells, hits, grid=(1000, 3, 2)).join()
    assert (hits == 6).all()
    gpu(count_cells, hits).join()  # no grid: 1-D as before
    assert (hits == 7).all()
    emulate(count_cells, hits, grid=(1000, 2))
    assert (hits == 9).all()


def test_shapes_reach_the_kernel():
    a = np.zeros((3, 4, 5, 2), np.float32)  # 4-D: shape[0..2] are read, len is the total
    b = np.zeros(9, np.int32)
    out = np.zeros(5, np.int32)
    gpu(shapes_of, a, b, out).join()
    assert list(out) == [3, 4, 5, 120, 9]
    e = np.zeros(5, np.int32)
    emulate(shapes_of, a, b, e)
    assert list(e) == [3, 4, 5, 120, 9]
    with pytest.raises(GpuInvalidArgument, match=r"a\.shape\[2\]") as info:
        gpu(shapes_of, np.zeros((3, 4), np.float32), b, out)
    assert info.value.param == "a"
    with pytest.raises(GpuInvalidArgument, match="1 dimension"):
        gpu(shapes_of, [0.0] * 4, b, out)  # Python lists are 1-D
    with pytest.raises(ValueError, match=r"a\.shape\[2\]"):
        emulate(shapes_of, [0.0] * 4, b, out)


def test_x_split_across_dispatches_in_2d():
    w, h = 65537, 3  # more workgroups of 1 along x than lavapipe's 65535 per dispatch
    out = np.zeros((h, w), np.int32)
    gpu(wide_rows, w, out, grid=(w, h)).join()
    yy, xx = np.mgrid[0:h, 0:w]
    assert (out == xx * 4 + (yy % 2) * 2 + 2).all()


def test_y_beyond_the_group_limit():
    out = np.zeros(70000, np.int32)
    gpu(tall, out, grid=(1, 70000)).join()  # free shape: grid-stride loop along y
    assert (out == np.arange(1, 70001)).all()
    with pytest.raises(GpuInvalidArgument, match="grid") as info:
        gpu(wide_rows, 1, out, grid=(1, 2 * 70000))  # declared (1, 2): 70000 groups along y
    assert info.value.param == "grid"


def test_empty_grid_runs_nothing():
    hits = np.zeros(4, np.int32)
    gpu(count_cells, hits, grid=(4, 0)).join()
    gpu(count_cells, hits, grid=0).join()
    assert (hits == 0).all()
    gpu(count_cells, hits, grid=4).join()  # an int: the problem size along x
    assert (hits == 1).all()


@pytest.mark.parametrize(
    "grid, exc",
    [
        ("8", GpuArgumentTypeError),
        ((1.5, 2), GpuArgumentTypeError),
        ((True, 2), GpuArgumentTypeError),
        (None.__class__, GpuArgumentTypeError),
        ((), GpuInvalidArgument),
        ((1, 2, 3, 4), GpuInvalidArgument),
        ((4, -1), GpuInvalidArgument),
    ],
)
def test_bad_grids(grid, exc):
    hits = np.zeros(4, np.int32)
    with pytest.raises(exc, match="grid") as info:
        gpu(count_cells, hits, grid=grid)
    assert info.value.param == "grid"
    assert (hits == 0).all()


def test_bad_grid_is_a_type_error_for_wrong_types():
    with pytest.raises(TypeError):
        gpu(count_cells, np.zeros(4, np.int32), grid=[1, "2"])


def test_shape_compile_errors(tmp_path):
    import importlib.util

    path = tmp_path / "bad_shapes.py"
    path.write_text(
        "from cthreads.gpu import Gpu, GlobalIdx, shared\n"
        "\n"
        "@Gpu\n"
        "def axis3(a: list[float], out: list[int]) -> None:\n"
        "    out[0] = a.shape[3]\n"
        "\n"
        "@Gpu\n"
        "def runtime_axis(k: int, a: list[float], out: list[int]) -> None:\n"
        "    out[0] = a.shape[k]\n"
        "\n"
        "@Gpu\n"
        "def bare(a: list[float], out: list[int]) -> None:\n"
        "    s = a.shape\n"
        "\n"
        "@Gpu\n"
        "def negative(a: list[float], out: list[int]) -> None:\n"
        "    out[0] = a.shape[-1]\n"
        "\n"
        "@Gpu\n"
        "def of_scalar(n: int, out: list[int]) -> None:\n"
        "    out[0] = n.shape[0]\n"
        "\n"
        "@Gpu(workgroup_size=4)\n"
        "def of_shared(out: list[int]) -> None:\n"
        "    t = shared(int, 4)\n"
        "    out[0] = t.shape[0]\n"
    )
    spec = importlib.util.spec_from_file_location("bad_shapes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    expected = {
        "axis3": "out of range",
        "runtime_axis": "known when the kernel is compiled",
        "bare": "a.shape[0]",
        "negative": "out of range",
        "of_scalar": "shape",
        "of_shared": "no shape",
    }
    for name, text in expected.items():
        with pytest.raises(GpuCompileError) as info:
            getattr(mod, name).spirv()
        assert text in str(info.value), (name, str(info.value))
