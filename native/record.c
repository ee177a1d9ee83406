/* cthreads._native — record: command tuples parsed into CtOps, and CtOps recorded.
 *
 * Python API: none directly (the command tuples of Device.submit, see submit.c):
 *   ('dispatch', pipeline, push_bytes, (gx, gy, gz))
 *   ('copy', src, dst, nbytes, src_offset, dst_offset)
 *   ('fill', buffer, offset, nbytes, u32_value)
 * Parsing runs with the GIL and no lock held (it raises); recording runs under the device's
 * state_lock and touches no Python object. Every command is preceded by a full
 * compute/transfer memory barrier, so work on the queue is stream-ordered. A dispatch binds
 * its pipeline and pushes its constants only where the command buffer does not have them in
 * place already (CtRecState).
 */
#include "cthreads.h"

#include <string.h>

static int
parse_groups(CtDevice *dev, PyObject *g, uint32_t out[3], Py_ssize_t idx)
{
    CtState *st = dev->st;
    PyObject *fast = PySequence_Fast(g, "");
    if (fast == NULL) {
        PyErr_Clear();
        ct_raise(st->GpuArgumentTypeError, "command %zd: groups must be a tuple (gx, gy, gz), got %s",
                 idx, Py_TYPE(g)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int rc = 0;
    if (n < 1 || n > 3) {
        ct_raise(st->GpuInvalidArgument, "command %zd: groups must have 1 to 3 entries", idx);
        rc = -1;
    }
    for (Py_ssize_t k = 0; rc == 0 && k < 3; k++) {
        long long v = 1;
        if (k < n) {
            PyObject *it = PySequence_Fast_GET_ITEM(fast, k);
            v = PyLong_Check(it) ? PyLong_AsLongLong(it) : -2;
            if (v == -1 && PyErr_Occurred())
                PyErr_Clear(), v = -2;
        }
        if (v < 0 || v > dev->props.limits.maxComputeWorkGroupCount[k]) {
            ct_raise(st->GpuInvalidArgument, "command %zd: group count %c must be an int in "
                     "[0, %u] (maxComputeWorkGroupCount)", idx, "xyz"[k],
                     dev->props.limits.maxComputeWorkGroupCount[k]);
            rc = -1;
        } else
            out[k] = (uint32_t)v;
    }
    Py_DECREF(fast);
    return rc;
}

static int
get_size(CtState *st, PyObject *o, Py_ssize_t idx, const char *what, VkDeviceSize *out)
{
    long long v = PyLong_Check(o) ? PyLong_AsLongLong(o) : -1;
    if (v < 0) {
        PyErr_Clear();
        ct_raise(st->GpuInvalidArgument, "command %zd: %s must be an int >= 0", idx, what);
        return -1;
    }
    *out = (VkDeviceSize)v;
    return 0;
}

int
ct_parse_op(CtDevice *dev, PyObject *cmd, Py_ssize_t idx, CtOp *op)
{
    CtState *st = dev->st;
    op->src = op->dst = NULL;
    op->pipe = NULL;
    if (!PyTuple_Check(cmd) || PyTuple_GET_SIZE(cmd) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(cmd, 0))) {
        ct_raise(st->GpuArgumentTypeError, "command %zd must be a tuple starting with 'dispatch', "
                 "'copy' or 'fill', got %s", idx, Py_TYPE(cmd)->tp_name);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(cmd, 0));
    Py_ssize_t n = PyTuple_GET_SIZE(cmd);
    if (name == NULL)
        return -1;
    if (strcmp(name, "dispatch") == 0 && n == 4) {
        PyObject *p = PyTuple_GET_ITEM(cmd, 1);
        if (!PyObject_TypeCheck(p, st->PipelineType)) {
            ct_raise(st->GpuArgumentTypeError, "command %zd: expected a Pipeline, got %s", idx,
                     Py_TYPE(p)->tp_name);
            return -1;
        }
        op->kind = 0;
        op->pipe = (CtPipeline *)p;
        if (op->pipe->dev != dev || op->pipe->pipeline == VK_NULL_HANDLE) {
            ct_raise(st->GpuUseAfterDestroy, "command %zd: the pipeline belongs to a device that "
                     "was shut down; create it again", idx);
            return -1;
        }
        PyObject *po = PyTuple_GET_ITEM(cmd, 2);
        Py_buffer push = {0};
        if (PyBytes_CheckExact(po)) { /* the common case: no buffer-protocol round trip */
            push.buf = PyBytes_AS_STRING(po);
            push.len = PyBytes_GET_SIZE(po);
        } else if (PyObject_GetBuffer(po, &push, PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            ct_raise(st->GpuArgumentTypeError, "command %zd: push constants must be bytes-like", idx);
            return -1;
        }
        int bad = (size_t)push.len > op->pipe->push_size;
        if (bad)
            ct_raise(st->GpuInvalidArgument, "command %zd: %zd bytes of push constants for a "
                     "pipeline declared with push_size %u", idx, push.len, op->pipe->push_size);
        else {
            memcpy(op->push, push.buf, (size_t)push.len);
            memset(op->push + push.len, 0, op->pipe->push_size - (size_t)push.len);
        }
        if (push.obj != NULL)
            PyBuffer_Release(&push);
        if (bad)
            return -1;
        return parse_groups(dev, PyTuple_GET_ITEM(cmd, 3), op->groups, idx);
    }
    if (strcmp(name, "copy") == 0 && n == 6) {
        op->kind = 1;
        if (!(op->src = ct_buffer_usable(st, PyTuple_GET_ITEM(cmd, 1), dev, "copy source")) ||
            !(op->dst = ct_buffer_usable(st, PyTuple_GET_ITEM(cmd, 2), dev, "copy destination")) ||
            get_size(st, PyTuple_GET_ITEM(cmd, 3), idx, "nbytes", &op->nbytes) < 0 ||
            get_size(st, PyTuple_GET_ITEM(cmd, 4), idx, "src_offset", &op->src_off) < 0 ||
            get_size(st, PyTuple_GET_ITEM(cmd, 5), idx, "dst_offset", &op->dst_off) < 0)
            return -1;
        VkDeviceSize sn = (VkDeviceSize)((CtBuffer *)PyTuple_GET_ITEM(cmd, 1))->nbytes;
        VkDeviceSize dn = (VkDeviceSize)((CtBuffer *)PyTuple_GET_ITEM(cmd, 2))->nbytes;
        if (op->src_off > sn || op->nbytes > sn - op->src_off || op->dst_off > dn ||
            op->nbytes > dn - op->dst_off) {
            ct_raise(st->GpuInvalidArgument, "command %zd: copy of %llu bytes (from offset %llu of "
                     "%llu bytes to offset %llu of %llu bytes) is out of range", idx,
                     (unsigned long long)op->nbytes, (unsigned long long)op->src_off,
                     (unsigned long long)sn, (unsigned long long)op->dst_off, (unsigned long long)dn);
            return -1;
        }
        if (op->src == op->dst && op->src_off < op->dst_off + op->nbytes &&
            op->dst_off < op->src_off + op->nbytes) {
            ct_raise(st->GpuInvalidArgument, "command %zd: copy regions overlap", idx);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "fill") == 0 && n == 5) {
        op->kind = 2;
        PyObject *v = PyTuple_GET_ITEM(cmd, 4);
        if (!(op->dst = ct_buffer_usable(st, PyTuple_GET_ITEM(cmd, 1), dev, "fill buffer")) ||
            get_size(st, PyTuple_GET_ITEM(cmd, 2), idx, "offset", &op->dst_off) < 0 ||
            get_size(st, PyTuple_GET_ITEM(cmd, 3), idx, "nbytes", &op->nbytes) < 0)
            return -1;
        long long x = PyLong_Check(v) ? PyLong_AsLongLong(v) : -1;
        if (x < 0 || x > (long long)UINT32_MAX) {
            PyErr_Clear();
            ct_raise(st->GpuInvalidArgument, "command %zd: fill value must be an int in [0, 2**32)", idx);
            return -1;
        }
        op->fill = (uint32_t)x;
        VkDeviceSize bn = (VkDeviceSize)((CtBuffer *)PyTuple_GET_ITEM(cmd, 1))->nbytes;
        int to_end = op->dst_off + op->nbytes == bn;
        if (op->dst_off > bn || op->nbytes > bn - op->dst_off || op->dst_off % 4 != 0 ||
            (op->nbytes % 4 != 0 && !to_end)) {
            ct_raise(st->GpuInvalidArgument, "command %zd: fill of %llu bytes at offset %llu of a "
                     "%llu-byte buffer must be in range, with offset and size multiples of 4",
                     idx, (unsigned long long)op->nbytes, (unsigned long long)op->dst_off,
                     (unsigned long long)bn);
            return -1;
        }
        op->nbytes = (op->nbytes + 3) / 4 * 4; /* to the end: stays inside the capacity */
        return 0;
    }
    ct_raise(st->GpuInvalidArgument, "command %zd: unknown command '%s' with %zd fields; expected "
             "('dispatch', pipeline, push, groups), ('copy', src, dst, nbytes, src_off, dst_off) "
             "or ('fill', buffer, offset, nbytes, value)", idx, name, n);
    return -1;
}

/* A memory barrier from earlier copies and kernels to later ones (flags 0) or to host reads
   (CT_BAR_HOST). CT_BAR_COPY: in a copy-lane command buffer, whose queue may be transfer-only
   (no compute stage or shader access there): transfer stages only. Work of other queues is
   ordered by semaphores, whose waits cover every stage. */
void
ct_record_barrier(CtDevice *dev, VkCommandBuffer cb, int flags)
{
    int to_host = flags & CT_BAR_HOST;
    VkAccessFlags rw = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags work = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT};
    if (!(flags & CT_BAR_COPY)) {
        rw |= VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        work |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
        mb.srcAccessMask |= VK_ACCESS_SHADER_WRITE_BIT;
    }
    mb.dstAccessMask = to_host ? VK_ACCESS_HOST_READ_BIT : rw;
    dev->fn.vkCmdPipelineBarrier(cb, work, to_host ? VK_PIPELINE_STAGE_HOST_BIT : work, 0, 1, &mb,
                                 0, NULL, 0, NULL);
}

/* A command buffer's recording begins: nothing bound, nothing pushed */
void
ct_record_reset(CtRecState *rec)
{
    rec->pipeline = VK_NULL_HANDLE;
    rec->layout = VK_NULL_HANDLE;
    rec->push_size = 0;
}

/* Whether op's push constants are already in place: the last push in this command buffer was
   of the same bytes with the same pipeline layout (a pipeline bound since then with that
   layout keeps them: layouts compatible for push constants). A launch loop passing the same
   scalars and lists records vkCmdPushConstants once per batch. */
static int
pushed_already(const CtRecState *rec, const CtPipeline *pipe, const uint8_t *push)
{
    return rec->layout == pipe->layout && rec->push_size == pipe->push_size &&
           memcmp(rec->push, push, pipe->push_size) == 0;
}

void
ct_record_ops(CtDevice *dev, VkCommandBuffer cb, const CtOp *ops, Py_ssize_t n, CtRecState *rec,
              int bar)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        ct_record_barrier(dev, cb, bar); /* before the first: orders after earlier work */
        const CtOp *op = &ops[i];
        if (op->kind == 0) {
            if (op->pipe->pipeline != rec->pipeline) { /* stays bound across the batch */
                dev->fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, op->pipe->pipeline);
                rec->pipeline = op->pipe->pipeline;
            }
            if (op->pipe->push_size && !pushed_already(rec, op->pipe, op->push)) {
                dev->fn.vkCmdPushConstants(cb, op->pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                           op->pipe->push_size, op->push);
                rec->layout = op->pipe->layout;
                rec->push_size = op->pipe->push_size;
                memcpy(rec->push, op->push, op->pipe->push_size);
            }
            if (op->groups[0] && op->groups[1] && op->groups[2])
                dev->fn.vkCmdDispatch(cb, op->groups[0], op->groups[1], op->groups[2]);
        } else if (op->kind == 1) {
            if (op->nbytes) {
                VkBufferCopy region = {.srcOffset = op->src_off, .dstOffset = op->dst_off,
                                       .size = op->nbytes};
                dev->fn.vkCmdCopyBuffer(cb, op->src->buffer, op->dst->buffer, 1, &region);
            }
        } else if (op->nbytes) {
            dev->fn.vkCmdFillBuffer(cb, op->dst->buffer, op->dst_off, op->nbytes, op->fill);
        }
    }
}
