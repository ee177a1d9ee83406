/* cthreads._native — launch: one queued launch of a FastLauncher (launch_plan.c makes them).
 *
 *   FastLauncher.launch(args: tuple, grid: nx | (nx[, ny[, nz]]) | None = None, lane: int = 0,
 *                       after: int = 0) -> GpuJob | None   (lane >= 1: a stream's, lane.c)
 *       Every list resident (resident_record, the record protocol of residency/arena.py, read
 *       from the record's slots: same object, generation, pack code, length, no hazard this
 *       launch must refuse), every
 *       scalar of its exact builtin type and in range, one dispatch: packs the parameter
 *       block, enqueues it (batch.c), sets the records' last_use / last_write and returns a
 *       GpuJob. Anything unusual returns None (the Python general path then does the work and
 *       words the error); only a failed submission raises. A launcher serves one native
 *       device: once that device is shut down it returns None for ever.
 */
#include "launch.h"

#include <limits.h>
#include <string.h>

/* field f of record r of record type t (self->roff): a borrowed reference, NULL when unset */
#define RECORD_FIELD(self, r, t, f) (*(PyObject **)((char *)(r) + (self)->roff[t][f]))

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
    CtPipeline *pipe = (CtPipeline *)self->ref[O_PIPE];
    return dev != NULL && dev->state == CT_ALIVE && !dev->lost && !CT_LOAD(dev->bg_lost) &&
           pipe->dev == dev && pipe->pipeline != VK_NULL_HANDLE;
}

/* The value of exact int v when it is one machine digit or less (every count, generation,
   hazard and timeline value a launch loop sees), read without a call; 0 for a larger one
   (the caller then asks the C API). About 20 instructions a read less, 7 reads a launch. */
static inline int
compact_int(PyObject *v, long long *out)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Long_IsCompact((PyLongObject *)v))
        return 0;
    *out = (long long)PyUnstable_Long_CompactValue((PyLongObject *)v);
#else
    Py_ssize_t size = Py_SIZE(v);
    if (size < -1 || size > 1)
        return 0;
    *out = (long long)size * (long long)((PyLongObject *)v)->ob_digit[0];
#endif
    return 1;
}

