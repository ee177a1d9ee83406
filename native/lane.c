/* cthreads._native — lanes: submissions of streams on their own queues, joined to the timeline.
 *
 * Python API: none directly (Device.submit(..., lane=, after=) in submit.c calls it).
 * Lane 0 is the default stream: batch.c's coalescing on `dev->queue`, signalling
 * `dev->timeline`, unchanged. Lanes 1..CT_LANES-1 carry the streams (cthreads/launch/stream.py
 * deals them out round-robin). Each has a VkQueue of its own where the compute family has
 * several (device.c asks for min(CT_LANES, queueCount) queues; lavapipe has one, and then every
 * lane shares queue 0 under queue_lock: correct, nothing overlaps) and a timeline semaphore of
 * its own (made by the lane's first compute submit).
 *
 * A lane submit is not coalesced: it takes a ring slot and the next value v of the one device
 * timeline, and goes out at once as two submissions (both under queue_lock, in value order):
 *   1. on the lane's queue: [wait dev->timeline >= w] -> its commands -> signal lane_sem = k
 *   2. on queue 0, the *join*: wait lane_sem >= k -> join_cb (one barrier) -> signal timeline = v
 * So "the counter passes v exactly when the batch holding v completed" still holds for every
 * value, and everything built on it (waits, completed(), retirement, CtAlloc.last_use and the
 * pool's frees, the records' last_use / last_write, GpuJob) keeps one integer per value: a free
 * never happens while a lane may still use the memory. The price is conservative ordering on
 * queue 0: work queued there after a join (default-stream work, later joins) starts after that
 * lane's work, since join_cb's barrier is in the wait's scope and every later command buffer on
 * queue 0 begins with a barrier. Lanes overlap each other; the default stream overlaps a lane
 * only with work queued on it before the lane's submit.
 * w (a dependency: after=, Stream.wait, the implicit last_write / last_use rule of the launch
 * path) is the signal value of the batch holding the value depended on, made final first: lane
 * 0's pending batch is closed and submitted before any lane submit (the join needs the next
 * value on queue 0 anyway). Waits name values some submission signals exactly, already
 * submitted (the 1.3.239 validation layer times out on anything else).
 * The copy lane (issue 16): a lane submit of copies and fills only (not timed: transfer
 * queues need not take timestamps, and vkCmdResetQueryPool is not a transfer command) goes to
 * `copy_queue` (queues.c: the DMA engines' transfer-only family) instead, recorded into the
 * slot's copy_cb with transfer-only barriers, signalling copy_sem; its join on queue 0 is the
 * same. A stream then spans two queues, so its order is kept by waits, not by queue order: a
 * copy waits for its lane's newest compute submit, and a compute submit on a queue other than
 * queue 0 for its lane's newest copy (on queue 0 the copy's join comes first anyway).
 * Under validation, a submit on another queue than queue 0 first retires what completed: the
 * slots' fences (timeline.c) tell the layer, which sees no host wait on a semaphore.
 */
#include "cthreads.h"

#define LOAD CT_LOAD
#define STORE CT_STORE

static VkResult
make_timeline(CtDevice *dev, VkSemaphore *out)
{
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE, .initialValue = 0};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    return dev->fn.vkCreateSemaphore(dev->device, &sci, NULL, out);
}

/* The copy lane's semaphore, command pool (its family's) and a command buffer per ring slot:
   made by the first submit that goes to the copy queue, not at open (issue 19: a process that
   never copies on a stream pays nothing for them). Each object only where a failed earlier
   attempt left none; ring[0].copy_cb, set last, says the lane is whole. GIL held (what makes
   two threads' first copies one creation), no lock held. */
static int
copy_lane_create(CtDevice *dev)
{
    VkResult r = dev->copy_sem != VK_NULL_HANDLE ? VK_SUCCESS : make_timeline(dev, &dev->copy_sem);
    if (r != VK_SUCCESS) {
        dev->copy_sem = VK_NULL_HANDLE;
        ct_raise_vk(dev->st, r, "vkCreateSemaphore (copy lane)");
        return -1;
    }
    VkCommandBuffer cbs[CT_RING];
    if (ct_command_ring_create(dev, dev->copy_family, &dev->copy_pool, cbs, " (copy lane)") < 0)
        return -1;
    for (int i = CT_RING - 1; i >= 0; i--) /* (ring[0] last: the lane is whole) */
        dev->ring[i].copy_cb = cbs[i];
    return 0;
}

