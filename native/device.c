/* cthreads._native — device: VkDevice, its queue, and the Device type.
 *
 * Python API:
 *   Device(instance: Instance, index: int, pipeline_cache: bytes | None = None,
 *          knobs: dict | None = None)          knobs: the policy knobs (knobs.c, config.py)
 *   Device.buffer(nbytes: int, kind: int = 0) -> Buffer   kind 0 device, 1 upload, 2 download,
 *                                                          3 export (external.c)
 *   Device.external() -> dict; export_semaphore(); semaphore_submit(); semaphore_value();
 *   semaphore_wait()
 *                                       (external.c: what CUDA imports)
 *   Device.pipeline(spirv, push_size, spec=None, entry="main") -> Pipeline    (pipeline.c)
 *   Device.pipeline_cache_data() -> bytes                                     (pipeline.c)
 *   Device.pipeline_statistics(spirv, push_size, spec=None, entry="main")     (pipeline.c)
 *   Device.submit(commands, keep=(), timed=False) -> int                      (submit.c)
 *   Device.wait(value, timeout=None) -> bool; completed() -> int;
 *   Device.elapsed_ms(value) -> float | None (submit.c); last_value -> int
 *   Device.wait_idle() -> None (submit.c); stats() -> dict (stats.c); trim() -> None;
 *   destroy() -> None; _inject_submit_error(vk_result), _poke_u32(buffer, offset, value),
 *   _layer_fences() (timeline.c), _copy_lane_wait(timeout_s) (lane.c): test hooks; _abandon() (exit with work running); _forget()
 *   (fork child)
 *   Device.alive -> bool; host_visible_device_local -> bool
 * Teardown, _abandon and _forget: teardown.c.
 */
#include "cthreads.h"

/* The end of a device's Buffer or Pipeline (its own Vulkan objects already given back): the
   device reference *dev dropped, the memory freed, then the type's reference that a heap
   type's instance holds. */
void
ct_device_child_free(PyObject *self, CtDevice **dev)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(*dev);
    PyObject_Free(self);
    Py_DECREF(tp);
}

int
ct_device_check(CtDevice *dev)
{
    if (dev->state == CT_UNINIT) {
        ct_raise(dev->st->GpuUseAfterDestroy, "the Device was not initialized");
        return -1;
    }
    if (dev->state != CT_ALIVE) {
        ct_raise(dev->st->GpuUseAfterDestroy,
                 "the Vulkan device was shut down; buffers and pipelines made before "
                 "shutdown() cannot be used. Create new ones from the current device");
        return -1;
    }
    if (dev->lost || CT_LOAD(dev->bg_lost)) {
        ct_raise(dev->st->GpuDeviceLost,
                 "the Vulkan device was lost (VK_ERROR_DEVICE_LOST); call shutdown() and init() "
                 "to start a new device");
        return -1;
    }
    return 0;
}

static PyObject *
Device_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    CtDevice *self = (CtDevice *)PyType_GenericNew(type, args, kwds);
    if (self != NULL) {
        self->st = PyType_GetModuleState(type); /* errors can be raised before __init__ */
        self->pending = -1; /* (a teardown after a failed __init__ must find no pending batch) */
    }
    return (PyObject *)self;
}

