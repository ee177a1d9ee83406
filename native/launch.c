/* cthreads._native — launch: the queued-launch fast path of one prepared kernel, in C.
 *
 * Python API:
 *   FastLauncher(device, pipeline, params, fields, sizing, resident, record_type, state,
 *                job_type, device_obj, name, generation)   (built by cthreads/launch/fastpath.py)
 *       params: per kernel parameter (kind, lo, hi, packs, itemsize, writes), kind one of
 *               LIST, INT (exact int in [lo, hi]), U64, BOOL, F32 (|v| <= FLT_MAX), F64, F16
 *       fields: the parameter block, (offset, fmt, role, param), fmt one of 'IiQqfd'
 *       sizing: (n_index or -1, wg, per_group or 0, max_groups, observes_workgroup, push_size)
 *   FastLauncher.launch(args: tuple) -> GpuJob | None
 *       Every list in `args` resident (found in the `resident` dict by id(), same object,
 *       generation, pack code and length, and no hazard: bit 1 a read-only buffer, refused for
 *       a written list; bit 2 bytes shared with another resident buffer, refused when the
 *       kernel has another list and writes one), every scalar of its exact builtin type and
 *       in range: packs the parameter block, enqueues one dispatch (batch.c), sets the records'
 *       last_use / last_write and returns a GpuJob. Anything unusual returns None (the Python
 *       general path then does the work and words the error); only a failed submission raises.
 */
#include "cthreads.h"

#include <math.h>
#include <string.h>

#define CT_LAUNCH_MAX_PARAMS 32
#define CT_LAUNCH_MAX_FIELDS (8 + 3 * CT_LAUNCH_MAX_PARAMS)

enum { P_LIST = 0, P_INT = 1, P_U64 = 2, P_BOOL = 3, P_F32 = 4, P_F64 = 5, P_F16 = 6 };
enum { R_TOTAL = 0, R_BASE = 1, R_GRID_X = 2, R_ONE = 3, R_ADDR = 4, R_LEN = 5, R_SCALAR = 6 };

typedef struct {
    int kind;
    long long lo, hi;           /* P_INT range */
    char packs[4];              /* P_LIST: accepted pack codes, NUL-terminated */
    Py_ssize_t itemsize;        /* P_LIST */
    int writes;                 /* P_LIST */
} LParam;

typedef struct {
    uint32_t offset;
    char fmt;
    int role, param;
} LField;

typedef struct {
    PyObject_HEAD
    CtDevice *dev;              /* strong refs from here on */
    PyObject *pipe;
    PyObject *resident, *record_type, *state, *job_type, *device_obj, *name;
    long long generation;
    int nparams, nfields, nlists, alias_check;
    int n_index, observes;
    uint64_t wg, per, max_groups;
    uint32_t push_size;
    LParam params[CT_LAUNCH_MAX_PARAMS];
    LField fields[CT_LAUNCH_MAX_FIELDS];
} CtLauncher;

/* interned attribute names, made once */
static PyObject *s_generation, *s_obj, *s_pack, *s_count, *s_buffer, *s_last_use, *s_last_write,
    *s_hazard, *s_device, *s_value, *s_kernel_name, *s_writebacks, *s_buffers, *s_device_done,
    *s_empty;

/* record hazard bits (cthreads/residency/arena.py READ_ONLY, OVERLAPS) */
#define H_READ_ONLY 1
#define H_OVERLAPS 2

static int
intern_names(void)
{
    if (s_empty != NULL)
        return 0;
#define I(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    I(s_generation, "generation") I(s_obj, "obj") I(s_pack, "pack") I(s_count, "count")
    I(s_buffer, "buffer") I(s_last_use, "last_use") I(s_last_write, "last_write")
    I(s_hazard, "hazard")
    I(s_device, "_device") I(s_value, "_value") I(s_kernel_name, "_kernel_name")
    I(s_writebacks, "_writebacks") I(s_buffers, "_buffers") I(s_device_done, "_device_done")
#undef I
    s_empty = PyTuple_New(0);
    return s_empty == NULL ? -1 : 0;
}

