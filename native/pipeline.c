/* cthreads._native — pipeline: compute pipelines from SPIR-V, and the pipeline cache.
 *
 * Python API:
 *   Device.pipeline(spirv: bytes, push_size: int, spec: dict[int, int|float|bool] | None = None,
 *                   entry: str = "main") -> Pipeline
 *       A pipeline layout with no descriptor sets and one compute push-constant range of
 *       push_size bytes (multiple of 4, <= maxPushConstantsSize). Specialization constants are
 *       32-bit each (bool as VkBool32, float as float32, int as int32/uint32).
 *   Device.pipeline_cache_data() -> bytes      contents of the device's VkPipelineCache (b"" where
 *       knobs.pipeline_cache is 0: builds go through none)
 *   Device.pipeline_statistics(spirv, push_size, spec=None, entry="main") -> list[dict] | None
 *       What the driver reports on the pipeline those arguments make
 *       (VK_KHR_pipeline_executable_properties): one dict per executable, {name, description,
 *       subgroup_size, statistics: [{name, description, value: bool | int | float}]}, the names
 *       the driver's own (registers, spills, shared memory...); None where the device lacks
 *       the extension. Builds and destroys a pipeline of its own each call.
 *   Pipeline.push_size -> int; Pipeline.alive -> bool; Pipeline.device -> native Device
 *   Pipeline.cache_hit -> bool | None   whether the driver built it from the pipeline cache
 *       (Vulkan 1.3 creation feedback; None where the driver does not say): a warm process
 *       whose pipelines all came from the cache file need not write that file back
 *   Pipeline.build_ms -> float          the driver's time making it (no wait for the GIL)
 */
#include "cthreads.h"

#include <string.h>

static void
pipeline_destroy(CtPipeline *p)
{
    CtDevice *dev = p->dev;
    if (dev == NULL || dev->device == VK_NULL_HANDLE)
        return;
    CT_DESTROY(dev, Pipeline, p->pipeline);
    CT_DESTROY(dev, PipelineLayout, p->layout);
    if (p->prev)
        p->prev->next = p->next;
    else if (dev->pipelines == p)
        dev->pipelines = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
}

void
ct_pipelines_destroy_all(CtDevice *dev)
{
    while (dev->pipelines != NULL)
        pipeline_destroy(dev->pipelines);
}

static void
Pipeline_dealloc(CtPipeline *self)
{
    pipeline_destroy(self);
    ct_device_child_free((PyObject *)self, &self->dev);
}

static int
parse_spec(CtState *st, PyObject *spec, VkSpecializationMapEntry **entries, uint32_t **data,
           uint32_t *count)
{
    *entries = NULL;
    *data = NULL;
    *count = 0;
    int given = ct_dict_or_none(st, spec, "spec must be a dict {constant_id: value}");
    if (given <= 0)
        return given;
    Py_ssize_t n = PyDict_Size(spec);
    if (n == 0)
        return 0;
    *entries = PyMem_Calloc((size_t)n, sizeof **entries);
    *data = PyMem_Calloc((size_t)n, sizeof **data);
    if (*entries == NULL || *data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(spec, &pos, &k, &v)) {
        if (!PyLong_Check(k) || PyBool_Check(k)) {
            ct_raise(st->GpuArgumentTypeError, "spec constant ids must be ints, got %s",
                     Py_TYPE(k)->tp_name);
            return -1;
        }
        long id = PyLong_AsLong(k);
        if ((id == -1 && PyErr_Occurred()) || id < 0 || id > INT32_MAX) {
            PyErr_Clear();
            ct_raise(st->GpuInvalidArgument, "spec constant id %R is out of range", k);
            return -1;
        }
        uint32_t word;
        if (PyBool_Check(v))
            word = v == Py_True ? VK_TRUE : VK_FALSE;
        else if (PyLong_Check(v)) {
            long long x = PyLong_AsLongLong(v);
            if ((x == -1 && PyErr_Occurred()) || x < INT32_MIN || x > (long long)UINT32_MAX) {
                PyErr_Clear();
                ct_raise(st->GpuInvalidArgument, "spec constant %ld = %R does not fit in 32 bits",
                         id, v);
                return -1;
            }
            word = (uint32_t)x;
        } else if (PyFloat_Check(v)) {
            float f = (float)PyFloat_AS_DOUBLE(v);
            memcpy(&word, &f, 4);
        } else {
            ct_raise(st->GpuArgumentTypeError, "spec constant %ld must be int, float or bool, got %s",
                     id, Py_TYPE(v)->tp_name);
            return -1;
        }
        (*entries)[i].constantID = (uint32_t)id;
        (*entries)[i].offset = (uint32_t)(4 * i);
        (*entries)[i].size = 4;
        (*data)[i] = word;
        i++;
    }
    *count = (uint32_t)i;
    return 0;
}