static int
Device_init(CtDevice *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"instance", "index", "pipeline_cache", "knobs", NULL};
    uint64_t t0 = ct_now_ns();
    PyObject *inst_obj, *knobs = NULL;
    int index;
    Py_buffer cache = {0};
    CtState *st = PyType_GetModuleState(Py_TYPE(self));
    if (st == NULL)
        return -1;
    self->st = st;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!i|z*O", kwlist, st->InstanceType, &inst_obj,
                                     &index, &cache, &knobs))
        return -1;
    int rc = -1;
    if (self->device != VK_NULL_HANDLE || self->inst != NULL) {
        ct_raise(st->GpuInvalidArgument, "Device is already initialized");
        goto done;
    }
    CtInstance *inst = (CtInstance *)inst_obj;
    if (inst->instance == VK_NULL_HANDLE) {
        ct_raise(st->GpuUseAfterDestroy, "the Vulkan instance was destroyed");
        goto done;
    }
    self->inst = (CtInstance *)Py_NewRef(inst_obj);
    self->open_t0 = self->open_t = t0;
    pthread_mutex_init(&self->queue_lock, NULL);
    pthread_mutex_init(&self->state_lock, NULL);
    pthread_mutex_init(&self->err_lock, NULL);
    pthread_mutex_init(&self->bg_lock, NULL);
    pthread_cond_init(&self->bg_cond, NULL);
    self->locks_ready = 1;

    uint32_t n = 0;
    inst->fn.vkEnumeratePhysicalDevices(inst->instance, &n, NULL);
    if (index < 0 || (uint32_t)index >= n) {
        ct_raise(st->VulkanNoDevice, "no Vulkan physical device with index %d (%u available)",
                 index, n);
        goto done;
    }
    VkPhysicalDevice *pds = PyMem_Calloc(n, sizeof *pds);
    if (pds == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    inst->fn.vkEnumeratePhysicalDevices(inst->instance, &n, pds);
    self->phys = pds[index];
    PyMem_Free(pds);
    inst->fn.vkGetPhysicalDeviceProperties(self->phys, &self->props);
    inst->fn.vkGetPhysicalDeviceMemoryProperties(self->phys, &self->memprops);
    {
        VkPhysicalDeviceMaintenance3Properties m3 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &m3};
        inst->fn.vkGetPhysicalDeviceProperties2(self->phys, &p2);
        self->max_alloc = m3.maxMemoryAllocationSize;
    }

    CtFeatures have;
    ct_query_features(inst, self->phys, &have);
    if (have.api < VK_API_VERSION_1_2 || !have.v12.bufferDeviceAddress ||
        !have.v12.timelineSemaphore) {
        ct_raise(st->VulkanInitFailed,
                 "device '%s' lacks Vulkan 1.2 bufferDeviceAddress/timelineSemaphore, which "
                 "cthreads needs; update the driver or choose another device with CTHREADS_DEVICE",
                 self->props.deviceName);
        goto done;
    }
    if (ct_knobs_apply(st, &self->knobs, knobs,
                       self->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) < 0)
        goto done;
    if (ct_pick_queue_family(inst, self->phys, &self->queue_family, &self->timestamp_bits) < 0) {
        ct_raise(st->VulkanNoDevice, "device '%s' has no compute queue", self->props.deviceName);
        goto done;
    }

    ct_open_mark(self, CT_OPEN_PHYSICAL);
    /* enable what is supported among the features kernels may use */
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
        .shaderBufferFloat32Atomics = have.af.shaderBufferFloat32Atomics,
        .shaderBufferFloat32AtomicAdd = have.af.shaderBufferFloat32AtomicAdd,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = have.has_atomic_float_ext ? &af : NULL,
        .bufferDeviceAddress = VK_TRUE,
        .timelineSemaphore = VK_TRUE,
        .storageBuffer8BitAccess = have.v12.storageBuffer8BitAccess,
        .shaderInt8 = have.v12.shaderInt8,
        .shaderFloat16 = have.v12.shaderFloat16,
        .scalarBlockLayout = have.v12.scalarBlockLayout,
        .vulkanMemoryModel = have.v12.vulkanMemoryModel,
        .vulkanMemoryModelDeviceScope = have.v12.vulkanMemoryModelDeviceScope,
        .shaderBufferInt64Atomics = have.v12.shaderBufferInt64Atomics,
        /* subgroup operations on i64/u64/f64 values (Target.subgroup_extended_types) */
        .shaderSubgroupExtendedTypes = have.v12.shaderSubgroupExtendedTypes,
    };
    VkPhysicalDeviceVulkan11Features v11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &v12,
        .storageBuffer16BitAccess = have.v11.storageBuffer16BitAccess,
        .variablePointersStorageBuffer = have.v11.variablePointersStorageBuffer,
        .variablePointers = have.v11.variablePointers,
    };
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &v11};
    f2.features.shaderInt64 = have.f2.features.shaderInt64;
    f2.features.shaderInt16 = have.f2.features.shaderInt16;
    f2.features.shaderFloat64 = have.f2.features.shaderFloat64;
    /* matrix tiles (VK_KHR_cooperative_matrix): enabled where the device has them */
    CtCoopMatFeatures cm = {.sType = CT_STYPE_COOPMAT_FEATURES, .pNext = v12.pNext,
                            .cooperativeMatrix = VK_TRUE};
    int coopmat = have.has_coopmat_ext && have.cm.cooperativeMatrix;
    if (coopmat)
        v12.pNext = &cm;
    /* bf16 tiles (VK_KHR_shader_bfloat16): with coopmat, where the device has both features */
    CtBf16Features bf = {.sType = CT_STYPE_BFLOAT16_FEATURES, .pNext = v12.pNext,
                         .shaderBFloat16Type = VK_TRUE, .shaderBFloat16CooperativeMatrix = VK_TRUE};
    int bf16 = coopmat && have.has_bf16_ext && have.bf16.shaderBFloat16Type &&
               have.bf16.shaderBFloat16CooperativeMatrix;
    if (bf16)
        v12.pNext = &bf;
    /* pipeline statistics (pipeline.c): the feature costs nothing until a pipeline asks for
       them with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR, which only
       Device.pipeline_statistics() does */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = v12.pNext, .pipelineExecutableInfo = VK_TRUE};
    int exec_props = have.has_exec_props_ext && have.pe.pipelineExecutableInfo;
    if (exec_props)
        v12.pNext = &pe;
    const char *exts[6];
    uint32_t next = 0;
    if (have.has_atomic_float_ext)
        exts[next++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    /* memory CUDA can import (external.c), only where listed: never required */
    int external = ct_external_wanted(inst, self->phys);
    if (external)
        exts[next++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    /* semaphores CUDA can import (external.c): only with the memory, only where listed */
    int ext_sems = external && ct_external_semaphore_wanted(inst, self->phys);
    if (ext_sems)
        exts[next++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
    if (coopmat)
        exts[next++] = "VK_KHR_cooperative_matrix";
    if (bf16)
        exts[next++] = CT_BFLOAT16_EXT;
    if (exec_props)
        exts[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    /* the lanes' queues and the copy lane's (queues.c) */
    float prio[CT_LANES] = {1.0f, 1.0f, 1.0f, 1.0f};
    VkDeviceQueueCreateInfo qci[2];
    uint32_t nqci = ct_queues_plan(self, qci, prio);
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f2,
        .queueCreateInfoCount = nqci,
        .pQueueCreateInfos = qci,
        .enabledExtensionCount = next,
        .ppEnabledExtensionNames = exts,
    };
    VkResult r;
    VkDevice device = VK_NULL_HANDLE;
    Py_BEGIN_ALLOW_THREADS
    r = inst->fn.vkCreateDevice(self->phys, &dci, NULL, &device);
    Py_END_ALLOW_THREADS
    ct_open_mark(self, CT_OPEN_CREATE_DEVICE);
    if (r != VK_SUCCESS) {
        ct_raise_vk(st, r, "vkCreateDevice for '%s'", self->props.deviceName);
        goto done;
    }
    self->device = device;
    self->pipeline_stats = exec_props;
    inst->ndevices++;
#define CT_LOAD_DEV(name) self->fn.name = (PFN_##name)inst->fn.vkGetDeviceProcAddr(device, #name);
    CT_DEVICE_FUNCS(CT_LOAD_DEV)
#undef CT_LOAD_DEV
#define CT_CHECK_DEV(name)                                                                  \
    if (self->fn.name == NULL) {                                                            \
        ct_raise(st->VulkanInitFailed, "the driver does not provide " #name                  \
                 " (Vulkan 1.2 core); update the driver");                                  \
        goto done;                                                                          \
    }
    CT_DEVICE_FUNCS(CT_CHECK_DEV)
#undef CT_CHECK_DEV
    ct_queues_fetch(self);
    ct_external_init(self, external, ext_sems);
    ct_open_mark(self, CT_OPEN_FUNCTIONS);

    if (ct_memory_choose_types(self) < 0)
        goto done;
    ct_open_mark(self, CT_OPEN_MEMORY);
    if (ct_ring_create(self) < 0 || ct_lanes_create(self) < 0)
        goto done;
    VkPipelineCacheCreateInfo pcci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = cache.buf ? (size_t)cache.len : 0,
        .pInitialData = cache.buf,
    };
    r = self->fn.vkCreatePipelineCache(device, &pcci, NULL, &self->cache);
    if (r != VK_SUCCESS && cache.buf) { /* a corrupt cache file must not stop us */
        pcci.initialDataSize = 0;
        pcci.pInitialData = NULL;
        r = self->fn.vkCreatePipelineCache(device, &pcci, NULL, &self->cache);
    }
    if (r != VK_SUCCESS) {
        ct_raise_vk(st, r, "vkCreatePipelineCache");
        goto done;
    }
    ct_open_mark(self, CT_OPEN_PIPELINE_CACHE);
    if (ct_bg_start(self) < 0)
        goto done;
    ct_open_mark(self, CT_OPEN_THREADS);
    self->state = CT_ALIVE;
    self->open_end = ct_now_ns();
    rc = 0;
done:
    if (rc < 0 && self->device != VK_NULL_HANDLE) {
        self->state = CT_DESTROYED;
        ct_device_destroy(self);
    }
    if (cache.obj)
        PyBuffer_Release(&cache);
    return rc;
}

static PyObject *
Device_destroy(CtDevice *self, PyObject *unused)
{
    if (self->device != VK_NULL_HANDLE && !self->abandoned)
        ct_device_destroy(self);
    Py_RETURN_NONE;
}

static void
Device_dealloc(CtDevice *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->device != VK_NULL_HANDLE && !self->abandoned)
        ct_device_destroy(self);
    if (self->locks_ready) {
        pthread_mutex_destroy(&self->queue_lock);
        pthread_mutex_destroy(&self->state_lock);
        pthread_mutex_destroy(&self->err_lock);
        pthread_mutex_destroy(&self->bg_lock);
        pthread_cond_destroy(&self->bg_cond);
        self->locks_ready = 0;
    }
    Py_CLEAR(self->inst);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
Device_buffer(CtDevice *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"nbytes", "kind", NULL};
    Py_ssize_t nbytes;
    int kind = CT_KIND_DEVICE;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n|i", kwlist, &nbytes, &kind))
        return NULL;
    if (ct_device_check(self) < 0)
        return NULL;
    if (nbytes < 0)
        return ct_raise(self->st->GpuInvalidArgument, "buffer size must be >= 0, got %zd", nbytes);
    if (kind < 0 || kind >= CT_NKINDS)
        return ct_raise(self->st->GpuInvalidArgument, "unknown buffer kind %d", kind);
    if (kind == CT_KIND_EXPORT && self->get_memory_fd == NULL)
        return ct_raise(self->st->GpuInvalidArgument,
                        "device '%s' cannot export memory (no VK_KHR_external_memory_fd); "
                        "use an ordinary 'device' buffer", self->props.deviceName);
    return ct_buffer_new(self, nbytes, kind);
}