/* ---- construction ------------------------------------------------------------------------ */

static int
parse_params(CtLauncher *self, PyObject *params)
{
    if (!PyTuple_Check(params) || PyTuple_GET_SIZE(params) > CT_LAUNCH_MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "params: a tuple of at most 32 entries");
        return -1;
    }
    self->nparams = (int)PyTuple_GET_SIZE(params);
    for (int i = 0; i < self->nparams; i++) {
        LParam *p = &self->params[i];
        const char *packs;
        Py_ssize_t npacks;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(params, i), "iLLs#ni", &p->kind, &p->lo, &p->hi,
                              &packs, &npacks, &p->itemsize, &p->writes))
            return -1;
        if (p->kind < P_LIST || p->kind > P_F16 || npacks > 3 ||
            (p->kind == P_LIST && (npacks < 1 || p->itemsize < 1))) {
            PyErr_Format(PyExc_ValueError, "params[%d]: bad entry", i);
            return -1;
        }
        memcpy(p->packs, packs, (size_t)npacks);
        p->packs[npacks] = 0;
        if (p->kind == P_LIST)
            self->nlists++;
        else
            p->writes = 0;
    }
    return 0;
}

static int
field_size(char fmt)
{
    return fmt == 'I' || fmt == 'i' || fmt == 'f' ? 4 : fmt == 'Q' || fmt == 'q' || fmt == 'd' ? 8 : 0;
}

static int
parse_fields(CtLauncher *self, PyObject *fields)
{
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) > CT_LAUNCH_MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "fields: a tuple of at most 104 entries");
        return -1;
    }
    self->nfields = (int)PyTuple_GET_SIZE(fields);
    for (int i = 0; i < self->nfields; i++) {
        LField *f = &self->fields[i];
        unsigned int offset;
        int fmt;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, i), "ICii", &offset, &fmt, &f->role,
                              &f->param))
            return -1;
        f->offset = offset;
        f->fmt = (char)fmt;
        int size = field_size(f->fmt), ok = size > 0 && offset + (unsigned)size <= self->push_size;
        if (f->role == R_ADDR)
            ok = ok && f->fmt == 'Q';
        else if (f->role < R_ADDR || f->role == R_LEN)
            ok = ok && f->fmt == 'I';
        if (f->role >= R_ADDR) {
            ok = ok && f->param >= 0 && f->param < self->nparams &&
                 (self->params[f->param].kind == P_LIST) == (f->role != R_SCALAR);
            if (ok && f->role == R_SCALAR) {
                int k = self->params[f->param].kind;
                ok = k == P_F32 || k == P_F16 ? f->fmt == 'f'
                     : k == P_F64             ? f->fmt == 'd'
                     : k == P_U64             ? f->fmt == 'Q'
                     : k == P_BOOL            ? f->fmt == 'I'
                                              : f->fmt != 'f' && f->fmt != 'd';
            }
        }
        if (!ok || f->role < R_TOTAL || f->role > R_SCALAR) {
            PyErr_Format(PyExc_ValueError, "fields[%d]: bad entry", i);
            return -1;
        }
    }
    return 0;
}

