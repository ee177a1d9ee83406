/* cthreads._native — stats: what a Device holds and what its submission path did, as a dict.
 *
 * Python API:
 *   Device.stats() -> dict   Vulkan objects alive (allocations, pipelines, command buffers:
 *       all of them in "command_buffers", and by use in "command_buffer_uses": {"ring": the
 *       ring slots', "join": the lanes' join, "copy": the copy lane's}),
 *       the pool, the batch state (pending, in flight, kept references, values), the event
 *       counters of the submission path ("counters") and the policy knobs ("knobs", knobs.c).
 *       Reading it submits nothing (the counter is read directly, not refreshed).
 *       "query_pool": 1 once the first timed submit made the timestamp query pool (ring.c).
 *       "open_ms": {phase: ms} what opening the device cost, by phase (CtOpenPhase, in order),
 *       and "open_total_ms": the whole of Device(...)'s native part (the phases sum to at most
 *       that: argument parsing and the locks' setup come before the first phase).
 */
#include "cthreads.h"

/* stats()["open_ms"]'s names, in CtOpenPhase's order */
static const char *const open_names[CT_OPEN_NPHASES] = {
    "physical", "create_device", "functions", "memory", "timeline", "command_buffers",
    "join", "layer_fences", "pipeline_cache",
    "threads",
};

/* The end of `phase` of opening the device: the time since the previous mark is its cost. */
void
ct_open_mark(CtDevice *dev, CtOpenPhase phase)
{
    uint64_t t = ct_now_ns();
    dev->open_ns[phase] += t - dev->open_t;
    dev->open_t = t;
}

