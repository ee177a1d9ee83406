/* cthreads._native — pack: Python lists to and from mapped buffer memory, in C.
 *
 * Python API:
 *   Buffer.pack_list(lst, fmt, offset=0) -> None
 *       fmt 'f': float32 from float or int (not bool); 'i': int32 from int (not bool, must fit);
 *       'B': uint8 from bool only; 'd': float64 from float or int; 'q': int64 and 'I': uint32
 *       from int (not bool, must fit); 'e': float16 from float or int (rounded to nearest even,
 *       overflow gives +-inf as for float32); 'Q': uint64, 'b': int8, 'C': uint8 (not 'B', which
 *       is bool), 'h': int16, 'H': uint16 from int (not bool, must fit). lst may be a list or
 *       tuple.
 *   Buffer.unpack_into_list(lst, fmt, offset=0) -> None
 *       replaces every item of the list (len(lst) elements) with new float / int / bool objects.
 * Errors name the element index and the offending type, e.g. "element 3 is str, expected float";
 * the launch layer prefixes the parameter name. No intermediate Python objects are made.
 */
#include "cthreads.h"

#include <math.h>
#include <string.h>

#define CT_PREFETCH 16 /* items ahead to prefetch */

static int
elem_size(CtState *st, const char *fmt)
{
    if (fmt[0] != '\0' && fmt[1] == '\0') {
        switch (fmt[0]) {
        case 'f': case 'i': case 'I': return 4;
        case 'd': case 'q': case 'Q': return 8;
        case 'e': case 'h': case 'H': return 2;
        case 'B': case 'b': case 'C': return 1;
        }
    }
    ct_raise(st->GpuInvalidArgument, "unknown list format '%s': expected 'f' (float32), "
             "'i' (int32), 'B' (bool as uint8), 'd' (float64), 'q' (int64), 'I' (uint32), "
             "'e' (float16), 'Q' (uint64), 'b' (int8), 'C' (uint8), 'h' (int16) or 'H' (uint16)",
             fmt);
    return -1;
}

/* common checks; returns the destination pointer or NULL */
static char *
prepare(CtBuffer *self, Py_ssize_t n, const char *fmt, Py_ssize_t offset, int *size, CtAlloc **out)
{
    CtState *st = self->dev->st;
    CtAlloc *a = ct_buffer_usable(st, (PyObject *)self, self->dev, "the buffer");
    if (a == NULL)
        return NULL;
    if ((*size = elem_size(st, fmt)) < 0)
        return NULL;
    if (a->mapped == NULL) {
        ct_raise(st->GpuInvalidArgument, "the buffer is not host-visible; use an 'upload' or "
                 "'download' buffer for lists");
        return NULL;
    }
    if (offset < 0 || offset > self->nbytes || n > (self->nbytes - offset) / *size) {
        ct_raise(st->GpuInvalidArgument, "%zd elements of %d bytes at offset %zd do not fit in a "
                 "%zd-byte buffer", n, *size, offset, self->nbytes);
        return NULL;
    }
    *out = a;
    return (char *)a->mapped + offset;
}

static PyObject *
bad_elem(CtState *st, Py_ssize_t i, PyObject *item, const char *expected)
{
    return ct_raise(st->GpuArgumentTypeError, "element %zd is %s, expected %s", i,
                    Py_TYPE(item)->tp_name, expected);
}