/* Lane k's (>= 1) timeline semaphore, made by its first compute submit, not at open (issue
   19: a process without streams needs none). GIL held, no lock held. */
static int
lane_sem_create(CtDevice *dev, int k)
{
    VkResult r = make_timeline(dev, &dev->lane_sem[k]);
    if (r != VK_SUCCESS) {
        dev->lane_sem[k] = VK_NULL_HANDLE;
        ct_raise_vk(dev->st, r, "vkCreateSemaphore (lane %d)", k);
        return -1;
    }
    return 0;
}

/* After ct_ring_create (the command pool) and with the queues fetched (queues.c). */
int
ct_lanes_create(CtDevice *dev)
{
    dev->lane_sem[0] = dev->timeline;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult r = dev->fn.vkAllocateCommandBuffers(dev->device, &ai, &dev->join_cb);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkAllocateCommandBuffers (join)");
        return -1;
    }
    /* recorded once, submitted by every join (also while an earlier one is pending) */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
    r = dev->fn.vkBeginCommandBuffer(dev->join_cb, &bi);
    if (r == VK_SUCCESS) {
        ct_record_barrier(dev, dev->join_cb, 0);
        r = dev->fn.vkEndCommandBuffer(dev->join_cb);
    }
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "recording the join command buffer");
        return -1;
    }
    ct_open_mark(dev, CT_OPEN_JOIN);
    int rc = ct_layer_fences_create(dev); /* (timeline.c: validation's view of completion) */
    ct_open_mark(dev, CT_OPEN_LAYER_FENCES);
    return rc;
}

/* At teardown, the device idle (join_cb goes with the command pool). */
void
ct_lanes_destroy(CtDevice *dev)
{
    for (int k = 1; k < CT_LANES; k++)
        CT_DESTROY(dev, Semaphore, dev->lane_sem[k]);
    dev->lane_sem[0] = VK_NULL_HANDLE;
    dev->join_cb = VK_NULL_HANDLE;
    CT_DESTROY(dev, Semaphore, dev->copy_sem);
    CT_DESTROY(dev, CommandPool, dev->copy_pool); /* (frees the slots' copy_cb) */
    for (int i = 0; i < CT_RING; i++)
        dev->ring[i].copy_cb = VK_NULL_HANDLE;
    ct_layer_fences_destroy(dev);
}

/* The value a submission depending on `after` waits for on dev->timeline: 0 when `after`
   completed, else the signal value of the submitted batch holding it; UINT64_MAX when that
   batch is being submitted by another thread right now (try again). GIL held. */
static uint64_t
wait_target(CtDevice *dev, uint64_t after)
{
    if (after > dev->completed)
        ct_fold_completed(dev);
    if (after <= dev->completed)
        return 0;
    for (int i = 0; i < CT_RING; i++) {
        CtSlot *s = &dev->ring[i];
        int state = LOAD(s->state);
        if (state != CT_SLOT_FREE && s->first <= after && after <= s->value)
            return state == CT_SLOT_SUBMITTED ? s->value : UINT64_MAX;
    }
    return 0; /* retired meanwhile: completed */
}

/* Submit a lane's slot i (recorded, ended) and its join: on the lane's queue, or the copy
   queue when `copy`. Entered with state_lock held and the GIL released; returns with no lock
   held. On failure the lane's semaphore and the timeline are still advanced (waiters wake up)
   and the failure is recorded, as for batch.c's batches. */
