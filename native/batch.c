/* cthreads._native — batch: submission coalescing, the background submitter, timeline waits.
 *
 * Python API: none directly (submit.c and device.c call it).
 * A submit on an idle queue is recorded into its own command buffer and submitted at once.
 * While a batch is in flight, submits are appended to one open ("pending") command buffer,
 * which is submitted (a) by the device's background thread as soon as the in-flight work
 * completes, (b) at once when a host waits for (or completed() polls past) a value in it, or
 * (c) when it holds CT_BATCH_MAX_CMDS commands or CT_BATCH_MAX_BYTES bytes of copies/fills.
 * Each submit keeps its own timeline value; a batch signals the highest value it holds, so
 * counter >= v exactly when the batch holding v completed.
 * (The ring of batches itself — creation, destruction, retirement — is in ring.c.)
 * Locks: state_lock (pending batch, values, recording; command pool access), then queue_lock
 * (vkQueueSubmit). Holders never wait for the GIL, run Python code or make Python objects; the
 * background thread never touches Python at all: references a batch keeps are dropped by
 * ct_ring_retire, on the next Python-side call after completion.
 */
#include "cthreads.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#define CT_SPIN_NS 30000ull    /* a waiting host spins this long before blocking */
#define CT_BG_SPIN_NS 20000ull /* so does the background thread */
#define CT_BG_WAIT_NS 100000000ull
#define CT_STREAM_NS 100000ull /* submits closer than this to the previous one form a stream */
#define CT_BG_HOT_NS 200000ull /* the background thread polls this long after its last work */

#define LOAD CT_LOAD
#define STORE CT_STORE

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- failures ---------------------------------------------------------------------------- */

static void
note_failure(CtDevice *dev, uint64_t lo, uint64_t hi, VkResult r, int from_bg)
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
static VkResult
close_and_submit_unlock(CtDevice *dev, int i, int from_bg)
{
    CtSlot *s = &dev->ring[i];
    if (dev->pending == i)
        STORE(dev->pending, -1);
    ct_record_barrier(dev, s->cb, 1);
    VkResult r = dev->fn.vkEndCommandBuffer(s->cb);
    uint64_t value = s->value;
    STORE(dev->submitted, value);
    VkResult inject = dev->inject;
    dev->inject = VK_SUCCESS;
    pthread_mutex_lock(&dev->queue_lock); /* taken before state_lock is let go: value order */
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
        r = dev->fn.vkQueueSubmit(dev->queue, 1, &si, VK_NULL_HANDLE);
        STORE(dev->nbatches, dev->nbatches + 1); /* (written under queue_lock only) */
    }
    if (r != VK_SUCCESS) {
        /* keep the timeline whole so waiters on these values wake up */
        VkSemaphoreSignalInfo sig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                     .semaphore = dev->timeline, .value = value};
        if (dev->fn.vkDeviceWaitIdle(dev->device) != VK_SUCCESS ||
            dev->fn.vkSignalSemaphore(dev->device, &sig) != VK_SUCCESS)
            r = VK_ERROR_DEVICE_LOST;
        note_failure(dev, s->first, value, r, from_bg);
    }
    STORE(s->state, CT_SLOT_SUBMITTED);
    pthread_mutex_unlock(&dev->queue_lock);
    return r;
}

/* Submit the pending batch now if it holds a value <= upto. GIL held, no lock held. */
int
ct_flush_pending(CtDevice *dev, uint64_t upto)
{
    if (LOAD(dev->pending) < 0)
        return 0;
    pthread_mutex_lock(&dev->state_lock);
    int i = dev->pending;
    if (i < 0 || dev->ring[i].first > upto) {
        pthread_mutex_unlock(&dev->state_lock);
        return 0;
    }
    VkResult r;
    dev->active++;
    Py_BEGIN_ALLOW_THREADS
    r = close_and_submit_unlock(dev, i, 0);
    Py_END_ALLOW_THREADS
    dev->active--;
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkQueueSubmit (pending batch)");
        return -1;
    }
    return 0;
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

static uint64_t
oldest_submitted(CtDevice *dev)
{
    uint64_t v = UINT64_MAX;
    for (int i = 0; i < CT_RING; i++)
        if (LOAD(dev->ring[i].state) == CT_SLOT_SUBMITTED && dev->ring[i].value < v)
            v = dev->ring[i].value;
    return v;
}

static int
reserve(CtSlot *s, Py_ssize_t nkeep, int timed)
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

static void
set_last_use(CtDevice *dev, CtAlloc *a, uint64_t value)
{
    if (a != NULL)
        a->last_use = value;
    (void)dev;
}

/* Record ops (already parsed) as one submit and return its timeline value (0 + exception on
   error). keep_items[0..nitems) and kept (a tuple, or NULL) stay referenced until the value
   completes. GIL held, no lock held. PyMem_* under state_lock is fine: it runs no Python. */
