/* cthreads._native — physdev: what a physical device is and can do, as plain Python data.
 *
 * Python API: the dicts returned by Instance.physical_devices() (keys: index, name, type,
 * vendor_id, device_id, api_version, driver_version, driver_name, pipeline_cache_uuid,
 * device_uuid (VkPhysicalDeviceIDProperties: the CUDA UUID on NVIDIA),
 * limits, memory_heaps, memory_types, features, usable, unusable_reason). The Python runtime
 * turns them into DeviceInfo and applies the device-choice policy.
 */
#include "cthreads.h"
#include <string.h>

/* pd's extensions, enumerated at the first question about it (the set is fixed while the
   instance lives), or NULL where listing them failed (then: none, asked again next time).
   GIL held (every caller: describing and opening devices). */
static const struct CtDevExts *
device_exts(CtInstance *inst, VkPhysicalDevice pd)
{
    for (int i = 0; i < inst->ndev_exts; i++)
        if (inst->dev_exts[i].pd == pd)
            return &inst->dev_exts[i];
    uint32_t n = 0;
    if (inst->fn.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS)
        return NULL;
    VkExtensionProperties *p = PyMem_Calloc(n ? n : 1, sizeof *p);
    struct CtDevExts *grown =
        p == NULL ? NULL : PyMem_Realloc(inst->dev_exts, (inst->ndev_exts + 1) * sizeof *grown);
    if (grown == NULL || (n && inst->fn.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p) !=
                                       VK_SUCCESS)) {
        PyMem_Free(p);
        if (grown != NULL)
            inst->dev_exts = grown;
        return NULL;
    }
    inst->dev_exts = grown;
    grown[inst->ndev_exts] = (struct CtDevExts){.pd = pd, .ext = p, .n = n};
    return &grown[inst->ndev_exts++];
}

int
ct_has_device_ext(CtInstance *inst, VkPhysicalDevice pd, const char *name)
{
    const struct CtDevExts *e = device_exts(inst, pd);
    for (uint32_t i = 0; e != NULL && i < e->n; i++)
        if (strcmp(e->ext[i].extensionName, name) == 0)
            return 1;
    return 0;
}

/* At the instance's end (its physical devices with it). */
void
ct_device_exts_clear(CtInstance *inst)
{
    for (int i = 0; i < inst->ndev_exts; i++)
        PyMem_Free(inst->dev_exts[i].ext);
    PyMem_Free(inst->dev_exts);
    inst->dev_exts = NULL;
    inst->ndev_exts = 0;
}

/* VK_KHR_cooperative_matrix (Vulkan headers 1.3.255+; Debian 12 ships 1.3.239): the few
 * declarations the shape query needs, with the registry's numbers.
 * Khronos' validation layer 1.3.239 (Debian 12; the H200 machine's too) predates the extension:
 * under it the features struct is an unknown pNext member (an error at every device creation)
 * and tile modules carry a capability its spirv-val rejects. So while the layer is active the
 * extension is neither queried nor enabled: the device reports no matrix units (an empty
 * `cooperative_matrix`) and tile kernels are refused when compiling, as on lavapipe. */
#define CT_COOPMAT_EXT "VK_KHR_cooperative_matrix"
#define CT_STYPE_COOPMAT_PROPERTIES ((VkStructureType)1000506001)
typedef struct {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    int32_t scope; /* VkScopeKHR */
} CtCoopMatProps;
typedef VkResult (*CtPfnCoopMatProps)(VkPhysicalDevice, uint32_t *, CtCoopMatProps *);

static const char *
component_name(int32_t t)
{
    switch (t) {
    case 0: return "f16";
    case 1: return "f32";
    case 2: return "f64";
    case 3: return "i8";
    case 4: return "i16";
    case 5: return "i32";
    case 6: return "i64";
    case 7: return "u8";
    case 8: return "u16";
    case 9: return "u32";
    case 10: return "u64";
    case 1000141000: return "bf16";
    default: return "other";
    }
}