static VkResult
submit_lane_unlock(CtDevice *dev, int lane, int i, uint64_t wait_value, VkResult ended, int copy)
{
    CtSlot *s = &dev->ring[i];
    VkQueue queue = copy ? dev->copy_queue : dev->lane_queue[lane];
    VkCommandBuffer cb = copy ? s->copy_cb : s->cb;
    VkSemaphore sem = copy ? dev->copy_sem : dev->lane_sem[lane];
    uint64_t *counter = copy ? &dev->copy_value : &dev->lane_value[lane];
    uint64_t value = s->value;
    STORE(dev->submitted_prev, dev->submitted);
    STORE(dev->submitted, value);
    VkResult inject = dev->inject;
    dev->inject = VK_SUCCESS;
    ct_lock(dev, &dev->queue_lock); /* before state_lock is let go: value order on queue 0 */
    pthread_mutex_unlock(&dev->state_lock);
    uint64_t lv = ++*counter;
    VkResult r = ended != VK_SUCCESS ? ended : inject;
    int lane_done = 0;
    if (r == VK_SUCCESS) {
        VkPipelineStageFlags all = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
        VkTimelineSemaphoreSubmitInfo tsi = {
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .waitSemaphoreValueCount = wait_value ? 1 : 0, .pWaitSemaphoreValues = &wait_value,
            .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &lv};
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &tsi,
                           .waitSemaphoreCount = wait_value ? 1 : 0,
                           .pWaitSemaphores = &dev->timeline, .pWaitDstStageMask = &all,
                           .commandBufferCount = 1, .pCommandBuffers = &cb,
                           .signalSemaphoreCount = 1, .pSignalSemaphores = &sem};
        VkFence fence = ct_layer_fence(dev, s); /* (the slot's work is this submission's) */
        r = dev->fn.vkQueueSubmit(queue, 1, &si, fence);
        lane_done = r == VK_SUCCESS;
        s->fence_sent = lane_done && fence != VK_NULL_HANDLE;
        if (r == VK_SUCCESS) {
            VkTimelineSemaphoreSubmitInfo jtsi = {
                .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                .waitSemaphoreValueCount = 1, .pWaitSemaphoreValues = &lv,
                .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &value};
            VkSubmitInfo ji = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &jtsi,
                               .waitSemaphoreCount = 1, .pWaitSemaphores = &sem,
                               .pWaitDstStageMask = &all, .commandBufferCount = 1,
                               .pCommandBuffers = &dev->join_cb, .signalSemaphoreCount = 1,
                               .pSignalSemaphores = &dev->timeline};
            r = dev->fn.vkQueueSubmit(dev->queue, 1, &ji, VK_NULL_HANDLE);
        }
        STORE(dev->nbatches, dev->nbatches + 1); /* (written under queue_lock only) */
    }
    if (r != VK_SUCCESS) {
        /* keep both timelines whole so waiters on these values wake up */
        VkSemaphoreSignalInfo lsig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                      .semaphore = sem, .value = lv};
        VkSemaphoreSignalInfo sig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                     .semaphore = dev->timeline, .value = value};
        if (dev->fn.vkDeviceWaitIdle(dev->device) != VK_SUCCESS ||
            (!lane_done && dev->fn.vkSignalSemaphore(dev->device, &lsig) != VK_SUCCESS) ||
            dev->fn.vkSignalSemaphore(dev->device, &sig) != VK_SUCCESS)
            r = VK_ERROR_DEVICE_LOST;
        ct_note_failure(dev, s->first, value, r, 0);
    }
    STORE(s->state, CT_SLOT_SUBMITTED);
    STORE(dev->queued, value); /* (written under queue_lock only, in value order) */
    pthread_mutex_unlock(&dev->queue_lock);
    return r;
}

/* Whether a lane submit goes to the copy queue: there is one, and the ops are copies and
   fills only, untimed. */
static int
on_copy_queue(const CtDevice *dev, const CtOp *ops, Py_ssize_t n, int timed)
{
    if (dev->copy_queue == VK_NULL_HANDLE || timed || n == 0)
        return 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (ops[k].kind == 0)
            return 0;
    return 1;
}

/* ct_enqueue for a lane: lane 0 is ct_enqueue itself (`after` is met there by construction:
   every join precedes later work on queue 0); lanes >= 1 record ops into a slot of their own
   and submit it at once after `after` (a timeline value, 0 for none) on the lane's queue or
   the copy queue. GIL held, no lock held. Returns the submit's timeline value (0 + exception
   on error). */