static PyObject *
stats_open(const CtDevice *self)
{
    PyObject *d = PyDict_New();
    for (int k = 0; d != NULL && k < CT_OPEN_NPHASES; k++) {
        PyObject *v = PyFloat_FromDouble((double)self->open_ns[k] / 1e6);
        if (v == NULL || PyDict_SetItemString(d, open_names[k], v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* the submission path's event counters (CtCounters) as a dict */
static PyObject *
stats_counters(CtDevice *self)
{
    CtCounters c;
    if (self->locks_ready) { /* the (S) fields change under state_lock */
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&self->state_lock);
        Py_END_ALLOW_THREADS
    }
#define CT_RD(f) c.f = __atomic_load_n(&self->cnt.f, __ATOMIC_RELAXED);
    CT_RD(host_polls) CT_RD(bg_polls) CT_RD(host_blocks) CT_RD(bg_blocks) CT_RD(wakes)
    CT_RD(bg_sleeps) CT_RD(lock_blocks) CT_RD(clock_reads) CT_RD(appends) CT_RD(deferred)
    CT_RD(direct) CT_RD(full) CT_RD(flushes) CT_RD(bg_submits) CT_RD(lane_submits) CT_RD(lane_waits)
    CT_RD(copy_submits)
#undef CT_RD
    if (self->locks_ready)
        pthread_mutex_unlock(&self->state_lock);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
        /* timeline counter reads (vkGetSemaphoreCounterValue; an ioctl on some drivers) */
        "host_polls", (unsigned long long)c.host_polls, "bg_polls", (unsigned long long)c.bg_polls,
        /* blocking timeline waits (vkWaitSemaphores) */
        "host_blocks", (unsigned long long)c.host_blocks, "bg_blocks", (unsigned long long)c.bg_blocks,
        /* futex-level events: wake-ups of the sleeping thread, its sleeps, blocked locks */
        "wakes", (unsigned long long)c.wakes, "bg_sleeps", (unsigned long long)c.bg_sleeps,
        "lock_blocks", (unsigned long long)c.lock_blocks,
        "clock_reads", (unsigned long long)c.clock_reads,
        /* what submits did: appended, opened a pending batch, went out at once, filled one */
        "appends", (unsigned long long)c.appends, "deferred", (unsigned long long)c.deferred,
        "direct", (unsigned long long)c.direct, "full", (unsigned long long)c.full,
        /* who submitted pending batches */
        "flushes", (unsigned long long)c.flushes, "bg_submits", (unsigned long long)c.bg_submits,
        /* submits on lanes 1.. (streams, lane.c), and those that waited for other work */
        "lane_submits", (unsigned long long)c.lane_submits,
        "lane_waits", (unsigned long long)c.lane_waits,
        /* of those, submits on the copy queue (lane.c) */
        "copy_submits", (unsigned long long)c.copy_submits);
}

PyObject *
ct_device_stats(CtDevice *self, PyObject *unused)
{
    Py_ssize_t live = 0, pooled = 0, deferred = 0, pipelines = 0;
    VkDeviceSize live_bytes = 0;
    for (CtAlloc *a = self->all; a != NULL; a = a->all_next) {
        live++;
        live_bytes += a->capacity;
    }
    for (uint32_t t = 0; t < VK_MAX_MEMORY_TYPES; t++)
        for (int c = 0; c < CT_NCLASS; c++)
            for (CtAlloc *a = self->pools[t][c]; a != NULL; a = a->free_next)
                pooled++;
    for (CtAlloc *a = self->deferred; a != NULL; a = a->free_next)
        deferred++;
    for (CtPipeline *p = self->pipelines; p != NULL; p = p->next)
        pipelines++;
    int open = 0, in_flight = 0, keep = 0;
    for (int i = 0; i < CT_RING; i++) {
        int s = CT_LOAD(self->ring[i].state);
        open += s == CT_SLOT_OPEN;
        in_flight += s == CT_SLOT_SUBMITTED;
        keep += (int)self->ring[i].nkeep;
    }
    /* every command buffer the device holds: a ring slot's, the join (lane.c), and the copy
       lane's one per slot when it has one (each pool frees its buffers with it) */
    int ring_cbs = 0, copy_cbs = 0, join_cbs = self->join_cb != VK_NULL_HANDLE;
    for (int i = 0; i < CT_RING; i++) {
        ring_cbs += self->cmd_pool != VK_NULL_HANDLE && self->ring[i].cb != VK_NULL_HANDLE;
        copy_cbs += self->copy_pool != VK_NULL_HANDLE && self->ring[i].copy_cb != VK_NULL_HANDLE;
    }
    uint64_t counter = self->completed; /* fresh, without submitting anything */
    if (self->state == CT_ALIVE && self->timeline != VK_NULL_HANDLE)
        self->fn.vkGetSemaphoreCounterValue(self->device, self->timeline, &counter);
    uint64_t nbatches = CT_LOAD(self->nbatches);
    PyObject *counters = stats_counters(self), *knobs = ct_knobs_dict(&self->knobs);
    PyObject *copy_queue = self->copy_queue == VK_NULL_HANDLE
                               ? Py_NewRef(Py_None)
                               : PyLong_FromUnsignedLong(self->copy_family);
    PyObject *cb_parts = Py_BuildValue("{s:i,s:i,s:i}", "ring", ring_cbs, "join", join_cbs,
                                       "copy", copy_cbs);
    PyObject *open_ms = stats_open(self);
    if (counters == NULL || knobs == NULL || copy_queue == NULL || cb_parts == NULL ||
        open_ms == NULL) {
        Py_XDECREF(counters);
        Py_XDECREF(knobs);
        Py_XDECREF(copy_queue);
        Py_XDECREF(cb_parts);
        Py_XDECREF(open_ms);
        return NULL;
    }
    return Py_BuildValue(
        "{s:n,s:n,s:n,s:K,s:n,s:n,s:K,s:K,s:n,s:i,s:i,s:i,s:i,s:i,s:i,s:K,s:K,s:K,s:K,s:i,s:I,s:N,s:N,"
        "s:N,s:N,s:i,s:N,s:d}",
        /* Vulkan objects alive: one VkBuffer bound to one VkDeviceMemory per allocation */
        "allocations", live, "vk_buffers", live, "vk_memory", live,
        "allocated_bytes", (unsigned long long)live_bytes,
        "buffers_in_use", live - pooled - deferred, "pooled", pooled,
        "pooled_bytes", (unsigned long long)self->pooled_bytes,
        "pool_cap", (unsigned long long)self->pool_cap,
        "pipelines", pipelines, "command_buffers", ring_cbs + join_cbs + copy_cbs,
        /* batches: open (pending), submitted and not yet retired, and references they hold */
        "batches_pending", open, "batches_in_flight", in_flight, "ring_in_flight", open + in_flight,
        "kept_objects", keep, "submit_thread", self->bg_started,
        "queue_submits", (unsigned long long)nbatches,
        "last_value", (unsigned long long)self->next_value,
        "submitted", (unsigned long long)CT_LOAD(self->submitted),
        "completed", (unsigned long long)counter,
        /* lanes for streams (lane.c) and the distinct queues they are spread over */
        "lanes", CT_LANES, "lane_queues", (unsigned int)self->nqueues,
        "counters", counters, "knobs", knobs,
        /* the copy lane's queue family (queues.c), None without one */
        "copy_queue", copy_queue,
        /* command_buffers by use: the ring slots', the lanes' join, the copy lane's */
        "command_buffer_uses", cb_parts,
        /* the timestamp query pool exists (ring.c: made at the first timed submit) */
        "query_pool", self->query_pool != VK_NULL_HANDLE,
        /* what opening the device cost (ct_open_mark) */
        "open_ms", open_ms, "open_total_ms", (double)(self->open_end - self->open_t0) / 1e6);
}
