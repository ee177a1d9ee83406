/* cthreads._native — wait: host waits for a timeline value (spin, then sliced blocking waits).
 *
 * Python API: none directly (Device.wait / wait_idle in submit.c, and batch.c when every
 * batch or query pair is in flight, call ct_wait_done); ct_host_wait_semaphore for the
 * semaphores outside the timeline (Device.semaphore_wait, Device._copy_lane_wait).
 * A wait first takes what the background thread saw, then polls the counter for knobs.spin_ns,
 * then blocks in vkWaitSemaphores in slices of CT_WAIT_SLICE_NS (50 ms), taking the GIL
 * between slices to run signal handlers and to see a teardown that began: a waiter never
 * touches a destroyed device. Completion found here is folded in and retired by timeline.c.
 */
#include "cthreads.h"

#define LOAD CT_LOAD

/* Wait without the GIL until value completes or timeout_ns passes. *seen gets a counter value
   known to be reached (0 when none). Polls for knobs.spin_ns (short kernels finish within
   microseconds), pausing knobs.poll_ns between polls, then blocks in vkWaitSemaphores in
   slices of CT_WAIT_SLICE_NS: between slices it takes the GIL back to run signal handlers
   (Ctrl-C raises KeyboardInterrupt promptly: CT_WAIT_INTERRUPTED, exception set) and to see
   a teardown that began meanwhile (CT_WAIT_REFUSED, no exception): a blocked waiter never
   keeps teardown waiting for longer than a slice, and never touches a destroyed device. */
VkResult
ct_wait_value(CtDevice *dev, uint64_t value, uint64_t timeout_ns, uint64_t *seen)
{
    VkResult r = VK_SUCCESS;
    *seen = 0;
    if (LOAD(dev->bg_completed) >= value) {
        *seen = LOAD(dev->bg_completed);
        return VK_SUCCESS;
    }
    uint64_t spin = dev->knobs.spin_ns, poll = dev->knobs.poll_ns;
    uint64_t start = 0, cur = 0, el = 0;
    int done = 0;
    if (spin > 0 || timeout_ns == 0) {
        if (ct_nogil_enter(dev) < 0)
            return CT_WAIT_REFUSED;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            r = ct_poll_counter(dev, &cur, 0);
            if (r != VK_SUCCESS || cur >= value) {
                done = 1;
                if (r == VK_SUCCESS)
                    *seen = cur;
                break;
            }
            uint64_t t = ct_now_ns();
            if (start == 0)
                start = t;
            el = t - start;
            if (el >= spin || el >= timeout_ns)
                break;
            ct_spin_step(dev, poll);
        }
        Py_END_ALLOW_THREADS
        dev->active--;
    }
    if (start == 0)
        start = ct_now_ns();
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1, .pSemaphores = &dev->timeline,
                              .pValues = &value};
    while (!done) {
        uint64_t left = UINT64_MAX;
        if (timeout_ns != UINT64_MAX) {
            el = ct_now_ns() - start;
            left = el >= timeout_ns ? 0 : timeout_ns - el;
        }
        uint64_t slice = left < CT_WAIT_SLICE_NS ? left : CT_WAIT_SLICE_NS;
        if (ct_nogil_enter(dev) < 0)
            return CT_WAIT_REFUSED;
        Py_BEGIN_ALLOW_THREADS
        CT_COUNT(dev->cnt.host_blocks);
        r = dev->fn.vkWaitSemaphores(dev->device, &wi, slice);
        Py_END_ALLOW_THREADS
        dev->active--;
        if (r == VK_SUCCESS)
            *seen = value;
        if (r != VK_TIMEOUT || slice == left)
            break;
        if (PyErr_CheckSignals() < 0) /* (a no-op off the main thread) */
            return CT_WAIT_INTERRUPTED;
    }
    if (r == VK_ERROR_DEVICE_LOST)
        dev->lost = 1;
    return r;
}

/* Wait until value completed: flushes the pending batch when it holds value, then waits and
   retires. 1 done, 0 timeout, -1 error (exception set). GIL held, no lock held. */
int
ct_wait_done(CtDevice *dev, uint64_t value, uint64_t timeout_ns)
{
    if (value > dev->completed)
        ct_fold_completed(dev);
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
            } else /* another thread is submitting it right now */
                ct_pause_without_gil();
        }
        uint64_t seen = 0;
        VkResult r = ct_wait_value(dev, target, timeout_ns, &seen);
        if (r == VK_TIMEOUT)
            return 0;
        if (r == CT_WAIT_INTERRUPTED) /* KeyboardInterrupt (or a handler's error) is set */
            return -1;
        if (r == CT_WAIT_REFUSED) { /* teardown began: GpuUseAfterDestroy */
            if (ct_device_check(dev) == 0)
                ct_raise(dev->st->GpuUseAfterDestroy, "the Vulkan device was shut down");
            return -1;
        }
        if (r != VK_SUCCESS) {
            ct_raise_vk(dev->st, r, "waiting for GPU work");
            return -1;
        }
        if (ct_device_check(dev) < 0)
            return -1;
        if (seen > dev->completed) /* no second counter read: the wait told us */
            dev->completed = seen;
    }
    if (ct_check_failed(dev, value, 0) < 0)
        return -1;
    if (ct_timeline_sync(dev, value, CT_SYNC_READ | CT_SYNC_RETIRE) < 0)
        return -1;
    return 1;
}

/* A host wait (GIL released) until `sem` reaches `value`: True, or False once `timeout` (seconds,
   a Python number from 0 to 3600) passed; for semaphores outside the device's timeline (the
   ones CUDA shares, the copy lane's), which ct_wait_done cannot watch. The device was checked
   alive by the caller. `what` names the semaphore in a Vulkan error. One blocking wait, not
   sliced like ct_wait_done's (Ctrl-C waits for it): for tests and tools. GIL held. */
PyObject *
ct_host_wait_semaphore(CtDevice *dev, VkSemaphore sem, uint64_t value, PyObject *timeout,
                       const char *what)
{
    double timeout_s = PyFloat_AsDouble(timeout);
    if (timeout_s == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(timeout_s >= 0.0 && timeout_s <= 3600.0))
        return ct_raise(dev->st->GpuInvalidArgument,
                        "timeout_s must be between 0 and 3600 seconds, not %R", timeout);
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1, .pSemaphores = &sem, .pValues = &value};
    if (ct_nogil_enter(dev) < 0)
        return ct_raise(dev->st->GpuUseAfterDestroy, "the device is being closed");
    VkResult r;
    Py_BEGIN_ALLOW_THREADS
    r = dev->fn.vkWaitSemaphores(dev->device, &wi, (uint64_t)(timeout_s * 1e9));
    Py_END_ALLOW_THREADS
    dev->active--;
    if (r == VK_TIMEOUT)
        Py_RETURN_FALSE;
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkWaitSemaphores (%s)", what);
    Py_RETURN_TRUE;
}
