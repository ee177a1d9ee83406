/* cthreads._native — launch_size: the one dispatch a C launch makes, and the grid it is given.
 *
 * Python API: none directly (launch.c sizes each launch with it; FastLauncher.sizes in
 * launch_plan.c shows tests what it makes). The rules are launch/sizing.py's, for the one
 * case the C launcher takes: a single dispatch within the device's limits; anything else
 * (0 here) goes to the general path, which sizes it or words the error.
 */
#include "launch.h"

/* The dispatch of `size` (x, y, z) logical invocations, as sizing.dispatches makes it: the
   block's sizing values (total, grid_x, total_y, total_z) and the group counts. 0 where the
   launch needs the general path (several dispatches, a limit exceeded, nothing to run). */
int
ct_plan_dispatch(const CtLauncher *self, const long long size[3], uint64_t sz[4],
                 uint32_t groups[3])
{
    uint64_t g[3], wg[3], mg[3], per = (uint64_t)self->sz.per;
    for (int a = 0; a < 3; a++) {
        wg[a] = (uint64_t)self->sz.wg[a];
        mg[a] = (uint64_t)self->sz.max_groups[a];
        if (size[a] <= 0)
            return 0; /* nothing, or (observing kernels) one workgroup: the general path */
        g[a] = ((uint64_t)size[a] + wg[a] - 1) / wg[a];
        if (g[a] * wg[a] > 0xFFFFFFFFull)
            return 0;
    }
    if (self->sz.observes) {
        for (int a = 0; a < 3; a++) {
            if (g[a] > mg[a])
                return 0; /* split along x, or refused along y / z: the general path */
            groups[a] = (uint32_t)g[a];
        }
        sz[0] = g[0] * wg[0];
        sz[1] = g[0];
        sz[2] = g[1] * wg[1];
        sz[3] = g[2] * wg[2];
        return 1;
    }
    /* exact: the grid-stride loops stop at the problem size (sizing.dispatches); below the
       spread threshold one invocation per element (sizing.grid_stride_groups) */
    if ((uint64_t)size[0] < (uint64_t)self->sz.spread_below)
        per = (uint64_t)self->sz.width;
    uint64_t gx = ((uint64_t)size[0] + per - 1) / per;
    sz[0] = (uint64_t)size[0];
    sz[1] = g[0];
    sz[2] = (uint64_t)size[1];
    sz[3] = (uint64_t)size[2];
    groups[0] = (uint32_t)(gx < mg[0] ? gx : mg[0]);
    for (int a = 1; a < 3; a++)
        groups[a] = (uint32_t)((uint64_t)size[a] < mg[a] ? (uint64_t)size[a] : mg[a]);
    return 1;
}

/* one extent: an exact int >= 0 (else 0: the general path checks it and words the error) */
static int
extent(PyObject *v, long long *out)
{
    int overflow = 0;
    *out = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : -1;
    if (overflow || (*out == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return *out >= 0;
}

/* grid: None, an exact int, or a tuple of 1 to 3 exact ints, each >= 0 (gpu()'s `grid=` as
   written, or dispatch.parse_grid's padded form); missing axes are 1. Anything else declines,
   and the general path checks it and words the error. */
int
ct_parse_grid(PyObject *grid, long long size[3])
{
    if (grid == Py_None)
        return 1;
    if (PyLong_CheckExact(grid))
        return extent(grid, &size[0]);
    Py_ssize_t n = PyTuple_CheckExact(grid) ? PyTuple_GET_SIZE(grid) : 0;
    if (n < 1 || n > 3)
        return 0;
    for (Py_ssize_t a = 0; a < n; a++)
        if (!extent(PyTuple_GET_ITEM(grid, a), &size[a]))
            return 0;
    return 1;
}
