/* cthreads._native — launch_plan: a FastLauncher made from an encoded launch plan.
 *
 * Python API (used by cthreads/launch/plan.py, which encodes the kernel's LaunchPlan):
 *   FastLauncher.codes() -> dict: the parameter kinds (P_*), field roles (R_*), MAX_PARAMS and
 *       the `struct` formats of the encoded plan (PARAM_FORMAT, FIELD_FORMAT, SIZING_FORMAT):
 *       launch.h owns them, plan.py packs with them (never a copy of the numbers).
 *   FastLauncher(device, pipeline, params, fields, sizing, records, changes, record_types,
 *                record_fields, job_type, job_fields, device_obj, name, generation)
 *       params / fields / sizing: bytes of LParam[] / LField[] / one LSizing (launch.h);
 *       records: id(obj) -> record (residency/arena.py RECORDS) and changes (RECORDS_CHANGES:
 *       a list whose item 0 is a new object after each change of records, so that a record
 *       found for an argument is reused while it is the same); record_types: the registry's
 *       record type, then the types whose instances are their own records; record_fields:
 *       RECORD_FIELDS, slots of each record type (a self-record type needs no `obj`: it is
 *       its own), read and written at offsets found here, with no attribute look-up; job_fields:
 *       GpuJob.QUEUED_FIELDS, slots of job_type (a job is job_type's tp_alloc plus a
 *       store into each slot).
 *   FastLauncher.launch(args, grid=None, lane=0, after=0): launch.c.
 *   FastLauncher.sizes(nx, ny, nz): the dispatch a launch of that size makes (for tests).
 */
#include "launch.h"

#include <string.h>

static PyObject *
Launcher_codes(PyObject *unused, PyObject *noargs)
{
    return Py_BuildValue(
        "{si si si si si si si si si si si si si si si si ss ss ss}", "P_LIST", P_LIST, "P_INT",
        P_INT, "P_U64", P_U64, "P_BOOL", P_BOOL, "P_F32", P_F32, "P_F64", P_F64, "P_F16", P_F16,
        "R_TOTAL", R_TOTAL, "R_BASE_GROUP", R_BASE_GROUP, "R_GRID_X", R_GRID_X, "R_TOTAL_Y",
        R_TOTAL_Y, "R_TOTAL_Z", R_TOTAL_Z, "R_ADDR", R_ADDR, "R_LEN", R_LEN, "R_SCALAR", R_SCALAR,
        "MAX_PARAMS", CT_LAUNCH_MAX_PARAMS, "PARAM_FORMAT", PARAM_FORMAT, "FIELD_FORMAT",
        FIELD_FORMAT, "SIZING_FORMAT", SIZING_FORMAT);
}

/* FastLauncher.sizes(nx, ny, nz): what ct_plan_dispatch (launch.c) makes of that size, as
   ((total, grid_x, total_y, total_z), (groups x, y, z)), or None where a launch of it takes
   the general path (tests compare it with sizing.dispatches) */
static PyObject *
Launcher_sizes(CtLauncher *self, PyObject *args)
{
    long long size[3];
    uint64_t sz[4];
    uint32_t groups[3];
    if (!PyArg_ParseTuple(args, "LLL:sizes", &size[0], &size[1], &size[2]))
        return NULL;
    if (!ct_plan_dispatch(self, size, sz, groups))
        Py_RETURN_NONE;
    return Py_BuildValue("(KKKK)(III)", (unsigned long long)sz[0], (unsigned long long)sz[1],
                         (unsigned long long)sz[2], (unsigned long long)sz[3], groups[0],
                         groups[1], groups[2]);
}

/* ---- construction ------------------------------------------------------------------------ */

/* The byte offset of slot `name` of type tp (a writable object slot: its member descriptor,
   defined on tp or a base, and tp reads and writes attributes as object does), or 0 when it
   is not one. No exception left set. */
static Py_ssize_t
slot_offset(PyTypeObject *tp, PyObject *name)
{
    if (tp->tp_getattro != PyObject_GenericGetAttr || tp->tp_setattro != PyObject_GenericSetAttr)
        return 0; /* a hook would see what a slot read does not */
    PyObject *d = PyObject_GetAttr((PyObject *)tp, name);
    Py_ssize_t off = 0;
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
        PyType_IsSubtype(tp, PyDescr_TYPE(d))) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == CT_T_OBJECT_EX && !(m->flags & CT_READONLY) &&
            m->offset >= (Py_ssize_t)sizeof(PyObject) &&
            m->offset + (Py_ssize_t)sizeof(PyObject *) <= tp->tp_basicsize)
            off = m->offset;
    }
    Py_XDECREF(d);
    PyErr_Clear();
    return off;
}

