/* cthreads._native — batch: submission coalescing: the pending batch, closing and submitting
 * batches, failures of submissions (the background thread that sends pending batches is in
 * submitter.c, host waits in wait.c, clocks and spinning in spin.c).
 *
 * Python API: none directly (submit.c, launch.c, wait.c and device.c call it).
 * A submit on an idle queue is recorded into its own command buffer and submitted at once.
 * While a batch is in flight, submits are appended to one open ("pending") command buffer,
 * which is submitted (a) by the device's background thread once the in-flight work completed
 * and the batch is knobs.bg_delay_ns old, (b) at once when a host waits for (or completed()
 * polls past) a value in it, or (c) when it holds knobs.batch_max commands or
 * CT_BATCH_MAX_BYTES bytes of copies/fills. Policy knobs: dev->knobs (knobs.c, from config.py).
 * Each submit keeps its own timeline value; a batch signals the highest value it holds, so
 * counter >= v exactly when the batch holding v completed.
 * (The ring of batches itself is created and destroyed in ring.c, retired in timeline.c.)
 * Locks: state_lock (pending batch, values, recording; command pool access), then queue_lock
 * (vkQueueSubmit). Holders never wait for the GIL, run Python code or make Python objects; the
 * background thread never touches Python at all: references a batch keeps are dropped by
 * ct_timeline_sync (timeline.c), on the next Python-side call after completion.
 */
#include "cthreads.h"

#include <string.h>

#define LOAD CT_LOAD
#define STORE CT_STORE

/* Wake the background thread if it sleeps (after a pending batch was published). No lock
   held. The thread announces its sleep (bg_sleeping, then a full fence, then it checks for
   work) and this side publishes work, fences, then checks bg_sleeping: one of the two sees
   the other, so no wake-up is lost and an awake thread costs no system call. */
static void
bg_kick(CtDevice *dev)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&dev->bg_sleeping, __ATOMIC_SEQ_CST))
        return;
    pthread_mutex_lock(&dev->bg_lock); /* the thread is inside pthread_cond_wait after this */
    dev->bg_wake_seq++;
    pthread_cond_signal(&dev->bg_cond);
    pthread_mutex_unlock(&dev->bg_lock);
    CT_COUNT(dev->cnt.wakes);
}

/* ---- failures ---------------------------------------------------------------------------- */

void
ct_note_failure(CtDevice *dev, uint64_t lo, uint64_t hi, VkResult r, int from_bg)
{
    pthread_mutex_lock(&dev->err_lock);
    dev->fail_lo = lo;
    dev->fail_hi = hi;
    dev->fail_err = r;
    if (from_bg)
        dev->fail_unreported = r;
    STORE(dev->nfail, 1);
    pthread_mutex_unlock(&dev->err_lock);
    if (r == VK_ERROR_DEVICE_LOST)
        STORE(dev->bg_lost, 1);
}

/* Raise the error of a failed batch: for a submit, one the background thread met and nobody
   reported yet; for a wait, the one of the batch holding `value`. GIL held. */
int
ct_check_failed(CtDevice *dev, uint64_t value, int for_submit)
{
    if (!LOAD(dev->nfail))
        return 0;
    VkResult r = VK_SUCCESS;
    uint64_t lo, hi;
    pthread_mutex_lock(&dev->err_lock);
    lo = dev->fail_lo;
    hi = dev->fail_hi;
    if (for_submit) {
        r = dev->fail_unreported;
        dev->fail_unreported = VK_SUCCESS;
    } else if (value >= lo && value <= hi)
        r = dev->fail_err;
    pthread_mutex_unlock(&dev->err_lock);
    if (r == VK_SUCCESS)
        return 0;
    ct_raise_vk(dev->st, r, "submitting the batch of timeline values %llu..%llu (its commands "
                "did not run)", (unsigned long long)lo, (unsigned long long)hi);
    return -1;
}

/* ---- closing and submitting a batch ------------------------------------------------------ */

/* Entered with state_lock held (and the GIL not held, or on the background thread); returns
   with no lock held. Ends slot i's command buffer and submits it, signalling its last value.
   On failure the timeline is still advanced to that value, so waiters wake up, and the failure
   is recorded for ct_check_failed. */
