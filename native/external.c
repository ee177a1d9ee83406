/* cthreads._native — external: memory CUDA can see (issue 17) and DLPack capsules.
 *
 * Python API:
 *   Device.external() -> dict      {"memory_fd": bool, "device_uuid": str (32 hex digits)}
 *   Buffer.export_fd() -> int      a new POSIX fd of an 'export' buffer's memory (the caller
 *                                  owns it: CUDA's cuImportExternalMemory takes it over)
 *   Buffer.memory_size -> int      the VkDeviceMemory's allocationSize (what CUDA imports)
 *   dlpack_capsule(owner, data, shape, dtype, device, versioned=False) -> PyCapsule
 *       "dltensor" (DLPack 0.8 ABI) or, versioned, "dltensor_versioned" (DLPack 1.0, for a
 *       consumer that passed max_version >= (1, 0));
 *       dtype = (code, bits, lanes), device = (device_type, device_id); the capsule's
 *       DLManagedTensor holds a reference to `owner` until its consumer calls the deleter (or,
 *       unconsumed, until the capsule dies)
 *
 * VK_KHR_external_memory_fd is enabled at device creation only where the device lists it and
 * reports our buffers exportable as OPAQUE_FD (device.c asks ct_external_wanted); nothing
 * requires it. 'export' buffers (kind 3) are
 * allocated with VkExternalMemoryBufferCreateInfo + VkExportMemoryAllocateInfo (OPAQUE_FD)
 * as a dedicated allocation, from the 'device' memory type; memory.c pools them apart from
 * plain ones (an allocation keeps whether it is exportable).
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

void
ct_external_init(CtDevice *dev, int enabled)
{
    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &id};
    dev->inst->fn.vkGetPhysicalDeviceProperties2(dev->phys, &p2);
    memcpy(dev->device_uuid, id.deviceUUID, VK_UUID_SIZE);
    dev->get_memory_fd = NULL;
    if (enabled)
        dev->get_memory_fd =
            (PFN_vkGetMemoryFdKHR)dev->inst->fn.vkGetDeviceProcAddr(dev->device, "vkGetMemoryFdKHR");
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
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        snprintf(uuid + 2 * i, 3, "%02x", dev->device_uuid[i]);
    return Py_BuildValue("{s:O,s:s}", "memory_fd", dev->get_memory_fd ? Py_True : Py_False,
                         "device_uuid", uuid);
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

/* ---- DLPack (the 0.8 ABI "dltensor" and the 1.0 ABI "dltensor_versioned") -------------- */

typedef struct {
    int32_t device_type, device_id;
} CtDLDevice;

typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} CtDLDataType;

typedef struct {
    void *data;
    CtDLDevice device;
    int32_t ndim;
    CtDLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} CtDLTensor;

typedef struct CtDLManaged {
    CtDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct CtDLManaged *self);
} CtDLManaged;

/* DLPack >= 1.0: what a consumer asking with max_version >= (1, 0) gets */
typedef struct CtDLManagedVersioned {
    struct { uint32_t major, minor; } version;
    void *manager_ctx;
    void (*deleter)(struct CtDLManagedVersioned *self);
    uint64_t flags;
    CtDLTensor dl_tensor;
} CtDLManagedVersioned;

/* a consumer is done with the memory (either DLPack form): may run on any thread, with or
   without the GIL. Drops the array it holds, frees the shape and the managed struct `m`. */
static void
dl_release(void *manager_ctx, int64_t *shape, void *m)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)manager_ctx);
    PyMem_RawFree(shape);
    PyMem_RawFree(m);
    PyGILState_Release(g);
}

static void
dlv_deleter(CtDLManagedVersioned *m)
{
    dl_release(m->manager_ctx, m->dl_tensor.shape, m);
}

static void
dlv_capsule_destructor(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, "dltensor_versioned"))
        return;
    CtDLManagedVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (m != NULL && m->deleter != NULL)
        m->deleter(m);
}

static void
dl_deleter(CtDLManaged *m)
{
    dl_release(m->manager_ctx, m->dl_tensor.shape, m);
}

/* a capsule nobody consumed (still named "dltensor") owns its tensor */
static void
dl_capsule_destructor(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, "dltensor"))
        return;
    CtDLManaged *m = PyCapsule_GetPointer(capsule, "dltensor");
    if (m != NULL && m->deleter != NULL)
        m->deleter(m);
}

PyObject *
ct_dlpack_capsule(PyObject *module, PyObject *args)
{
    PyObject *owner, *shape;
    unsigned long long data;
    int code, bits, lanes, dtype_dev, dev_id, versioned = 0;
    if (!PyArg_ParseTuple(args, "OKO!(iii)(ii)|p", &owner, &data, &PyTuple_Type, &shape, &code,
                          &bits, &lanes, &dtype_dev, &dev_id, &versioned))
        return NULL;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    void *m = versioned ? PyMem_RawCalloc(1, sizeof(CtDLManagedVersioned))
                        : PyMem_RawCalloc(1, sizeof(CtDLManaged));
    int64_t *dims = PyMem_RawCalloc(ndim ? (size_t)ndim : 1, sizeof *dims);
    if (m == NULL || dims == NULL) {
        PyMem_RawFree(m);
        PyMem_RawFree(dims);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            PyMem_RawFree(m);
            PyMem_RawFree(dims);
            return NULL;
        }
    }
    CtDLTensor t = {.data = (void *)(uintptr_t)data,
                    .device = {dtype_dev, dev_id},
                    .ndim = (int32_t)ndim,
                    .dtype = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes},
                    .shape = dims,
                    .strides = NULL, /* compact row-major */
                    .byte_offset = 0};
    PyObject *cap;
    if (versioned) {
        CtDLManagedVersioned *v = m;
        v->version.major = 1;
        v->version.minor = 0;
        v->dl_tensor = t;
        v->manager_ctx = Py_NewRef(owner);
        v->deleter = dlv_deleter;
        v->flags = 0; /* writable, not a copy */
        cap = PyCapsule_New(v, "dltensor_versioned", dlv_capsule_destructor);
    } else {
        CtDLManaged *u = m;
        u->dl_tensor = t;
        u->manager_ctx = Py_NewRef(owner);
        u->deleter = dl_deleter;
        cap = PyCapsule_New(u, "dltensor", dl_capsule_destructor);
    }
    if (cap == NULL) {
        Py_DECREF(owner);
        PyMem_RawFree(dims);
        PyMem_RawFree(m);
    }
    return cap;
}
