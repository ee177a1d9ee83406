/* cthreads._native — bound: the calls of `kernel[grid]` (gpu/bracket.py) and of `gpu()`
 * (launch/dispatch.py) without a Python frame (issues 14 and 15: a launch costs its C launcher).
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
 *   LaunchEntry(attribute, kernel_type, fallback, scoped, context)
 *       kernel_type: a list whose item 0 is the kernel class (None until it is known); the
 *       rest as above; instances keep a __dict__ (the Python face sets __doc__ and the
 *       signature there).
 *   LaunchEntry(kernel, *args[, grid=g]) for an exact kernel_type instance, outside `with
 *       stream:` / `with device:`: the launcher's launch(args[, g]) when it takes it, else
 *       fallback(kernel, *args, **options), the same call (vectorcall: nothing copied).
 * Python subclasses BoundLaunch (BracketLaunch); neither knows a Python name of ours, only
 * what it is given.
 */
#include "cthreads.h"

#include <stddef.h>

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

/* 1 when the call may go to the kernel's launcher: no `with stream:` anywhere (item 0 of
   list `scoped`), no `with device:` in this context (ContextVar `context`); else gpu()
   routes the launch, and the fallback goes there */
static int
plain_context(PyObject *scoped, PyObject *context)
{
    PyObject *dev = NULL;
    PyObject *n = PyList_GET_SIZE(scoped) >= 1 ? PyList_GET_ITEM(scoped, 0) : NULL;
    if (n == NULL || !PyLong_CheckExact(n) ||
        PyLong_AsLong(n) != 0 || PyContextVar_Get(context, Py_None, &dev) < 0) {
        PyErr_Clear();
        return 0;
    }
    int plain = dev == Py_None;
    Py_DECREF(dev);
    return plain;
}

/* The job of kernel's launcher (its instance attribute `attribute`) for args and grid (NULL:
   none), or a new reference to None where it has none or declines; NULL on its error (a
   failed submission) */
static PyObject *
try_launcher(PyObject *kernel, PyObject *attribute, PyObject *args, PyObject *grid)
{
    PyObject *launch = PyObject_GetAttr(kernel, attribute);
    if (launch == NULL)
        return NULL;
    PyObject *job = Py_None;
    if (launch != Py_None) {
        PyObject *argv[2] = {args, grid};
        job = PyObject_Vectorcall(launch, argv, grid == NULL ? 1 : 2, NULL);
    } else {
        Py_INCREF(job);
    }
    Py_DECREF(launch);
    return job;
}