static const char *
scope_name(int32_t s)
{
    return s == 3 ? "subgroup" : s == 2 ? "workgroup" : s == 1 ? "device" : "other";
}

/* The device's cooperative matrix shapes as a list of dicts {m, n, k, a, b, c, result,
 * saturating, scope} (empty without the extension); NULL with an exception set. Shapes with
 * bf16 components only where device.c can enable them (VK_KHR_shader_bfloat16's
 * shaderBFloat16CooperativeMatrix): a kernel compiled for a listed shape must run. */
static PyObject *
cooperative_matrix_shapes(CtInstance *inst, VkPhysicalDevice pd, const CtFeatures *f)
{
    const int32_t bf16 = 1000141000; /* VK_COMPONENT_TYPE_BFLOAT16_KHR */
    int bf16_ok = f->has_bf16_ext && f->bf16.shaderBFloat16Type &&
                  f->bf16.shaderBFloat16CooperativeMatrix;
    PyObject *out = PyList_New(0);
    if (out == NULL || inst->validation || !ct_has_device_ext(inst, pd, CT_COOPMAT_EXT))
        return out;
    CtPfnCoopMatProps get = (CtPfnCoopMatProps)ct_get_instance_proc(
        inst->instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (get == NULL || get(pd, &n, NULL) != VK_SUCCESS || n == 0)
        return out;
    CtCoopMatProps *p = PyMem_Calloc(n, sizeof *p);
    if (p == NULL) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    for (uint32_t i = 0; i < n; i++)
        p[i].sType = CT_STYPE_COOPMAT_PROPERTIES;
    VkResult r = get(pd, &n, p);
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
        for (uint32_t i = 0; i < n; i++) {
            if (!bf16_ok && (p[i].AType == bf16 || p[i].BType == bf16 || p[i].CType == bf16 ||
                             p[i].ResultType == bf16))
                continue;
            PyObject *e = Py_BuildValue(
                "{s:I,s:I,s:I,s:s,s:s,s:s,s:s,s:O,s:s}", "m", p[i].MSize, "n", p[i].NSize, "k",
                p[i].KSize, "a", component_name(p[i].AType), "b", component_name(p[i].BType), "c",
                component_name(p[i].CType), "result", component_name(p[i].ResultType),
                "saturating", p[i].saturatingAccumulation ? Py_True : Py_False, "scope",
                scope_name(p[i].scope));
            if (e == NULL || PyList_Append(out, e) < 0) {
                Py_XDECREF(e);
                Py_DECREF(out);
                PyMem_Free(p);
                return NULL;
            }
            Py_DECREF(e);
        }
    }
    PyMem_Free(p);
    return out;
}

