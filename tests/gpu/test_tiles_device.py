"""Tile kernels executed on a device with matrix units (the H200), every form against numpy.

Skips where `cthreads.gpu.matrix_shapes()` is empty (lavapipe, CI): there the emulator tests
(tests/testing/test_emulate_tiles.py) and the compile tests (tests/compiler/test_tiles.py) cover
the same forms. Inputs are small integers and halves, so every sum is exact in float32 and any
order of accumulation on the matrix units gives numpy's result exactly.

On the H200 run it with CTHREADS_VALIDATION=0: Khronos' validation layer 1.3.239 predates
VK_KHR_cooperative_matrix, so while it is active cthreads neither queries nor enables the
extension (native/physdev.c), matrix_shapes() is empty and this file skips.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "language"))
import tile_kernels as TK  # noqa: E402

import cthreads.gpu as cg  # noqa: E402


def _shapes():
    if not cg.available():
        return []
    return cg.matrix_shapes()


pytestmark = pytest.mark.skipif(
    not _shapes(), reason="no matrix units here (matrix_shapes() is empty): the H200 runs this"
)


def _run(form) -> None:
    kernel, make, ref, outputs, grid = form
    args = make(np.random.default_rng(11))
    cg.gpu(kernel, *args, grid=grid).join()
    for i, want in zip(outputs, ref(args)):
        np.testing.assert_array_equal(args[i], want)


@pytest.mark.parametrize("form", sorted(TK.FORMS))
def test_every_tile_form_runs_on_the_matrix_units_like_numpy(form):
    if form.startswith("bf16") and not any(s.a == "bf16" for s in _shapes()):
        pytest.skip("this device lists no bf16 matrix shapes")
    _run(TK.FORMS[form])


def test_every_matrix_shape_the_device_lists_runs_like_numpy():
    """One multiply per listed (M, N, K, A, B, C) whose types the language has, all executed."""
    forms = TK.shape_forms(tuple(tuple(s) for s in _shapes()))
    assert forms, "the device lists no shape of the language's types"
    failed = []
    for name, form in sorted(forms.items()):
        try:
            _run(form)
        except AssertionError as e:
            failed.append(f"{name}: {str(e)[:200]}")
    assert not failed, failed


def test_the_device_lists_the_shapes_the_h200_profile_records():
    shapes = {tuple(s) for s in _shapes()}
    assert (16, 16, 16, "f16", "f16", "f32", "f32") in shapes
    if "H200" in cg.device_name():
        assert shapes == set(TK._h200_shapes()), sorted(shapes ^ set(TK._h200_shapes()))


@pytest.mark.parametrize("off,s", TK.EDGE_CASES)
def test_tiles_that_do_not_fit_read_zero_and_write_nothing_like_the_emulator(off, s):
    # codegen leaves out the guard tests that cannot fail (constant strides, offsets the range
    # analysis bounds): each form of the guard against the language's rule, at its edges
    from cthreads.testing import emulate

    want = TK.edge_inputs()
    emulate(TK.tile_edges, *want, off, s, grid=TK.WG, oob="device")
    got = TK.edge_inputs()
    cg.gpu(TK.tile_edges, *got, off, s, grid=TK.WG).join()
    assert got[1] == want[1] and got[2] == want[2]