static PyObject *
Device_trim(CtDevice *self, PyObject *unused)
{
    if (ct_device_check(self) < 0 ||
        ct_timeline_sync(self, UINT64_MAX, CT_SYNC_READ | CT_SYNC_RETIRE | CT_SYNC_TRIM) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Device_inject_submit_error(CtDevice *self, PyObject *arg)
{
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    if (ct_device_check(self) < 0)
        return NULL;
    pthread_mutex_lock(&self->state_lock);
    self->inject = (VkResult)code;
    pthread_mutex_unlock(&self->state_lock);
    Py_RETURN_NONE;
}

/* test hook: store a u32 into a mapped buffer of this device even while it is being torn down
   (a test opens a `gate` kernel that teardown's vkDeviceWaitIdle waits for). Its memory stays
   mapped until teardown destroys it, which the GIL (held here) keeps from happening now. */
static PyObject *
Device_poke_u32(CtDevice *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t offset;
    unsigned int value;
    if (!PyArg_ParseTuple(args, "OnI", &obj, &offset, &value))
        return NULL;
    if (!PyObject_TypeCheck(obj, self->st->BufferType) || ((CtBuffer *)obj)->dev != self)
        return ct_raise(self->st->GpuInvalidArgument, "_poke_u32 needs a Buffer of this device");
    CtAlloc *a = ((CtBuffer *)obj)->alloc;
    if (self->device == VK_NULL_HANDLE || self->state == CT_DESTROYED || a == NULL ||
        a->mapped == NULL || offset < 0 || (VkDeviceSize)offset + 4 > a->capacity)
        return ct_raise(self->st->GpuUseAfterDestroy, "_poke_u32: no mapped memory there");
    __atomic_store_n((uint32_t *)((char *)a->mapped + offset), (uint32_t)value, __ATOMIC_SEQ_CST);
    if (!a->coherent && ct_sync_range(self, a, (VkDeviceSize)offset, 4, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Device_get_alive(CtDevice *self, void *c)
{
    return PyBool_FromLong(self->state == CT_ALIVE && !self->lost && !CT_LOAD(self->bg_lost));
}

static PyObject *
Device_get_last_value(CtDevice *self, void *c)
{
    return PyLong_FromUnsignedLongLong(self->next_value);
}

static PyObject *
Device_get_hvdl(CtDevice *self, void *c)
{
    return PyBool_FromLong(ct_host_visible_device_local(&self->memprops) &&
                           (self->memprops.memoryTypes[self->kind_type[CT_KIND_DEVICE]].propertyFlags &
                            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT));
}

static PyMethodDef Device_methods[] = {
    {"buffer", (PyCFunction)(void (*)(void))Device_buffer, METH_VARARGS | METH_KEYWORDS,
     "buffer(nbytes, kind=0) -> Buffer (from the size-class pool)"},
    {"pipeline", (PyCFunction)(void (*)(void))ct_device_pipeline, METH_VARARGS | METH_KEYWORDS,
     "pipeline(spirv, push_size, spec=None, entry='main') -> Pipeline"},
    {"pipeline_cache_data", (PyCFunction)ct_device_pipeline_cache_data, METH_NOARGS,
     "pipeline_cache_data() -> bytes: the VkPipelineCache contents"},
    {"pipeline_statistics", (PyCFunction)(void (*)(void))ct_device_pipeline_statistics,
     METH_VARARGS | METH_KEYWORDS,
     "pipeline_statistics(spirv, push_size, spec=None, entry='main') -> list[dict] | None"},
    {"submit", (PyCFunction)(void (*)(void))ct_device_submit, METH_FASTCALL | METH_KEYWORDS,
     "submit(commands, keep=(), timed=False, lane=0, after=0) -> int timeline value"},
    {"wait", (PyCFunction)(void (*)(void))ct_device_wait, METH_FASTCALL | METH_KEYWORDS,
     "wait(value, timeout=None) -> bool"},
    {"completed", (PyCFunction)ct_device_completed, METH_NOARGS, "completed() -> int"},
    {"elapsed_ms", (PyCFunction)ct_device_elapsed_ms, METH_O, "elapsed_ms(value) -> float | None"},
    {"wait_idle", (PyCFunction)ct_device_wait_idle, METH_NOARGS, "wait_idle() -> None"},
    {"external", (PyCFunction)ct_device_external, METH_NOARGS,
     "external() -> dict: memory_fd, semaphore_fd (what CUDA can import; external.c)"},
    {"export_semaphore", (PyCFunction)ct_device_export_semaphore, METH_NOARGS,
     "export_semaphore() -> (index, fd): a timeline semaphore CUDA can import (external.c)"},
    {"semaphore_submit", (PyCFunction)(void (*)(void))ct_device_semaphore_submit,
     METH_VARARGS | METH_KEYWORDS,
     "semaphore_submit(index, wait=0, signal=0): wait/signal it on queue 0 (external.c)"},
    {"semaphore_value", (PyCFunction)ct_device_semaphore_value, METH_O,
     "semaphore_value(index) -> int: its counter (external.c)"},
    {"semaphore_wait", (PyCFunction)ct_device_semaphore_wait, METH_VARARGS,
     "semaphore_wait(index, value, timeout_s) -> bool: host wait for the counter (external.c)"},
    {"trim", (PyCFunction)Device_trim, METH_NOARGS, "trim() -> None: free idle pooled memory"},
    {"stats", (PyCFunction)ct_device_stats, METH_NOARGS,
     "stats() -> dict: Vulkan objects alive, pool and batch counters"},
    {"_inject_submit_error", (PyCFunction)Device_inject_submit_error, METH_O,
     "_inject_submit_error(vk_result) -> None: test hook, the next queue submission fails so"},
    {"destroy", (PyCFunction)Device_destroy, METH_NOARGS, "destroy() -> None (idempotent)"},
    {"_copy_lane_wait", (PyCFunction)ct_device_copy_lane_wait, METH_O,
     "_copy_lane_wait(timeout_s) -> bool | None: test hook, the copy lane's copies done (lane.c)"},
    {"_layer_fences", (PyCFunction)ct_device_layer_fences, METH_NOARGS,
     "_layer_fences() -> int | None: test hook, completions told to validation (timeline.c)"},
    {"_poke_u32", (PyCFunction)Device_poke_u32, METH_VARARGS,
     "_poke_u32(buffer, offset, value) -> None: test hook, a store into mapped memory that "
     "works during teardown"},
    {"_abandon", (PyCFunction)ct_device_abandon, METH_NOARGS,
     "_abandon() -> None: refuse work and leave the device to the process's exit (no waits)"},
    {"_forget", (PyCFunction)ct_device_forget, METH_NOARGS,
     "_forget() -> None: after fork(), in the child: drop the parent's device untouched"},
    {NULL}
};

static PyGetSetDef Device_getset[] = {
    {"alive", (getter)Device_get_alive, NULL, "False after destroy() or device loss", NULL},
    {"last_value", (getter)Device_get_last_value, NULL, "last timeline value handed out", NULL},
    {"host_visible_device_local", (getter)Device_get_hvdl, NULL,
     "whether 'device' buffers are host-visible (lavapipe, resizable BAR)", NULL},
    {NULL}
};

CT_TYPE_SPEC(ct_device_spec, "Device", CtDevice, 0,
    {Py_tp_doc, "A VkDevice with its compute queues (one per lane where there are several), timeline "
                "semaphores, a command ring, "
                "a buffer pool and a pipeline cache."},
    {Py_tp_init, Device_init},
    {Py_tp_new, Device_new},
    {Py_tp_dealloc, Device_dealloc},
    {Py_tp_methods, Device_methods},
    {Py_tp_getset, Device_getset});
