/* cthreads._native — pipeline: compute pipelines from SPIR-V, and the pipeline cache.
 *
 * Python API:
 *   Device.pipeline(spirv: bytes, push_size: int, spec: dict[int, int|float|bool] | None = None,
 *                   entry: str = "main") -> Pipeline
 *       A pipeline layout with no descriptor sets and one compute push-constant range of
 *       push_size bytes (multiple of 4, <= maxPushConstantsSize). Specialization constants are
 *       32-bit each (bool as VkBool32, float as float32, int as int32/uint32).
 *   Device.pipeline_cache_data() -> bytes      contents of the device's VkPipelineCache
 *   Pipeline.push_size -> int; Pipeline.alive -> bool; Pipeline.device -> native Device
 *   Pipeline.cache_hit -> bool | None   whether the driver built it from the pipeline cache
 *       (Vulkan 1.3 creation feedback; None where the driver does not say): a warm process
 *       whose pipelines all came from the cache file need not write that file back
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
    PyTypeObject *tp = Py_TYPE(self);
    pipeline_destroy(self);
    Py_CLEAR(self->dev);
    PyObject_Free(self);
    Py_DECREF(tp);
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

PyObject *
ct_device_pipeline(CtDevice *dev, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"spirv", "push_size", "spec", "entry", NULL};
    Py_buffer code = {0};
    int push_size;
    PyObject *spec = NULL;
    const char *entry = "main";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*i|Os", kwlist, &code, &push_size, &spec, &entry))
        return NULL;
    CtState *st = dev->st;
    PyObject *result = NULL;
    VkSpecializationMapEntry *entries = NULL;
    uint32_t *data = NULL, count = 0;
    VkShaderModule module = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    if (ct_device_check(dev) < 0)
        goto done;
    if (code.len < 20 || code.len % 4 != 0 || ((const uint32_t *)code.buf)[0] != 0x07230203u) {
        ct_raise(st->GpuInvalidArgument, "spirv must be a SPIR-V module (a multiple of 4 bytes "
                 "starting with the magic number 0x07230203); got %zd bytes", code.len);
        goto done;
    }
    if (push_size < 0 || push_size % 4 != 0 ||
        (uint32_t)push_size > dev->props.limits.maxPushConstantsSize || push_size > CT_MAX_PUSH) {
        ct_raise(st->GpuInvalidArgument, "push_size must be a multiple of 4 between 0 and %u "
                 "(maxPushConstantsSize of '%s'), got %d",
                 dev->props.limits.maxPushConstantsSize, dev->props.deviceName, push_size);
        goto done;
    }
    if (parse_spec(st, spec, &entries, &data, &count) < 0)
        goto done;

    VkResult r;
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = (size_t)code.len, .pCode = code.buf};
    r = dev->fn.vkCreateShaderModule(dev->device, &smci, NULL, &module);
    if (r != VK_SUCCESS) {
        ct_raise_vk(st, r, "vkCreateShaderModule");
        goto done;
    }
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0,
                                 .size = (uint32_t)push_size};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .pushConstantRangeCount = push_size > 0,
                                       .pPushConstantRanges = &range};
    r = dev->fn.vkCreatePipelineLayout(dev->device, &plci, NULL, &layout);
    if (r != VK_SUCCESS) {
        ct_raise_vk(st, r, "vkCreatePipelineLayout");
        goto done;
    }
    VkSpecializationInfo si = {.mapEntryCount = count, .pMapEntries = entries,
                               .dataSize = 4 * (size_t)count, .pData = data};
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = module, .pName = entry,
                  .pSpecializationInfo = count ? &si : NULL},
        .layout = layout,
    };
    /* creation feedback is core in Vulkan 1.3 (no feature to enable) */
    VkPipelineCreationFeedback feedback = {0};
    VkPipelineCreationFeedbackCreateInfo fci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
        .pPipelineCreationFeedback = &feedback,
    };
    if (dev->inst->api_version >= VK_API_VERSION_1_3 &&
        dev->props.apiVersion >= VK_API_VERSION_1_3)
        cpci.pNext = &fci;
    VkPipeline pipeline = VK_NULL_HANDLE;
    dev->active++;
    Py_BEGIN_ALLOW_THREADS
    r = dev->fn.vkCreateComputePipelines(dev->device, dev->cache, 1, &cpci, NULL, &pipeline);
    Py_END_ALLOW_THREADS
    dev->active--;
    if (r != VK_SUCCESS) {
        if (r == VK_ERROR_DEVICE_LOST)
            dev->lost = 1;
        ct_raise_vk(st, r, "vkCreateComputePipelines (entry point '%s', %zd bytes of SPIR-V, "
                    "push_size %d)", entry, code.len, push_size);
        goto done;
    }
    CtPipeline *p = PyObject_New(CtPipeline, st->PipelineType);
    if (p == NULL) {
        dev->fn.vkDestroyPipeline(dev->device, pipeline, NULL);
        goto done;
    }
    p->dev = (CtDevice *)Py_NewRef((PyObject *)dev);
    p->pipeline = pipeline;
    p->layout = layout;
    layout = VK_NULL_HANDLE;
    p->push_size = (uint32_t)push_size;
    p->cache_hit = !(feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) ? -1
                   : (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT) != 0;
    p->prev = NULL;
    p->next = dev->pipelines;
    if (dev->pipelines)
        dev->pipelines->prev = p;
    dev->pipelines = p;
    result = (PyObject *)p;
done:
    if (module != VK_NULL_HANDLE)
        dev->fn.vkDestroyShaderModule(dev->device, module, NULL);
    if (layout != VK_NULL_HANDLE)
        dev->fn.vkDestroyPipelineLayout(dev->device, layout, NULL);
    PyMem_Free(entries);
    PyMem_Free(data);
    PyBuffer_Release(&code);
    return result;
}

PyObject *
ct_device_pipeline_cache_data(CtDevice *dev, PyObject *unused)
{
    if (ct_device_check(dev) < 0)
        return NULL;
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
    {NULL}
};

CT_TYPE_SPEC(ct_pipeline_spec, "Pipeline", CtPipeline, Py_TPFLAGS_DISALLOW_INSTANTIATION,
    {Py_tp_doc, "A compute pipeline (push constants only); made by Device.pipeline()."},
    {Py_tp_dealloc, Pipeline_dealloc},
    {Py_tp_getset, Pipeline_getset});
