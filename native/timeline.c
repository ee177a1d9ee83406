/* cthreads._native — timeline: which submissions have completed, and what that frees.
 *
 * Python API: none directly (submit.c, batch.c, memory.c, device.c and launch.c call it).
 * The one owner of dev->completed (the counter value known to be reached, GIL-guarded) and
 * of what its advance gives back: a completed batch's ring slot, kept references and
 * timestamp query pairs (retirement), allocations released while still in use (the deferred
 * list) and, on request, idle pooled allocations. Every Python-side refresh goes through
 * ct_timeline_sync; the waits (batch.c, submitter.c) only report the value they saw.
 * Retirement runs with the GIL held and no lock held: the references it drops may run
 * finalizers, which may submit again. It also tells the validation layer what completed
 * (the slots' fences, below), where the layer cannot see it otherwise.
 */
#include "cthreads.h"

#include <string.h>

/* Take the counter value the background thread last saw (no system call). GIL held.
   Returns 1 when dev->completed advanced. */
int
ct_fold_completed(CtDevice *dev)
{
    uint64_t b = CT_LOAD(dev->bg_completed);
    if (b <= dev->completed)
        return 0;
    dev->completed = b;
    return 1;
}

/* Publish a counter value the background thread saw (only that thread writes it; Python-side
   calls fold it in with ct_fold_completed, without a system call). No GIL. */
void
ct_note_bg_completed(CtDevice *dev, uint64_t v)
{
    if (v > CT_LOAD(dev->bg_completed)) /* only the background thread writes it */
        CT_STORE(dev->bg_completed, v);
}

/* Read the counter itself (a system call on some drivers). -1 on error: with quiet, no
   exception is set (callers under state_lock may not make Python objects). */
static int
read_counter(CtDevice *dev, int quiet)
{
    uint64_t v = 0;
    VkResult r = ct_poll_counter(dev, &v, 0);
    if (r != VK_SUCCESS) {
        if (r == VK_ERROR_DEVICE_LOST)
            dev->lost = 1;
        if (!quiet)
            ct_raise_vk(dev->st, r, "vkGetSemaphoreCounterValue");
        return -1;
    }
    if (v <= dev->completed)
        return 0;
    dev->completed = v;
    return 1;
}

/* Free the allocations of one list (the deferred list or a pool class) whose last use
   completed; pooled ones leave pooled_bytes. The one loop that frees by last use. */
static void
free_passed(CtDevice *dev, CtAlloc **head, int pooled)
{
    for (CtAlloc **pp = head; *pp != NULL;) {
        CtAlloc *a = *pp;
        if (a->last_use <= dev->completed) {
            *pp = a->free_next;
            if (pooled)
                dev->pooled_bytes -= a->capacity;
            ct_alloc_free(dev, a);
        } else
            pp = &a->free_next;
    }
}

static void
record_timing(CtDevice *dev, uint32_t pair, uint64_t value)
{
    uint64_t t[2];
    VkResult r = dev->fn.vkGetQueryPoolResults(dev->device, dev->query_pool, 2 * pair, 2,
                                               sizeof t, t, sizeof t[0], VK_QUERY_RESULT_64_BIT);
    if (r != VK_SUCCESS)
        return;
    uint64_t mask = dev->timestamp_bits >= 64 ? ~0ull : ((1ull << dev->timestamp_bits) - 1);
    uint64_t ticks = (t[1] - t[0]) & mask;
    dev->timings[value % CT_TIMINGS].value = value;
    dev->timings[value % CT_TIMINGS].ms = (double)ticks * dev->props.limits.timestampPeriod / 1e6;
}

/* ---- the validation layer's view of completion ---------------------------------------------
 * Khronos' validation layer 1.3.239 (Debian 12's, the H200 machine's too) tracks a timeline
 * semaphore as if it were binary: a wait imports the batch of the oldest signal no wait took
 * yet, whatever the values, and host waits on semaphores are invisible to it. So memory one
 * queue used last and another queue uses once the host saw that use complete (the pool's
 * rule: a pooled staging buffer; an array read on the copy lane after a host wait) races in
 * its eyes, though the submission waits for that value (H200, 2026-12-02: WRITE_RACING_WRITE
 * between a default-stream download and a copy-lane download into one pooled buffer). The
 * host waits it does model are fences: with validation on and work on more than one queue,
 * each submission doing a slot's work carries the slot's fence, and retirement (the batch
 * completed) waits for it, signalled by then, and resets it: the layer then knows what the
 * host knows. No GPU wait is added; without validation nothing changes. */

#define CT_LAYER_FENCE_NS 1000000000ull /* signalled with the batch: only a bound, never met */

/* Make the slots' fences where the layer needs them (lane.c, at device creation). */
int
ct_layer_fences_create(CtDevice *dev)
{
    if (!dev->inst->validation || (dev->copy_queue == VK_NULL_HANDLE && dev->nqueues <= 1))
        return 0;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (int i = 0; i < CT_RING; i++) {
        VkResult r = dev->fn.vkCreateFence(dev->device, &fci, NULL, &dev->ring[i].fence);
        if (r != VK_SUCCESS) {
            ct_raise_vk(dev->st, r, "vkCreateFence (validation)");
            return -1;
        }
    }
    dev->layer_fences = 1;
    return 0;
}

