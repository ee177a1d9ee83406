/* cthreads._native — errors: every VkResult mapped to the cthreads.errors classes.
 *
 * Python API: none directly; every failing Vulkan call in the extension raises through
 * ct_raise_vk(), which picks the class (VulkanOutOfMemory, GpuDeviceLost, VulkanInitFailed,
 * VulkanNoDevice, ...) and sets `vk_result` to the VkResult name.
 */
#include "cthreads.h"

#include <stdarg.h>

const char *
ct_vk_result_name(VkResult r)
{
    switch (r) {
#define CASE(x) case x: return #x;
    CASE(VK_SUCCESS) CASE(VK_NOT_READY) CASE(VK_TIMEOUT) CASE(VK_EVENT_SET) CASE(VK_EVENT_RESET)
    CASE(VK_INCOMPLETE) CASE(VK_ERROR_OUT_OF_HOST_MEMORY) CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    CASE(VK_ERROR_INITIALIZATION_FAILED) CASE(VK_ERROR_DEVICE_LOST) CASE(VK_ERROR_MEMORY_MAP_FAILED)
    CASE(VK_ERROR_LAYER_NOT_PRESENT) CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    CASE(VK_ERROR_FEATURE_NOT_PRESENT) CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    CASE(VK_ERROR_TOO_MANY_OBJECTS) CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    CASE(VK_ERROR_FRAGMENTED_POOL) CASE(VK_ERROR_UNKNOWN) CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE) CASE(VK_ERROR_FRAGMENTATION)
    CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS) CASE(VK_PIPELINE_COMPILE_REQUIRED)
    CASE(VK_ERROR_INVALID_SHADER_NV) CASE(VK_ERROR_VALIDATION_FAILED_EXT)
#undef CASE
    default: return "VK_ERROR_UNKNOWN";
    }
}

static PyObject *
raise_with(PyObject *cls, PyObject *msg, const char *vk_name, const char *hint)
{
    PyObject *args = PyTuple_Pack(1, msg);
    PyObject *kwargs = PyDict_New();
    int bad = (args == NULL || kwargs == NULL);
    if (!bad && vk_name != NULL) {
        PyObject *v = PyUnicode_FromString(vk_name);
        bad = v == NULL || PyDict_SetItemString(kwargs, "vk_result", v) < 0;
        Py_XDECREF(v);
    }
    if (!bad && hint != NULL) {
        PyObject *v = PyUnicode_FromString(hint);
        bad = v == NULL || PyDict_SetItemString(kwargs, "hint", v) < 0;
        Py_XDECREF(v);
    }
    if (!bad) {
        PyObject *exc = PyObject_Call(cls, args, kwargs);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return NULL;
}

PyObject *
ct_raise(PyObject *cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg == NULL)
        return NULL;
    raise_with(cls, msg, NULL, NULL);
    Py_DECREF(msg);
    return NULL;
}

PyObject *
ct_raise_vk(CtState *st, VkResult r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *what = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (what == NULL)
        return NULL;
    PyObject *cls;
    const char *hint;
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
        cls = st->VulkanOutOfMemory;
        hint = "Free device buffers (release arenas, drop jobs) or use smaller inputs";
        break;
    case VK_ERROR_DEVICE_LOST:
        cls = st->GpuDeviceLost;
        hint = "The GPU driver reset the device; call cthreads.gpu.shutdown() and init() again";
        break;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
        cls = st->VulkanNoDevice;
        hint = "No compatible Vulkan driver: install mesa-vulkan-drivers or a GPU driver";
        break;
    case VK_ERROR_LAYER_NOT_PRESENT:
        cls = st->VulkanInitFailed;
        hint = "Install vulkan-validationlayers or unset CTHREADS_VALIDATION";
        break;
    case VK_ERROR_INVALID_SHADER_NV:
        cls = st->GpuInvalidArgument;
        hint = "The SPIR-V module was rejected by the driver; check it with spirv-val";
        break;
    default:
        cls = st->VulkanInitFailed;
        hint = "Check the Vulkan driver installation (vulkaninfo) and CTHREADS_VALIDATION=1 output";
        break;
    }
    PyObject *msg = PyUnicode_FromFormat("%U failed", what);
    Py_DECREF(what);
    if (msg == NULL)
        return NULL;
    /* GpuInvalidArgument takes no vk_result: put the name in the message instead */
    if (cls == st->GpuInvalidArgument) {
        PyObject *m2 = PyUnicode_FromFormat("%U (%s)", msg, ct_vk_result_name(r));
        Py_DECREF(msg);
        if (m2 == NULL)
            return NULL;
        raise_with(cls, m2, NULL, hint);
        Py_DECREF(m2);
        return NULL;
    }
    raise_with(cls, msg, ct_vk_result_name(r), hint);
    Py_DECREF(msg);
    return NULL;
}
