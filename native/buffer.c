/* cthreads._native — buffer: the Buffer type (a pooled allocation seen from Python).
 *
 * Python API:
 *   Buffer.nbytes -> int; Buffer.capacity -> int; Buffer.address -> int (device address)
 *   Buffer.host_visible -> bool; Buffer.kind -> 'device' | 'upload' | 'download' | 'export'
 *   Buffer.export_fd() -> int; Buffer.memory_size -> int (external.c)
 *   Buffer.released -> bool; Buffer.device -> the native Device
 *   Buffer.write(src, offset=0) -> None          any C-contiguous buffer-protocol object
 *   Buffer.read_into(dst, offset=0) -> None      any writable C-contiguous buffer
 *   Buffer.pack_list(lst, fmt, offset=0) / Buffer.unpack_into_list(lst, fmt, offset=0) (pack.c)
 *   Buffer.release() -> None                     back to the pool (idempotent; also on dealloc)
 * Copies above CT_NOGIL_BYTES run with the GIL released. Use after release() or after the
 * device shut down raises GpuUseAfterDestroy.
 */
#include "cthreads.h"

#include <string.h>

#define CT_NOGIL_BYTES (256 * 1024)

static const char *kind_names[CT_NKINDS] = {"device", "upload", "download", "export"};

PyObject *
ct_buffer_new(CtDevice *dev, Py_ssize_t nbytes, int kind)
{
    CtBuffer *b = PyObject_New(CtBuffer, dev->st->BufferType);
    if (b == NULL)
        return NULL;
    b->dev = (CtDevice *)Py_NewRef((PyObject *)dev);
    b->nbytes = nbytes;
    b->kind = kind;
    b->alloc = ct_alloc_get(dev, (VkDeviceSize)nbytes, kind);
    if (b->alloc == NULL) {
        Py_DECREF(b);
        return NULL;
    }
    return (PyObject *)b;
}

static void
buffer_release(CtBuffer *self)
{
    CtAlloc *a = self->alloc;
    self->alloc = NULL;
    if (a != NULL && self->dev != NULL && self->dev->state == CT_ALIVE)
        ct_alloc_put(self->dev, a);
}

static void
Buffer_dealloc(CtBuffer *self)
{
    buffer_release(self);
    ct_device_child_free((PyObject *)self, &self->dev);
}

