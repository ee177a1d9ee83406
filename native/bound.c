/* cthreads._native — BoundLaunch: the call of `kernel[grid]` (gpu/bracket.py) without a Python
 * frame (issue 15: a held launcher must cost what gpu() costs).
 *
 *   BoundLaunch.__init__(kernel, attribute, grid, fallback, scoped, context)
 *       kernel: the kernel object; attribute: the name of its instance attribute holding its
 *       C launcher's launch method or None (read at every call: the launcher changes when
 *       the device does); grid: the invocations tuple to launch with, or None (always the
 *       fallback); fallback(self, *args, **options): everything else; scoped: a list whose
 *       item 0 counts `with stream:` blocks (launch/stream.py SCOPED); context: the ContextVar
 *       of the `with device:` device.
 *   BoundLaunch(*args) with no keywords, outside `with stream:` / `with device:`: the
 *       launcher's launch(args, grid) when it takes it, else fallback(self, *args, **options).
 * Python subclasses it (BracketLaunch); it knows no Python name of ours, only what it is given.
 */
#include "cthreads.h"

enum { B_KERNEL, B_ATTRIBUTE, B_GRID, B_FALLBACK, B_SCOPED, B_CONTEXT, B_COUNT };

typedef struct {
    PyObject_HEAD
    PyObject *ref[B_COUNT];
} CtBound;

static int
Bound_init(CtBound *self, PyObject *args, PyObject *kwds)
{
    PyObject *o[B_COUNT];
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "BoundLaunch() takes positional arguments only");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OUOOO!O:BoundLaunch", &o[B_KERNEL], &o[B_ATTRIBUTE], &o[B_GRID],
                          &o[B_FALLBACK], &PyList_Type, &o[B_SCOPED], &o[B_CONTEXT]))
        return -1;
    if (!PyCallable_Check(o[B_FALLBACK]) || !PyContextVar_CheckExact(o[B_CONTEXT]) ||
        PyList_GET_SIZE(o[B_SCOPED]) < 1 || (o[B_GRID] != Py_None && !PyTuple_CheckExact(o[B_GRID]))) {
        PyErr_SetString(PyExc_TypeError, "BoundLaunch(kernel, attribute, grid tuple or None, "
                                         "fallback callable, scoped list, context ContextVar)");
        return -1;
    }
    for (int i = 0; i < B_COUNT; i++)
        Py_XSETREF(self->ref[i], Py_NewRef(o[i]));
    return 0;
}

/* 1 when the call may go to the kernel's launcher: no `with stream:` anywhere, no `with
   device:` in this context (else gpu() routes the launch; the fallback goes there) */
static int
plain_context(CtBound *self)
{
    PyObject *scoped = self->ref[B_SCOPED], *dev = NULL;
    PyObject *n = PyList_GET_SIZE(scoped) >= 1 ? PyList_GET_ITEM(scoped, 0) : NULL;
    if (n == NULL || !PyLong_CheckExact(n) ||
        PyLong_AsLong(n) != 0 || PyContextVar_Get(self->ref[B_CONTEXT], Py_None, &dev) < 0) {
        PyErr_Clear();
        return 0;
    }
    int plain = dev == Py_None;
    Py_DECREF(dev);
    return plain;
}

static PyObject *
Bound_call(CtBound *self, PyObject *args, PyObject *kwds)
{
    if (self->ref[B_KERNEL] == NULL) {
        PyErr_SetString(PyExc_TypeError, "BoundLaunch called before __init__");
        return NULL;
    }
    if ((kwds == NULL || PyDict_GET_SIZE(kwds) == 0) && self->ref[B_GRID] != Py_None &&
        plain_context(self)) {
        PyObject *launch = PyObject_GetAttr(self->ref[B_KERNEL], self->ref[B_ATTRIBUTE]);
        if (launch == NULL)
            return NULL;
        PyObject *job = Py_None;
        if (launch != Py_None) {
            PyObject *argv[2] = {args, self->ref[B_GRID]};
            job = PyObject_Vectorcall(launch, argv, 2, NULL);
        } else {
            Py_INCREF(job);
        }
        Py_DECREF(launch);
        if (job != Py_None)
            return job; /* the job, or NULL: the launcher's error (a failed submission) */
        Py_DECREF(job);
    }
    /* the fallback, with this launcher first */
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *full = PyTuple_New(n + 1);
    if (full == NULL)
        return NULL;
    PyTuple_SET_ITEM(full, 0, Py_NewRef((PyObject *)self));
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(full, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyObject *result = PyObject_Call(self->ref[B_FALLBACK], full, kwds);
    Py_DECREF(full);
    return result;
}

static int
Bound_traverse(CtBound *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    for (int i = 0; i < B_COUNT; i++)
        Py_VISIT(self->ref[i]);
    return 0;
}

static int
Bound_clear(CtBound *self)
{
    for (int i = 0; i < B_COUNT; i++)
        Py_CLEAR(self->ref[i]);
    return 0;
}

static void
Bound_dealloc(CtBound *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Bound_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

CT_TYPE_SPEC(ct_bound_spec, "BoundLaunch", CtBound, Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
             {Py_tp_doc, "A launch bound to a kernel and a grid; calling it launches (bound.c)."},
             {Py_tp_new, PyType_GenericNew}, {Py_tp_init, Bound_init}, {Py_tp_call, Bound_call},
             {Py_tp_dealloc, Bound_dealloc}, {Py_tp_traverse, Bound_traverse},
             {Py_tp_clear, Bound_clear});