VkResult
ct_close_and_submit_unlock(CtDevice *dev, int i, int from_bg)
{
    CtSlot *s = &dev->ring[i];
    if (dev->pending == i)
        STORE(dev->pending, -1);
    ct_record_barrier(dev, s->cb, 1);
    VkResult r = dev->fn.vkEndCommandBuffer(s->cb);
    uint64_t value = s->value;
    STORE(dev->submitted_prev, dev->submitted);
    STORE(dev->submitted, value);
    VkResult inject = dev->inject;
    dev->inject = VK_SUCCESS;
    ct_lock(dev, &dev->queue_lock); /* taken before state_lock is let go: value order */
    pthread_mutex_unlock(&dev->state_lock);
    if (r == VK_SUCCESS && inject != VK_SUCCESS)
        r = inject;
    else if (r == VK_SUCCESS) {
        VkTimelineSemaphoreSubmitInfo tsi = {
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &value};
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &tsi,
                           .commandBufferCount = 1, .pCommandBuffers = &s->cb,
                           .signalSemaphoreCount = 1, .pSignalSemaphores = &dev->timeline};
        VkFence fence = ct_layer_fence(dev, s); /* (validation's view: timeline.c) */
        r = dev->fn.vkQueueSubmit(dev->queue, 1, &si, fence);
        s->fence_sent = r == VK_SUCCESS && fence != VK_NULL_HANDLE;
        STORE(dev->nbatches, dev->nbatches + 1); /* (written under queue_lock only) */
    }
    if (r != VK_SUCCESS) {
        /* keep the timeline whole so waiters on these values wake up */
        VkSemaphoreSignalInfo sig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                     .semaphore = dev->timeline, .value = value};
        if (dev->fn.vkDeviceWaitIdle(dev->device) != VK_SUCCESS ||
            dev->fn.vkSignalSemaphore(dev->device, &sig) != VK_SUCCESS)
            r = VK_ERROR_DEVICE_LOST;
        ct_note_failure(dev, s->first, value, r, from_bg);
    }
    STORE(s->state, CT_SLOT_SUBMITTED);
    STORE(dev->queued, value); /* (written under queue_lock only, in value order) */
    pthread_mutex_unlock(&dev->queue_lock);
    return r;
}

/* Start an operation that runs without the GIL and uses the device's Vulkan objects: counted
   in dev->active, which teardown waits to reach 0 before it destroys anything. Refused (-1, no
   exception) once teardown began (state != CT_ALIVE): a thread that let the GIL go between its
   device check and this point (pause_without_gil, a wait slice) may not start anything once
   teardown has waited for the others. GIL held. */
int
ct_nogil_enter(CtDevice *dev)
{
    if (dev->state != CT_ALIVE || dev->device == VK_NULL_HANDLE)
        return -1;
    dev->active++;
    return 0;
}

/* Submit the pending batch now if it holds a value <= upto. GIL held, no lock held.
   Only teardown itself (closing = 1) may flush once the device is no longer alive. */
int
ct_flush_pending_ex(CtDevice *dev, uint64_t upto, int closing)
{
    if (LOAD(dev->pending) < 0)
        return 0;
    VkResult r = VK_SUCCESS;
    int done = 0;
    if (closing)
        dev->active++;
    else if (ct_nogil_enter(dev) < 0)
        return ct_device_check(dev);
    Py_BEGIN_ALLOW_THREADS /* (the lock may be held by a thread that is submitting) */
    ct_lock(dev, &dev->state_lock);
    int i = dev->pending;
    if (i < 0 || dev->ring[i].first > upto)
        pthread_mutex_unlock(&dev->state_lock);
    else {
        r = ct_close_and_submit_unlock(dev, i, 0);
        done = 1;
    }
    Py_END_ALLOW_THREADS
    dev->active--;
    if (done)
        CT_COUNT(dev->cnt.flushes);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkQueueSubmit (pending batch)");
        return -1;
    }
    return 0;
}

int
ct_flush_pending(CtDevice *dev, uint64_t upto)
{
    return ct_flush_pending_ex(dev, upto, 0);
}

/* ---- enqueueing a submit ----------------------------------------------------------------- */

static int
find_free_slot(CtDevice *dev)
{
    for (int k = 0; k < CT_RING; k++) {
        int i = (dev->ring_next + k) % CT_RING;
        if (LOAD(dev->ring[i].state) == CT_SLOT_FREE) {
            dev->ring_next = (i + 1) % CT_RING;
            return i;
        }
    }
    return -1;
}

/* The checks each pass of a submit loop (ct_enqueue, lane.c's) starts with: the device usable,
   no failure left to report, and, for a timed submit, the next query pair free: when all are
   in use it waits for the submit holding that one. GIL held, no lock held. -1 with an
   exception; 1 after a wait (look again); 0: go on (dev->qnext is the pair to use). */
int
ct_submit_ready(CtDevice *dev, int timed)
{
    if (ct_device_check(dev) < 0 || ct_check_failed(dev, 0, 1) < 0)
        return -1;
    uint32_t pair = dev->qnext;
    if (timed && dev->qbusy[pair])
        return ct_wait_done(dev, dev->qvalue[pair], UINT64_MAX) < 0 ? -1 : 1;
    return 0;
}

/* Every ring slot is in flight (state_lock held, GIL held): let the lock go and wait for the
   oldest submitted batch to complete, or pause while the others are being submitted right
   now; the caller then tries again. The one such wait of batch.c's and lane.c's submits.
   -1 with an exception when the wait failed. */