/* checks that obj is a live Buffer of dev; returns its allocation */
CtAlloc *
ct_buffer_usable(CtState *st, PyObject *obj, CtDevice *dev, const char *what)
{
    if (!PyObject_TypeCheck(obj, st->BufferType)) {
        ct_raise(st->GpuArgumentTypeError, "%s must be a Buffer, got %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    CtBuffer *b = (CtBuffer *)obj;
    if (b->dev != dev) {
        ct_raise(b->dev->state == CT_ALIVE ? st->GpuInvalidArgument : st->GpuUseAfterDestroy,
                 "%s belongs to another device%s", what,
                 b->dev->state == CT_ALIVE ? "" : " that was shut down");
        return NULL;
    }
    if (ct_device_check(dev) < 0)
        return NULL;
    if (b->alloc == NULL) {
        ct_raise(st->GpuUseAfterDestroy, "%s was released; allocate a new buffer", what);
        return NULL;
    }
    return b->alloc;
}

static CtAlloc *
self_usable(CtBuffer *self)
{
    return ct_buffer_usable(self->dev->st, (PyObject *)self, self->dev, "the buffer");
}

static int
host_range(CtBuffer *self, CtAlloc *a, Py_ssize_t offset, Py_ssize_t n, const char *op)
{
    if (a->mapped == NULL) {
        ct_raise(self->dev->st->GpuInvalidArgument,
                 "cannot %s a %s buffer from the host: it is not host-visible on this device; "
                 "copy through an 'upload'/'download' buffer", op, kind_names[self->kind]);
        return -1;
    }
    if (offset < 0 || n < 0 || offset > self->nbytes || n > self->nbytes - offset) {
        ct_raise(self->dev->st->GpuInvalidArgument,
                 "%s of %zd bytes at offset %zd is out of range for a %zd-byte buffer", op, n,
                 offset, self->nbytes);
        return -1;
    }
    return 0;
}

static PyObject *
copy_host(CtBuffer *self, PyObject *obj, Py_ssize_t offset, int to_device)
{
    CtAlloc *a = self_usable(self);
    if (a == NULL)
        return NULL;
    Py_buffer view;
    int flags = to_device ? PyBUF_C_CONTIGUOUS : (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE);
    if (PyObject_GetBuffer(obj, &view, flags) < 0) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        ct_raise(self->dev->st->GpuArgumentTypeError,
                 "%s needs a C-contiguous%s buffer-protocol object (bytes, bytearray, numpy "
                 "array, array.array); got %s", to_device ? "write()" : "read_into()",
                 to_device ? "" : " writable", Py_TYPE(obj)->tp_name);
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        return NULL;
    }
    if (host_range(self, a, offset, view.len, to_device ? "write" : "read") < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    CtDevice *dev = self->dev;
    char *mem = (char *)a->mapped + offset;
    int rc = 0;
    if (view.len >= CT_NOGIL_BYTES) {
        dev->active++;
        Py_BEGIN_ALLOW_THREADS
        if (to_device) {
            memcpy(mem, view.buf, (size_t)view.len);
            rc = ct_sync_range(dev, a, (VkDeviceSize)offset, (VkDeviceSize)view.len, 1);
        } else {
            rc = ct_sync_range(dev, a, (VkDeviceSize)offset, (VkDeviceSize)view.len, 0);
            memcpy(view.buf, mem, (size_t)view.len);
        }
        Py_END_ALLOW_THREADS
        dev->active--;
    } else if (to_device) {
        memcpy(mem, view.buf, (size_t)view.len);
        rc = ct_sync_range(dev, a, (VkDeviceSize)offset, (VkDeviceSize)view.len, 1);
    } else {
        rc = ct_sync_range(dev, a, (VkDeviceSize)offset, (VkDeviceSize)view.len, 0);
        memcpy(view.buf, mem, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    if (rc < 0)
        return ct_raise(dev->st->VulkanOutOfMemory, "flushing/invalidating mapped memory failed");
    Py_RETURN_NONE;
}

/* write(src, offset=0) and read_into(dst, offset=0): kwlist names the object */
static PyObject *
copy_host_call(CtBuffer *self, PyObject *args, PyObject *kwds, char **kwlist, int to_buffer)
{
    PyObject *obj;
    Py_ssize_t offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|n", kwlist, &obj, &offset))
        return NULL;
    return copy_host(self, obj, offset, to_buffer);
}

static PyObject *
Buffer_write(CtBuffer *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"src", "offset", NULL};
    return copy_host_call(self, args, kwds, kwlist, 1);
}

static PyObject *
Buffer_read_into(CtBuffer *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"dst", "offset", NULL};
    return copy_host_call(self, args, kwds, kwlist, 0);
}

static PyObject *
Buffer_release(CtBuffer *self, PyObject *unused)
{
    buffer_release(self);
    Py_RETURN_NONE;
}

static PyObject *
Buffer_get_nbytes(CtBuffer *self, void *c)
{
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *
Buffer_get_capacity(CtBuffer *self, void *c)
{
    CtAlloc *a = self_usable(self);
    return a ? PyLong_FromUnsignedLongLong(a->capacity) : NULL;
}

static PyObject *
Buffer_get_address(CtBuffer *self, void *c)
{
    CtAlloc *a = self_usable(self);
    return a ? PyLong_FromUnsignedLongLong(a->address) : NULL;
}

static PyObject *
Buffer_get_host_visible(CtBuffer *self, void *c)
{
    CtAlloc *a = self_usable(self);
    return a ? PyBool_FromLong(a->mapped != NULL) : NULL;
}

static PyObject *
Buffer_get_kind(CtBuffer *self, void *c)
{
    return PyUnicode_FromString(kind_names[self->kind]);
}

static PyObject *
Buffer_get_released(CtBuffer *self, void *c)
{
    return PyBool_FromLong(self->alloc == NULL || self->dev->state != CT_ALIVE);
}

static PyObject *
Buffer_get_device(CtBuffer *self, void *c)
{
    return Py_NewRef((PyObject *)self->dev);
}

static PyObject *
Buffer_repr(CtBuffer *self)
{
    if (self->alloc == NULL || self->dev->state != CT_ALIVE)
        return PyUnicode_FromFormat("<Buffer %s %zd bytes, released>", kind_names[self->kind],
                                    self->nbytes);
    /* (PyUnicode_FromFormat has no %llx: it copied the rest of the format verbatim) */
    char address[24];
    snprintf(address, sizeof address, "0x%llx", (unsigned long long)self->alloc->address);
    return PyUnicode_FromFormat("<Buffer %s %zd bytes at %s%s>", kind_names[self->kind],
                                self->nbytes, address, self->alloc->mapped ? ", host-visible" : "");
}

static PyMethodDef Buffer_methods[] = {
    {"write", (PyCFunction)(void (*)(void))Buffer_write, METH_VARARGS | METH_KEYWORDS,
     "write(src, offset=0): copy a buffer-protocol object into the mapped buffer"},
    {"read_into", (PyCFunction)(void (*)(void))Buffer_read_into, METH_VARARGS | METH_KEYWORDS,
     "read_into(dst, offset=0): copy from the mapped buffer into a writable buffer"},
    {"pack_list", (PyCFunction)(void (*)(void))ct_buffer_pack_list, METH_VARARGS | METH_KEYWORDS,
     "pack_list(lst, fmt, offset=0): convert a list ('f' float32, 'i' int32, 'B' bool) into the buffer"},
    {"unpack_into_list", (PyCFunction)(void (*)(void))ct_buffer_unpack_into_list,
     METH_VARARGS | METH_KEYWORDS,
     "unpack_into_list(lst, fmt, offset=0): overwrite the list's items from the buffer"},
    {"export_fd", (PyCFunction)ct_buffer_export_fd, METH_NOARGS,
     "export_fd() -> int: a new POSIX fd of an 'export' buffer's memory (external.c)"},
    {"release", (PyCFunction)Buffer_release, METH_NOARGS,
     "release(): return the memory to the pool (idempotent)"},
    {NULL}
};

static PyGetSetDef Buffer_getset[] = {
    {"nbytes", (getter)Buffer_get_nbytes, NULL, "requested size in bytes", NULL},
    {"capacity", (getter)Buffer_get_capacity, NULL, "allocated size (size class)", NULL},
    {"address", (getter)Buffer_get_address, NULL, "64-bit device address", NULL},
    {"host_visible", (getter)Buffer_get_host_visible, NULL, "whether the buffer is mapped", NULL},
    {"kind", (getter)Buffer_get_kind, NULL, "'device', 'upload' or 'download'", NULL},
    {"released", (getter)Buffer_get_released, NULL, "whether release() was called", NULL},
    {"device", (getter)Buffer_get_device, NULL, "the native device", NULL},
    {"memory_size", (getter)ct_buffer_get_memory_size, NULL,
     "allocationSize of the buffer's VkDeviceMemory (external.c)", NULL},
    {NULL}
};

CT_TYPE_SPEC(ct_buffer_spec, "Buffer", CtBuffer, Py_TPFLAGS_DISALLOW_INSTANTIATION,
    {Py_tp_doc, "A device buffer from the pool; made by Device.buffer()."},
    {Py_tp_dealloc, Buffer_dealloc},
    {Py_tp_methods, Buffer_methods},
    {Py_tp_getset, Buffer_getset},
    {Py_tp_repr, Buffer_repr});
