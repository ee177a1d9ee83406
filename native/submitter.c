/* cthreads._native — submitter: the device's background thread that submits pending batches.
 *
 * Python API: none (device.c starts and stops it: ct_bg_start, ct_bg_stop).
 * It waits, with no GIL and no lock held, for the in-flight work to complete, then submits the
 * pending batch (batch.c, ct_close_and_submit_unlock). It never touches Python objects. Polls
 * use a CPU pause between reads, never sched_yield on GPUs (syscalls are what costs under
 * sandboxes such as gVisor); long waits block in vkWaitSemaphores.
 */
#include "cthreads.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CT_BG_WAIT_NS 100000000ull /* the thread's blocking waits end this often (stop checks) */

#define LOAD CT_LOAD
#define STORE CT_STORE

/* ---- the background submitter ------------------------------------------------------------ */

/* Wait (no GIL, no lock) until target completes, the stop flag is set, or a while passed:
   polls every knobs.bg_poll_ns for knobs.bg_spin_ns (a CPU pause in between, no sched_yield),
   then blocks in vkWaitSemaphores. */
static VkResult
bg_wait(CtDevice *dev, uint64_t target)
{
    uint64_t cur = 0, start = 0, spin = dev->knobs.bg_spin_ns;
    VkResult r;
    if (spin > 0) {
        for (;;) {
            r = ct_poll_counter(dev, &cur, 1);
            if (r != VK_SUCCESS)
                return r;
            if (cur >= target) {
                ct_note_bg_completed(dev, cur);
                return VK_SUCCESS;
            }
            if (LOAD(dev->bg_stop))
                return VK_TIMEOUT;
            uint64_t t = ct_now_ns();
            if (start == 0)
                start = t;
            else if (t - start >= spin)
                break;
            ct_spin_step(dev, dev->knobs.bg_poll_ns);
        }
    }
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1, .pSemaphores = &dev->timeline,
                              .pValues = &target};
    CT_COUNT(dev->cnt.bg_blocks);
    r = dev->fn.vkWaitSemaphores(dev->device, &wi, CT_BG_WAIT_NS);
    if (r == VK_SUCCESS)
        ct_note_bg_completed(dev, target);
    return r;
}

/* Sleep until there is a pending batch (and the device is not lost) or a stop request. */
static void
bg_sleep(CtDevice *dev)
{
    pthread_mutex_lock(&dev->bg_lock);
    __atomic_store_n(&dev->bg_sleeping, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    CT_COUNT(dev->cnt.bg_sleeps);
    /* any wake-up ends the sleep, even when a host already submitted the batch: the thread
       then watches (bg_hot_ns) instead of costing the next submit another wake-up */
    uint64_t seq = dev->bg_wake_seq;
    while (!LOAD(dev->bg_stop) && seq == dev->bg_wake_seq &&
           (LOAD(dev->pending) < 0 || LOAD(dev->bg_lost)))
        pthread_cond_wait(&dev->bg_cond, &dev->bg_lock);
    __atomic_store_n(&dev->bg_sleeping, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&dev->bg_lock);
}

/* Watch for a pending batch (CPU pause, a clock read about every µs) until `until`. */
static void
bg_watch(CtDevice *dev, uint64_t until)
{
    uint64_t chunk = LOAD(ct_pauses_per_us);
    while (LOAD(dev->pending) < 0 && !LOAD(dev->bg_stop)) {
        if (dev->knobs.spin_yield)
            sched_yield();
        else
            for (uint64_t k = 0; k < chunk && LOAD(dev->pending) < 0; k++)
                ct_cpu_relax();
        if (ct_now_ns() >= until)
            break;
    }
}

static void *
bg_main(void *arg)
{
    CtDevice *dev = arg;
#if defined(__linux__)
    pthread_setname_np(pthread_self(), "ct-submit");
#endif
    while (!LOAD(dev->bg_stop)) {
        if (LOAD(dev->pending) < 0 || LOAD(dev->bg_lost)) {
            /* Recently busy (a batch opened or submitted within bg_hot_ns): watch for a while,
               without a lock and without system calls — waking a sleeping thread costs the
               submitting host a futex call. Otherwise sleep. */
            uint64_t last = LOAD(dev->bg_submit_ns), open = LOAD(dev->last_open_ns);
            uint64_t hot = dev->knobs.bg_hot_ns, t = ct_now_ns();
            if (open > last)
                last = open;
            if (hot && !LOAD(dev->bg_lost) && last + hot > t)
                bg_watch(dev, last + hot);
            else
                bg_sleep(dev);
            continue;
        }
        /* a pending batch: submit it once the work in flight completed (knobs.inflight 1), or
           once all but the latest batch did (2: the next batch is on the queue before the
           device runs dry, so a vkQueueSubmit's cost — ~20 µs under gVisor — overlaps the
           batch before it; it also makes batches smaller, see native/README.md). No lock is
           held while waiting; the host keeps appending meanwhile. */
        uint64_t target = LOAD(dev->submitted), seen = target;
        if (dev->knobs.inflight >= 2)
            target = LOAD(dev->submitted_prev);
        while (LOAD(dev->queued) < seen && !LOAD(dev->bg_stop)) /* being submitted now */
            ct_relax_ns(200);
        if (LOAD(dev->bg_completed) < target) {
            VkResult r = bg_wait(dev, target);
            if (r == VK_TIMEOUT)
                continue; /* look again (stop requests; the batch may have been flushed) */
            if (r == VK_ERROR_DEVICE_LOST) {
                STORE(dev->bg_lost, 1);
                continue;
            }
            /* other failures: submitting is still correct, the queue orders the batch after
               the work in flight */
        }
        if (dev->knobs.bg_delay_ns) {
            /* A batch opened on an idle queue (a stream of launches faster than the device)
               goes out once it is bg_delay_ns old, not at once: batches of one launch would
               cost a vkBeginCommandBuffer and a vkQueueSubmit each. Behind busy work it is
               already older. A host that waits or polls for it submits it at once. */
            uint64_t until = LOAD(dev->last_open_ns) + dev->knobs.bg_delay_ns;
            int i0 = LOAD(dev->pending);
            while (LOAD(dev->pending) == i0 && !LOAD(dev->bg_stop) && ct_now_ns() < until)
                ct_spin_step(dev, 500);
        }
        ct_lock(dev, &dev->state_lock);
        int i = dev->pending;
        if (i < 0 || dev->submitted != seen) { /* flushed by a host meanwhile: look again */
            pthread_mutex_unlock(&dev->state_lock);
            continue;
        }
        ct_close_and_submit_unlock(dev, i, 1);
        CT_COUNT(dev->cnt.bg_submits);
        STORE(dev->bg_submit_ns, ct_now_ns());
    }
    return NULL;
}

int
ct_bg_start(CtDevice *dev)
{
    ct_calibrate_pause();
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
    __atomic_store_n(&dev->bg_stop, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&dev->bg_lock);
    pthread_cond_signal(&dev->bg_cond);
    pthread_mutex_unlock(&dev->bg_lock);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(dev->bg_thread, NULL);
    Py_END_ALLOW_THREADS
    dev->bg_started = 0;
}