/* 1 with *out set when scalar argument a fits parameter p exactly, else 0 */
static int
check_scalar(const LParam *p, PyObject *a, LValue *out)
{
    switch (p->kind) {
    case P_INT: {
        if (!PyLong_CheckExact(a))
            return 0;
        long long v;
        if (!compact_int(a, &v)) {
            int overflow = 0;
            v = PyLong_AsLongLongAndOverflow(a, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return 0;
            }
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
    long long got;
    if (compact_int(v, &got))
        return got == want;
    int overflow = 0;
    got = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (got == -1 && PyErr_Occurred())
        PyErr_Clear();
    return !overflow && got == want;
}

/* The one resident lookup (Python: residency.arena.resident_of): the record serving list
   argument a, as a new reference, or NULL (no error set). An instance of a self-record type
   is its own record; anything else is looked up in the registry by id() and must be the
   registry's record type. *rtype says which (its index in record_types: 0 the registry's). */
static PyObject *
resident_record(CtLauncher *self, int param, PyObject *a, int *rtype)
{
    for (int i = 0; i < self->nself; i++)
        if (Py_IS_TYPE(a, (PyTypeObject *)self->ref[O_SELF + i])) {
            *rtype = 1 + i;
            return Py_NewRef(a);
        }
    *rtype = 0;
    /* the record found for this parameter's last list, while the registry is unchanged (the
       same object in changes[0]): a launch loop passes the same lists */
    PyObject *changes = self->ref[O_CHANGES];
    PyObject *now = PyList_GET_SIZE(changes) >= 1 ? PyList_GET_ITEM(changes, 0) : NULL;
    if (now != self->seen) {
        memset(self->found, 0, sizeof self->found);
        Py_XSETREF(self->seen, Py_XNewRef(now));
    }
    if (self->idptr[param] == (void *)a && self->found[param] != NULL && now != NULL)
        return Py_NewRef(self->found[param]);
    /* id(a), kept per parameter (the same address is the same id, whichever object holds it) */
    if (self->idkey[param] == NULL || self->idptr[param] != (void *)a) {
        Py_XSETREF(self->idkey[param], PyLong_FromVoidPtr(a));
        self->idptr[param] = a;
        self->found[param] = NULL;
    }
    PyObject *key = self->idkey[param];
    PyObject *r = key == NULL ? NULL : PyDict_GetItemWithError(self->ref[O_RECORDS], key);
    if (r == NULL || !Py_IS_TYPE(r, (PyTypeObject *)self->ref[O_RECORD_TYPE])) {
        PyErr_Clear();
        return NULL;
    }
    self->found[param] = r;
    return Py_NewRef(r);
}

/* 1 when list argument a is resident as parameter p wants. *rec (the record) and *buf get
   new references, *rtype the record's type index (resident_record). */
static int
check_list(CtLauncher *self, int param, PyObject *a, PyObject **rec, int *rtype, PyObject **buf,
           Py_ssize_t *count)
{
    const LParam *p = &self->params[param];
    if ((*rec = resident_record(self, param, a, rtype)) == NULL)
        return 0;
    int t = *rtype, own = t > 0;
    PyObject *r = *rec;
    /* borrowed: nothing below runs Python code before they are used */
    PyObject *gen = RECORD_FIELD(self, r, t, F_GENERATION), *b = RECORD_FIELD(self, r, t, F_BUFFER),
             *pack = RECORD_FIELD(self, r, t, F_PACK), *cnt = RECORD_FIELD(self, r, t, F_COUNT),
             *hz = RECORD_FIELD(self, r, t, F_HAZARD);
    if ((!own && RECORD_FIELD(self, r, t, F_OBJ) != a) || !int_equals(gen, self->generation) ||
        pack == NULL || cnt == NULL || !PyUnicode_CheckExact(pack) ||
        PyUnicode_GET_LENGTH(pack) != 1 || !PyLong_CheckExact(cnt) || hz == NULL ||
        !PyLong_CheckExact(hz) || b == NULL || !Py_IS_TYPE(b, self->dev->st->BufferType) ||
        ((CtBuffer *)b)->dev != self->dev || ((CtBuffer *)b)->alloc == NULL)
        return 0;
    Py_UCS4 c = PyUnicode_READ_CHAR(pack, 0);
    if (c >= 128 || !((self->packset[param][c >> 6] >> (c & 63)) & 1))
        return 0;
    /* a hazard this launch must refuse: the general path words it */
    long long hl, nl;
    long h;
    Py_ssize_t n;
    if (compact_int(hz, &hl) && compact_int(cnt, &nl)) {
        h = (long)hl;
        n = (Py_ssize_t)nl;
    } else {
        h = PyLong_AsLong(hz);
        n = PyLong_AsSsize_t(cnt);
        if ((h == -1 || n < 0) && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    }
    /* a self-record (DeviceArray) serves only its own element type, and is never empty */
    if (own && (c != (Py_UCS4)(unsigned char)p->packs[0] || n == 0))
        return 0;
    if (n < 0 || ((h & self->sz.hz_read_only) && p->writes) ||
        ((h & self->sz.hz_overlaps) && self->alias_check))
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

/* field f's value into the block, by its width (launch_plan.c: 'I' and 'i' keep the low 32
   bits, which are the same bits either way; 'Q', 'q' and 'd' all 8 bytes of v) */
static inline void
put(uint8_t *push, const LField *f, int width, LValue v)
{
    if (width == W_64) {
        memcpy(push + f->offset, &v.u, 8);
    } else if (width == W_32) {
        uint32_t x = (uint32_t)v.u;
        memcpy(push + f->offset, &x, 4);
    } else {
        float x = (float)v.d;
        memcpy(push + f->offset, &x, 4);
    }
}

/* A GpuJob by its fast construction protocol (gpujob.py QUEUED_FIELDS): the type's own
   allocation plus a store into each of those slots, which a fresh object holds empty (the
   rest are class defaults that mean "queued"). Not object.__new__: that also checks its
   arguments and fills the instance's inline attribute values, which a queued job never uses
   (CPython makes its attribute dict on the first store into it, as for any object whose dict
   was never asked for): about 150 instructions to make and drop a job. */
static PyObject *
make_job(CtLauncher *self, PyObject *value, PyObject *written)
{
    PyTypeObject *tp = (PyTypeObject *)self->ref[O_JOB_TYPE];
    PyObject *values[J_COUNT] = {self->ref[O_DEVICE_OBJ], value, self->ref[O_NAME], written};
    PyObject *job = tp->tp_alloc(tp, 0);
    if (job != NULL)
        for (int i = 0; i < J_COUNT; i++) /* (empty: tp_alloc zeroes the object) */
            *(PyObject **)((char *)job + self->joff[i]) = Py_NewRef(values[i]);
    return job;
}

PyObject *
ct_launcher_launch(CtLauncher *self, PyObject *const *argv, Py_ssize_t argc)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    Py_RETURN_NONE; /* the block is little-endian: the general path packs it */
#endif
    if (argc < 1 || argc > 4) {
        PyErr_SetString(PyExc_TypeError, "launch(args, grid=None, lane=0, after=0)");
        return NULL;
    }
    PyObject *args = argv[0];
    long long size[3] = {0, 1, 1};
    int has_grid = argc >= 2 && argv[1] != Py_None;
    /* a stream's lane (lane.c) and the value it starts after; anything odd: the general path */
    long lane = 0;
    unsigned long long after = 0;
    if (argc >= 3) {
        if (!PyLong_CheckExact(argv[2]) || (argc == 4 && !PyLong_CheckExact(argv[3])))
            Py_RETURN_NONE;
        lane = PyLong_AsLong(argv[2]);
        after = argc == 4 ? PyLong_AsUnsignedLongLong(argv[3]) : 0;
        if (PyErr_Occurred() || lane < 0 || lane >= CT_LANES) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    if (!PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) != self->nparams ||
        !device_usable(self) || (has_grid && !ct_parse_grid(argv[1], size)))
        Py_RETURN_NONE;
    CtDevice *dev = self->dev;
    /* batches the background thread saw complete give their references back first (as
       submit() does; finalizers may run Python code, so before anything is read) */
    if (ct_timeline_sync(dev, 0, CT_SYNC_RETIRE_NEW)) {
        if (!device_usable(self))
            Py_RETURN_NONE;
    }
    /* not zeroed (about 270 instructions a launch): an entry is written before it is read,
       a list's three references just before check_list fills them */
    LValue val[CT_LAUNCH_MAX_PARAMS];
    PyObject *rec[CT_LAUNCH_MAX_PARAMS], *buf[CT_LAUNCH_MAX_PARAMS];
    Py_ssize_t count[CT_LAUNCH_MAX_PARAMS];
    int nl = 0, listix[CT_LAUNCH_MAX_PARAMS], rtype[CT_LAUNCH_MAX_PARAMS];
    PyObject *result = Py_None, *value = NULL, *wb = NULL;
    for (int i = 0; i < self->nparams; i++) {
        const LParam *p = &self->params[i];
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (p->kind != P_LIST) {
            if (!check_scalar(p, a, &val[i]))
                goto done;
            continue;
        }
        listix[nl++] = i;
        rec[i] = buf[i] = NULL;
        if (!check_list(self, i, a, &rec[i], &rtype[i], &buf[i], &count[i]))
            goto done;
    }
    if (self->alias_check) /* one object for two list parameters: the general path refuses it */
        for (int x = 0; x < nl; x++)
            for (int y = x + 1; y < nl; y++)
                if (PyTuple_GET_ITEM(args, listix[x]) == PyTuple_GET_ITEM(args, listix[y]))
                    goto done;
    if (!has_grid && self->sz.n_index >= 0)
        size[0] = val[self->sz.n_index].i;
    else if (!has_grid)
        for (int x = 0; x < nl; x++)
            if (count[listix[x]] > size[0])
                size[0] = count[listix[x]];
    CtOp op;
    uint64_t sz[4]; /* total, grid_x, total_y, total_z */
    if (!ct_plan_dispatch(self, size, sz, op.groups))
        goto done;
    op.kind = 0;
    op.pipe = (CtPipeline *)self->ref[O_PIPE];
    op.src = op.dst = NULL;
    memset(op.push, 0, (size_t)self->sz.push_size);
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
        put(op.push, f, self->width[k], v);
    }
    if (lane > 0) {
        /* on a lane: after the last write of each list it reads, the last use of each it
           writes (dispatch._launch's implicit rule) */
        if (after > dev->next_value)
            goto done;
        for (int x = 0; x < nl; x++) {
            int i = listix[x];
            PyObject *d = RECORD_FIELD(self, rec[i], rtype[i],
                                       self->params[i].writes ? F_LAST_USE : F_LAST_WRITE);
            if (d == NULL || !PyLong_CheckExact(d))
                goto done;
            unsigned long long dep = PyLong_AsUnsignedLongLong(d);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                goto done;
            }
            if (dep > after)
                after = dep;
        }
        if (after > dev->next_value)
            goto done;
    }
    /* the batch keeps the pipeline, the buffers (their last_use follows) and the arguments,
       each as an item of its own (no tuple made and dropped per launch) */
    PyObject *keep[CT_LAUNCH_MAX_PARAMS + 2];
    keep[0] = self->ref[O_PIPE];
    for (int x = 0; x < nl; x++)
        keep[1 + x] = buf[listix[x]];
    keep[1 + nl] = args;
    result = NULL;
    uint64_t v = lane == 0 ? ct_enqueue(dev, &op, 1, keep, nl + 2, NULL, 0)
                           : ct_enqueue_lane(dev, (int)lane, after, &op, 1, keep, nl + 2, NULL, 0);
    /* (PyLong_FromLong has the short path for small values that the unsigned one lacks) */
    if (v == 0 || (value = v <= LONG_MAX ? PyLong_FromLong((long)v)
                                         : PyLong_FromUnsignedLongLong(v)) == NULL)
        goto done;
    /* written lists come back at join, except self-records (DeviceArray: its record is the
       argument itself), which stay on the device: GpuJob._written, as None, the one record
       or a tuple of them (no list and no pairs made per launch) */
    int nw = 0, wix[CT_LAUNCH_MAX_PARAMS];
    for (int x = 0; x < nl; x++) {
        int i = listix[x];
        /* (the ints these drop run no Python code) */
        Py_XSETREF(RECORD_FIELD(self, rec[i], rtype[i], F_LAST_USE), Py_NewRef(value));
        if (!self->params[i].writes)
            continue;
        Py_XSETREF(RECORD_FIELD(self, rec[i], rtype[i], F_LAST_WRITE), Py_NewRef(value));
        if (rec[i] != PyTuple_GET_ITEM(args, i))
            wix[nw++] = i;
    }
    if (nw == 0)
        wb = Py_NewRef(Py_None);
    else if (nw == 1)
        wb = Py_NewRef(rec[wix[0]]);
    else if ((wb = PyTuple_New(nw)) != NULL)
        for (int x = 0; x < nw; x++)
            PyTuple_SET_ITEM(wb, x, Py_NewRef(rec[wix[x]]));
    if (wb == NULL)
        goto done;
    result = make_job(self, value, wb);
done:
    for (int x = 0; x < nl; x++) {
        Py_XDECREF(rec[listix[x]]);
        Py_XDECREF(buf[listix[x]]);
    }
    Py_XDECREF(value);
    Py_XDECREF(wb);
    return result == Py_None ? Py_NewRef(Py_None) : result;
}
