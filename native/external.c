/* cthreads._native — external: memory and semaphores CUDA can see (issue 17).
 *
 * Python API:
 *   Device.external() -> dict      {"memory_fd": bool, "semaphore_fd": bool}
 *   Buffer.export_fd() -> int      a new POSIX fd of an 'export' buffer's memory (the caller
 *                                  owns it: CUDA's cuImportExternalMemory takes it over)
 *   Buffer.memory_size -> int      the VkDeviceMemory's allocationSize (what CUDA imports)
 *   Device.export_semaphore() -> (index, fd)   a new timeline semaphore (value 0) exported as
 *       OPAQUE_FD (the caller owns fd: cuImportExternalSemaphore takes it over); at most
 *       CT_EXT_SEMS per device, destroyed with it
 *   Device.semaphore_submit(index, wait=0, signal=0) -> None   one submission on queue 0
 *       without commands, after lane 0's pending batch: waits for `wait` on the semaphore
 *       (every later submission on queue 0 starts after it: the second scope of a wait includes
 *       later commands in submission order) and/or signals `signal` once everything submitted
 *       before it completed. 0 = no wait / no signal. No host wait.
 *   Device.semaphore_value(index) -> int      its counter (tests)
 *   Device.semaphore_wait(index, value, timeout_s) -> bool   a host wait (GIL released) until
 *       the counter reaches value; False at the timeout. Our submissions on the semaphore are
 *       outside the device's timeline, so wait_idle() does not cover them (tests)
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
    return Py_BuildValue("{s:O,s:O}", "memory_fd", dev->get_memory_fd ? Py_True : Py_False,
                         "semaphore_fd", dev->get_semaphore_fd ? Py_True : Py_False);
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
ct_device_semaphore_wait(CtDevice *dev, PyObject *args)
{
    int index;
    unsigned long long value;
    PyObject *timeout;
    if (!PyArg_ParseTuple(args, "iKO:semaphore_wait", &index, &value, &timeout))
        return NULL;
    if (ct_device_check(dev) < 0)
        return NULL;
    if (index < 0 || index >= dev->n_ext_sem)
        return ct_raise(dev->st->GpuInvalidArgument, "semaphore %d was never exported", index);
    return ct_host_wait_semaphore(dev, dev->ext_sem[index], value, timeout,
                                  "semaphore shared with CUDA");
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