/* Each record type's field offsets (self->roff): 1, or 0 when a type lacks one of the slots
   or `names` are not the fields launch.h numbers (F_*), in that order */
static int
take_record_types(CtLauncher *self, PyObject *rtypes, PyObject *names)
{
    static const char *const expected[F_FIELDS] = {
        "obj", "generation", "pack", "count", "buffer", "last_use", "last_write", "hazard"};
    if (!PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) != F_FIELDS)
        return 0;
    for (int f = 0; f < F_FIELDS; f++) {
        PyObject *name = PyTuple_GET_ITEM(names, f);
        if (!PyUnicode_CheckExact(name) || PyUnicode_CompareWithASCIIString(name, expected[f]))
            return 0;
    }
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(rtypes); t++)
        for (int f = t == 0 ? F_OBJ : F_OBJ + 1; f < F_FIELDS; f++) {
            PyTypeObject *tp = (PyTypeObject *)PyTuple_GET_ITEM(rtypes, t);
            if ((self->roff[t][f] = slot_offset(tp, PyTuple_GET_ITEM(names, f))) == 0)
                return 0;
        }
    return 1;
}

/* Copy the encoded plan in and check what memory safety rests on (plan.py makes it; whether
   formats match kinds is its job): every field inside the block, every index in range. */
static int
take_plan(CtLauncher *self, Py_buffer *params, Py_buffer *fields, Py_buffer *sizing)
{
    LSizing *z = &self->sz;
    if (params->len % sizeof(LParam) || params->len / sizeof(LParam) > CT_LAUNCH_MAX_PARAMS ||
        fields->len % sizeof(LField) || fields->len / sizeof(LField) > CT_LAUNCH_MAX_FIELDS ||
        sizing->len != sizeof(LSizing))
        return 0;
    memcpy(self->params, params->buf, (size_t)params->len);
    memcpy(self->fields, fields->buf, (size_t)fields->len);
    memcpy(z, sizing->buf, sizeof *z);
    self->nparams = (int)(params->len / sizeof(LParam));
    self->nfields = (int)(fields->len / sizeof(LField));
    for (int a = 0; a < 3; a++)
        if (z->wg[a] < 1 || z->wg[a] > 0xFFFFFFFFll || z->max_groups[a] < 1 ||
            z->max_groups[a] > 0xFFFFFFFFll)
            return 0;
    if (z->per < 0 || (!z->observes && z->per < 1) || z->spread_below < 0 ||
        (z->spread_below > 0 && (z->width < 1 || z->width > z->per)) || z->push_size < 0 ||
        z->push_size > CT_MAX_PUSH || z->push_size != ((CtPipeline *)self->ref[O_PIPE])->push_size ||
        z->n_index >= self->nparams)
        return 0;
    for (int i = 0; i < self->nparams; i++) {
        LParam *p = &self->params[i];
        p->packs[7] = 0;
        if (p->kind < 0 || p->kind >= P_COUNT || (p->kind == P_LIST && p->itemsize < 1))
            return 0;
        p->writes = p->kind == P_LIST && p->writes;
        for (const char *c = p->packs; *c; c++) /* (strchr's set: up to the first NUL) */
            if ((unsigned char)*c < 128)
                self->packset[i][(unsigned char)*c >> 6] |= 1ull << ((unsigned char)*c & 63);
        self->nlists += p->kind == P_LIST;
        self->alias_check |= p->writes;
    }
    self->alias_check = self->alias_check && self->nlists > 1;
    if (z->n_index >= 0 && self->params[z->n_index].kind != P_INT)
        return 0;
    for (int i = 0; i < self->nfields; i++) {
        const LField *f = &self->fields[i];
        int size = strchr("Iif", f->fmt) ? 4 : strchr("Qqd", f->fmt) ? 8 : 0;
        if (f->fmt == 0 || size == 0 || f->offset + (uint64_t)size > (uint64_t)z->push_size ||
            f->role < 0 || f->role >= R_COUNT)
            return 0;
        self->width[i] = f->fmt == 'f' ? W_F32 : size == 8 ? W_64 : W_32;
        if (f->role >= R_ADDR && (f->param < 0 || f->param >= self->nparams ||
                                  (self->params[f->param].kind == P_LIST) != (f->role != R_SCALAR)))
            return 0;
    }
    return 1;
}

