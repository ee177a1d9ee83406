/* cthreads._native — external: memory and semaphores CUDA can see (issue 17); DLPack
 * capsules are dlpack.c's.
 *
 * Python API:
 *   Device.external() -> dict      {"memory_fd": bool, "semaphore_fd": bool, "attached_waits":
 *                                  how many hand-off waits rode on a batch's submission}
 *   Buffer.export_fd() -> int      a new POSIX fd of an 'export' buffer's memory (the caller
 *                                  owns it: CUDA's cuImportExternalMemory takes it over)
 *   Buffer.memory_size -> int      the VkDeviceMemory's allocationSize (what CUDA imports)
 *   Device.export_semaphore() -> (index, fd)   a new timeline semaphore (value 0) exported as
 *       OPAQUE_FD (the caller owns fd: cuImportExternalSemaphore takes it over); at most
 *       CT_EXT_SEMS per device, destroyed with it
 *   Device.semaphore_submit(index, wait=0, signal=0) -> None   (tests; hand-offs use the
 *       calls below) one submission on queue 0 without commands, after lane 0's pending
 *       batch: waits for `wait` on the semaphore (every later submission on queue 0 starts
 *       after it: the second scope of a wait includes later commands in submission order)
 *       and/or signals `signal` once everything submitted before it completed. 0 = no wait /
 *       no signal. No host wait.
 *   Device.semaphore_value(index) -> int      its counter (tests)
 *   Device.semaphore_wait(index, value) -> None   the hand-off CUDA -> ours: lane 0's pending
 *       batch is submitted first (work queued before does not wait for CUDA), then the next
 *       batch submitted on queue 0 (the one that carries the next launch) waits for `value` on
 *       the semaphore's alias, in its own vkQueueSubmit (batch.c asks ct_external_take_waits):
 *       no submission of its own. Values per semaphore rise (a later one replaces an earlier).
 *   Device.export_timeline() -> int   a new fd of the device timeline (created exportable
 *       where semaphores export: ring.c), for CUDA to wait on the value of a launch directly
 *   Device.handoff_flush(value) -> bool   the hand-off ours -> CUDA: False when the timeline
 *       passed `value` already (nothing to order), else the batch holding it is submitted now
 *       (CUDA may wait for it; a batch left pending would wait for the background thread)
 *
 * VK_KHR_external_memory_fd is enabled at device creation only where the device lists it and
 * reports our buffers exportable as OPAQUE_FD (device.c asks ct_external_wanted); nothing
 * requires it. 'export' buffers (kind 3) are
 * allocated with VkExternalMemoryBufferCreateInfo + VkExportMemoryAllocateInfo (OPAQUE_FD)
 * as a dedicated allocation, from the 'device' memory type; memory.c pools them apart from
 * plain ones (an allocation keeps whether it is exportable). VK_KHR_external_semaphore_fd is
 * enabled likewise (ct_external_semaphore_wanted: listed, and timeline semaphores export and
 * import as OPAQUE_FD), only with external memory.
 *
 * Waits on a value CUDA signals go to an alias: the semaphore's fd imported back into a second
 * VkSemaphore. The validation layer cannot see CUDA's signals; an imported semaphore is one it
 * knows to be signalled from outside, where on the exported one it would wait for a signal of
 * ours that never comes.
 */
#include "cthreads.h"

#include <string.h>
#include <unistd.h>

/* the device lists the extension and says our buffers (their usage) export as OPAQUE_FD */
int
ct_external_wanted(CtInstance *inst, VkPhysicalDevice pd)
{
    if (inst->fn.vkGetPhysicalDeviceExternalBufferProperties == NULL ||
        !ct_has_device_ext(inst, pd, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME))
        return 0;
    VkPhysicalDeviceExternalBufferInfo q = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
        .usage = ct_usage,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkExternalBufferProperties p = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
    inst->fn.vkGetPhysicalDeviceExternalBufferProperties(pd, &q, &p);
    return (p.externalMemoryProperties.externalMemoryFeatures &
            VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) != 0;
}

/* the device lists VK_KHR_external_semaphore_fd and timeline semaphores export and import
   as OPAQUE_FD (what cuImportExternalSemaphore takes as TIMELINE_SEMAPHORE_FD) */
int
ct_external_semaphore_wanted(CtInstance *inst, VkPhysicalDevice pd)
{
    if (inst->fn.vkGetPhysicalDeviceExternalSemaphoreProperties == NULL ||
        !ct_has_device_ext(inst, pd, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME))
        return 0;
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkPhysicalDeviceExternalSemaphoreInfo q = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO, .pNext = &tci,
        .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkExternalSemaphoreProperties p = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
    inst->fn.vkGetPhysicalDeviceExternalSemaphoreProperties(pd, &q, &p);
    VkExternalSemaphoreFeatureFlags need = VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT |
                                           VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;
    return (p.externalSemaphoreFeatures & need) == need;
}

