/* cthreads._native — errors: every VkResult mapped to the cthreads.errors classes.
 *
 * Python API: none directly; every failing Vulkan call in the extension raises through
 * ct_raise_vk(), which picks the class (VulkanOutOfMemory, GpuDeviceLost, VulkanInitFailed,
 * VulkanNoDevice, ...) and sets `vk_result` to the VkResult name.
 */
#include "cthreads.h"

#include <stdarg.h>
#include <stddef.h>

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

/* kwargs[key] = text, when there is one */
static int
set_text(PyObject *kwargs, const char *key, const char *text)
{
    if (text == NULL)
        return 0;
    PyObject *v = PyUnicode_FromString(text);
    int rc = v == NULL ? -1 : PyDict_SetItemString(kwargs, key, v);
    Py_XDECREF(v);
    return rc;
}

static PyObject *
raise_with(PyObject *cls, PyObject *msg, const char *vk_name, const char *hint)
{
    PyObject *args = PyTuple_Pack(1, msg);
    PyObject *kwargs = PyDict_New();
    int bad = (args == NULL || kwargs == NULL);
    bad = bad || set_text(kwargs, "vk_result", vk_name) < 0 || set_text(kwargs, "hint", hint) < 0;
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

/* An optional dict argument: 1 when obj is a dict, 0 when it is NULL or None, else -1 with
   GpuArgumentTypeError ("<what>, got <type>"). */
int
ct_dict_or_none(CtState *st, PyObject *obj, const char *what)
{
    if (obj == NULL || obj == Py_None)
        return 0;
    if (PyDict_Check(obj))
        return 1;
    ct_raise(st->GpuArgumentTypeError, "%s, got %s", what, Py_TYPE(obj)->tp_name);
    return -1;
}

#define CT_OOM_HINT "Free device buffers (release arenas, drop jobs) or use smaller inputs"

/* the cthreads.errors class (a CtState field) and the advice for each VkResult that has one;
   any other result is VulkanInitFailed with the driver-installation advice */
static const struct {
    VkResult r;
    size_t cls;
    const char *hint;
} families[] = {
    {VK_ERROR_OUT_OF_HOST_MEMORY, offsetof(CtState, VulkanOutOfMemory), CT_OOM_HINT},
    {VK_ERROR_OUT_OF_DEVICE_MEMORY, offsetof(CtState, VulkanOutOfMemory), CT_OOM_HINT},
    {VK_ERROR_OUT_OF_POOL_MEMORY, offsetof(CtState, VulkanOutOfMemory), CT_OOM_HINT},
    {VK_ERROR_FRAGMENTED_POOL, offsetof(CtState, VulkanOutOfMemory), CT_OOM_HINT},
    {VK_ERROR_FRAGMENTATION, offsetof(CtState, VulkanOutOfMemory), CT_OOM_HINT},
    {VK_ERROR_TOO_MANY_OBJECTS, offsetof(CtState, VulkanOutOfMemory), CT_OOM_HINT},
    {VK_ERROR_DEVICE_LOST, offsetof(CtState, GpuDeviceLost),
     "The GPU driver reset the device; call cthreads.gpu.shutdown() and init() again"},
    {VK_ERROR_INCOMPATIBLE_DRIVER, offsetof(CtState, VulkanNoDevice),
     "No compatible Vulkan driver: install mesa-vulkan-drivers or a GPU driver"},
    {VK_ERROR_LAYER_NOT_PRESENT, offsetof(CtState, VulkanInitFailed),
     "Install vulkan-validationlayers or unset CTHREADS_VALIDATION"},
    {VK_ERROR_INVALID_SHADER_NV, offsetof(CtState, GpuInvalidArgument),
     "The SPIR-V module was rejected by the driver; check it with spirv-val"},
};

PyObject *
ct_raise_vk(CtState *st, VkResult r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *what = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    PyObject *msg = what == NULL ? NULL : PyUnicode_FromFormat("%U failed", what);
    Py_XDECREF(what);
    if (msg == NULL)
        return NULL;
    size_t cls_at = offsetof(CtState, VulkanInitFailed);
    const char *hint = "Check the Vulkan driver installation (vulkaninfo) and CTHREADS_VALIDATION=1 "
                       "output";
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i].r == r) {
            cls_at = families[i].cls;
            hint = families[i].hint;
            break;
        }
    PyObject *cls = *(PyObject **)((char *)st + cls_at);
    const char *vk_name = ct_vk_result_name(r);
    if (cls == st->GpuInvalidArgument) { /* it takes no vk_result: the name goes in the text */
        PyObject *m2 = PyUnicode_FromFormat("%U (%s)", msg, vk_name);
        Py_DECREF(msg);
        if ((msg = m2) == NULL)
            return NULL;
        vk_name = NULL;
    }
    raise_with(cls, msg, vk_name, hint);
    Py_DECREF(msg);
    return NULL;
}