uint64_t
ct_enqueue_lane(CtDevice *dev, int lane, uint64_t after, const CtOp *ops, Py_ssize_t n,
                PyObject *const *items, Py_ssize_t nitems, PyObject *kept, int timed)
{
    if (lane <= 0)
        return ct_enqueue(dev, ops, n, items, nitems, kept, timed);
    lane = 1 + (lane - 1) % (CT_LANES - 1);
    CtState *st = dev->st;
    if ((timed = ct_ring_timed(dev, timed)) < 0) /* (ring.c: the query pool on first use) */
        return 0;
    int copy = on_copy_queue(dev, ops, n, timed);
    if (copy && dev->ring[0].copy_cb == VK_NULL_HANDLE && copy_lane_create(dev) < 0)
        return 0;
    if (!copy && dev->lane_sem[lane] == VK_NULL_HANDLE && lane_sem_create(dev, lane) < 0)
        return 0;
    int elsewhere = copy || dev->lane_queue[lane] != dev->queue; /* not on queue 0 */
    Py_ssize_t nhold = nitems + (kept != NULL);
    /* under validation, what the host saw complete (which the pool and the copies' host waits
       rely on) reaches the layer before work on another queue (timeline.c's fences) */
    if (elsewhere && dev->layer_fences)
        ct_timeline_retire(dev);
    for (;;) {
        int ready = ct_submit_ready(dev, timed);
        if (ready != 0) {
            if (ready < 0)
                return 0;
            continue;
        }
        if (LOAD(dev->pending) >= 0) { /* lane 0's values before ours reach queue 0 first */
            if (ct_flush_pending(dev, UINT64_MAX) < 0)
                return 0;
            continue;
        }
        uint32_t pair = dev->qnext;
        /* stream order where the lane's work is on two queues (see the top of this file) */
        uint64_t dep = after, other = dev->lane_last[lane][!copy];
        if (elsewhere && other > dep)
            dep = other;
        uint64_t wait_value = dep ? wait_target(dev, dep) : 0;
        if (wait_value == UINT64_MAX) {
            ct_pause_without_gil();
            continue;
        }
        int counted = wait_value != 0;
        /* On a queue other than queue 0, also wait for the newest completed value: work that
           completed on another queue (pooled staging memory, an array whose last use is done)
           is otherwise ordered before this submission only by the host having seen it
           complete. The value has been signalled: the wait costs nothing. (Validation 1.3.239
           ignores the value of a timeline wait; the fences retired above tell it instead.) */
        if (wait_value == 0 && elsewhere)
            wait_value = LOAD(dev->completed);
        ct_lock(dev, &dev->state_lock);
        if (dev->pending >= 0) {
            pthread_mutex_unlock(&dev->state_lock);
            continue;
        }
        int i = ct_claim_slot(dev, -1, nhold, timed);
        if (i == CT_CLAIM_FAILED)
            return 0;
        if (i == CT_CLAIM_AGAIN)
            continue;
        CtSlot *s = &dev->ring[i];
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VkCommandBuffer cb = copy ? s->copy_cb : s->cb;
        VkResult r = dev->fn.vkBeginCommandBuffer(cb, &bi);
        if (r != VK_SUCCESS) {
            pthread_mutex_unlock(&dev->state_lock);
            ct_raise_vk(st, r, "vkBeginCommandBuffer");
            return 0;
        }
        uint64_t value = ++dev->next_value;
        s->first = value;
        s->ncmds = 0;
        s->nbytes = 0;
        ct_record_reset(&s->rec);
        STORE(s->state, CT_SLOT_OPEN); /* (never dev->pending: nothing appends to it) */
        dev->lane_last[lane][copy] = value;
        ct_slot_append(dev, s, value, pair, ops, n, items, nitems, kept, timed, copy);
        ct_record_barrier(dev, cb, CT_BAR_HOST | (copy ? CT_BAR_COPY : 0));
        VkResult ended = dev->fn.vkEndCommandBuffer(cb);
        dev->cnt.lane_submits++;
        dev->cnt.copy_submits += (uint64_t)copy;
        if (counted)
            dev->cnt.lane_waits++;
        dev->active++;
        Py_BEGIN_ALLOW_THREADS
        r = submit_lane_unlock(dev, lane, i, wait_value, ended, copy);
        Py_END_ALLOW_THREADS
        dev->active--;
        if (r != VK_SUCCESS) {
            ct_raise_vk(st, r, copy ? "vkQueueSubmit (lane %d, copy queue)" : "vkQueueSubmit (lane %d)", lane);
            return 0;
        }
        return value;
    }
}

/* Device._copy_lane_wait(timeout_s) -> bool | None (test hook): a host wait (GIL released) until
   the copy lane finished every copy submitted to it so far, on its own semaphore, whatever
   queue 0 is doing; None without a copy lane. A copy that finishes while queue 0 is held by a
   kernel ran beside that kernel: tests/launch/test_copy_lane.py shows overlap so, no clock. */
PyObject *
ct_device_copy_lane_wait(CtDevice *dev, PyObject *arg)
{
    if (ct_device_check(dev) < 0)
        return NULL;
    if (dev->copy_queue == NULL)
        Py_RETURN_NONE;
    if (dev->copy_sem == VK_NULL_HANDLE) /* no copy yet (the lane is made by the first) */
        Py_RETURN_TRUE;
    ct_lock(dev, &dev->queue_lock);
    uint64_t value = dev->copy_value;
    pthread_mutex_unlock(&dev->queue_lock);
    return ct_host_wait_semaphore(dev, dev->copy_sem, value, arg, "copy lane");
}