/* Device.pipeline()'s arguments; release with args_release() */
typedef struct {
    Py_buffer code;
    int push_size;
    PyObject *spec;
    const char *entry;
} PipelineArgs;

static int
args_parse(CtDevice *dev, PyObject *args, PyObject *kwds, PipelineArgs *a)
{
    static char *kwlist[] = {"spirv", "push_size", "spec", "entry", NULL};
    memset(a, 0, sizeof *a);
    a->entry = "main";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*i|Os", kwlist, &a->code, &a->push_size,
                                     &a->spec, &a->entry))
        return -1;
    CtState *st = dev->st;
    if (ct_device_check(dev) < 0)
        return -1;
    if (a->code.len < 20 || a->code.len % 4 != 0 ||
        ((const uint32_t *)a->code.buf)[0] != 0x07230203u) {
        ct_raise(st->GpuInvalidArgument, "spirv must be a SPIR-V module (a multiple of 4 bytes "
                 "starting with the magic number 0x07230203); got %zd bytes", a->code.len);
        return -1;
    }
    if (a->push_size < 0 || a->push_size % 4 != 0 ||
        (uint32_t)a->push_size > dev->props.limits.maxPushConstantsSize ||
        a->push_size > CT_MAX_PUSH) {
        ct_raise(st->GpuInvalidArgument, "push_size must be a multiple of 4 between 0 and %u "
                 "(maxPushConstantsSize of '%s'), got %d",
                 dev->props.limits.maxPushConstantsSize, dev->props.deviceName, a->push_size);
        return -1;
    }
    return 0;
}

static void
args_release(PipelineArgs *a)
{
    if (a->code.obj != NULL)
        PyBuffer_Release(&a->code);
}

/* The compute pipeline of `a` made with `flags` through `cache` (VK_NULL_HANDLE: none), its
 * layout in *layout; VK_NULL_HANDLE with an exception set on failure. `feedback` (may be
 * NULL) receives Vulkan 1.3's creation feedback; *build_ns (may be NULL) the wall time of the
 * driver's three calls (without the wait for the GIL after them). */
