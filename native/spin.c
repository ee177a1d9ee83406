/* cthreads._native — spin: clocks, CPU-pause spinning, locks with a bounded spin, counter polls.
 *
 * Python API: none (batch.c, wait.c, submitter.c and timeline.c use it).
 * The system calls of the hot paths are what costs (several µs each in a gVisor sandbox,
 * where every futex, sched_yield and driver ioctl is trapped): an append to the pending batch
 * makes none; spin loops use a CPU pause, never sched_yield (except on CPU devices, whose
 * "GPU" needs the cores: knobs.spin_yield), and are bounded before blocking.
 */
#include "cthreads.h"

#include <sched.h>
#include <time.h>

#define LOAD CT_LOAD
#define STORE CT_STORE

uint64_t
ct_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* pauses per microsecond, measured once (pause costs 10 to 150 cycles depending on the CPU) */
uint64_t ct_pauses_per_us; /* CPU pauses per µs, calibrated once (also read by submitter.c) */

void
ct_calibrate_pause(void)
{
    if (LOAD(ct_pauses_per_us))
        return;
    uint64_t best = UINT64_MAX;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t t0 = ct_now_ns();
        for (int k = 0; k < 2000; k++)
            ct_cpu_relax();
        uint64_t dt = ct_now_ns() - t0;
        if (dt < best)
            best = dt;
    }
    uint64_t per = best == 0 ? 1000 : 2000ull * 1000 / best;
    STORE(ct_pauses_per_us, per < 1 ? 1 : per);
}

/* spin about ns nanoseconds without a system call (or a clock read) */
void
ct_relax_ns(uint64_t ns)
{
    uint64_t n = ns * LOAD(ct_pauses_per_us) / 1000;
    if (n == 0)
        n = 1;
    for (uint64_t k = 0; k < n; k++)
        ct_cpu_relax();
}

/* One step of a spin loop: about ns of CPU pauses, or (CPU devices, whose work runs on the
   host's cores) a sched_yield. */
void
ct_spin_step(CtDevice *dev, uint64_t ns)
{
    if (dev->knobs.spin_yield)
        sched_yield();
    else if (ns)
        ct_relax_ns(ns);
    else
        ct_cpu_relax();
}

/* Lock m, spinning (CPU pause, no system call) for up to knobs.lock_spin_ns before blocking:
   holders keep these locks for a few µs at most, less than a futex sleep/wake round trip. */
void
ct_lock(CtDevice *dev, pthread_mutex_t *m)
{
    if (pthread_mutex_trylock(m) == 0)
        return;
    uint64_t chunk = LOAD(ct_pauses_per_us), start = 0;
    for (;;) {
        for (uint64_t k = 0; k < chunk; k++) { /* ~1 µs */
            ct_cpu_relax();
            if (pthread_mutex_trylock(m) == 0)
                return;
        }
        uint64_t t = ct_now_ns();
        if (start == 0)
            start = t;
        else if (t - start >= dev->knobs.lock_spin_ns)
            break;
    }
    CT_COUNT(dev->cnt.lock_blocks);
    pthread_mutex_lock(m);
}

/* Read the timeline counter (counted: on some drivers it is an ioctl). */
VkResult
ct_poll_counter(CtDevice *dev, uint64_t *value, int from_bg)
{
    CT_COUNT(*(from_bg ? &dev->cnt.bg_polls : &dev->cnt.host_polls));
    return dev->fn.vkGetSemaphoreCounterValue(dev->device, dev->timeline, value);
}

/* Give the GIL up for about a microsecond (another thread is in the middle of a submission,
   which needs no GIL). */
void
ct_pause_without_gil(void)
{
    Py_BEGIN_ALLOW_THREADS
    ct_relax_ns(1000);
    Py_END_ALLOW_THREADS
}
