/* cthreads._native — launch: the queued-launch path of one prepared kernel, in C.
 *
 * Python API (built by cthreads/launch/plan.py from the kernel's LaunchPlan):
 *   FastLauncher.codes() -> dict: the parameter kinds (P_*), field roles (R_*) and MAX_PARAMS
 *       this file defines; plan.py encodes a plan with them (never a copy of the numbers).
 *   FastLauncher(device, pipeline, params, fields, sizing, records, record_types, hazards,
 *                job_type, job_fields, device_obj, name, generation)
 *       params: per kernel parameter (kind, lo, hi, packs, itemsize, writes): LIST, INT (exact
 *               int in [lo, hi]), U64, BOOL, F32 (|v| <= FLT_MAX), F64, F16
 *       fields: the parameter block, (offset, fmt, role, param), fmt one of 'IiQqfd'
 *       sizing: (n_index or -1, wg_x, wg_y, wg_z, per_group or 0, max_x, max_y, max_z,
 *                observes_workgroup, push_size)
 *       records: id(obj) -> record (residency/arena.py RECORDS); record_types: the registry's
 *       record type, then the types whose instances are their own records; hazards: the
 *       record's (read-only, overlaps) bits; job_fields: GpuJob.QUEUED_FIELDS.
 *   FastLauncher.launch(args: tuple, grid: (nx, ny, nz) | None = None) -> GpuJob | None
 *       Every list resident (resident_record: the record protocol of residency/arena.py: same
 *       object, generation, pack code, length, no hazard this launch must refuse), every
 *       scalar of its exact builtin type and in range, the launch one dispatch: packs the
 *       parameter block, enqueues it (batch.c), sets the records' last_use / last_write and
 *       returns a GpuJob. Anything unusual returns None (the Python general path then does the
 *       work and words the error); only a failed submission raises. A launcher serves one
 *       native device: once that device is shut down it returns None for ever.
 */
#include "cthreads.h"

#include <string.h>

#define CT_LAUNCH_MAX_PARAMS 64
#define CT_LAUNCH_MAX_FIELDS (8 + 3 * CT_LAUNCH_MAX_PARAMS)
#define CT_LAUNCH_MAX_SELF 4

enum { P_LIST, P_INT, P_U64, P_BOOL, P_F32, P_F64, P_F16, P_COUNT };
enum { R_TOTAL, R_BASE_GROUP, R_GRID_X, R_TOTAL_Y, R_TOTAL_Z, R_ADDR, R_LEN, R_SCALAR, R_COUNT };

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

enum { J_DEVICE, J_VALUE, J_NAME, J_WRITEBACKS, J_BUFFERS, J_DONE, J_COUNT };

typedef struct {
    PyObject_HEAD
    CtDevice *dev;              /* strong refs from here on */
    PyObject *pipe, *records, *record_type, *job_type, *device_obj, *name, *job_fields;
    PyObject *self_types[CT_LAUNCH_MAX_SELF];
    int nself;
    long long generation;
    long hz_read_only, hz_overlaps;
    int nparams, nfields, nlists, alias_check, n_index, observes;
    uint64_t wg[3], per, max_groups[3];
    uint32_t push_size;
    PyObject *jf[J_COUNT];      /* borrowed from job_fields */
    LParam params[CT_LAUNCH_MAX_PARAMS];
    LField fields[CT_LAUNCH_MAX_FIELDS];
} CtLauncher;

/* the record protocol's field names (residency/arena.py RECORD_FIELDS), interned once */
static PyObject *s_generation, *s_obj, *s_pack, *s_count, *s_buffer, *s_last_use, *s_last_write,
    *s_hazard, *s_empty;

static int
intern_names(void)
{
    if (s_empty != NULL)
        return 0;
#define I(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    I(s_generation, "generation") I(s_obj, "obj") I(s_pack, "pack") I(s_count, "count")
    I(s_buffer, "buffer") I(s_last_use, "last_use") I(s_last_write, "last_write")
    I(s_hazard, "hazard")
#undef I
    s_empty = PyTuple_New(0);
    return s_empty == NULL ? -1 : 0;
}