PyObject *
ct_buffer_pack_list(CtBuffer *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"lst", "fmt", "offset", NULL};
    PyObject *lst;
    const char *fmt;
    Py_ssize_t offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Os|n", kwlist, &lst, &fmt, &offset))
        return NULL;
    CtState *st = self->dev->st;
    if (!PyList_Check(lst) && !PyTuple_Check(lst))
        return ct_raise(st->GpuArgumentTypeError, "pack_list needs a list, got %s",
                        Py_TYPE(lst)->tp_name);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(lst);
    PyObject **items = PySequence_Fast_ITEMS(lst);
    int size;
    CtAlloc *a;
    char *dst = prepare(self, n, fmt, offset, &size, &a);
    if (dst == NULL)
        return NULL;
    Py_ssize_t pf = n >= 4096 ? CT_PREFETCH : n; /* (short lists are cache-hot) */
    /* items are read directly: nothing here calls back into Python code that could resize
       the list (PyLong/PyFloat conversions of exact-type subclasses use their C values) */
    switch (fmt[0]) {
    case 'f': {
        float *out = (float *)dst;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n) /* the items are scattered objects: fetch ahead */
                __builtin_prefetch(items[i + pf]);
            if (PyFloat_Check(it))
                out[i] = (float)PyFloat_AS_DOUBLE(it);
            else if (PyLong_Check(it) && !PyBool_Check(it)) {
                double d = PyLong_AsDouble(it);
                if (d == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return ct_raise(st->GpuInvalidArgument,
                                    "element %zd is an int too large for float32", i);
                }
                out[i] = (float)d;
            } else
                return bad_elem(st, i, it, "float");
        }
        break;
    }
    case 'i': {
        int32_t *out = (int32_t *)dst;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n)
                __builtin_prefetch(items[i + pf]);
            if (!PyLong_Check(it) || PyBool_Check(it))
                return bad_elem(st, i, it, "int");
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(it, &overflow);
            if (overflow || v < INT32_MIN || v > INT32_MAX) {
                if (v == -1 && PyErr_Occurred())
                    return NULL;
                PyObject *r = PyObject_Repr(it);
                if (r == NULL)
                    return NULL;
                ct_raise(st->GpuInvalidArgument,
                         "element %zd is %.60U, outside the int32 range [-2147483648, 2147483647]",
                         i, r);
                Py_DECREF(r);
                return NULL;
            }
            out[i] = (int32_t)v;
        }
        break;
    }
    case 'd': {
        double *out = (double *)dst;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n)
                __builtin_prefetch(items[i + pf]);
            if (PyFloat_Check(it))
                out[i] = PyFloat_AS_DOUBLE(it);
            else if (PyLong_Check(it) && !PyBool_Check(it)) {
                double d = PyLong_AsDouble(it);
                if (d == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return ct_raise(st->GpuInvalidArgument,
                                    "element %zd is an int too large for float64", i);
                }
                out[i] = d;
            } else
                return bad_elem(st, i, it, "float");
        }
        break;
    }
    case 'q': case 'I': {
        int wide = fmt[0] == 'q';
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n)
                __builtin_prefetch(items[i + pf]);
            if (!PyLong_Check(it) || PyBool_Check(it))
                return bad_elem(st, i, it, "int");
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(it, &overflow);
            if (v == -1 && PyErr_Occurred())
                return NULL;
            if (overflow || (!wide && (v < 0 || v > (long long)UINT32_MAX))) {
                PyObject *r = PyObject_Repr(it);
                if (r == NULL)
                    return NULL;
                if (wide)
                    ct_raise(st->GpuInvalidArgument,
                             "element %zd is %.60U, outside the int64 range [-2**63, 2**63 - 1]",
                             i, r);
                else
                    ct_raise(st->GpuInvalidArgument,
                             "element %zd is %.60U, outside the uint32 range [0, 4294967295]",
                             i, r);
                Py_DECREF(r);
                return NULL;
            }
            if (wide)
                ((int64_t *)dst)[i] = (int64_t)v;
            else
                ((uint32_t *)dst)[i] = (uint32_t)v;
        }
        break;
    }
    case 'e': {
        char *out = dst;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n)
                __builtin_prefetch(items[i + pf]);
            double d;
            if (PyFloat_Check(it))
                d = PyFloat_AS_DOUBLE(it);
            else if (PyLong_Check(it) && !PyBool_Check(it)) {
                d = PyLong_AsDouble(it);
                if (d == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();
                    d = _PyLong_Sign(it) < 0 ? -HUGE_VAL : HUGE_VAL;
                }
            } else
                return bad_elem(st, i, it, "float");
            if (PyFloat_Pack2(d, out + 2 * i, 1) < 0) { /* beyond float16: +-inf, as float32 */
                PyErr_Clear();
                uint16_t inf = d < 0 ? 0xFC00 : 0x7C00;
                memcpy(out + 2 * i, &inf, 2);
            }
        }
        break;
    }
    case 'Q': {
        uint64_t *out = (uint64_t *)dst;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n)
                __builtin_prefetch(items[i + pf]);
            if (!PyLong_Check(it) || PyBool_Check(it))
                return bad_elem(st, i, it, "int");
            unsigned long long v = PyLong_AsUnsignedLongLong(it);
            if (v == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                PyObject *r = PyObject_Repr(it);
                if (r == NULL)
                    return NULL;
                ct_raise(st->GpuInvalidArgument,
                         "element %zd is %.60U, outside the uint64 range [0, 2**64 - 1]", i, r);
                Py_DECREF(r);
                return NULL;
            }
            out[i] = (uint64_t)v;
        }
        break;
    }
    case 'b': case 'C': case 'h': case 'H': {
        long long lo = fmt[0] == 'b' ? -128 : fmt[0] == 'h' ? -32768 : 0;
        long long hi = fmt[0] == 'b' ? 127 : fmt[0] == 'C' ? 255 : fmt[0] == 'h' ? 32767 : 65535;
        const char *name = fmt[0] == 'b' ? "int8" : fmt[0] == 'C' ? "uint8"
                           : fmt[0] == 'h' ? "int16" : "uint16";
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (i + pf < n)
                __builtin_prefetch(items[i + pf]);
            if (!PyLong_Check(it) || PyBool_Check(it))
                return bad_elem(st, i, it, "int");
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(it, &overflow);
            if (v == -1 && PyErr_Occurred())
                return NULL;
            if (overflow || v < lo || v > hi) {
                PyObject *r = PyObject_Repr(it);
                if (r == NULL)
                    return NULL;
                ct_raise(st->GpuInvalidArgument, "element %zd is %.60U, outside the %s range "
                         "[%lld, %lld]", i, r, name, lo, hi);
                Py_DECREF(r);
                return NULL;
            }
            if (size == 1)
                ((int8_t *)dst)[i] = (int8_t)(uint8_t)(v & 0xFF);
            else
                ((int16_t *)dst)[i] = (int16_t)(uint16_t)(v & 0xFFFF);
        }
        break;
    }
    default: { /* 'B' */
        uint8_t *out = (uint8_t *)dst;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = items[i];
            if (it == Py_True)
                out[i] = 1;
            else if (it == Py_False)
                out[i] = 0;
            else
                return bad_elem(st, i, it, "bool");
        }
        break;
    }
    }
    if (ct_sync_range(self->dev, a, (VkDeviceSize)offset, (VkDeviceSize)(n * size), 1) < 0)
        return ct_raise(st->VulkanOutOfMemory, "flushing mapped memory failed");
    Py_RETURN_NONE;
}