static VkPipeline
pipeline_build(CtDevice *dev, PipelineArgs *a, VkPipelineCreateFlags flags, VkPipelineCache cache,
               VkPipelineLayout *layout, VkPipelineCreationFeedback *feedback, uint64_t *build_ns)
{
    CtState *st = dev->st;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkSpecializationMapEntry *entries = NULL;
    uint32_t *data = NULL, count = 0;
    VkShaderModule module = VK_NULL_HANDLE;
    *layout = VK_NULL_HANDLE;
    if (parse_spec(st, a->spec, &entries, &data, &count) < 0)
        goto done;

    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = (size_t)a->code.len, .pCode = a->code.buf};
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0,
                                 .size = (uint32_t)a->push_size};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .pushConstantRangeCount = a->push_size > 0,
                                       .pPushConstantRanges = &range};
    VkSpecializationInfo si = {.mapEntryCount = count, .pMapEntries = entries,
                               .dataSize = 4 * (size_t)count, .pData = data};
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = flags,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .pName = a->entry,
                  .pSpecializationInfo = count ? &si : NULL},
    };
    /* creation feedback is core in Vulkan 1.3 (no feature to enable) */
    VkPipelineCreationFeedbackCreateInfo fci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
        .pPipelineCreationFeedback = feedback,
    };
    if (feedback != NULL && dev->inst->api_version >= VK_API_VERSION_1_3 &&
        dev->props.apiVersion >= VK_API_VERSION_1_3)
        cpci.pNext = &fci;
    /* All three calls without the GIL: a device's first build spends ~10 ms in NVIDIA's
       driver (issue 19, bench/prepare_timeline.py), and with the GIL held in the module or
       layout call no other Python thread ran meanwhile (prepare()'s other pipeline threads did
       not even start). */
    const char *failed = NULL;
    VkResult r;
    dev->active++;
    uint64_t t0 = 0, t1 = 0;
    Py_BEGIN_ALLOW_THREADS
    t0 = ct_now_ns();
    r = dev->fn.vkCreateShaderModule(dev->device, &smci, NULL, &module);
    if (r != VK_SUCCESS) {
        module = VK_NULL_HANDLE;
        failed = "vkCreateShaderModule";
    } else if ((r = dev->fn.vkCreatePipelineLayout(dev->device, &plci, NULL, layout)) !=
               VK_SUCCESS) {
        *layout = VK_NULL_HANDLE;
        failed = "vkCreatePipelineLayout";
    } else {
        cpci.stage.module = module;
        cpci.layout = *layout;
        r = dev->fn.vkCreateComputePipelines(dev->device, cache, 1, &cpci, NULL, &pipeline);
        if (r != VK_SUCCESS)
            pipeline = VK_NULL_HANDLE;
    }
    t1 = ct_now_ns();
    Py_END_ALLOW_THREADS
    dev->active--;
    if (build_ns != NULL)
        *build_ns = t1 - t0;
    if (r == VK_ERROR_DEVICE_LOST)
        dev->lost = 1;
    if (failed != NULL)
        ct_raise_vk(st, r, "%s", failed);
    else if (r != VK_SUCCESS)
        ct_raise_vk(st, r, "vkCreateComputePipelines (entry point '%s', %zd bytes of SPIR-V, "
                    "push_size %d)", a->entry, a->code.len, a->push_size);
done:
    if (module != VK_NULL_HANDLE)
        dev->fn.vkDestroyShaderModule(dev->device, module, NULL);
    if (pipeline == VK_NULL_HANDLE && *layout != VK_NULL_HANDLE) {
        dev->fn.vkDestroyPipelineLayout(dev->device, *layout, NULL);
        *layout = VK_NULL_HANDLE;
    }
    PyMem_Free(entries);
    PyMem_Free(data);
    return pipeline;
}

PyObject *
ct_device_pipeline(CtDevice *dev, PyObject *args, PyObject *kwds)
{
    PipelineArgs a;
    PyObject *result = NULL;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipelineCreationFeedback feedback = {0};
    if (args_parse(dev, args, kwds, &a) < 0)
        goto done;
    VkPipelineCache cache = dev->knobs.pipeline_cache ? dev->cache : VK_NULL_HANDLE;
    uint64_t build_ns = 0;
    VkPipeline pipeline = pipeline_build(dev, &a, 0, cache, &layout, &feedback, &build_ns);
    if (pipeline == VK_NULL_HANDLE)
        goto done;
    CtPipeline *p = PyObject_New(CtPipeline, dev->st->PipelineType);
    if (p == NULL) {
        dev->fn.vkDestroyPipeline(dev->device, pipeline, NULL);
        dev->fn.vkDestroyPipelineLayout(dev->device, layout, NULL);
        goto done;
    }
    p->dev = (CtDevice *)Py_NewRef((PyObject *)dev);
    p->pipeline = pipeline;
    p->layout = layout;
    p->push_size = (uint32_t)a.push_size;
    p->cache_hit = !(feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) ? -1
                   : (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT) != 0;
    p->build_ns = build_ns;
    p->prev = NULL;
    p->next = dev->pipelines;
    if (dev->pipelines)
        dev->pipelines->prev = p;
    dev->pipelines = p;
    result = (PyObject *)p;
done:
    args_release(&a);
    return result;
}