uint64_t
ct_enqueue(CtDevice *dev, const CtOp *ops, Py_ssize_t n, PyObject *const *items, Py_ssize_t nitems,
           PyObject *kept, int timed)
{
    CtState *st = dev->st;
    timed = timed && dev->query_pool != VK_NULL_HANDLE;
    Py_ssize_t nhold = nitems + (kept != NULL);
    for (;;) {
        if (ct_device_check(dev) < 0 || ct_check_failed(dev, 0, 1) < 0)
            return 0;
        uint32_t pair = dev->qnext;
        if (timed && dev->qbusy[pair]) { /* all query pairs in use: wait for the oldest */
            if (ct_wait_done(dev, dev->qvalue[pair], UINT64_MAX) < 0)
                return 0;
            continue;
        }
        pthread_mutex_lock(&dev->state_lock);
        int i = dev->pending, fresh = i < 0;
        if (fresh && (i = find_free_slot(dev)) < 0) { /* every batch in flight */
            uint64_t oldest = oldest_submitted(dev);
            pthread_mutex_unlock(&dev->state_lock);
            if (oldest == UINT64_MAX) { /* the rest are being submitted right now */
                Py_BEGIN_ALLOW_THREADS
                sched_yield();
                Py_END_ALLOW_THREADS
            } else if (ct_wait_done(dev, oldest, UINT64_MAX) < 0)
                return 0;
            continue;
        }
        CtSlot *s = &dev->ring[i];
        if (reserve(s, nhold, timed) < 0) {
            pthread_mutex_unlock(&dev->state_lock);
            PyErr_NoMemory();
            return 0;
        }
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
            s->bound = VK_NULL_HANDLE;
            STORE(s->state, CT_SLOT_OPEN);
        }
        uint64_t value = ++dev->next_value;
        VkCommandBuffer cb = s->cb;
        if (timed) {
            dev->fn.vkCmdResetQueryPool(cb, dev->query_pool, 2 * pair, 2);
            /* bottom of pipe: latched once every earlier command finished */
            dev->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, dev->query_pool,
                                        2 * pair);
        }
        ct_record_ops(dev, cb, ops, n, &s->bound);
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
        for (Py_ssize_t k = 0; k < nitems; k++)
            s->keep[s->nkeep++] = Py_NewRef(items[k]);
        if (kept != NULL) {
            s->keep[s->nkeep++] = Py_NewRef(kept);
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kept); k++) {
                PyObject *o = PyTuple_GET_ITEM(kept, k);
                if (Py_IS_TYPE(o, st->BufferType) && ((CtBuffer *)o)->dev == dev)
                    set_last_use(dev, ((CtBuffer *)o)->alloc, value);
            }
        }
        int full = s->ncmds >= CT_BATCH_MAX_CMDS || s->nbytes >= CT_BATCH_MAX_BYTES;
        int defer = !fresh;
        if (fresh && !full) {
            /* A stream of submits goes to the background thread even when the queue is idle:
               the host would otherwise pay a whole vkQueueSubmit per launch whenever the
               device is faster than the launches. A lone submit goes out at once. */
            uint64_t t = now_ns();
            defer = t - dev->last_enqueue_ns < CT_STREAM_NS;
            dev->last_enqueue_ns = t;
            if (!defer && dev->submitted > dev->completed) {
                /* is the queue still busy? (a cheap counter read; no Python) */
                uint64_t cur = 0;
                if (dev->fn.vkGetSemaphoreCounterValue(dev->device, dev->timeline, &cur) ==
                        VK_SUCCESS && cur > dev->completed)
                    dev->completed = cur;
                defer = dev->submitted > dev->completed;
            }
        } else
            dev->last_enqueue_ns = now_ns();
        if (!full && defer) {
            if (fresh) { /* in flight: this becomes the pending batch */
                STORE(dev->pending, i);
                pthread_cond_signal(&dev->bg_cond);
            }
            pthread_mutex_unlock(&dev->state_lock);
            return value;
        }
        /* idle queue (a lone submit goes out at once) or a full batch */
        VkResult r;
        dev->active++;
        Py_BEGIN_ALLOW_THREADS
        r = close_and_submit_unlock(dev, i, 0);
        Py_END_ALLOW_THREADS
        dev->active--;
        if (r != VK_SUCCESS) {
            ct_raise_vk(st, r, "vkQueueSubmit");
            return 0;
        }
        return value;
    }
}

/* ---- waiting ----------------------------------------------------------------------------- */

/* Wait without the GIL until value completes or timeout_ns passes. */
VkResult
ct_wait_value(CtDevice *dev, uint64_t value, uint64_t timeout_ns)
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

/* Wait until value completed: flushes the pending batch when it holds value, then waits and
   retires. 1 done, 0 timeout, -1 error (exception set). GIL held, no lock held. */
