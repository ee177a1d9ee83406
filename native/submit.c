/* cthreads._native — submit: the command ring, stream-ordered submission and timeline waits.
 *
 * Python API:
 *   Device.submit(commands, keep=(), timed=False) -> int   timeline value of completion
 *       commands: ('dispatch', pipeline, push_bytes, (gx, gy, gz))
 *                 ('copy', src, dst, nbytes, src_offset, dst_offset)
 *                 ('fill', buffer, offset, nbytes, u32_value)
 *   Device.wait(value, timeout=None) -> bool   spins briefly, then blocks; GIL released
 *   Device.completed() -> int; Device.elapsed_ms(value) -> float | None
 * Every submission starts with a full compute/transfer memory barrier and has one between
 * consecutive commands, and ends with a barrier to host reads, so work on the queue is
 * stream-ordered. Command buffers come from a ring made once; a slot and the objects it keeps
 * alive are recycled when its timeline value completes.
 */
#include "cthreads.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#define CT_SPIN_NS 30000ull

typedef struct {
    int kind; /* 0 dispatch, 1 copy, 2 fill */
    CtPipeline *pipe;
    uint32_t groups[3];
    CtAlloc *src, *dst;
    VkDeviceSize nbytes, src_off, dst_off;
    uint32_t fill;
    uint8_t push[CT_MAX_PUSH];
} CtOp;

int
ct_ring_create(CtDevice *dev)
{
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE, .initialValue = 0};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    VkResult r = dev->fn.vkCreateSemaphore(dev->device, &sci, NULL, &dev->timeline);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkCreateSemaphore (timeline)");
        return -1;
    }
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = dev->queue_family};
    r = dev->fn.vkCreateCommandPool(dev->device, &pci, NULL, &dev->cmd_pool);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkCreateCommandPool");
        return -1;
    }
    VkCommandBuffer cbs[CT_RING];
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = CT_RING};
    r = dev->fn.vkAllocateCommandBuffers(dev->device, &ai, cbs);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkAllocateCommandBuffers");
        return -1;
    }
    for (int i = 0; i < CT_RING; i++)
        dev->ring[i].cb = cbs[i];
    if (dev->timestamp_bits > 0) {
        VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2 * CT_RING};
        r = dev->fn.vkCreateQueryPool(dev->device, &qci, NULL, &dev->query_pool);
        if (r != VK_SUCCESS) {
            ct_raise_vk(dev->st, r, "vkCreateQueryPool");
            return -1;
        }
    }
    return 0;
}

void
ct_ring_destroy(CtDevice *dev)
{
    for (int i = 0; i < CT_RING; i++) {
        PyObject *keep = dev->ring[i].keep;
        dev->ring[i].keep = NULL;
        dev->ring[i].value = 0;
        Py_XDECREF(keep);
    }
    if (dev->device == VK_NULL_HANDLE)
        return;
    if (dev->query_pool != VK_NULL_HANDLE)
        dev->fn.vkDestroyQueryPool(dev->device, dev->query_pool, NULL);
    if (dev->cmd_pool != VK_NULL_HANDLE)
        dev->fn.vkDestroyCommandPool(dev->device, dev->cmd_pool, NULL);
    if (dev->timeline != VK_NULL_HANDLE)
        dev->fn.vkDestroySemaphore(dev->device, dev->timeline, NULL);
    dev->query_pool = VK_NULL_HANDLE;
    dev->cmd_pool = VK_NULL_HANDLE;
    dev->timeline = VK_NULL_HANDLE;
}

static void
record_timing(CtDevice *dev, int i, uint64_t value)
{
    uint64_t t[2];
    VkResult r = dev->fn.vkGetQueryPoolResults(dev->device, dev->query_pool, (uint32_t)(2 * i), 2,
                                               sizeof t, t, sizeof t[0], VK_QUERY_RESULT_64_BIT);
    if (r != VK_SUCCESS)
        return;
    uint64_t mask = dev->timestamp_bits >= 64 ? ~0ull : ((1ull << dev->timestamp_bits) - 1);
    uint64_t ticks = (t[1] - t[0]) & mask;
    dev->timings[value % CT_TIMINGS].value = value;
    dev->timings[value % CT_TIMINGS].ms = (double)ticks * dev->props.limits.timestampPeriod / 1e6;
}

