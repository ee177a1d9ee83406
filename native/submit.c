/* cthreads._native — submit: the Python face of submission and timeline waits.
 *
 * Python API:
 *   Device.submit(commands, keep=(), timed=False, lane=0, after=0) -> int   timeline value of
 *       completion; lane >= 1 goes on that lane (lane.c) after the value `after` completed
 *       commands: ('dispatch', pipeline, push_bytes, (gx, gy, gz))
 *                 ('copy', src, dst, nbytes, src_offset, dst_offset)
 *                 ('fill', buffer, offset, nbytes, u32_value)
 *   Device.wait(value, timeout=None) -> bool   spins briefly, then blocks; GIL released
 *   Device.completed() -> int; Device.elapsed_ms(value) -> float | None; wait_idle() -> None
 *   Device._inject_submit_error(vk_result: int) -> None   test hook (see batch.c)
 * Work is stream-ordered (record.c) and coalesced into batches (batch.c): a submit on an idle
 * queue goes out at once, one made while work is in flight joins the pending batch.
 */
#include "cthreads.h"

#include <string.h>

/* Parse (positional..., kwnames) against names[]; out[] gets borrowed references or NULL. */
static int
parse_fast(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
           const char *const *names, int nnames, int required, PyObject **out)
{
    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname,
                     nnames, nargs);
        return -1;
    }
    for (int i = 0; i < nnames; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int i = 0; i < nnames && found < 0; i++)
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
                found = i;
        if (found < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, key);
            return -1;
        }
        if (out[found] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                         names[found]);
            return -1;
        }
        out[found] = args[nargs + k];
    }
    for (int i = 0; i < required; i++)
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
            return -1;
        }
    return 0;
}

PyObject *
ct_device_submit(CtDevice *dev, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"commands", "keep", "timed", "lane", "after"};
    PyObject *a[5];
    if (parse_fast("submit", args, nargs, kwnames, names, 5, 1, a) < 0)
        return NULL;
    int timed = a[2] == NULL ? 0 : PyObject_IsTrue(a[2]);
    if (timed < 0)
        return NULL;
    long lane = 0;
    unsigned long long after = 0;
    if (a[3] != NULL && (lane = PyLong_AsLong(a[3])) == -1 && PyErr_Occurred())
        return NULL;
    if (a[4] != NULL && (after = PyLong_AsUnsignedLongLong(a[4])) == (unsigned long long)-1 &&
        PyErr_Occurred())
        return NULL;
    if (lane < 0 || lane >= CT_LANES)
        return ct_raise(dev->st->GpuInvalidArgument, "lane %ld out of range 0..%d", lane,
                        CT_LANES - 1);
    if (after > dev->next_value)
        return ct_raise(dev->st->GpuInvalidArgument, "after=%llu was never submitted (the last "
                        "value is %llu)", after, (unsigned long long)dev->next_value);
    CtState *st = dev->st;
    if (ct_device_check(dev) < 0)
        return NULL;
    /* batches the background thread saw complete give their references back now (no system
       call; before parsing, since finalizers may run Python code) */
    if (ct_timeline_sync(dev, 0, CT_SYNC_RETIRE_NEW) > 0 && ct_device_check(dev) < 0)
        return NULL;
    /* a list or tuple is used as is; the command tuples themselves are what the batch keeps
       (they are immutable and hold the pipelines and buffers) */
    PyObject *cmds = PyList_CheckExact(a[0]) || PyTuple_CheckExact(a[0]) ? Py_NewRef(a[0])
                                                                         : PySequence_Tuple(a[0]);
    if (cmds == NULL) {
        PyErr_Clear();
        return ct_raise(st->GpuArgumentTypeError, "commands must be a sequence of tuples, got %s",
                        Py_TYPE(a[0])->tp_name);
    }
    PyObject *kept = NULL;
    if (a[1] != NULL && a[1] != Py_None) {
        kept = PyTuple_CheckExact(a[1]) ? Py_NewRef(a[1]) : PySequence_Tuple(a[1]);
        if (kept == NULL) {
            Py_DECREF(cmds);
            PyErr_Clear();
            return ct_raise(st->GpuArgumentTypeError, "keep must be a tuple of objects");
        }
        if (PyTuple_GET_SIZE(kept) == 0)
            Py_CLEAR(kept);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(cmds);
    CtOp small[4];
    CtOp *ops = n <= 4 ? small : PyMem_Malloc(sizeof(CtOp) * (size_t)n);
    PyObject **items = NULL, *result = NULL;
    if (ops == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* a snapshot of the items: parsing runs no Python code, but a list could change later */
    PyObject *items_small[4];
    items = n <= 4 ? items_small : PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    if (items == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(items, PySequence_Fast_ITEMS(cmds), sizeof(PyObject *) * (size_t)n);
    for (Py_ssize_t i = 0; i < n; i++)
        if (ct_parse_op(dev, items[i], i, &ops[i]) < 0)
            goto done;
    uint64_t value = lane == 0 ? ct_enqueue(dev, ops, n, items, n, kept, timed)
                               : ct_enqueue_lane(dev, (int)lane, after, ops, n, items, n, kept,
                                                 timed);
    if (value != 0)
        result = PyLong_FromUnsignedLongLong(value);
done:
    if (ops != small)
        PyMem_Free(ops);
    if (items != NULL && items != items_small)
        PyMem_Free(items);
    Py_DECREF(cmds);
    Py_XDECREF(kept);
    return result;
}

PyObject *
ct_device_wait(CtDevice *dev, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"value", "timeout"};
    PyObject *a[2];
    if (parse_fast("wait", args, nargs, kwnames, names, 2, 1, a) < 0)
        return NULL;
    unsigned long long value = PyLong_AsUnsignedLongLong(a[0]);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    uint64_t tns = UINT64_MAX;
    if (a[1] != NULL && a[1] != Py_None) {
        double t = PyFloat_AsDouble(a[1]);
        if (t == -1.0 && PyErr_Occurred())
            return NULL;
        tns = t <= 0 ? 0 : t >= 1e9 ? UINT64_MAX : (uint64_t)(t * 1e9);
    }
    if (value > dev->next_value)
        return ct_raise(dev->st->GpuInvalidArgument, "timeline value %llu was never submitted "
                        "(the last one is %llu)", value, (unsigned long long)dev->next_value);
    int rc = ct_wait_done(dev, value, tns);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

PyObject *
ct_device_completed(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0 ||
        ct_timeline_sync(dev, UINT64_MAX, CT_SYNC_READ | CT_SYNC_RETIRE) < 0)
        return NULL;
    /* polling past the in-flight work: submit the pending batch now rather than when the
       background thread wakes up */
    if (CT_LOAD(dev->pending) >= 0 && dev->completed >= CT_LOAD(dev->submitted) &&
        ct_flush_pending(dev, UINT64_MAX) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(dev->completed);
}

PyObject *
ct_device_wait_idle(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0)
        return NULL;
    if (ct_wait_done(dev, dev->next_value, UINT64_MAX) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyObject *
ct_device_elapsed_ms(CtDevice *dev, PyObject *arg)
{
    unsigned long long value = PyLong_AsUnsignedLongLong(arg);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    if (ct_timeline_sync(dev, value, CT_SYNC_READ | CT_SYNC_RETIRE) < 0)
        return NULL;
    if (value > dev->completed)
        Py_RETURN_NONE;
    if (dev->timings[value % CT_TIMINGS].value == value)
        return PyFloat_FromDouble(dev->timings[value % CT_TIMINGS].ms);
    Py_RETURN_NONE;
}
