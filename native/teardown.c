/* cthreads._native — teardown: the ways a Device ends (device.c makes it and calls these).
 *
 * Python API: Device.destroy() (device.c) runs ct_device_destroy; Device._abandon() (exit with
 * work running) and Device._forget() (the child after fork()) are here. Teardown order: stop
 * new work, submit the pending batch, join the submission thread, wait for host operations,
 * wait idle, drop in-flight references, pipelines, memory, ring, semaphores, pipeline cache,
 * device.
 */
#include "cthreads.h"

#include <sched.h>
#include <string.h>

/* Release every Vulkan object. Safe to call on a half-created device. */
void
ct_device_destroy(CtDevice *self)
{
    if (self->device == VK_NULL_HANDLE) {
        if (self->state != CT_UNINIT)
            self->state = CT_DESTROYED;
        return;
    }
    if (self->state == CT_CLOSING) /* another thread is tearing it down (GIL released) */
        return;
    /* From here on no operation without the GIL may start (ct_nogil_enter): threads that
       launch, wait or poll get GpuUseAfterDestroy, the ones already inside finish first. */
    self->state = CT_CLOSING;
    /* the pending batch is submitted, not dropped: its waiters see it complete */
    if (ct_flush_pending_ex(self, UINT64_MAX, 1) < 0) /* (after a loss it fails) */
        PyErr_Clear();
    ct_bg_stop(self);
    /* host operations running without the GIL (copies, waits, submits) finish first */
    while (self->active > 0) {
        Py_BEGIN_ALLOW_THREADS
        sched_yield();
        Py_END_ALLOW_THREADS
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->queue_lock);
    self->fn.vkDeviceWaitIdle(self->device);
    pthread_mutex_unlock(&self->queue_lock);
    Py_END_ALLOW_THREADS
    self->state = CT_DESTROYED;
    ct_ring_destroy(self);         /* drops in-flight references (may run Python code) */
    if (self->device == VK_NULL_HANDLE) /* ...such as a finalizer calling destroy() */
        return;
    ct_external_destroy(self);
    ct_pipelines_destroy_all(self);
    ct_memory_destroy_all(self);
    CT_DESTROY(self, PipelineCache, self->cache);
    self->fn.vkDestroyDevice(self->device, NULL);
    self->device = VK_NULL_HANDLE;
    self->inst->ndevices--;
}

/* _abandon(): give up on the device without waiting for it (process exit while a kernel
   still runs): new work is refused, the submission thread is asked to stop (not joined) and
   nothing is destroyed; the object keeps a reference to itself so that it is never freed
   under that thread. The process's exit releases what it held. */
PyObject *
ct_device_abandon(CtDevice *self, PyObject *unused)
{
    if (self->device == VK_NULL_HANDLE || self->abandoned)
        Py_RETURN_NONE;
    self->state = CT_DESTROYED;
    self->abandoned = 1;
    if (self->bg_started) {
        __atomic_store_n(&self->bg_stop, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&self->bg_lock);
        pthread_cond_signal(&self->bg_cond);
        pthread_mutex_unlock(&self->bg_lock);
    }
    Py_INCREF(self); /* never freed: the thread may still read it */
    Py_RETURN_NONE;
}

/* _forget(): in a child process after fork(): the Vulkan objects, the submission thread and
   any lock state belong to the parent. Drop them without a single call on them: the object
   becomes a destroyed device (GpuUseAfterDestroy), its buffers and pipelines free nothing. */
PyObject *
ct_device_forget(CtDevice *self, PyObject *unused)
{
    if (self->device == VK_NULL_HANDLE)
        Py_RETURN_NONE;
    self->state = CT_DESTROYED;
    self->device = VK_NULL_HANDLE;
    self->bg_started = 0;       /* that thread does not exist here */
    self->locks_ready = 0;      /* they may be held by threads that do not exist: never touched */
    self->active = 0;
    self->pending = -1;
    self->all = NULL;           /* the allocations' memory is the parent's */
    self->deferred = NULL;
    memset(self->pools, 0, sizeof self->pools);
    self->pipelines = NULL;
    for (int k = 0; k < CT_LANES; k++) /* the parent's semaphores and queues */
        self->lane_sem[k] = VK_NULL_HANDLE;
    self->join_cb = VK_NULL_HANDLE;
    self->copy_sem = VK_NULL_HANDLE;
    self->copy_pool = VK_NULL_HANDLE;
    for (int i = 0; i < CT_RING; i++) { /* the references are this process's: keep them alive
                                           (dropping them could run code that expects a device) */
        self->ring[i].keep = NULL;
        self->ring[i].nkeep = self->ring[i].keep_cap = 0;
        self->ring[i].state = CT_SLOT_FREE;
    }
    if (self->inst != NULL && self->inst->ndevices > 0)
        self->inst->ndevices--;
    Py_RETURN_NONE;
}