void
ct_external_init(CtDevice *dev, int enabled, int semaphores)
{
    PFN_vkGetDeviceProcAddr get = dev->inst->fn.vkGetDeviceProcAddr;
    dev->get_memory_fd = enabled ? (PFN_vkGetMemoryFdKHR)get(dev->device, "vkGetMemoryFdKHR")
                                 : NULL;
    dev->get_semaphore_fd = NULL;
    dev->import_semaphore_fd = NULL;
    dev->n_ext_sem = 0;
    memset(dev->ext_wait, 0, sizeof dev->ext_wait);
    if (semaphores) {
        dev->get_semaphore_fd = (PFN_vkGetSemaphoreFdKHR)get(dev->device, "vkGetSemaphoreFdKHR");
        dev->import_semaphore_fd =
            (PFN_vkImportSemaphoreFdKHR)get(dev->device, "vkImportSemaphoreFdKHR");
        if (dev->import_semaphore_fd == NULL)
            dev->get_semaphore_fd = NULL;
    }
}

/* after vkDeviceWaitIdle: nothing waits on them or signals them any more on our side */
void
ct_external_destroy(CtDevice *dev)
{
    for (int k = 0; k < dev->n_ext_sem; k++) {
        dev->fn.vkDestroySemaphore(dev->device, dev->ext_alias[k], NULL);
        dev->fn.vkDestroySemaphore(dev->device, dev->ext_sem[k], NULL);
    }
    dev->n_ext_sem = 0;
}

/* 32 hex digits in the 8-4-4-4-12 groups nvidia-smi prints after "GPU-" (physdev.c) */
void
ct_format_uuid(const uint8_t *uuid, char out[2 * VK_UUID_SIZE + 5])
{
    char *w = out;
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *w++ = '-';
        w += snprintf(w, 3, "%02x", uuid[i]);
    }
}