/* one VkPipelineExecutableStatisticKHR's value as a Python bool, int or float */
static PyObject *
statistic_value(const VkPipelineExecutableStatisticKHR *s)
{
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        return PyBool_FromLong(s->value.b32 != VK_FALSE);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        return PyLong_FromLongLong(s->value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        return PyLong_FromUnsignedLongLong(s->value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
        return PyFloat_FromDouble(s->value.f64);
    default: /* a format newer than these headers: its bits, unsigned */
        return PyLong_FromUnsignedLongLong(s->value.u64);
    }
}

/* the statistics of executable `index` of `pipeline` as a list of {name, description, value} */
static PyObject *
executable_statistics(CtDevice *dev, PFN_vkGetPipelineExecutableStatisticsKHR get,
                      VkPipeline pipeline, uint32_t index)
{
    VkPipelineExecutableInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                        .pipeline = pipeline, .executableIndex = index};
    uint32_t n = 0;
    VkResult r = get(dev->device, &info, &n, NULL);
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkGetPipelineExecutableStatisticsKHR");
    VkPipelineExecutableStatisticKHR *s = PyMem_Calloc(n ? n : 1, sizeof *s);
    if (s == NULL)
        return PyErr_NoMemory();
    for (uint32_t i = 0; i < n; i++)
        s[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
    r = get(dev->device, &info, &n, s);
    PyObject *out = NULL;
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        ct_raise_vk(dev->st, r, "vkGetPipelineExecutableStatisticsKHR");
        goto done;
    }
    out = PyList_New(0);
    for (uint32_t i = 0; out != NULL && i < n; i++) {
        PyObject *v = statistic_value(&s[i]);
        PyObject *e = v == NULL ? NULL : Py_BuildValue("{s:s,s:s,s:N}", "name", s[i].name,
                                                       "description", s[i].description,
                                                       "value", v);
        if (e == NULL || PyList_Append(out, e) < 0)
            Py_CLEAR(out);
        Py_XDECREF(e);
    }
done:
    PyMem_Free(s);
    return out;
}

/* The driver's report on each executable of a pipeline made with CAPTURE_STATISTICS */
static PyObject *
pipeline_report(CtDevice *dev, VkPipeline pipeline)
{
    PFN_vkGetPipelineExecutablePropertiesKHR props =
        (PFN_vkGetPipelineExecutablePropertiesKHR)dev->inst->fn.vkGetDeviceProcAddr(
            dev->device, "vkGetPipelineExecutablePropertiesKHR");
    PFN_vkGetPipelineExecutableStatisticsKHR stats =
        (PFN_vkGetPipelineExecutableStatisticsKHR)dev->inst->fn.vkGetDeviceProcAddr(
            dev->device, "vkGetPipelineExecutableStatisticsKHR");
    if (props == NULL || stats == NULL)
        return ct_raise(dev->st->VulkanInitFailed, "the driver of '%s' lists "
                        "VK_KHR_pipeline_executable_properties but does not provide its "
                        "functions; update the driver", dev->props.deviceName);
    VkPipelineInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
    uint32_t n = 0;
    VkResult r = props(dev->device, &info, &n, NULL);
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkGetPipelineExecutablePropertiesKHR");
    VkPipelineExecutablePropertiesKHR *p = PyMem_Calloc(n ? n : 1, sizeof *p);
    if (p == NULL)
        return PyErr_NoMemory();
    for (uint32_t i = 0; i < n; i++)
        p[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
    r = props(dev->device, &info, &n, p);
    PyObject *out = NULL;
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        ct_raise_vk(dev->st, r, "vkGetPipelineExecutablePropertiesKHR");
        goto done;
    }
    out = PyList_New(0);
    for (uint32_t i = 0; out != NULL && i < n; i++) {
        PyObject *list = executable_statistics(dev, stats, pipeline, i);
        PyObject *e = list == NULL ? NULL
                      : Py_BuildValue("{s:s,s:s,s:I,s:N}", "name", p[i].name, "description",
                                      p[i].description, "subgroup_size", p[i].subgroupSize,
                                      "statistics", list);
        if (e == NULL || PyList_Append(out, e) < 0)
            Py_CLEAR(out);
        Py_XDECREF(e);
    }
done:
    PyMem_Free(p);
    return out;
}