/* Recycle slots whose value completed (dev->completed must be fresh enough). */
void
ct_ring_retire(CtDevice *dev)
{
    for (int i = 0; i < CT_RING; i++) {
        CtSlot *s = &dev->ring[i];
        if (s->value == 0 || s->value > dev->completed) /* free, in flight or recording */
            continue;
        if (s->timed)
            record_timing(dev, i, s->value);
        PyObject *keep = s->keep;
        s->keep = NULL;
        s->value = 0;
        s->timed = 0;
        Py_XDECREF(keep); /* may run Python code: the slot is already consistent */
    }
    if (dev->deferred != NULL && dev->state == CT_ALIVE) {
        for (CtAlloc **pp = &dev->deferred; *pp != NULL;) {
            CtAlloc *a = *pp;
            if (a->last_use <= dev->completed) {
                *pp = a->free_next;
                ct_alloc_free(dev, a);
            } else
                pp = &a->free_next;
        }
    }
}

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait without the GIL until value completes or timeout_ns passes. */
static VkResult
wait_value(CtDevice *dev, uint64_t value, uint64_t timeout_ns)
{
    VkResult r = VK_SUCCESS;
    dev->active++;
    Py_BEGIN_ALLOW_THREADS
    uint64_t start = now_ns(), cur = 0;
    int done = 0;
    for (;;) { /* short kernels finish within microseconds: spin before sleeping */
        r = dev->fn.vkGetSemaphoreCounterValue(dev->device, dev->timeline, &cur);
        if (r != VK_SUCCESS || cur >= value) {
            done = 1;
            break;
        }
        uint64_t el = now_ns() - start;
        if (el >= CT_SPIN_NS || el >= timeout_ns)
            break;
        sched_yield();
    }
    if (!done) {
        uint64_t el = now_ns() - start;
        uint64_t left = timeout_ns == UINT64_MAX ? UINT64_MAX : (el >= timeout_ns ? 0 : timeout_ns - el);
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  .semaphoreCount = 1, .pSemaphores = &dev->timeline,
                                  .pValues = &value};
        r = dev->fn.vkWaitSemaphores(dev->device, &wi, left);
    }
    Py_END_ALLOW_THREADS
    dev->active--;
    if (r == VK_ERROR_DEVICE_LOST)
        dev->lost = 1;
    return r;
}

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

static int
parse_op(CtDevice *dev, PyObject *cmd, Py_ssize_t idx, CtOp *op)
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
        Py_buffer push;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(cmd, 2), &push, PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            ct_raise(st->GpuArgumentTypeError, "command %zd: push constants must be bytes-like", idx);
            return -1;
        }
        if ((size_t)push.len > op->pipe->push_size) {
            ct_raise(st->GpuInvalidArgument, "command %zd: %zd bytes of push constants for a "
                     "pipeline declared with push_size %u", idx, push.len, op->pipe->push_size);
            PyBuffer_Release(&push);
            return -1;
        }
        memcpy(op->push, push.buf, (size_t)push.len);
        memset(op->push + push.len, 0, op->pipe->push_size - (size_t)push.len);
        PyBuffer_Release(&push);
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

static void
barrier(CtDevice *dev, VkCommandBuffer cb, int to_host)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = to_host ? VK_ACCESS_HOST_READ_BIT
                                 : (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT),
    };
    VkPipelineStageFlags work = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    dev->fn.vkCmdPipelineBarrier(cb, work, to_host ? VK_PIPELINE_STAGE_HOST_BIT : work, 0, 1, &mb,
                                 0, NULL, 0, NULL);
}

static VkResult
record(CtDevice *dev, int slot, CtOp *ops, Py_ssize_t n, int timed)
{
    VkCommandBuffer cb = dev->ring[slot].cb;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = dev->fn.vkBeginCommandBuffer(cb, &bi);
    if (r != VK_SUCCESS)
        return r;
    if (timed) {
        dev->fn.vkCmdResetQueryPool(cb, dev->query_pool, (uint32_t)(2 * slot), 2);
        dev->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, dev->query_pool,
                                    (uint32_t)(2 * slot));
    }
    VkPipeline bound = VK_NULL_HANDLE;
    for (Py_ssize_t i = 0; i < n; i++) {
        barrier(dev, cb, 0); /* before the first: orders after earlier submissions */
        CtOp *op = &ops[i];
        if (op->kind == 0) {
            if (op->pipe->pipeline != bound) {
                dev->fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, op->pipe->pipeline);
                bound = op->pipe->pipeline;
            }
            if (op->pipe->push_size)
                dev->fn.vkCmdPushConstants(cb, op->pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                           op->pipe->push_size, op->push);
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
    barrier(dev, cb, 1);
    if (timed)
        dev->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->query_pool,
                                    (uint32_t)(2 * slot + 1));
    return dev->fn.vkEndCommandBuffer(cb);
}