int
ct_wait_done(CtDevice *dev, uint64_t value, uint64_t timeout_ns)
{
    if (value > dev->completed) {
        if (value > LOAD(dev->submitted) && ct_flush_pending(dev, value) < 0)
            return -1;
        /* Host waits name the value the batch signals (the same condition: counter >= value
           iff its batch completed), and start once that batch reached vkQueueSubmit. Older
           validation layers (1.3.239) time out on waits for values no submission signals
           exactly, or that are not submitted yet (fixed upstream in VVL PR #8519). */
        uint64_t target = 0;
        while (target == 0) {
            int found = -1;
            for (int i = 0; i < CT_RING && found < 0; i++) {
                CtSlot *s = &dev->ring[i];
                if (LOAD(s->state) != CT_SLOT_FREE && s->first <= value && value <= s->value)
                    found = i;
            }
            if (found < 0) { /* retired meanwhile: it completed */
                target = value;
                break;
            }
            if (LOAD(dev->ring[found].state) == CT_SLOT_SUBMITTED)
                target = dev->ring[found].value;
            else if (LOAD(dev->pending) == found) { /* reopened? cannot happen; be safe */
                if (ct_flush_pending(dev, value) < 0)
                    return -1;
            } else { /* another thread is submitting it right now */
                Py_BEGIN_ALLOW_THREADS
                sched_yield();
                Py_END_ALLOW_THREADS
            }
        }
        VkResult r = ct_wait_value(dev, target, timeout_ns);
        if (r == VK_TIMEOUT)
            return 0;
        if (r != VK_SUCCESS) {
            ct_raise_vk(dev->st, r, "waiting for GPU work");
            return -1;
        }
        if (ct_device_check(dev) < 0 || ct_device_refresh_completed(dev) < 0)
            return -1;
    }
    if (ct_check_failed(dev, value, 0) < 0)
        return -1;
    ct_ring_retire(dev);
    return 1;
}

/* ---- the background submitter ------------------------------------------------------------ */

/* Wait (no GIL, no lock) until target completes, the stop flag is set, or a while passed. */
static VkResult
bg_wait(CtDevice *dev, uint64_t target)
{
    uint64_t start = now_ns(), cur = 0;
    for (;;) {
        VkResult r = dev->fn.vkGetSemaphoreCounterValue(dev->device, dev->timeline, &cur);
        if (r != VK_SUCCESS || cur >= target)
            return r;
        if (now_ns() - start >= CT_BG_SPIN_NS || LOAD(dev->bg_stop))
            break;
        sched_yield();
    }
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1, .pSemaphores = &dev->timeline,
                              .pValues = &target};
    return dev->fn.vkWaitSemaphores(dev->device, &wi, CT_BG_WAIT_NS);
}

static void *
bg_main(void *arg)
{
    CtDevice *dev = arg;
    uint64_t hot_until = 0;
    pthread_mutex_lock(&dev->state_lock);
    while (!dev->bg_stop) {
        if (dev->pending < 0 || LOAD(dev->bg_lost)) {
            if (now_ns() < hot_until && !LOAD(dev->bg_lost)) {
                /* recently busy: poll for a while (a condvar wake-up costs tens of µs) */
                pthread_mutex_unlock(&dev->state_lock);
                while (LOAD(dev->pending) < 0 && !LOAD(dev->bg_stop) && now_ns() < hot_until)
                    sched_yield();
                pthread_mutex_lock(&dev->state_lock);
                if (dev->pending < 0)
                    hot_until = 0;
            } else
                pthread_cond_wait(&dev->bg_cond, &dev->state_lock);
            continue;
        }
        uint64_t target = dev->submitted, cur = 0;
        VkResult r = dev->fn.vkGetSemaphoreCounterValue(dev->device, dev->timeline, &cur);
        if (r == VK_SUCCESS && cur < target) {
            pthread_mutex_unlock(&dev->state_lock);
            r = bg_wait(dev, target);
            pthread_mutex_lock(&dev->state_lock);
            if (r == VK_SUCCESS || r == VK_TIMEOUT)
                continue; /* look again: the batch may have been flushed meanwhile */
        }
        if (r == VK_ERROR_DEVICE_LOST) {
            STORE(dev->bg_lost, 1);
            continue;
        }
        /* the in-flight work completed (or waiting failed oddly: submitting is still correct,
           the queue orders the batch after it) */
        close_and_submit_unlock(dev, dev->pending, 1);
        hot_until = now_ns() + CT_BG_HOT_NS;
        pthread_mutex_lock(&dev->state_lock);
    }
    pthread_mutex_unlock(&dev->state_lock);
    return NULL;
}

int
ct_bg_start(CtDevice *dev)
{
    if (pthread_create(&dev->bg_thread, NULL, bg_main, dev) != 0) {
        ct_raise(dev->st->VulkanInitFailed, "could not start the submission thread");
        return -1;
    }
    dev->bg_started = 1;
    return 0;
}

/* Stop and join the background thread. GIL held (released while joining). */
void
ct_bg_stop(CtDevice *dev)
{
    if (!dev->bg_started)
        return;
    pthread_mutex_lock(&dev->state_lock);
    STORE(dev->bg_stop, 1);
    pthread_cond_signal(&dev->bg_cond);
    pthread_mutex_unlock(&dev->state_lock);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(dev->bg_thread, NULL);
    Py_END_ALLOW_THREADS
    dev->bg_started = 0;
}