static PyObject *
Launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *dev, *pipe, *params, *fields, *resident, *record_type, *state, *job_type,
        *device_obj, *name;
    long long generation, n_index, wg, per, max_groups;
    int observes;
    unsigned int push_size;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "FastLauncher() takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOO(LLLLpI)O!O!OO!OUL:FastLauncher", &dev, &pipe,
                          &params, &fields, &n_index, &wg, &per, &max_groups, &observes,
                          &push_size, &PyDict_Type, &resident, &PyType_Type, &record_type,
                          &state, &PyType_Type, &job_type, &device_obj, &name, &generation))
        return NULL;
    CtState *st = PyType_GetModuleState(type);
    if (st == NULL || intern_names() < 0)
        return NULL;
    if (!Py_IS_TYPE(dev, st->DeviceType) || !Py_IS_TYPE(pipe, st->PipelineType) ||
        ((CtPipeline *)pipe)->dev != (CtDevice *)dev) {
        PyErr_SetString(PyExc_TypeError, "FastLauncher needs a native Device and its Pipeline");
        return NULL;
    }
    if (wg < 1 || wg > 0xFFFFFFFFll || per < 0 || max_groups < 1 || max_groups > 0xFFFFFFFFll ||
        (!observes && per < 1) || push_size > CT_MAX_PUSH ||
        push_size != ((CtPipeline *)pipe)->push_size) {
        PyErr_SetString(PyExc_ValueError, "FastLauncher: bad sizing");
        return NULL;
    }
    CtLauncher *self = (CtLauncher *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->push_size = push_size;
    self->n_index = (int)n_index;
    self->wg = (uint64_t)wg;
    self->per = (uint64_t)per;
    self->max_groups = (uint64_t)max_groups;
    self->observes = observes;
    self->generation = generation;
    self->dev = (CtDevice *)Py_NewRef(dev);
    self->pipe = Py_NewRef(pipe);
    self->resident = Py_NewRef(resident);
    self->record_type = Py_NewRef(record_type);
    self->state = Py_NewRef(state);
    self->job_type = Py_NewRef(job_type);
    self->device_obj = Py_NewRef(device_obj);
    self->name = Py_NewRef(name);
    if (parse_params(self, params) < 0 || parse_fields(self, fields) < 0)
        goto fail;
    if (n_index >= self->nparams || (n_index >= 0 && self->params[n_index].kind != P_INT)) {
        PyErr_SetString(PyExc_ValueError, "FastLauncher: n_index is not an int parameter");
        goto fail;
    }
    for (int i = 0; i < self->nparams; i++)
        self->alias_check |= self->params[i].writes;
    self->alias_check = self->alias_check && self->nlists > 1;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static int
Launcher_traverse(CtLauncher *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->dev);
    Py_VISIT(self->pipe);
    Py_VISIT(self->resident);
    Py_VISIT(self->record_type);
    Py_VISIT(self->state);
    Py_VISIT(self->job_type);
    Py_VISIT(self->device_obj);
    Py_VISIT(self->name);
    return 0;
}

static int
Launcher_clear(CtLauncher *self)
{
    Py_CLEAR(self->dev);
    Py_CLEAR(self->pipe);
    Py_CLEAR(self->resident);
    Py_CLEAR(self->record_type);
    Py_CLEAR(self->state);
    Py_CLEAR(self->job_type);
    Py_CLEAR(self->device_obj);
    Py_CLEAR(self->name);
    return 0;
}