/* the pNext chains of an exportable buffer and of its memory */
const void *
ct_external_buffer_info(VkExternalMemoryBufferCreateInfo *ext)
{
    *ext = (VkExternalMemoryBufferCreateInfo){
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    return ext;
}

const void *
ct_external_memory_info(VkExportMemoryAllocateInfo *exp, VkMemoryDedicatedAllocateInfo *ded,
                        VkBuffer buffer, const void *next)
{
    *ded = (VkMemoryDedicatedAllocateInfo){
        .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, .pNext = next, .buffer = buffer};
    *exp = (VkExportMemoryAllocateInfo){.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                        .pNext = ded,
                                        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    return exp;
}

PyObject *
ct_device_external(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0)
        return NULL;
    return Py_BuildValue("{s:O,s:O,s:K}", "memory_fd", dev->get_memory_fd ? Py_True : Py_False,
                         "semaphore_fd", dev->get_semaphore_fd ? Py_True : Py_False,
                         "attached_waits", (unsigned long long)CT_LOAD(dev->ext_waits));
}

/* ---- timeline semaphores shared with CUDA ------------------------------------------------ */

static VkResult
make_timeline(CtDevice *dev, const void *next, VkSemaphore *out)
{
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .pNext = next, .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    return dev->fn.vkCreateSemaphore(dev->device, &sci, NULL, out);
}

static VkResult
semaphore_fd(CtDevice *dev, VkSemaphore sem, int *fd)
{
    VkSemaphoreGetFdInfoKHR info = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
                                    .semaphore = sem,
                                    .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    return dev->get_semaphore_fd(dev->device, &info, fd);
}

PyObject *
ct_device_export_semaphore(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0)
        return NULL;
    if (dev->get_semaphore_fd == NULL)
        return ct_raise(dev->st->GpuInvalidArgument,
                        "device '%s' cannot export semaphores (no VK_KHR_external_semaphore_fd "
                        "with timeline semaphores as OPAQUE_FD)", dev->props.deviceName);
    if (dev->n_ext_sem == CT_EXT_SEMS)
        return ct_raise(dev->st->GpuInvalidArgument,
                        "device '%s' already shares %d semaphores with CUDA (the most there are)",
                        dev->props.deviceName, CT_EXT_SEMS);
    VkExportSemaphoreCreateInfo exp = {.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                       .handleTypes =
                                           VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkSemaphore sem = VK_NULL_HANDLE, alias = VK_NULL_HANDLE;
    int fd = -1, back = -1;
    const char *what = "vkCreateSemaphore (exportable timeline)";
    VkResult r = make_timeline(dev, &exp, &sem);
    if (r == VK_SUCCESS) {
        what = "vkGetSemaphoreFdKHR";
        r = semaphore_fd(dev, sem, &back);
    }
    if (r == VK_SUCCESS) {
        what = "vkCreateSemaphore (alias)";
        r = make_timeline(dev, NULL, &alias);
    }
    if (r == VK_SUCCESS) {
        VkImportSemaphoreFdInfoKHR imp = {
            .sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR, .semaphore = alias,
            .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT, .fd = back};
        what = "vkImportSemaphoreFdKHR";
        r = dev->import_semaphore_fd(dev->device, &imp);
        if (r == VK_SUCCESS)
            back = -1; /* the alias owns it now */
    }
    if (r == VK_SUCCESS) {
        what = "vkGetSemaphoreFdKHR";
        r = semaphore_fd(dev, sem, &fd); /* a second fd of the same payload: CUDA's */
    }
    PyObject *out = r == VK_SUCCESS ? Py_BuildValue("(ii)", dev->n_ext_sem, fd) : NULL;
    if (out == NULL) {
        if (back >= 0)
            close(back);
        if (fd >= 0)
            close(fd);
        if (alias != VK_NULL_HANDLE)
            dev->fn.vkDestroySemaphore(dev->device, alias, NULL);
        if (sem != VK_NULL_HANDLE)
            dev->fn.vkDestroySemaphore(dev->device, sem, NULL);
        return r == VK_SUCCESS ? NULL : ct_raise_vk(dev->st, r, "%s", what);
    }
    dev->ext_sem[dev->n_ext_sem] = sem;
    dev->ext_alias[dev->n_ext_sem] = alias;
    dev->n_ext_sem++;
    return out;
}

PyObject *
ct_device_semaphore_submit(CtDevice *dev, PyObject *args, PyObject *kw)
{
    static char *names[] = {"index", "wait", "signal", NULL};
    int index;
    unsigned long long wait = 0, signal = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i|KK:semaphore_submit", names, &index, &wait,
                                     &signal))
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    if (index < 0 || index >= dev->n_ext_sem)
        return ct_raise(dev->st->GpuInvalidArgument, "semaphore %d was never exported", index);
    /* lane 0's pending batch first: a signal covers the launch queued last, and work queued
       before a wait does not wait for CUDA */
    if (ct_flush_pending(dev, UINT64_MAX) < 0)
        return NULL;
    if (ct_nogil_enter(dev) < 0) { /* teardown began while the GIL was let go */
        if (ct_device_check(dev) == 0)
            ct_raise(dev->st->GpuInvalidArgument, "the device is being closed");
        return NULL;
    }
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    uint64_t wv = wait, sv = signal;
    VkTimelineSemaphoreSubmitInfo tsi = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = wait != 0, .pWaitSemaphoreValues = &wv,
        .signalSemaphoreValueCount = signal != 0, .pSignalSemaphoreValues = &sv};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &tsi,
                       .waitSemaphoreCount = wait != 0,
                       .pWaitSemaphores = &dev->ext_alias[index],
                       .pWaitDstStageMask = &stage,
                       .signalSemaphoreCount = signal != 0,
                       .pSignalSemaphores = &dev->ext_sem[index]};
    VkResult r;
    Py_BEGIN_ALLOW_THREADS
    /* state_lock, then queue_lock: a batch another thread closed before is submitted first
       (ct_close_and_submit_unlock takes queue_lock before it lets state_lock go) */
    ct_lock(dev, &dev->state_lock);
    ct_lock(dev, &dev->queue_lock);
    pthread_mutex_unlock(&dev->state_lock);
    r = dev->fn.vkQueueSubmit(dev->queue, 1, &si, VK_NULL_HANDLE);
    pthread_mutex_unlock(&dev->queue_lock);
    Py_END_ALLOW_THREADS
    dev->active--;
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkQueueSubmit (semaphore shared with CUDA)");
    Py_RETURN_NONE;
}

/* ring.c's timeline: exportable as OPAQUE_FD where semaphores export (CUDA imports it and
   waits for launch values on its own streams), else plain */