static PyObject *
Launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *o[O_SELF], *rtypes, *rfields;
    Py_buffer params, fields, sizing;
    long long generation;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "FastLauncher() takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOy*y*y*O!O!O!OO!O!OUL:FastLauncher", &o[O_DEV], &o[O_PIPE],
                          &params, &fields, &sizing, &PyDict_Type, &o[O_RECORDS], &PyList_Type,
                          &o[O_CHANGES], &PyTuple_Type, &rtypes, &rfields, &PyType_Type, &o[O_JOB_TYPE], &PyTuple_Type, &o[O_JOB_FIELDS],
                          &o[O_DEVICE_OBJ], &o[O_NAME], &generation))
        return NULL;
    CtLauncher *self = NULL;
    CtState *st = PyType_GetModuleState(type);
    Py_ssize_t nt = PyTuple_GET_SIZE(rtypes);
    int ok = st != NULL;
    if (ok && (!Py_IS_TYPE(o[O_DEV], st->DeviceType) || !Py_IS_TYPE(o[O_PIPE], st->PipelineType) ||
               ((CtPipeline *)o[O_PIPE])->dev != (CtDevice *)o[O_DEV])) {
        PyErr_SetString(PyExc_TypeError, "FastLauncher needs a native Device and its Pipeline");
        ok = 0;
    }
    int valid = nt >= 1 && nt <= 1 + CT_LAUNCH_MAX_SELF && PyTuple_GET_SIZE(o[O_JOB_FIELDS]) == J_COUNT;
    for (Py_ssize_t i = 0; valid && i < nt; i++)
        valid = PyType_Check(PyTuple_GET_ITEM(rtypes, i));
    for (Py_ssize_t i = 0; valid && i < J_COUNT; i++)
        valid = PyUnicode_CheckExact(PyTuple_GET_ITEM(o[O_JOB_FIELDS], i));
    if (ok && (self = (CtLauncher *)type->tp_alloc(type, 0)) != NULL) {
        o[O_RECORD_TYPE] = valid ? PyTuple_GET_ITEM(rtypes, 0) : Py_None;
        for (int i = 0; i < O_SELF; i++)
            self->ref[i] = Py_NewRef(o[i]);
        self->nself = valid ? (int)nt - 1 : 0;
        for (int i = 0; i < self->nself; i++)
            self->ref[O_SELF + i] = Py_NewRef(PyTuple_GET_ITEM(rtypes, i + 1));
        self->dev = (CtDevice *)self->ref[O_DEV];
        self->generation = generation;
        for (int i = 0; valid && i < J_COUNT; i++)
            valid = (self->joff[i] = slot_offset((PyTypeObject *)o[O_JOB_TYPE],
                                                 PyTuple_GET_ITEM(o[O_JOB_FIELDS], i))) > 0;
        if (!valid || !take_record_types(self, rtypes, rfields) ||
            !take_plan(self, &params, &fields, &sizing)) {
            PyErr_SetString(PyExc_ValueError, "FastLauncher: a plan, record types or job fields it "
                                              "does not take");
            Py_CLEAR(self);
        }
    }
    PyBuffer_Release(&params);
    PyBuffer_Release(&fields);
    PyBuffer_Release(&sizing);
    return (PyObject *)self;
}

static int
Launcher_traverse(CtLauncher *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    for (int i = 0; i < O_COUNT; i++)
        Py_VISIT(self->ref[i]);
    return 0;
}

static int
Launcher_clear(CtLauncher *self)
{
    self->dev = NULL;
    for (int i = 0; i < O_COUNT; i++)
        Py_CLEAR(self->ref[i]);
    for (int i = 0; i < CT_LAUNCH_MAX_PARAMS; i++)
        Py_CLEAR(self->idkey[i]);
    Py_CLEAR(self->seen);
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

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))ct_launcher_launch, METH_FASTCALL,
     "launch(args, grid=None, lane=0, after=0) -> GpuJob | None: the launch when everything is "
     "plain, else None (lane >= 1: on that stream lane, after the value `after`)"},
    {"sizes", (PyCFunction)Launcher_sizes, METH_VARARGS,
     "sizes(nx, ny, nz) -> ((total, grid_x, total_y, total_z), groups) | None: the one "
     "dispatch a launch of that size makes (None: the general path sizes it)"},
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