static void
Launcher_dealloc(CtLauncher *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Launcher_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* ---- one launch -------------------------------------------------------------------------- */

typedef union {
    long long i;
    unsigned long long u;
    double d;
} LValue;

static int
device_usable(CtLauncher *self)
{
    CtDevice *dev = self->dev;
    CtPipeline *pipe = (CtPipeline *)self->pipe;
    return dev != NULL && dev->state == CT_ALIVE && !dev->lost && !CT_LOAD(dev->bg_lost) &&
           pipe->dev == dev && pipe->pipeline != VK_NULL_HANDLE;
}

/* 1 with *out set when scalar argument a fits parameter p exactly, else 0 */
static int
check_scalar(const LParam *p, PyObject *a, LValue *out)
{
    switch (p->kind) {
    case P_INT: {
        if (!PyLong_CheckExact(a))
            return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        out->i = v;
        return p->lo <= v && v <= p->hi;
    }
    case P_U64: {
        if (!PyLong_CheckExact(a))
            return 0;
        unsigned long long v = PyLong_AsUnsignedLongLong(a);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        out->u = v;
        return 1;
    }
    case P_BOOL:
        if (!PyBool_Check(a))
            return 0;
        out->u = a == Py_True;
        return 1;
    case P_F32:
    case P_F64:
    case P_F16: {
        if (!PyFloat_CheckExact(a))
            return 0;
        double v = PyFloat_AS_DOUBLE(a);
        out->d = v;
        if (p->kind == P_F64)
            return 1;
        if (p->kind == P_F32)
            return -3.4028234663852886e38 <= v && v <= 3.4028234663852886e38;
        if (!(-65504.0 <= v && v <= 65504.0)) /* a finite f16 stays finite rounded */
            return 0;
        char h[2]; /* rounded to float16 as binding.check_scalar does (ties to even) */
        if (PyFloat_Pack2(v, h, 1) < 0) {
            PyErr_Clear();
            return 0;
        }
        out->d = PyFloat_Unpack2(h, 1);
        return !(out->d == -1.0 && PyErr_Occurred());
    }
    }
    return 0;
}

/* an exact int equal to want */
static int
int_equals(PyObject *v, long long want)
{
    if (v == NULL || !PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long got = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (got == -1 && PyErr_Occurred())
        PyErr_Clear();
    return !overflow && got == want;
}

/* 1 when list argument a is resident as parameter p wants. *rec (the record), *rdict (its
   __dict__: the record type has no descriptors for the fields read here, fastpath.py checks)
   and *buf get new references. */
static int
check_list(CtLauncher *self, const LParam *p, PyObject *a, PyObject **rec, PyObject **rdict,
           PyObject **buf, Py_ssize_t *count)
{
    PyObject *key = PyLong_FromVoidPtr(a);
    if (key == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *r = PyDict_GetItemWithError(self->resident, key);
    Py_DECREF(key);
    if (r == NULL || !Py_IS_TYPE(r, (PyTypeObject *)self->record_type)) {
        PyErr_Clear();
        return 0;
    }
    *rec = Py_NewRef(r);
    PyObject *d = *rdict = PyObject_GenericGetDict(r, NULL);
    if (d == NULL || !PyDict_CheckExact(d)) {
        PyErr_Clear();
        return 0;
    }
    /* borrowed: nothing below runs Python code before they are used */
    PyObject *o = PyDict_GetItemWithError(d, s_obj), *gen = PyDict_GetItemWithError(d, s_generation),
             *pack = PyDict_GetItemWithError(d, s_pack), *cnt = PyDict_GetItemWithError(d, s_count);
    if (o != a || !int_equals(gen, self->generation) || pack == NULL || cnt == NULL ||
        !PyUnicode_CheckExact(pack) || PyUnicode_GET_LENGTH(pack) != 1 || !PyLong_CheckExact(cnt)) {
        PyErr_Clear();
        return 0;
    }
    Py_UCS4 c = PyUnicode_READ_CHAR(pack, 0);
    if (c >= 128 || c == 0 || strchr(p->packs, (int)c) == NULL)
        return 0;
    /* a hazard this launch must refuse: the general path words it */
    PyObject *hz = PyDict_GetItemWithError(d, s_hazard);
    if (hz == NULL || !PyLong_CheckExact(hz)) {
        PyErr_Clear();
        return 0;
    }
    long h = PyLong_AsLong(hz);
    if (h == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (((h & H_READ_ONLY) && p->writes) || ((h & H_OVERLAPS) && self->alias_check))
        return 0;
    Py_ssize_t n = PyLong_AsSsize_t(cnt);
    if (n < 0) {
        PyErr_Clear();
        return 0;
    }
    PyObject *b = PyDict_GetItemWithError(d, s_buffer);
    if (b == NULL || !Py_IS_TYPE(b, self->dev->st->BufferType) ||
        ((CtBuffer *)b)->dev != self->dev || ((CtBuffer *)b)->alloc == NULL) {
        PyErr_Clear();
        return 0;
    }
    *buf = Py_NewRef(b);
    if (PyList_CheckExact(a)) {
        if (PyList_GET_SIZE(a) != n)
            return 0;
    } else { /* memoryview(a).nbytes // itemsize (may run Python code: nothing borrowed after) */
        Py_buffer view;
        if (PyObject_GetBuffer(a, &view, PyBUF_FULL_RO) < 0) {
            PyErr_Clear();
            return 0;
        }
        Py_ssize_t len = view.len;
        PyBuffer_Release(&view);
        if (len / p->itemsize != n || ((CtBuffer *)b)->alloc == NULL)
            return 0;
    }
    *count = n;
    return 1;
}

static void
put(uint8_t *push, const LField *f, LValue v)
{
    switch (f->fmt) {
    case 'I': { uint32_t x = (uint32_t)v.u; memcpy(push + f->offset, &x, 4); break; }
    case 'i': { int32_t x = (int32_t)v.i; memcpy(push + f->offset, &x, 4); break; }
    case 'f': { float x = (float)v.d; memcpy(push + f->offset, &x, 4); break; }
    case 'Q': case 'q': memcpy(push + f->offset, &v.u, 8); break;
    case 'd': memcpy(push + f->offset, &v.d, 8); break;
    }
}

static PyObject *
make_job(CtLauncher *self, PyObject *value, PyObject *writebacks)
{
    /* GpuJob.__init__'s six attributes, set without running it (gpujob.py says so; the tests
       compare both jobs' attributes) */
    PyTypeObject *tp = (PyTypeObject *)self->job_type;
    PyObject *buffers = PyList_New(0);
    if (buffers == NULL)
        return NULL;
    PyObject *job = tp->tp_new(tp, s_empty, NULL);
    if (job == NULL || PyObject_SetAttr(job, s_device, self->device_obj) < 0 ||
        PyObject_SetAttr(job, s_value, value) < 0 ||
        PyObject_SetAttr(job, s_kernel_name, self->name) < 0 ||
        PyObject_SetAttr(job, s_writebacks, writebacks) < 0 ||
        PyObject_SetAttr(job, s_buffers, buffers) < 0 ||
        PyObject_SetAttr(job, s_device_done, Py_False) < 0)
        Py_CLEAR(job);
    Py_DECREF(buffers);
    return job;
}

static PyObject *
Launcher_launch(CtLauncher *self, PyObject *args)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    Py_RETURN_NONE; /* the block is little-endian: the general path packs it */
#endif
    if (!PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) != self->nparams ||
        !device_usable(self))
        Py_RETURN_NONE;
    CtDevice *dev = self->dev;
    /* batches the background thread saw complete give their references back first (as
       submit() does; finalizers may run Python code, so before anything is read) */
    if (ct_fold_completed(dev)) {
        ct_ring_retire(dev);
        if (!device_usable(self))
            Py_RETURN_NONE;
    }
    PyObject *g = PyObject_GetAttr(self->state, s_generation);
    int same = int_equals(g, self->generation);
    Py_XDECREF(g);
    if (!same) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    LValue val[CT_LAUNCH_MAX_PARAMS] = {{0}};
    PyObject *rec[CT_LAUNCH_MAX_PARAMS] = {0}, *rdict[CT_LAUNCH_MAX_PARAMS] = {0},
             *buf[CT_LAUNCH_MAX_PARAMS] = {0};
    Py_ssize_t count[CT_LAUNCH_MAX_PARAMS];
    int nl = 0, listix[CT_LAUNCH_MAX_PARAMS];
    PyObject *result = Py_None, *kept = NULL, *value = NULL, *wb = NULL;
    for (int i = 0; i < self->nparams; i++) {
        const LParam *p = &self->params[i];
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (p->kind != P_LIST) {
            if (!check_scalar(p, a, &val[i]))
                goto done;
            continue;
        }
        listix[nl++] = i;
        if (!check_list(self, p, a, &rec[i], &rdict[i], &buf[i], &count[i]))
            goto done;
    }
    if (self->alias_check) /* one object for two list parameters: the general path refuses it */
        for (int x = 0; x < nl; x++)
            for (int y = x + 1; y < nl; y++)
                if (PyTuple_GET_ITEM(args, listix[x]) == PyTuple_GET_ITEM(args, listix[y]))
                    goto done;
    long long size = 0;
    if (self->n_index >= 0)
        size = val[self->n_index].i;
    else
        for (int x = 0; x < nl; x++)
            if (count[listix[x]] > size)
                size = count[listix[x]];
    if (size <= 0 || size > 0xFFFFFFFFll)
        goto done;
    uint64_t grid_x = ((uint64_t)size + self->wg - 1) / self->wg, total = grid_x * self->wg;
    if (total > 0xFFFFFFFFull)
        goto done;
    uint64_t groups;
    if (self->observes) {
        if (grid_x > self->max_groups)
            goto done;
        groups = grid_x;
    } else {
        total = (uint64_t)size; /* exact: no invocation past the problem (dispatch._dispatches) */
        groups = (total + self->per - 1) / self->per;
        if (groups > self->max_groups)
            groups = self->max_groups;
    }
    CtOp op;
    op.kind = 0;
    op.pipe = (CtPipeline *)self->pipe;
    op.groups[0] = (uint32_t)groups;
    op.groups[1] = op.groups[2] = 1;
    op.src = op.dst = NULL;
    memset(op.push, 0, self->push_size);
    for (int k = 0; k < self->nfields; k++) {
        const LField *f = &self->fields[k];
        LValue v;
        switch (f->role) {
        case R_TOTAL: v.u = total; break;
        case R_BASE: v.u = 0; break;
        case R_GRID_X: v.u = grid_x; break;
        case R_ONE: v.u = 1; break;
        case R_ADDR: v.u = ((CtBuffer *)buf[f->param])->alloc->address; break;
        case R_LEN:
            if ((uint64_t)count[f->param] > 0xFFFFFFFFull)
                goto done;
            v.u = (uint64_t)count[f->param];
            break;
        default: v = val[f->param]; break;
        }
        put(op.push, f, v);
    }
    /* the batch keeps the pipeline, the buffers (their last_use follows) and the arguments */
    result = NULL;
    kept = PyTuple_New(nl + 1);
    if (kept == NULL)
        goto done;
    for (int x = 0; x < nl; x++)
        PyTuple_SET_ITEM(kept, x, Py_NewRef(buf[listix[x]]));
    PyTuple_SET_ITEM(kept, nl, Py_NewRef(args));
    uint64_t v = ct_enqueue(dev, &op, 1, &self->pipe, 1, kept, 0);
    if (v == 0 || (value = PyLong_FromUnsignedLongLong(v)) == NULL)
        goto done;
    int nw = 0;
    for (int x = 0; x < nl; x++)
        nw += self->params[listix[x]].writes;
    if ((wb = PyList_New(nw)) == NULL)
        goto done;
    nw = 0;
    for (int x = 0; x < nl; x++) {
        int i = listix[x];
        if (PyDict_SetItem(rdict[i], s_last_use, value) < 0)
            goto done;
        if (!self->params[i].writes)
            continue;
        PyObject *pair = PyTuple_Pack(2, Py_None, rec[i]);
        if (pair == NULL || PyDict_SetItem(rdict[i], s_last_write, value) < 0) {
            Py_XDECREF(pair);
            goto done;
        }
        PyList_SET_ITEM(wb, nw++, pair);
    }
    result = make_job(self, value, wb);
done:
    for (int x = 0; x < nl; x++) {
        Py_XDECREF(rec[listix[x]]);
        Py_XDECREF(rdict[listix[x]]);
        Py_XDECREF(buf[listix[x]]);
    }
    Py_XDECREF(kept);
    Py_XDECREF(value);
    Py_XDECREF(wb);
    return result == Py_None ? Py_NewRef(Py_None) : result;
}

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)Launcher_launch, METH_O,
     "launch(args) -> GpuJob | None: the launch when everything is plain, else None"},
    {NULL}
};

static PyType_Slot Launcher_slots[] = {
    {Py_tp_doc, "The C fast path of one prepared kernel whose lists are resident in a GpuArena."},
    {Py_tp_new, Launcher_new},
    {Py_tp_dealloc, Launcher_dealloc},
    {Py_tp_traverse, Launcher_traverse},
    {Py_tp_clear, Launcher_clear},
    {Py_tp_methods, Launcher_methods},
    {0, NULL}
};

PyType_Spec ct_launcher_spec = {
    .name = "cthreads._native.FastLauncher",
    .basicsize = sizeof(CtLauncher),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = Launcher_slots,
};