static int
wait_for_slot_unlock(CtDevice *dev)
{
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < CT_RING; i++)
        if (LOAD(dev->ring[i].state) == CT_SLOT_SUBMITTED && dev->ring[i].value < oldest)
            oldest = dev->ring[i].value;
    pthread_mutex_unlock(&dev->state_lock);
    if (oldest == UINT64_MAX)
        ct_pause_without_gil();
    else if (ct_wait_done(dev, oldest, UINT64_MAX) < 0)
        return -1;
    return 0;
}

static int
reserve_slot(CtSlot *s, Py_ssize_t nkeep, int timed)
{
    if (s->nkeep + nkeep > s->keep_cap) {
        Py_ssize_t cap = s->keep_cap ? s->keep_cap : 8;
        while (cap < s->nkeep + nkeep)
            cap *= 2;
        PyObject **k = PyMem_Realloc(s->keep, sizeof(PyObject *) * (size_t)cap);
        if (k == NULL)
            return -1;
        s->keep = k;
        s->keep_cap = cap;
    }
    if (timed && s->ntimed == s->timed_cap) {
        int cap = s->timed_cap ? 2 * s->timed_cap : 4;
        struct CtTimed *t = PyMem_Realloc(s->timed, sizeof *t * (size_t)cap);
        if (t == NULL)
            return -1;
        s->timed = t;
        s->timed_cap = cap;
    }
    return 0;
}

/* The slot a submit appends to, state_lock held (GIL held): slot i, or for i < 0 a free one,
   with room for nkeep more kept references and, when timed, one more timed submit. The one
   claim of batch.c's and lane.c's submits. Its index, the lock still held; CT_CLAIM_AGAIN
   when every slot was in flight and a wait let the lock go (try again); CT_CLAIM_FAILED with
   an exception, the lock let go. */
int
ct_claim_slot(CtDevice *dev, int i, Py_ssize_t nkeep, int timed)
{
    if (i < 0 && (i = find_free_slot(dev)) < 0) /* every batch in flight */
        return wait_for_slot_unlock(dev) < 0 ? CT_CLAIM_FAILED : CT_CLAIM_AGAIN;
    if (reserve_slot(&dev->ring[i], nkeep, timed) < 0) {
        pthread_mutex_unlock(&dev->state_lock);
        PyErr_NoMemory();
        return CT_CLAIM_FAILED;
    }
    return i;
}

static void
set_last_use(CtDevice *dev, CtAlloc *a, uint64_t value)
{
    if (a != NULL)
        a->last_use = value;
    (void)dev;
}

/* A buffer of this device that a submit keeps is in use until `value` (its allocation is not
   reused or freed before that) */
static void
kept_buffer_used(CtDevice *dev, PyObject *o, uint64_t value)
{
    if (Py_IS_TYPE(o, dev->st->BufferType) && ((CtBuffer *)o)->dev == dev)
        set_last_use(dev, ((CtBuffer *)o)->alloc, value);
}

/* Append one submit, timeline value `value`, to open slot s (ct_claim_slot made room): its
   ops recorded (between the timestamps of query pair `pair` when `timed`), the allocations they
   touch and the buffers among items and in `kept` marked used until `value`, items and kept
   held until the slot retires. state_lock held. Shared by the default stream's batches and the lanes (lane.c);
   `copy`: into the slot's copy_cb, for the copy lane (never timed). */
void
ct_slot_append(CtDevice *dev, CtSlot *s, uint64_t value, uint32_t pair, const CtOp *ops,
               Py_ssize_t n, PyObject *const *items, Py_ssize_t nitems, PyObject *kept, int timed,
               int copy)
{
    VkCommandBuffer cb = copy ? s->copy_cb : s->cb;
    if (timed) {
        dev->fn.vkCmdResetQueryPool(cb, dev->query_pool, 2 * pair, 2);
        /* bottom of pipe: latched once every earlier command finished */
        dev->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->query_pool,
                                    2 * pair);
    }
    ct_record_ops(dev, cb, ops, n, &s->rec, copy ? CT_BAR_COPY : 0);
    if (timed) {
        dev->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->query_pool,
                                    2 * pair + 1);
        s->timed[s->ntimed].value = value;
        s->timed[s->ntimed].pair = pair;
        s->ntimed++;
        dev->qbusy[pair] = 1;
        dev->qvalue[pair] = value;
        dev->qnext = (pair + 1) % CT_QPAIRS;
    }
    s->value = value;
    s->ncmds += (int)n;
    for (Py_ssize_t k = 0; k < n; k++) {
        set_last_use(dev, ops[k].src, value);
        set_last_use(dev, ops[k].dst, value);
        if (ops[k].kind != 0)
            s->nbytes += ops[k].nbytes;
    }
    for (Py_ssize_t k = 0; k < nitems; k++) {
        s->keep[s->nkeep++] = Py_NewRef(items[k]);
        kept_buffer_used(dev, items[k], value);
    }
    if (kept != NULL) {
        s->keep[s->nkeep++] = Py_NewRef(kept);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kept); k++)
            kept_buffer_used(dev, PyTuple_GET_ITEM(kept, k), value);
    }
}