const void *
ct_external_timeline_info(CtDevice *dev, VkExportSemaphoreCreateInfo *exp, const void *next)
{
    if (dev->get_semaphore_fd == NULL)
        return next;
    *exp = (VkExportSemaphoreCreateInfo){.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                         .pNext = next,
                                         .handleTypes =
                                             VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    return exp;
}

/* The waits semaphore_wait registered, for the batch being submitted (state_lock held, no
   Python): written to sems / values / stages (CT_EXT_SEMS each), cleared; returns how many. */
uint32_t
ct_external_take_waits(CtDevice *dev, VkSemaphore *sems, uint64_t *values,
                       VkPipelineStageFlags *stages)
{
    uint32_t n = 0;
    for (int k = 0; k < dev->n_ext_sem; k++) {
        if (dev->ext_wait[k] == 0)
            continue;
        sems[n] = dev->ext_alias[k];
        values[n] = dev->ext_wait[k];
        stages[n++] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
        dev->ext_wait[k] = 0;
    }
    dev->ext_waits += n;
    return n;
}

PyObject *
ct_device_semaphore_wait(CtDevice *dev, PyObject *args)
{
    int index;
    unsigned long long value;
    if (!PyArg_ParseTuple(args, "iK:semaphore_wait", &index, &value))
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    if (index < 0 || index >= dev->n_ext_sem)
        return ct_raise(dev->st->GpuInvalidArgument, "semaphore %d was never exported", index);
    if (value == 0)
        return ct_raise(dev->st->GpuInvalidArgument, "`value`: a wait needs a value above 0");
    if (ct_flush_pending(dev, UINT64_MAX) < 0)
        return NULL;
    /* with the GIL, as ct_enqueue takes it: holders never wait for the GIL, and the device
       cannot be torn down under us */
    ct_lock(dev, &dev->state_lock);
    if (value > dev->ext_wait[index])
        dev->ext_wait[index] = value;
    pthread_mutex_unlock(&dev->state_lock);
    Py_RETURN_NONE;
}

PyObject *
ct_device_export_timeline(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0)
        return NULL;
    if (dev->get_semaphore_fd == NULL)
        return ct_raise(dev->st->GpuInvalidArgument,
                        "device '%s' cannot export semaphores (no VK_KHR_external_semaphore_fd "
                        "with timeline semaphores as OPAQUE_FD)", dev->props.deviceName);
    int fd = -1;
    VkResult r = semaphore_fd(dev, dev->timeline, &fd);
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkGetSemaphoreFdKHR (timeline)");
    PyObject *out = PyLong_FromLong(fd);
    if (out == NULL)
        close(fd);
    return out;
}

PyObject *
ct_device_handoff_flush(CtDevice *dev, PyObject *arg)
{
    unsigned long long value = PyLong_AsUnsignedLongLong(arg);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (ct_device_check(dev) < 0 ||
        ct_timeline_sync(dev, UINT64_MAX, CT_SYNC_READ | CT_SYNC_RETIRE) < 0)
        return NULL;
    if (value == 0 || dev->completed >= value)
        Py_RETURN_FALSE;
    if (value > dev->next_value)
        return ct_raise(dev->st->GpuInvalidArgument,
                        "`value` %llu was never handed out (the last is %llu)", value,
                        (unsigned long long)dev->next_value);
    if (ct_flush_pending(dev, value) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

PyObject *
ct_device_semaphore_value(CtDevice *dev, PyObject *arg)
{
    int index = PyLong_AsLong(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    if (index < 0 || index >= dev->n_ext_sem)
        return ct_raise(dev->st->GpuInvalidArgument, "semaphore %d was never exported", index);
    uint64_t v = 0;
    VkResult r = dev->fn.vkGetSemaphoreCounterValue(dev->device, dev->ext_sem[index], &v);
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkGetSemaphoreCounterValue");
    return PyLong_FromUnsignedLongLong(v);
}

PyObject *
ct_buffer_export_fd(CtBuffer *self, PyObject *unused)
{
    CtAlloc *a = ct_buffer_usable(self->dev->st, (PyObject *)self, self->dev, "the buffer");
    if (a == NULL)
        return NULL;
    CtDevice *dev = self->dev;
    if (!a->exportable || dev->get_memory_fd == NULL)
        return ct_raise(dev->st->GpuInvalidArgument,
                        "this buffer's memory is not exportable: only 'export' buffers of a device "
                        "with VK_KHR_external_memory_fd have a file descriptor");
    VkMemoryGetFdInfoKHR info = {.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
                                 .memory = a->memory,
                                 .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    int fd = -1;
    VkResult r = dev->get_memory_fd(dev->device, &info, &fd);
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkGetMemoryFdKHR");
    PyObject *out = PyLong_FromLong(fd);
    if (out == NULL)
        close(fd);
    return out;
}

PyObject *
ct_buffer_get_memory_size(CtBuffer *self, void *c)
{
    CtAlloc *a = ct_buffer_usable(self->dev->st, (PyObject *)self, self->dev, "the buffer");
    return a ? PyLong_FromUnsignedLongLong(a->memory_size) : NULL;
}