PyObject *
ct_buffer_unpack_into_list(CtBuffer *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"lst", "fmt", "offset", NULL};
    PyObject *lst;
    const char *fmt;
    Py_ssize_t offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Os|n", kwlist, &lst, &fmt, &offset))
        return NULL;
    CtState *st = self->dev->st;
    if (!PyList_Check(lst))
        return ct_raise(st->GpuArgumentTypeError, "unpack_into_list needs a list, got %s",
                        Py_TYPE(lst)->tp_name);
    Py_ssize_t n = PyList_GET_SIZE(lst);
    int size;
    CtAlloc *a;
    const char *src = prepare(self, n, fmt, offset, &size, &a);
    if (src == NULL)
        return NULL;
    if (ct_sync_range(self->dev, a, (VkDeviceSize)offset, (VkDeviceSize)(n * size), 0) < 0)
        return ct_raise(st->VulkanOutOfMemory, "invalidating mapped memory failed");
    Py_ssize_t pf = n >= 4096 ? CT_PREFETCH : n;
    if (fmt[0] == 'f') {
        /* An exact float that only this list references is overwritten in place: nothing
           else can observe it, and it saves an allocation and a free per element (after the
           first writeback every item is such a float). Anything else is replaced by a new
           float, whose old item is dropped: that may run arbitrary code (a __del__) that
           shrinks the list, so the size is re-checked every step. */
        for (Py_ssize_t i = 0; i < n && i < PyList_GET_SIZE(lst); i++) {
            PyObject **slot = &PySequence_Fast_ITEMS(lst)[i];
            if (i + pf < n && i + pf < PyList_GET_SIZE(lst))
                __builtin_prefetch(PySequence_Fast_ITEMS(lst)[i + pf], 1);
            float f;
            memcpy(&f, src + 4 * i, 4);
            PyObject *old = *slot;
            double d = (double)f;
            if (PyFloat_CheckExact(old)) {
                /* the same value (bit for bit: -0.0 and NaN payloads kept) needs no write:
                   a sync of unchanged data allocates nothing, even for shared floats */
                if (memcmp(&((PyFloatObject *)old)->ob_fval, &d, sizeof d) == 0)
                    continue;
#ifndef Py_GIL_DISABLED
                if (Py_REFCNT(old) == 1) {
                    ((PyFloatObject *)old)->ob_fval = d;
                    continue;
                }
#endif
            }
            PyObject *v = PyFloat_FromDouble(d);
            if (v == NULL)
                return NULL;
            *slot = v;
            Py_XDECREF(old);
            if (self->alloc != a || self->dev->state != CT_ALIVE) /* a finalizer released it */
                return ct_raise(st->GpuUseAfterDestroy, "the buffer was released during unpacking");
        }
        Py_RETURN_NONE;
    }
    /* Replacing an item drops the old one, which may run arbitrary code (a __del__) that
       shrinks the list: re-check the size every step. */
    for (Py_ssize_t i = 0; i < n && i < PyList_GET_SIZE(lst); i++) {
        PyObject *v, *cur = PyList_GET_ITEM(lst, i);
        switch (fmt[0]) {
        case 'i': {
            int32_t x;
            memcpy(&x, src + 4 * i, 4);
            if (PyLong_CheckExact(cur)) { /* an equal int stays: no allocation */
                int overflow = 0;
                long have = PyLong_AsLongAndOverflow(cur, &overflow);
                if (!overflow && have == (long)x)
                    continue;
                if (have == -1 && PyErr_Occurred())
                    PyErr_Clear();
            }
            v = PyLong_FromLong((long)x);
            break;
        }
        case 'd': {
            double d;
            memcpy(&d, src + 8 * i, 8);
            v = PyFloat_FromDouble(d);
            break;
        }
        case 'q': {
            int64_t x;
            memcpy(&x, src + 8 * i, 8);
            v = PyLong_FromLongLong((long long)x);
            break;
        }
        case 'I': {
            uint32_t x;
            memcpy(&x, src + 4 * i, 4);
            v = PyLong_FromUnsignedLong((unsigned long)x);
            break;
        }
        case 'e': {
            double d = PyFloat_Unpack2(src + 2 * i, 1);
            if (d == -1.0 && PyErr_Occurred())
                return NULL;
            v = PyFloat_FromDouble(d);
            break;
        }
        case 'Q': {
            uint64_t x;
            memcpy(&x, src + 8 * i, 8);
            v = PyLong_FromUnsignedLongLong((unsigned long long)x);
            break;
        }
        case 'b':
            v = PyLong_FromLong((long)((const int8_t *)src)[i]);
            break;
        case 'C':
            v = PyLong_FromLong((long)((const uint8_t *)src)[i]);
            break;
        case 'h': {
            int16_t x;
            memcpy(&x, src + 2 * i, 2);
            v = PyLong_FromLong((long)x);
            break;
        }
        case 'H': {
            uint16_t x;
            memcpy(&x, src + 2 * i, 2);
            v = PyLong_FromLong((long)x);
            break;
        }
        default:
            v = ((const uint8_t *)src)[i] != 0 ? Py_True : Py_False;
            if (cur == v)
                continue;
            Py_INCREF(v);
            break;
        }
        if (v == NULL)
            return NULL;
        PyObject *old = PyList_GET_ITEM(lst, i);
        PyList_SET_ITEM(lst, i, v);
        Py_XDECREF(old);
        if (self->alloc != a || self->dev->state != CT_ALIVE) /* a finalizer released it */
            return ct_raise(st->GpuUseAfterDestroy, "the buffer was released during unpacking");
    }
    Py_RETURN_NONE;
}