static PyObject *
Launcher_codes(PyObject *unused, PyObject *noargs)
{
    return Py_BuildValue(
        "{si si si si si si si si si si si si si si si si}", "P_LIST", P_LIST, "P_INT", P_INT,
        "P_U64", P_U64, "P_BOOL", P_BOOL, "P_F32", P_F32, "P_F64", P_F64, "P_F16", P_F16,
        "R_TOTAL", R_TOTAL, "R_BASE_GROUP", R_BASE_GROUP, "R_GRID_X", R_GRID_X, "R_TOTAL_Y",
        R_TOTAL_Y, "R_TOTAL_Z", R_TOTAL_Z, "R_ADDR", R_ADDR, "R_LEN", R_LEN, "R_SCALAR", R_SCALAR,
        "MAX_PARAMS", CT_LAUNCH_MAX_PARAMS);
}

/* ---- construction ------------------------------------------------------------------------ */

static int
bad(const char *what, int i)
{
    PyErr_Format(PyExc_ValueError, "FastLauncher: bad %s entry %d", what, i);
    return -1;
}

static int
parse_params(CtLauncher *self, PyObject *params)
{
    if (!PyTuple_Check(params) || PyTuple_GET_SIZE(params) > CT_LAUNCH_MAX_PARAMS)
        return bad("params", -1);
    self->nparams = (int)PyTuple_GET_SIZE(params);
    for (int i = 0; i < self->nparams; i++) {
        LParam *p = &self->params[i];
        const char *packs;
        Py_ssize_t npacks;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(params, i), "iLLs#ni", &p->kind, &p->lo, &p->hi,
                              &packs, &npacks, &p->itemsize, &p->writes))
            return -1;
        if (p->kind < P_LIST || p->kind >= P_COUNT || npacks > 3 ||
            (p->kind == P_LIST && (npacks < 1 || p->itemsize < 1)))
            return bad("params", i);
        memcpy(p->packs, packs, (size_t)npacks);
        p->packs[npacks] = 0;
        if (p->kind == P_LIST)
            self->nlists++;
        else
            p->writes = 0;
        self->alias_check |= p->writes;
    }
    self->alias_check = self->alias_check && self->nlists > 1;
    return 0;
}

/* whether field format fmt can hold what role (of a parameter of kind) writes */
static int
field_ok(const CtLauncher *self, const LField *f)
{
    char c = f->fmt;
    int size = c == 'I' || c == 'i' || c == 'f' ? 4 : c == 'Q' || c == 'q' || c == 'd' ? 8 : 0;
    if (size == 0 || f->offset + (unsigned)size > self->push_size || f->role < 0 ||
        f->role >= R_COUNT)
        return 0;
    if (f->role < R_ADDR)
        return c == 'I';
    if (f->param < 0 || f->param >= self->nparams ||
        (self->params[f->param].kind == P_LIST) != (f->role != R_SCALAR))
        return 0;
    switch (f->role == R_SCALAR ? self->params[f->param].kind : -f->role) {
    case -R_ADDR: return c == 'Q';
    case -R_LEN: return c == 'I';
    case P_F32: case P_F16: return c == 'f';
    case P_F64: return c == 'd';
    case P_U64: return c == 'Q';
    case P_BOOL: return c == 'I';
    default: return c != 'f' && c != 'd';
    }
}

static int
parse_fields(CtLauncher *self, PyObject *fields)
{
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) > CT_LAUNCH_MAX_FIELDS)
        return bad("fields", -1);
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
        if (!field_ok(self, f))
            return bad("fields", i);
    }
    return 0;
}