/* At teardown, the device idle. */
void
ct_layer_fences_destroy(CtDevice *dev)
{
    for (int i = 0; i < CT_RING; i++) {
        CT_DESTROY(dev, Fence, dev->ring[i].fence);
        dev->ring[i].fence_sent = 0;
    }
    dev->layer_fences = 0;
}

/* The fence a submission of slot s's work carries (VK_NULL_HANDLE: none); the submitter sets
   s->fence_sent once vkQueueSubmit took it. */
VkFence
ct_layer_fence(const CtDevice *dev, const CtSlot *s)
{
    return CT_LOAD(dev->layer_fences) ? s->fence : VK_NULL_HANDLE; /* (the thread's too) */
}

/* Slot s completed: wait for its fence (the layer's record that the batch is done) and reset
   it for the slot's next batch. A fence found unsignalled may still be pending: fences are
   then given up for the device rather than reused. */
static void
layer_fence_done(CtDevice *dev, CtSlot *s)
{
    s->fence_sent = 0;
    if (dev->device == VK_NULL_HANDLE)
        return;
    VkResult r = dev->fn.vkWaitForFences(dev->device, 1, &s->fence, VK_TRUE, CT_LAYER_FENCE_NS);
    if (r == VK_SUCCESS)
        r = dev->fn.vkResetFences(dev->device, 1, &s->fence);
    if (r == VK_SUCCESS)
        dev->layer_fence_waits++;
    else
        CT_STORE(dev->layer_fences, 0);
}

/* Device._layer_fences() -> int | None: completions told to the validation layer through
   fences (None: no fences, validation off or one queue). A test hook. */
PyObject *
ct_device_layer_fences(CtDevice *dev, PyObject *unused)
{
    if (!dev->layer_fences)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(dev->layer_fence_waits);
}

/* Give back what dev->completed covers: batches whose value completed (their timings are
   recorded, query pairs and ring slot freed, references dropped) and deferred frees. */
void
ct_timeline_retire(CtDevice *dev)
{
    for (int i = 0; i < CT_RING; i++) {
        CtSlot *s = &dev->ring[i];
        if (CT_LOAD(s->state) != CT_SLOT_SUBMITTED || s->value > dev->completed)
            continue;
        if (s->fence_sent)
            layer_fence_done(dev, s);
        for (int t = 0; t < s->ntimed; t++) {
            record_timing(dev, s->timed[t].pair, s->timed[t].value);
            dev->qbusy[s->timed[t].pair] = 0;
        }
        s->ntimed = 0;
        /* detach the references first: dropping them may run Python code (which may submit
           into this very slot once it is free) */
        PyObject *small[16], **keep = s->keep;
        Py_ssize_t nk = s->nkeep;
        if (nk <= 16) {
            memcpy(small, keep, sizeof(PyObject *) * (size_t)nk);
            keep = small;
        } else {
            s->keep = NULL;
            s->keep_cap = 0;
        }
        s->nkeep = 0;
        CT_STORE(s->state, CT_SLOT_FREE);
        for (Py_ssize_t k = 0; k < nk; k++)
            Py_DECREF(keep[k]);
        if (keep != small)
            PyMem_Free(keep);
    }
    /* (a finalizer above may have destroyed the device, which freed every allocation) */
    if (dev->deferred != NULL && dev->state == CT_ALIVE)
        free_passed(dev, &dev->deferred, 0);
}

/* Bring dev->completed up to date and give back what that completes. GIL held.
   Always takes the value the background thread saw (no system call); then, by flags:
   CT_SYNC_READ   read the counter when dev->completed is still below want;
   CT_SYNC_QUIET  a failed read sets no exception (and counts as no advance);
   CT_SYNC_RETIRE retire (ct_timeline_retire); CT_SYNC_RETIRE_NEW only when it advanced;
   CT_SYNC_TRIM   also free the idle pooled and deferred allocations whose last use passed.
   Returns 1 when dev->completed advanced, 0 when not, -1 (exception set) on a failed read. */
int
ct_timeline_sync(CtDevice *dev, uint64_t want, int flags)
{
    int advanced = ct_fold_completed(dev);
    if ((flags & CT_SYNC_READ) && dev->completed < want) {
        int rc = read_counter(dev, flags & CT_SYNC_QUIET);
        if (rc < 0 && !(flags & CT_SYNC_QUIET))
            return -1;
        advanced |= rc > 0;
    }
    if ((flags & CT_SYNC_RETIRE) || ((flags & CT_SYNC_RETIRE_NEW) && advanced))
        ct_timeline_retire(dev);
    if ((flags & CT_SYNC_TRIM) && dev->state == CT_ALIVE) {
        free_passed(dev, &dev->deferred, 0);
        for (uint32_t t = 0; t < VK_MAX_MEMORY_TYPES; t++)
            for (int c = 0; c < CT_NCLASS; c++)
                if (dev->pools[t][c] != NULL)
                    free_passed(dev, &dev->pools[t][c], 1);
    }
    return advanced;
}

/* An allocation given back while submissions may still use it: freed now when its last use
   completed, else when a later sync sees it complete. */
void
ct_timeline_free_after_use(CtDevice *dev, CtAlloc *a)
{
    if (a->last_use <= dev->completed)
        ct_alloc_free(dev, a);
    else {
        a->free_next = dev->deferred;
        dev->deferred = a;
    }
}