#define CT_RECORDING UINT64_MAX /* slot value while a submit owns it */

/* claim a free ring slot (waits for the oldest one when all are in flight); -1 on error */
static int
acquire_slot(CtDevice *dev)
{
    for (int tries = 0;; tries++) {
        if (ct_device_check(dev) < 0)
            return -1;
        int i = dev->ring_next;
        CtSlot *s = &dev->ring[i];
        if (s->value == 0) {
            dev->ring_next = (i + 1) % CT_RING;
            s->value = CT_RECORDING;
            return i;
        }
        if (s->value == CT_RECORDING || tries > 4 * CT_RING) {
            dev->ring_next = (i + 1) % CT_RING; /* another thread is recording it */
            if (tries > 4 * CT_RING) {
                ct_raise(dev->st->GpuInvalidArgument, "no free command buffer: too many "
                         "submissions are being recorded at once");
                return -1;
            }
            continue;
        }
        if (s->value > dev->completed && ct_device_refresh_completed(dev) < 0)
            return -1;
        if (s->value > dev->completed) {
            VkResult r = wait_value(dev, s->value, UINT64_MAX);
            if (r != VK_SUCCESS) {
                ct_raise_vk(dev->st, r, "waiting for a command buffer");
                return -1;
            }
            if (ct_device_check(dev) < 0 || ct_device_refresh_completed(dev) < 0)
                return -1;
        }
        ct_ring_retire(dev); /* may run finalizers: loop and re-check */
    }
}

PyObject *
ct_device_submit(CtDevice *dev, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"commands", "keep", "timed", NULL};
    PyObject *commands, *keep = NULL;
    int timed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Op", kwlist, &commands, &keep, &timed))
        return NULL;
    CtState *st = dev->st;
    if (ct_device_check(dev) < 0)
        return NULL;
    PyObject *cmds = PySequence_Tuple(commands);
    if (cmds == NULL) {
        PyErr_Clear();
        return ct_raise(st->GpuArgumentTypeError, "commands must be a sequence of tuples, got %s",
                        Py_TYPE(commands)->tp_name);
    }
    PyObject *kept = keep == NULL || keep == Py_None ? PyTuple_New(0) : PySequence_Tuple(keep);
    if (kept == NULL) {
        Py_DECREF(cmds);
        PyErr_Clear();
        return ct_raise(st->GpuArgumentTypeError, "keep must be a tuple of objects");
    }
    Py_ssize_t n = PyTuple_GET_SIZE(cmds);
    CtOp small[4];
    CtOp *ops = n <= 4 ? small : PyMem_Malloc(sizeof(CtOp) * (size_t)n);
    PyObject *result = NULL, *hold = NULL;
    int slot = -1;
    if (ops == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    hold = PyTuple_Pack(2, cmds, kept);
    if (hold == NULL)
        goto done;
    timed = timed && dev->query_pool != VK_NULL_HANDLE;
    /* claim the slot first: retiring old slots may run finalizers, parsing runs none that
       matter (and the device is checked again after it) */
    slot = acquire_slot(dev);
    if (slot < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (parse_op(dev, PyTuple_GET_ITEM(cmds, i), i, &ops[i]) < 0)
            goto done;
    if (ct_device_check(dev) < 0)
        goto done;
    VkResult r = record(dev, slot, ops, n, timed);
    if (r != VK_SUCCESS) {
        ct_raise_vk(st, r, "recording a command buffer");
        goto done;
    }
    /* value assignment and queue-lock acquisition happen under the GIL, in one go, so
       submissions reach the queue in value order */
    uint64_t value = ++dev->next_value;
    CtSlot *s = &dev->ring[slot];
    slot = -1; /* owned by the timeline now */
    s->value = value;
    s->timed = timed;
    s->keep = hold;
    hold = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ops[i].src)
            ops[i].src->last_use = value;
        if (ops[i].dst)
            ops[i].dst->last_use = value;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kept); i++) {
        PyObject *o = PyTuple_GET_ITEM(kept, i);
        if (PyObject_TypeCheck(o, st->BufferType) && ((CtBuffer *)o)->dev == dev &&
            ((CtBuffer *)o)->alloc)
            ((CtBuffer *)o)->alloc->last_use = value;
    }
    VkTimelineSemaphoreSubmitInfo tsi = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                         .signalSemaphoreValueCount = 1,
                                         .pSignalSemaphoreValues = &value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &tsi,
                       .commandBufferCount = 1, .pCommandBuffers = &s->cb,
                       .signalSemaphoreCount = 1, .pSignalSemaphores = &dev->timeline};
    dev->active++;
    pthread_mutex_lock(&dev->queue_lock);
    Py_BEGIN_ALLOW_THREADS
    r = dev->fn.vkQueueSubmit(dev->queue, 1, &si, VK_NULL_HANDLE);
    if (r != VK_SUCCESS && r != VK_ERROR_DEVICE_LOST) {
        /* keep the timeline whole so waiters on this value wake up */
        VkSemaphoreSignalInfo sig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                     .semaphore = dev->timeline, .value = value};
        if (dev->fn.vkDeviceWaitIdle(dev->device) != VK_SUCCESS ||
            dev->fn.vkSignalSemaphore(dev->device, &sig) != VK_SUCCESS)
            r = VK_ERROR_DEVICE_LOST;
    }
    pthread_mutex_unlock(&dev->queue_lock);
    Py_END_ALLOW_THREADS
    dev->active--;
    if (r != VK_SUCCESS) {
        if (r == VK_ERROR_DEVICE_LOST)
            dev->lost = 1;
        ct_raise_vk(st, r, "vkQueueSubmit");
        goto done;
    }
    result = PyLong_FromUnsignedLongLong(value);