static PyObject *
Launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *dev, *pipe, *params, *fields, *records, *rtypes, *job_type, *job_fields,
        *device_obj, *name;
    long long generation, n_index, wg[3], per, maxg[3];
    long hz_ro, hz_ov;
    int observes;
    unsigned int push_size;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "FastLauncher() takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOO(LLLLLLLLpI)O!O!(ll)O!O!OUL:FastLauncher", &dev, &pipe,
                          &params, &fields, &n_index, &wg[0], &wg[1], &wg[2], &per, &maxg[0],
                          &maxg[1], &maxg[2], &observes, &push_size, &PyDict_Type, &records,
                          &PyTuple_Type, &rtypes, &hz_ro, &hz_ov, &PyType_Type, &job_type,
                          &PyTuple_Type, &job_fields, &device_obj, &name, &generation))
        return NULL;
    CtState *st = PyType_GetModuleState(type);
    if (st == NULL || intern_names() < 0)
        return NULL;
    if (!Py_IS_TYPE(dev, st->DeviceType) || !Py_IS_TYPE(pipe, st->PipelineType) ||
        ((CtPipeline *)pipe)->dev != (CtDevice *)dev) {
        PyErr_SetString(PyExc_TypeError, "FastLauncher needs a native Device and its Pipeline");
        return NULL;
    }
    Py_ssize_t nt = PyTuple_GET_SIZE(rtypes);
    int ok = nt >= 1 && nt <= 1 + CT_LAUNCH_MAX_SELF && PyTuple_GET_SIZE(job_fields) == J_COUNT;
    for (Py_ssize_t i = 0; ok && i < nt; i++)
        ok = PyType_Check(PyTuple_GET_ITEM(rtypes, i));
    for (Py_ssize_t i = 0; ok && i < J_COUNT; i++)
        ok = PyUnicode_CheckExact(PyTuple_GET_ITEM(job_fields, i));
    for (int a = 0; a < 3; a++)
        ok = ok && wg[a] >= 1 && wg[a] <= 0xFFFFFFFFll && maxg[a] >= 1 && maxg[a] <= 0xFFFFFFFFll;
    if (!ok || per < 0 || (!observes && per < 1) || push_size > CT_MAX_PUSH ||
        push_size != ((CtPipeline *)pipe)->push_size) {
        PyErr_SetString(PyExc_ValueError, "FastLauncher: bad sizing, record types or job fields");
        return NULL;
    }
    CtLauncher *self = (CtLauncher *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->push_size = push_size;
    self->n_index = (int)n_index;
    for (int a = 0; a < 3; a++) {
        self->wg[a] = (uint64_t)wg[a];
        self->max_groups[a] = (uint64_t)maxg[a];
    }
    self->per = (uint64_t)per;
    self->observes = observes;
    self->generation = generation;
    self->hz_read_only = hz_ro;
    self->hz_overlaps = hz_ov;
    self->dev = (CtDevice *)Py_NewRef(dev);
    self->pipe = Py_NewRef(pipe);
    self->records = Py_NewRef(records);
    self->record_type = Py_NewRef(PyTuple_GET_ITEM(rtypes, 0));
    self->nself = (int)nt - 1;
    for (int i = 0; i < self->nself; i++)
        self->self_types[i] = Py_NewRef(PyTuple_GET_ITEM(rtypes, i + 1));
    self->job_type = Py_NewRef(job_type);
    self->job_fields = Py_NewRef(job_fields);
    for (int i = 0; i < J_COUNT; i++)
        self->jf[i] = PyTuple_GET_ITEM(job_fields, i);
    self->device_obj = Py_NewRef(device_obj);
    self->name = Py_NewRef(name);
    if (parse_params(self, params) < 0 || parse_fields(self, fields) < 0)
        goto fail;
    if (n_index >= self->nparams || (n_index >= 0 && self->params[n_index].kind != P_INT)) {
        PyErr_SetString(PyExc_ValueError, "FastLauncher: n_index is not an int parameter");
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

#define LAUNCHER_REFS(X)                                                                     \
    X(self->dev) X(self->pipe) X(self->records) X(self->record_type) X(self->job_type)     \
    X(self->job_fields) X(self->device_obj) X(self->name)

static int
Launcher_traverse(CtLauncher *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
#define V(x) Py_VISIT(x);
    LAUNCHER_REFS(V)
#undef V
    for (int i = 0; i < self->nself; i++)
        Py_VISIT(self->self_types[i]);
    return 0;
}

static int
Launcher_clear(CtLauncher *self)
{
#define C(x) Py_CLEAR(x);
    LAUNCHER_REFS(C)
#undef C
    for (int i = 0; i < self->nself; i++)
        Py_CLEAR(self->self_types[i]);
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

/* The one resident lookup (Python: residency.arena.resident_of): the record serving list
   argument a, as a new reference, or NULL (no error set). An instance of a self-record type
   is its own record; anything else is looked up in the registry by id() and must be the
   registry's record type. *self_record says which. */
static PyObject *
resident_record(CtLauncher *self, PyObject *a, int *self_record)
{
    for (int i = 0; i < self->nself; i++)
        if (Py_IS_TYPE(a, (PyTypeObject *)self->self_types[i])) {
            *self_record = 1;
            return Py_NewRef(a);
        }
    *self_record = 0;
    PyObject *key = PyLong_FromVoidPtr(a);
    PyObject *r = key == NULL ? NULL : PyDict_GetItemWithError(self->records, key);
    Py_XDECREF(key);
    if (r == NULL || !Py_IS_TYPE(r, (PyTypeObject *)self->record_type)) {
        PyErr_Clear();
        return NULL;
    }
    return Py_NewRef(r);
}

/* 1 when list argument a is resident as parameter p wants. *rec (the record), *rdict (its
   __dict__: plan.py checked that the record types have no descriptors for these fields) and
   *buf get new references. */
static int
check_list(CtLauncher *self, const LParam *p, PyObject *a, PyObject **rec, PyObject **rdict,
           PyObject **buf, Py_ssize_t *count)
{
    int own;
    if ((*rec = resident_record(self, a, &own)) == NULL)
        return 0;
    PyObject *d = *rdict = PyObject_GenericGetDict(*rec, NULL);
    if (d == NULL || !PyDict_CheckExact(d)) {
        PyErr_Clear();
        return 0;
    }
    /* borrowed: nothing below runs Python code before they are used */
    PyObject *o = PyDict_GetItemWithError(d, s_obj), *gen = PyDict_GetItemWithError(d, s_generation),
             *pack = PyDict_GetItemWithError(d, s_pack), *cnt = PyDict_GetItemWithError(d, s_count),
             *hz = PyDict_GetItemWithError(d, s_hazard), *b = PyDict_GetItemWithError(d, s_buffer);
    if ((!own && o != a) || !int_equals(gen, self->generation) || pack == NULL || cnt == NULL ||
        !PyUnicode_CheckExact(pack) || PyUnicode_GET_LENGTH(pack) != 1 ||
        !PyLong_CheckExact(cnt) || hz == NULL || !PyLong_CheckExact(hz) || b == NULL ||
        !Py_IS_TYPE(b, self->dev->st->BufferType) || ((CtBuffer *)b)->dev != self->dev ||
        ((CtBuffer *)b)->alloc == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_UCS4 c = PyUnicode_READ_CHAR(pack, 0);
    if (c >= 128 || c == 0 || strchr(p->packs, (int)c) == NULL)
        return 0;
    /* a hazard this launch must refuse: the general path words it */
    long h = PyLong_AsLong(hz);
    Py_ssize_t n = PyLong_AsSsize_t(cnt);
    if ((h == -1 || n < 0) && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (n < 0 || ((h & self->hz_read_only) && p->writes) ||
        ((h & self->hz_overlaps) && self->alias_check))
        return 0;
    *buf = Py_NewRef(b);
    if (own) {
        /* a self-record's count is its length */
    } else if (PyList_CheckExact(a)) {
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

/* A GpuJob by its fast construction protocol (gpujob.py QUEUED_FIELDS): object.__new__ plus
   those attributes, in their order. */
static PyObject *
make_job(CtLauncher *self, PyObject *value, PyObject *writebacks)
{
    PyTypeObject *tp = (PyTypeObject *)self->job_type;
    PyObject *buffers = PyList_New(0);
    if (buffers == NULL)
        return NULL;
    PyObject *values[J_COUNT] = {self->device_obj, value, self->name, writebacks, buffers,
                                 Py_False};
    PyObject *job = tp->tp_new(tp, s_empty, NULL);
    for (int i = 0; job != NULL && i < J_COUNT; i++)
        if (PyObject_SetAttr(job, self->jf[i], values[i]) < 0)
            Py_CLEAR(job);
    Py_DECREF(buffers);
    return job;
}

/* The dispatch of `size` (x, y, z) logical invocations, as dispatch._dispatches makes it: the
   block's sizing values (total, grid_x, total_y, total_z) and the group counts. 0 where the
   launch needs the general path (several dispatches, a limit exceeded, nothing to run). */
static int
plan_dispatch(const CtLauncher *self, const long long size[3], uint64_t sz[4], uint32_t groups[3])
{
    uint64_t g[3];
    for (int a = 0; a < 3; a++) {
        if (size[a] <= 0)
            return 0; /* nothing, or (observing kernels) one workgroup: the general path */
        g[a] = ((uint64_t)size[a] + self->wg[a] - 1) / self->wg[a];
        if (g[a] * self->wg[a] > 0xFFFFFFFFull)
            return 0;
    }
    if (self->observes) {
        for (int a = 0; a < 3; a++)
            if (g[a] > self->max_groups[a])
                return 0; /* split along x, or refused along y / z: the general path */
        sz[0] = g[0] * self->wg[0];
        sz[1] = g[0];
        sz[2] = g[1] * self->wg[1];
        sz[3] = g[2] * self->wg[2];
        for (int a = 0; a < 3; a++)
            groups[a] = (uint32_t)g[a];
        return 1;
    }
    /* exact: the grid-stride loops stop at the problem size (dispatch._dispatches) */
    uint64_t gx = ((uint64_t)size[0] + self->per - 1) / self->per;
    sz[0] = (uint64_t)size[0];
    sz[1] = g[0];
    sz[2] = (uint64_t)size[1];
    sz[3] = (uint64_t)size[2];
    groups[0] = (uint32_t)(gx < self->max_groups[0] ? gx : self->max_groups[0]);
    for (int a = 1; a < 3; a++)
        groups[a] = (uint32_t)((uint64_t)size[a] < self->max_groups[a] ? (uint64_t)size[a]
                                                                        : self->max_groups[a]);
    return 1;
}

/* grid: None, or a tuple of three exact ints (dispatch.parse_grid made it) */
static int
parse_grid(PyObject *grid, long long size[3])
{
    if (grid == Py_None)
        return 1;
    if (!PyTuple_CheckExact(grid) || PyTuple_GET_SIZE(grid) != 3)
        return 0;
    for (int a = 0; a < 3; a++) {
        PyObject *v = PyTuple_GET_ITEM(grid, a);
        int overflow = 0;
        size[a] = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : -1;
        if (overflow || (size[a] == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

static PyObject *
Launcher_launch(CtLauncher *self, PyObject *const *argv, Py_ssize_t argc)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    Py_RETURN_NONE; /* the block is little-endian: the general path packs it */
#endif
    if (argc < 1 || argc > 2) {
        PyErr_SetString(PyExc_TypeError, "launch(args, grid=None)");
        return NULL;
    }
    PyObject *args = argv[0];
    long long size[3] = {0, 1, 1};
    int has_grid = argc == 2 && argv[1] != Py_None;
    if (!PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) != self->nparams ||
        !device_usable(self) || (has_grid && !parse_grid(argv[1], size)))
        Py_RETURN_NONE;
    CtDevice *dev = self->dev;
    /* batches the background thread saw complete give their references back first (as
       submit() does; finalizers may run Python code, so before anything is read) */
    if (ct_fold_completed(dev)) {
        ct_ring_retire(dev);
        if (!device_usable(self))
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
    if (!has_grid && self->n_index >= 0)
        size[0] = val[self->n_index].i;
    else if (!has_grid)
        for (int x = 0; x < nl; x++)
            if (count[listix[x]] > size[0])
                size[0] = count[listix[x]];
    CtOp op;
    uint64_t sz[4]; /* total, grid_x, total_y, total_z */
    if (!plan_dispatch(self, size, sz, op.groups))
        goto done;
    op.kind = 0;
    op.pipe = (CtPipeline *)self->pipe;
    op.src = op.dst = NULL;
    memset(op.push, 0, self->push_size);
    for (int k = 0; k < self->nfields; k++) {
        const LField *f = &self->fields[k];
        LValue v;
        switch (f->role) {
        case R_TOTAL: v.u = sz[0]; break;
        case R_BASE_GROUP: v.u = 0; break;
        case R_GRID_X: v.u = sz[1]; break;
        case R_TOTAL_Y: v.u = sz[2]; break;
        case R_TOTAL_Z: v.u = sz[3]; break;
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
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL,
     "launch(args, grid=None) -> GpuJob | None: the launch when everything is plain, else None"},
    {"codes", Launcher_codes, METH_NOARGS | METH_STATIC,
     "codes() -> dict: the parameter kinds, field roles and parameter limit of this launcher"},
    {NULL}
};

static PyType_Slot Launcher_slots[] = {
    {Py_tp_doc, "The C launch path of one prepared kernel whose lists are resident."},
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
