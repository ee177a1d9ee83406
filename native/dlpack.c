/* cthreads._native — dlpack: DLPack capsules of device memory (issue 17), the 0.8 ABI
 * "dltensor" and the 1.0 ABI "dltensor_versioned".
 *
 * Python API:
 *   dlpack_capsule(owner, data, shape, dtype, device, versioned=False) -> PyCapsule
 *       "dltensor" (DLPack 0.8 ABI) or, versioned, "dltensor_versioned" (DLPack 1.0, for a
 *       consumer that passed max_version >= (1, 0));
 *       dtype = (code, bits, lanes), device = (device_type, device_id); the capsule's
 *       DLManagedTensor holds a reference to `owner` until its consumer calls the deleter (or,
 *       unconsumed, until the capsule dies)
 */
#include "cthreads.h"

#include <string.h>

typedef struct {
    int32_t device_type, device_id;
} CtDLDevice;

typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} CtDLDataType;

typedef struct {
    void *data;
    CtDLDevice device;
    int32_t ndim;
    CtDLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} CtDLTensor;

typedef struct CtDLManaged {
    CtDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct CtDLManaged *self);
} CtDLManaged;

/* DLPack >= 1.0: what a consumer asking with max_version >= (1, 0) gets */
typedef struct CtDLManagedVersioned {
    struct { uint32_t major, minor; } version;
    void *manager_ctx;
    void (*deleter)(struct CtDLManagedVersioned *self);
    uint64_t flags;
    CtDLTensor dl_tensor;
} CtDLManagedVersioned;

/* a consumer is done with the memory (either DLPack form): may run on any thread, with or
   without the GIL. Drops the array it holds, frees the shape and the managed struct `m`. */
static void
dl_release(void *manager_ctx, int64_t *shape, void *m)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)manager_ctx);
    PyMem_RawFree(shape);
    PyMem_RawFree(m);
    PyGILState_Release(g);
}

/* The two ends of a DLPack form's life: prefix##_deleter, which the consumer calls when done,
   and prefix##_capsule_destructor, for a capsule nobody consumed (still named `name`), which
   owns its tensor. Both forms hold the same fields under different layouts. */
#define DL_FORM_RELEASE(prefix, ctype, name)                                                \
    static void prefix##_deleter(ctype *m)                                                  \
    {                                                                                       \
        dl_release(m->manager_ctx, m->dl_tensor.shape, m);                                  \
    }                                                                                       \
    static void prefix##_capsule_destructor(PyObject *capsule)                              \
    {                                                                                       \
        if (!PyCapsule_IsValid(capsule, name))                                              \
            return;                                                                         \
        ctype *m = PyCapsule_GetPointer(capsule, name);                                     \
        if (m != NULL && m->deleter != NULL)                                                \
            m->deleter(m);                                                                  \
    }

DL_FORM_RELEASE(dlv, CtDLManagedVersioned, "dltensor_versioned")
DL_FORM_RELEASE(dl, CtDLManaged, "dltensor")

PyObject *
ct_dlpack_capsule(PyObject *module, PyObject *args)
{
    PyObject *owner, *shape;
    unsigned long long data;
    int code, bits, lanes, dtype_dev, dev_id, versioned = 0;
    if (!PyArg_ParseTuple(args, "OKO!(iii)(ii)|p", &owner, &data, &PyTuple_Type, &shape, &code,
                          &bits, &lanes, &dtype_dev, &dev_id, &versioned))
        return NULL;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    void *m = versioned ? PyMem_RawCalloc(1, sizeof(CtDLManagedVersioned))
                        : PyMem_RawCalloc(1, sizeof(CtDLManaged));
    int64_t *dims = PyMem_RawCalloc(ndim ? (size_t)ndim : 1, sizeof *dims);
    if (m == NULL || dims == NULL) {
        PyMem_RawFree(m);
        PyMem_RawFree(dims);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            PyMem_RawFree(m);
            PyMem_RawFree(dims);
            return NULL;
        }
    }
    CtDLTensor t = {.data = (void *)(uintptr_t)data,
                    .device = {dtype_dev, dev_id},
                    .ndim = (int32_t)ndim,
                    .dtype = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes},
                    .shape = dims,
                    .strides = NULL, /* compact row-major */
                    .byte_offset = 0};
    PyObject *cap;
    if (versioned) {
        CtDLManagedVersioned *v = m;
        v->version.major = 1;
        v->version.minor = 0;
        v->dl_tensor = t;
        v->manager_ctx = Py_NewRef(owner);
        v->deleter = dlv_deleter;
        v->flags = 0; /* writable, not a copy */
        cap = PyCapsule_New(v, "dltensor_versioned", dlv_capsule_destructor);
    } else {
        CtDLManaged *u = m;
        u->dl_tensor = t;
        u->manager_ctx = Py_NewRef(owner);
        u->deleter = dl_deleter;
        cap = PyCapsule_New(u, "dltensor", dl_capsule_destructor);
    }
    if (cap == NULL) {
        Py_DECREF(owner);
        PyMem_RawFree(dims);
        PyMem_RawFree(m);
    }
    return cap;
}