PyObject *
ct_device_pipeline_statistics(CtDevice *dev, PyObject *args, PyObject *kwds)
{
    PipelineArgs a;
    PyObject *result = NULL;
    if (args_parse(dev, args, kwds, &a) < 0)
        goto done;
    if (!dev->pipeline_stats) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* a pipeline of its own, never the launch one: capturing may cost the driver compile time
       and keep more per pipeline, so launches never ask for it. Built without the pipeline
       cache, so the statistics describe a fresh compile and the cache file stays unchanged. */
    VkPipelineLayout layout;
    VkPipeline pipeline = pipeline_build(dev, &a, VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR,
                                         VK_NULL_HANDLE, &layout, NULL, NULL);
    if (pipeline == VK_NULL_HANDLE)
        goto done;
    result = pipeline_report(dev, pipeline);
    dev->fn.vkDestroyPipeline(dev->device, pipeline, NULL);
    dev->fn.vkDestroyPipelineLayout(dev->device, layout, NULL);
done:
    args_release(&a);
    return result;
}

PyObject *
ct_device_pipeline_cache_data(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0)
        return NULL;
    if (!dev->knobs.pipeline_cache) /* no build goes through it: nothing to save */
        return PyBytes_FromStringAndSize(NULL, 0);
    size_t n = 0;
    VkResult r = dev->fn.vkGetPipelineCacheData(dev->device, dev->cache, &n, NULL);
    if (r != VK_SUCCESS)
        return ct_raise_vk(dev->st, r, "vkGetPipelineCacheData");
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (out == NULL)
        return NULL;
    r = dev->fn.vkGetPipelineCacheData(dev->device, dev->cache, &n, PyBytes_AS_STRING(out));
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        Py_DECREF(out);
        return ct_raise_vk(dev->st, r, "vkGetPipelineCacheData");
    }
    if ((Py_ssize_t)n != PyBytes_GET_SIZE(out)) {
        PyObject *cut = PyBytes_FromStringAndSize(PyBytes_AS_STRING(out), (Py_ssize_t)n);
        Py_DECREF(out);
        return cut;
    }
    return out;
}

static PyObject *
Pipeline_get_push_size(CtPipeline *self, void *c)
{
    return PyLong_FromUnsignedLong(self->push_size);
}

static PyObject *
Pipeline_get_cache_hit(CtPipeline *self, void *c)
{
    if (self->cache_hit < 0)
        Py_RETURN_NONE;
    return PyBool_FromLong(self->cache_hit);
}

static PyObject *
Pipeline_get_build_ms(CtPipeline *self, void *c)
{
    return PyFloat_FromDouble((double)self->build_ns / 1e6);
}

static PyObject *
Pipeline_get_alive(CtPipeline *self, void *c)
{
    return PyBool_FromLong(self->pipeline != VK_NULL_HANDLE && self->dev->state == CT_ALIVE);
}

static PyObject *
Pipeline_get_device(CtPipeline *self, void *c)
{
    return Py_NewRef((PyObject *)self->dev);
}

static PyGetSetDef Pipeline_getset[] = {
    {"push_size", (getter)Pipeline_get_push_size, NULL, "push-constant bytes", NULL},
    {"alive", (getter)Pipeline_get_alive, NULL, "False after the device shut down", NULL},
    {"cache_hit", (getter)Pipeline_get_cache_hit, NULL,
     "True: built from the pipeline cache; False: compiled; None: the driver does not say", NULL},
    {"device", (getter)Pipeline_get_device, NULL, "the native device", NULL},
    {"build_ms", (getter)Pipeline_get_build_ms, NULL,
     "ms the driver took to make it (shader module, layout, pipeline; no GIL wait)", NULL},
    {NULL}
};

CT_TYPE_SPEC(ct_pipeline_spec, "Pipeline", CtPipeline, Py_TPFLAGS_DISALLOW_INSTANTIATION,
    {Py_tp_doc, "A compute pipeline (push constants only); made by Device.pipeline()."},
    {Py_tp_dealloc, Pipeline_dealloc},
    {Py_tp_getset, Pipeline_getset});