static PyObject *
Bound_call(CtBound *self, PyObject *args, PyObject *kwds)
{
    if (self->ref[B_KERNEL] == NULL) {
        PyErr_SetString(PyExc_TypeError, "BoundLaunch called before __init__");
        return NULL;
    }
    if ((kwds == NULL || PyDict_GET_SIZE(kwds) == 0) && self->ref[B_GRID] != Py_None &&
        plain_context(self->ref[B_SCOPED], self->ref[B_CONTEXT])) {
        PyObject *job = try_launcher(self->ref[B_KERNEL], self->ref[B_ATTRIBUTE], args,
                                     self->ref[B_GRID]);
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

/* traverse, clear and dealloc of a type whose references are its array ref[count] */
#define REF_ARRAY_GC(prefix, ctype, count)                                                  \
    static int prefix##_traverse(ctype *self, visitproc visit, void *arg)                   \
    {                                                                                       \
        Py_VISIT(Py_TYPE(self));                                                            \
        for (int i = 0; i < (count); i++)                                                   \
            Py_VISIT(self->ref[i]);                                                         \
        return 0;                                                                           \
    }                                                                                       \
    static int prefix##_clear(ctype *self)                                                  \
    {                                                                                       \
        for (int i = 0; i < (count); i++)                                                   \
            Py_CLEAR(self->ref[i]);                                                         \
        return 0;                                                                           \
    }                                                                                       \
    static void prefix##_dealloc(ctype *self)                                               \
    {                                                                                       \
        PyTypeObject *tp = Py_TYPE(self);                                                   \
        PyObject_GC_UnTrack(self);                                                          \
        prefix##_clear(self);                                                               \
        tp->tp_free(self);                                                                  \
        Py_DECREF(tp);                                                                      \
    }

REF_ARRAY_GC(Bound, CtBound, B_COUNT)

CT_TYPE_SPEC(ct_bound_spec, "BoundLaunch", CtBound, Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
             {Py_tp_doc, "A launch bound to a kernel and a grid; calling it launches (bound.c)."},
             {Py_tp_new, PyType_GenericNew}, {Py_tp_init, Bound_init}, {Py_tp_call, Bound_call},
             {Py_tp_dealloc, Bound_dealloc}, {Py_tp_traverse, Bound_traverse},
             {Py_tp_clear, Bound_clear});


/* ---- LaunchEntry: gpu() ------------------------------------------------------------------ */

enum { E_ATTRIBUTE, E_KERNEL_TYPE, E_FALLBACK, E_SCOPED, E_CONTEXT, E_DICT, E_COUNT };

typedef struct {
    PyObject_HEAD
    PyObject *ref[E_COUNT];
    vectorcallfunc vectorcall;
} CtEntry;

static PyObject *
Entry_vectorcall(CtEntry *self, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *types = self->ref[E_KERNEL_TYPE];
    int has_fn = n >= 1;
    for (Py_ssize_t k = 0; !has_fn && k < nkw; k++)
        has_fn = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "fn") == 0;
    if (!has_fn) { /* as the Python function words it (the fallback has another name) */
        PyErr_SetString(PyExc_TypeError, "gpu() missing 1 required positional argument: 'fn'");
        return NULL;
    }
    /* gpu()'s hot loop (dispatch.gpu): no options, or `grid=` alone */
    if (n >= 1 && PyList_GET_SIZE(types) >= 1 && Py_IS_TYPE(argv[0], (PyTypeObject *)PyList_GET_ITEM(types, 0)) &&
        (nkw == 0 || (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0),
                                                                   "grid") == 0)) &&
        plain_context(self->ref[E_SCOPED], self->ref[E_CONTEXT])) {
        PyObject *args = PyTuple_New(n - 1);
        if (args == NULL)
            return NULL;
        for (Py_ssize_t i = 1; i < n; i++)
            PyTuple_SET_ITEM(args, i - 1, Py_NewRef(argv[i]));
        PyObject *job = try_launcher(argv[0], self->ref[E_ATTRIBUTE], args,
                                     nkw == 1 ? argv[n] : NULL);
        Py_DECREF(args);
        if (job != Py_None)
            return job;
        Py_DECREF(job);
    }
    return PyObject_Vectorcall(self->ref[E_FALLBACK], argv, nargsf, kwnames);
}

static PyObject *
Entry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *o[E_DICT];
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "LaunchEntry() takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "UO!OO!O:LaunchEntry", &o[E_ATTRIBUTE], &PyList_Type,
                          &o[E_KERNEL_TYPE], &o[E_FALLBACK], &PyList_Type, &o[E_SCOPED],
                          &o[E_CONTEXT]))
        return NULL;
    if (!PyCallable_Check(o[E_FALLBACK]) || !PyContextVar_CheckExact(o[E_CONTEXT]) ||
        PyList_GET_SIZE(o[E_SCOPED]) < 1) {
        PyErr_SetString(PyExc_TypeError, "LaunchEntry(attribute, kernel type list, fallback "
                                         "callable, scoped list, context ContextVar)");
        return NULL;
    }
    CtEntry *self = (CtEntry *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    for (int i = 0; i < E_DICT; i++)
        self->ref[i] = Py_NewRef(o[i]);
    self->vectorcall = (vectorcallfunc)Entry_vectorcall;
    return (PyObject *)self;
}

REF_ARRAY_GC(Entry, CtEntry, E_COUNT)

static PyMemberDef Entry_members[] = {
    {"__dictoffset__", CT_T_PYSSIZET, offsetof(CtEntry, ref[E_DICT]), CT_READONLY},
    {"__vectorcalloffset__", CT_T_PYSSIZET, offsetof(CtEntry, vectorcall), CT_READONLY},
    {NULL}
};

static PyGetSetDef Entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

CT_TYPE_SPEC(ct_entry_spec, "LaunchEntry", CtEntry, Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
             {Py_tp_doc, "gpu()'s common case in C, else its fallback (bound.c)."},
             {Py_tp_new, Entry_new}, {Py_tp_call, PyVectorcall_Call},
             {Py_tp_members, Entry_members}, {Py_tp_getset, Entry_getset},
             {Py_tp_dealloc, Entry_dealloc}, {Py_tp_traverse, Entry_traverse},
             {Py_tp_clear, Entry_clear});