/* Whether a submit opening a batch on a queue that looks idle should still be deferred to the
   background thread. state_lock held. One clock read (per batch, not per submit). */
static int
defer_fresh(CtDevice *dev)
{
    if (!dev->knobs.coalesce)
        return 0;
    /* A stream of submits goes to the background thread even when the queue is idle: the
       host would otherwise pay a whole vkQueueSubmit per launch whenever the device is faster
       than the launches. "Recent" = a batch opened or sent by the thread less than stream_ns
       ago (appends to a pending batch read no clock). A lone submit goes out at once. */
    uint64_t t = ct_now_ns(), last = dev->last_open_ns, bg = LOAD(dev->bg_submit_ns);
    dev->cnt.clock_reads++;
    STORE(dev->last_open_ns, t); /* (also keeps the background thread watching) */
    if (bg > last)
        last = bg;
    if (last >= t || t - last < dev->knobs.stream_ns) /* (the thread's clock read may be later) */
        return 1;
    /* is the queue still busy? (what the thread saw, else a counter read: on some drivers an
       ioctl; quiet, since no Python object may be made under state_lock; the GIL is held) */
    uint64_t sub = dev->submitted;
    ct_timeline_sync(dev, sub, CT_SYNC_READ | CT_SYNC_QUIET);
    return sub > dev->completed;
}

/* Record ops (already parsed) as one submit and return its timeline value (0 + exception on
   error). keep_items[0..nitems) and kept (a tuple, or NULL) stay referenced until the value
   completes. GIL held, no lock held. PyMem_* under state_lock is fine: it runs no Python. */
uint64_t
ct_enqueue(CtDevice *dev, const CtOp *ops, Py_ssize_t n, PyObject *const *items, Py_ssize_t nitems,
           PyObject *kept, int timed)
{
    CtState *st = dev->st;
    if ((timed = ct_ring_timed(dev, timed)) < 0) /* (the query pool: made on first use) */
        return 0;
    Py_ssize_t nhold = nitems + (kept != NULL);
    for (;;) {
        int ready = ct_submit_ready(dev, timed);
        if (ready != 0) {
            if (ready < 0)
                return 0;
            continue;
        }
        uint32_t pair = dev->qnext;
        ct_lock(dev, &dev->state_lock);
        int fresh = dev->pending < 0;
        int i = ct_claim_slot(dev, dev->pending, nhold, timed);
        if (i == CT_CLAIM_FAILED)
            return 0;
        if (i == CT_CLAIM_AGAIN)
            continue;
        CtSlot *s = &dev->ring[i];
        if (fresh) {
            VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                           .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
            VkResult r = dev->fn.vkBeginCommandBuffer(s->cb, &bi);
            if (r != VK_SUCCESS) {
                pthread_mutex_unlock(&dev->state_lock);
                ct_raise_vk(st, r, "vkBeginCommandBuffer");
                return 0;
            }
            s->first = dev->next_value + 1;
            s->ncmds = 0;
            s->nbytes = 0;
            ct_record_reset(&s->rec);
            STORE(s->state, CT_SLOT_OPEN);
        }
        uint64_t value = ++dev->next_value;
        ct_slot_append(dev, s, value, pair, ops, n, items, nitems, kept, timed, 0);
        int full = (uint64_t)s->ncmds >= dev->knobs.batch_max || s->nbytes >= CT_BATCH_MAX_BYTES;
        if (!fresh && !full) { /* the common case of a stream: no system call at all */
            dev->cnt.appends++;
            pthread_mutex_unlock(&dev->state_lock);
            return value;
        }
        if (fresh && !full && defer_fresh(dev)) { /* this becomes the pending batch */
            dev->cnt.deferred++;
            STORE(dev->pending, i);
            pthread_mutex_unlock(&dev->state_lock);
            bg_kick(dev);
            return value;
        }
        /* idle queue (a lone submit goes out at once) or a full batch */
        if (full)
            dev->cnt.full++;
        else
            dev->cnt.direct++;
        VkResult r;
        dev->active++;
        Py_BEGIN_ALLOW_THREADS
        r = ct_close_and_submit_unlock(dev, i, 0);
        Py_END_ALLOW_THREADS
        dev->active--;
        if (r != VK_SUCCESS) {
            ct_raise_vk(st, r, "vkQueueSubmit");
            return 0;
        }
        return value;
    }
}