done:
    if (slot >= 0 && dev->ring[slot].value == CT_RECORDING)
        dev->ring[slot].value = 0; /* failed before submission: give the slot back */
    if (ops != small)
        PyMem_Free(ops);
    Py_XDECREF(hold);
    Py_DECREF(cmds);
    Py_DECREF(kept);
    return result;
}

PyObject *
ct_device_wait(CtDevice *dev, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"value", "timeout", NULL};
    unsigned long long value;
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "K|O", kwlist, &value, &timeout))
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    uint64_t tns = UINT64_MAX;
    if (timeout != Py_None) {
        double t = PyFloat_AsDouble(timeout);
        if (t == -1.0 && PyErr_Occurred())
            return NULL;
        tns = t <= 0 ? 0 : t >= 1e9 ? UINT64_MAX : (uint64_t)(t * 1e9);
    }
    if (value > dev->next_value)
        return ct_raise(dev->st->GpuInvalidArgument, "timeline value %llu was never submitted "
                        "(the last one is %llu)", value, (unsigned long long)dev->next_value);
    if (value > dev->completed) {
        VkResult r = wait_value(dev, value, tns);
        if (r == VK_TIMEOUT)
            Py_RETURN_FALSE;
        if (r != VK_SUCCESS)
            return ct_raise_vk(dev->st, r, "waiting for GPU work");
        if (ct_device_check(dev) < 0 || ct_device_refresh_completed(dev) < 0)
            return NULL;
    }
    ct_ring_retire(dev);
    Py_RETURN_TRUE;
}

PyObject *
ct_device_completed(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0 || ct_device_refresh_completed(dev) < 0)
        return NULL;
    ct_ring_retire(dev);
    return PyLong_FromUnsignedLongLong(dev->completed);
}

PyObject *
ct_device_elapsed_ms(CtDevice *dev, PyObject *arg)
{
    unsigned long long value = PyLong_AsUnsignedLongLong(arg);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    if (value > dev->completed && ct_device_refresh_completed(dev) < 0)
        return NULL;
    if (value > dev->completed)
        Py_RETURN_NONE;
    ct_ring_retire(dev);
    if (dev->timings[value % CT_TIMINGS].value == value)
        return PyFloat_FromDouble(dev->timings[value % CT_TIMINGS].ms);
    Py_RETURN_NONE;
}