void
ct_query_features(CtInstance *inst, VkPhysicalDevice pd, CtFeatures *f)
{
    memset(f, 0, sizeof *f);
    VkPhysicalDeviceProperties props;
    inst->fn.vkGetPhysicalDeviceProperties(pd, &props);
    f->api = props.apiVersion;
    f->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    f->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    f->af.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    if (f->api < VK_API_VERSION_1_2) {
        inst->fn.vkGetPhysicalDeviceFeatures2(pd, &f->f2);
        return;
    }
    f->has_atomic_float_ext = ct_has_device_ext(inst, pd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    f->f2.pNext = &f->v11;
    f->v11.pNext = &f->v12;
    f->v12.pNext = f->has_atomic_float_ext ? &f->af : NULL;
    f->has_coopmat_ext = !inst->validation && ct_has_device_ext(inst, pd, CT_COOPMAT_EXT);
    f->cm.sType = CT_STYPE_COOPMAT_FEATURES;
    if (f->has_coopmat_ext) { /* appended at the chain's end */
        f->cm.pNext = f->v12.pNext;
        f->v12.pNext = &f->cm;
    }
    f->has_bf16_ext = f->has_coopmat_ext && ct_has_device_ext(inst, pd, CT_BFLOAT16_EXT);
    f->bf16.sType = CT_STYPE_BFLOAT16_FEATURES;
    if (f->has_bf16_ext) {
        f->bf16.pNext = f->v12.pNext;
        f->v12.pNext = &f->bf16;
    }
    f->has_exec_props_ext =
        ct_has_device_ext(inst, pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    f->pe.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
    if (f->has_exec_props_ext) {
        f->pe.pNext = f->v12.pNext;
        f->v12.pNext = &f->pe;
    }
    inst->fn.vkGetPhysicalDeviceFeatures2(pd, &f->f2);
}

int
ct_pick_queue_family(CtInstance *inst, VkPhysicalDevice pd, uint32_t *family, uint32_t *tsbits)
{
    uint32_t n = 0;
    inst->fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    if (n == 0)
        return -1;
    VkQueueFamilyProperties *q = PyMem_Calloc(n, sizeof *q);
    if (q == NULL)
        return -1;
    inst->fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || q[i].queueCount == 0)
            continue;
        /* prefer timestamps, then a compute-only family (async compute on discrete GPUs) */
        int score = (q[i].timestampValidBits ? 2 : 0) + (q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT ? 0 : 1);
        if (score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    if (best >= 0) {
        *family = (uint32_t)best;
        *tsbits = q[best].timestampValidBits;
    }
    PyMem_Free(q);
    return best >= 0 ? 0 : -1;
}

static const char *
type_name(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

static PyObject *
version_str(uint32_t v)
{
    return PyUnicode_FromFormat("%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                                VK_API_VERSION_PATCH(v));
}

static PyObject *
driver_version_str(uint32_t vendor, uint32_t v)
{
    if (vendor == 0x10DE) /* NVIDIA: 10.8.8.6 bits */
        return PyUnicode_FromFormat("%u.%u.%u.%u", (v >> 22) & 0x3ff, (v >> 14) & 0xff,
                                    (v >> 6) & 0xff, v & 0x3f);
    return version_str(v);
}

/* set d[key] = value (stealing value); returns -1 on error */
static int
put(PyObject *d, const char *key, PyObject *value)
{
    if (value == NULL)
        return -1;
    int r = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return r;
}

static int
putb(PyObject *d, const char *key, int v)
{
    return put(d, key, PyBool_FromLong(v != 0));
}

int
ct_host_visible_device_local(const VkPhysicalDeviceMemoryProperties *mp)
{
    VkDeviceSize biggest_local = 0;
    for (uint32_t h = 0; h < mp->memoryHeapCount; h++)
        if ((mp->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            mp->memoryHeaps[h].size > biggest_local)
            biggest_local = mp->memoryHeaps[h].size;
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t t = 0; t < mp->memoryTypeCount; t++) {
        const VkMemoryType *mt = &mp->memoryTypes[t];
        /* only counts when the mappable heap is (nearly) all of the device memory:
           resizable BAR or unified memory, not the 256 MiB BAR window */
        if ((mt->propertyFlags & want) == want &&
            mp->memoryHeaps[mt->heapIndex].size * 10 >= biggest_local * 8)
            return 1;
    }
    return 0;
}

PyObject *
ct_describe_physical_device(CtInstance *inst, VkPhysicalDevice pd, int index)
{
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceFloatControlsProperties fc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceIDProperties idp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties base;
    inst->fn.vkGetPhysicalDeviceProperties(pd, &base);
    int v12 = base.apiVersion >= VK_API_VERSION_1_2;
    p2.pNext = &idp; /* deviceUUID: the CUDA device UUID on NVIDIA (issue 17) */
    idp.pNext = &sub;
    if (v12) {
        sub.pNext = &drv;
        drv.pNext = &fc;
    }
    /* NVIDIA's SM count and warps per SM: how many invocations run at once (launch/sizing.py's
       spread rule), with no profile file to read on the first launch */
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    if (ct_has_device_ext(inst, pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
        sm.pNext = p2.pNext;
        p2.pNext = &sm;
    }
    /* the smallest subgroup a dispatch may get bounds subgroup_id() (compiler/ranges.py) */
    VkPhysicalDeviceSubgroupSizeControlProperties ssc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    if (base.apiVersion >= VK_API_VERSION_1_3 ||
        ct_has_device_ext(inst, pd, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME)) {
        ssc.pNext = p2.pNext;
        p2.pNext = &ssc;
    }
    inst->fn.vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceLimits *L = &p2.properties.limits;
    VkPhysicalDeviceMemoryProperties mp;
    inst->fn.vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    CtFeatures f;
    ct_query_features(inst, pd, &f);
    uint32_t family = 0, tsbits = 0;
    int has_queue = ct_pick_queue_family(inst, pd, &family, &tsbits) == 0;

    PyObject *d = PyDict_New(), *lim = NULL, *feat = NULL, *heaps = NULL, *types = NULL;
    if (d == NULL)
        return NULL;
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        snprintf(uuid + 2 * i, 3, "%02x", p2.properties.pipelineCacheUUID[i]);
    char devuuid[2 * VK_UUID_SIZE + 5];
    ct_format_uuid(idp.deviceUUID, devuuid);
    if (put(d, "index", PyLong_FromLong(index)) < 0 ||
        put(d, "name", PyUnicode_FromString(p2.properties.deviceName)) < 0 ||
        put(d, "type", PyUnicode_FromString(type_name(p2.properties.deviceType))) < 0 ||
        put(d, "vendor_id", PyLong_FromUnsignedLong(p2.properties.vendorID)) < 0 ||
        put(d, "device_id", PyLong_FromUnsignedLong(p2.properties.deviceID)) < 0 ||
        put(d, "api_version", version_str(p2.properties.apiVersion)) < 0 ||
        put(d, "driver_version", driver_version_str(p2.properties.vendorID,
                                                    p2.properties.driverVersion)) < 0 ||
        put(d, "driver_name", v12 ? PyUnicode_FromFormat("%s (%s)", drv.driverName, drv.driverInfo)
                                  : PyUnicode_FromString("")) < 0 ||
        put(d, "pipeline_cache_uuid", PyUnicode_FromString(uuid)) < 0 ||
        put(d, "device_uuid", PyUnicode_FromString(devuuid)) < 0)
        goto fail;

    lim = PyDict_New();
    if (lim == NULL || PyDict_SetItemString(d, "limits", lim) < 0 ||
        put(lim, "max_compute_work_group_count",
            Py_BuildValue("(kkk)", (unsigned long)L->maxComputeWorkGroupCount[0],
                          (unsigned long)L->maxComputeWorkGroupCount[1],
                          (unsigned long)L->maxComputeWorkGroupCount[2])) < 0 ||
        put(lim, "max_compute_work_group_size",
            Py_BuildValue("(kkk)", (unsigned long)L->maxComputeWorkGroupSize[0],
                          (unsigned long)L->maxComputeWorkGroupSize[1],
                          (unsigned long)L->maxComputeWorkGroupSize[2])) < 0 ||
        put(lim, "max_compute_work_group_invocations",
            PyLong_FromUnsignedLong(L->maxComputeWorkGroupInvocations)) < 0 ||
        put(lim, "max_compute_shared_memory_size",
            PyLong_FromUnsignedLong(L->maxComputeSharedMemorySize)) < 0 ||
        put(lim, "max_storage_buffer_range", PyLong_FromUnsignedLong(L->maxStorageBufferRange)) < 0 ||
        put(lim, "max_push_constants_size", PyLong_FromUnsignedLong(L->maxPushConstantsSize)) < 0 ||
        put(lim, "max_memory_allocation_size", PyLong_FromUnsignedLongLong(0)) < 0 ||
        put(lim, "subgroup_size", PyLong_FromUnsignedLong(sub.subgroupSize)) < 0 ||
        put(lim, "min_subgroup_size", PyLong_FromUnsignedLong(ssc.minSubgroupSize)) < 0 ||
        put(lim, "resident_invocations", /* 0: the driver does not say */
            PyLong_FromUnsignedLongLong((unsigned long long)sm.shaderSMCount *
                                        sm.shaderWarpsPerSM * sub.subgroupSize)) < 0 ||
        put(lim, "timestamp_period", PyFloat_FromDouble(L->timestampPeriod)) < 0 ||
        put(lim, "timestamp_valid_bits", PyLong_FromUnsignedLong(tsbits)) < 0 ||
        put(lim, "non_coherent_atom_size", PyLong_FromUnsignedLongLong(L->nonCoherentAtomSize)) < 0 ||
        put(lim, "min_storage_buffer_offset_alignment",
            PyLong_FromUnsignedLongLong(L->minStorageBufferOffsetAlignment)) < 0)
        goto fail;
    {
        VkPhysicalDeviceMaintenance3Properties m3 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
        VkPhysicalDeviceProperties2 q2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &m3};
        inst->fn.vkGetPhysicalDeviceProperties2(pd, &q2);
        if (put(lim, "max_memory_allocation_size",
                PyLong_FromUnsignedLongLong(m3.maxMemoryAllocationSize)) < 0)
            goto fail;
    }

    heaps = PyList_New(0);
    if (heaps == NULL || PyDict_SetItemString(d, "memory_heaps", heaps) < 0)
        goto fail;
    for (uint32_t h = 0; h < mp.memoryHeapCount; h++) {
        PyObject *e = Py_BuildValue("{s:K,s:O}", "size", (unsigned long long)mp.memoryHeaps[h].size,
                                    "device_local",
                                    (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? Py_True : Py_False);
        if (e == NULL || PyList_Append(heaps, e) < 0) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }
    types = PyList_New(0);
    if (types == NULL || PyDict_SetItemString(d, "memory_types", types) < 0)
        goto fail;
    for (uint32_t t = 0; t < mp.memoryTypeCount; t++) {
        VkMemoryPropertyFlags fl = mp.memoryTypes[t].propertyFlags;
        PyObject *e = Py_BuildValue(
            "{s:I,s:O,s:O,s:O,s:O}", "heap", mp.memoryTypes[t].heapIndex,
            "device_local", (fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? Py_True : Py_False,
            "host_visible", (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) ? Py_True : Py_False,
            "host_coherent", (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) ? Py_True : Py_False,
            "host_cached", (fl & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? Py_True : Py_False);
        if (e == NULL || PyList_Append(types, e) < 0) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }

    feat = PyDict_New();
    if (feat == NULL || PyDict_SetItemString(d, "features", feat) < 0)
        goto fail;
    const VkPhysicalDeviceFeatures *c = &f.f2.features;
    uint32_t ops = sub.supportedOperations;
    int sub_compute = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    if (putb(feat, "float32_nan_inf_preserve", v12 && fc.shaderSignedZeroInfNanPreserveFloat32) < 0 ||
        putb(feat, "buffer_device_address", f.v12.bufferDeviceAddress) < 0 ||
        putb(feat, "timeline_semaphore", f.v12.timelineSemaphore) < 0 ||
        putb(feat, "storage_buffer_8bit", f.v12.storageBuffer8BitAccess) < 0 ||
        putb(feat, "shader_int8", f.v12.shaderInt8) < 0 ||
        putb(feat, "shader_int16", c->shaderInt16) < 0 ||
        putb(feat, "shader_int64", c->shaderInt64) < 0 ||
        putb(feat, "shader_float16", f.v12.shaderFloat16) < 0 ||
        putb(feat, "shader_float64", c->shaderFloat64) < 0 ||
        putb(feat, "storage_buffer_16bit", f.v11.storageBuffer16BitAccess) < 0 ||
        putb(feat, "shader_buffer_int64_atomics", f.v12.shaderBufferInt64Atomics) < 0 ||
        putb(feat, "subgroup_extended_types", f.v12.shaderSubgroupExtendedTypes) < 0 ||
        putb(feat, "atomic_float32_add", f.af.shaderBufferFloat32AtomicAdd) < 0 ||
        putb(feat, "atomic_float32", f.af.shaderBufferFloat32Atomics) < 0 ||
        putb(feat, "scalar_block_layout", f.v12.scalarBlockLayout) < 0 ||
        putb(feat, "vulkan_memory_model", f.v12.vulkanMemoryModel) < 0 ||
        putb(feat, "vulkan_memory_model_device_scope", f.v12.vulkanMemoryModelDeviceScope) < 0 ||
        putb(feat, "variable_pointers", f.v11.variablePointersStorageBuffer) < 0 ||
        putb(feat, "subgroup_basic", sub_compute && (ops & VK_SUBGROUP_FEATURE_BASIC_BIT)) < 0 ||
        putb(feat, "subgroup_vote", sub_compute && (ops & VK_SUBGROUP_FEATURE_VOTE_BIT)) < 0 ||
        putb(feat, "subgroup_arithmetic", sub_compute && (ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT)) < 0 ||
        putb(feat, "subgroup_ballot", sub_compute && (ops & VK_SUBGROUP_FEATURE_BALLOT_BIT)) < 0 ||
        putb(feat, "subgroup_shuffle", sub_compute && (ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT)) < 0 ||
        putb(feat, "subgroup_shuffle_relative",
             sub_compute && (ops & VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT)) < 0 ||
        putb(feat, "subgroup_clustered", sub_compute && (ops & VK_SUBGROUP_FEATURE_CLUSTERED_BIT)) < 0 ||
        putb(feat, "subgroup_quad", sub_compute && (ops & VK_SUBGROUP_FEATURE_QUAD_BIT)) < 0 ||
        putb(feat, "host_visible_device_local", ct_host_visible_device_local(&mp)) < 0 ||
        putb(feat, "timestamps", tsbits > 0) < 0 ||
        putb(feat, "external_memory_fd", ct_external_wanted(inst, pd)) < 0 ||
        putb(feat, "pipeline_statistics", f.has_exec_props_ext && f.pe.pipelineExecutableInfo) < 0)
        goto fail;
    {
        PyObject *shapes = cooperative_matrix_shapes(inst, pd, &f);
        if (shapes == NULL || PyDict_SetItemString(d, "cooperative_matrix", shapes) < 0 ||
            putb(feat, "cooperative_matrix", PyList_GET_SIZE(shapes) > 0) < 0) {
            Py_XDECREF(shapes);
            goto fail;
        }
        Py_DECREF(shapes);
    }

    const char *why = NULL;
    if (p2.properties.apiVersion < VK_API_VERSION_1_2 || inst->api_version < VK_API_VERSION_1_2)
        why = "Vulkan 1.2 is required";
    else if (!f.v12.bufferDeviceAddress)
        why = "bufferDeviceAddress is not supported";
    else if (!f.v12.timelineSemaphore)
        why = "timelineSemaphore is not supported";
    else if (!has_queue)
        why = "no compute queue";
    if (putb(d, "usable", why == NULL) < 0 ||
        put(d, "unusable_reason", why ? PyUnicode_FromString(why) : Py_NewRef(Py_None)) < 0)
        goto fail;
    Py_DECREF(lim);
    Py_DECREF(feat);
    Py_DECREF(heaps);
    Py_DECREF(types);
    return d;
fail:
    Py_XDECREF(lim);
    Py_XDECREF(feat);
    Py_XDECREF(heaps);
    Py_XDECREF(types);
    Py_DECREF(d);
    return NULL;
}
