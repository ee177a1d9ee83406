/* cthreads._native — instance: VkInstance, validation capture, physical-device enumeration.
 *
 * Python API:
 *   Instance(validation: bool, app_name: str = "cthreads")   -- needs load() first
 *   Instance.physical_devices() -> list[dict]   plain data per device (name, type, ids,
 *       versions, limits, memory heaps/types, features, usable/why) for the Python policy
 *   Instance.validation -> bool                 whether the Khronos layer is active
 *   Instance.destroy() -> None                  idempotent; devices must be destroyed first
 * Validation messages (warnings + errors, every type) are kept in a process-wide C list
 * (no GIL needed in the callback) and drained by module.c's validation_messages().
 */
#include "cthreads.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string.h>

/* ---- validation message store ---------------------------------------------------------- */

#define CT_MAX_MESSAGES 1000
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;
static char *msgs[CT_MAX_MESSAGES];
static int nmsgs = 0;
static int dropped = 0;

/* a child process after fork(): the lock may have been held by a thread of the parent */
static void
msg_lock_after_fork(void)
{
    pthread_mutex_init(&msg_lock, NULL);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
register_atfork(void)
{
    pthread_atfork(NULL, NULL, msg_lock_after_fork);
}

void
ct_validation_push(const char *msg)
{
    pthread_mutex_lock(&msg_lock);
    if (nmsgs < CT_MAX_MESSAGES)
        msgs[nmsgs++] = strdup(msg);
    else
        dropped++;
    pthread_mutex_unlock(&msg_lock);
}

PyObject *
ct_validation_drain(int clear)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    pthread_mutex_lock(&msg_lock);
    int ok = 1;
    for (int i = 0; i < nmsgs && ok; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(msgs[i] ? msgs[i] : "(message lost)",
                                           msgs[i] ? (Py_ssize_t)strlen(msgs[i]) : 14, "replace");
        ok = s != NULL && PyList_Append(out, s) == 0;
        Py_XDECREF(s);
    }
    if (ok && dropped) {
        PyObject *s = PyUnicode_FromFormat("(%d more validation messages dropped)", dropped);
        ok = s != NULL && PyList_Append(out, s) == 0;
        Py_XDECREF(s);
    }
    if (ok && clear) {
        for (int i = 0; i < nmsgs; i++)
            free(msgs[i]);
        nmsgs = 0;
        dropped = 0;
    }
    pthread_mutex_unlock(&msg_lock);
    if (!ok) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
               VkDebugUtilsMessageTypeFlagsEXT types,
               const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)user;
    const char *sev = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning";
    const char *kind = (types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) ? "validation"
                       : (types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) ? "performance"
                                                                                    : "general";
    char buf[4096];
    snprintf(buf, sizeof buf, "[%s %s] %s: %s", sev, kind,
             data->pMessageIdName ? data->pMessageIdName : "-",
             data->pMessage ? data->pMessage : "");
    ct_validation_push(buf);
    return VK_FALSE;
}

static void
fill_messenger_info(VkDebugUtilsMessengerCreateInfoEXT *ci)
{
    memset(ci, 0, sizeof *ci);
    ci->sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    ci->messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    ci->messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    ci->pfnUserCallback = debug_callback;
}

/* ---- Instance -------------------------------------------------------------------------- */

static int
has_layer(const char *name)
{
    uint32_t n = 0;
    if (ct_gfn.vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkLayerProperties *p = PyMem_Calloc(n, sizeof *p);
    if (p == NULL)
        return 0;
    int found = 0;
    if (ct_gfn.vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(p[i].layerName, name) == 0;
    PyMem_Free(p);
    return found;
}

static int
has_instance_ext(const char *layer, const char *name)
{
    uint32_t n = 0;
    if (ct_gfn.vkEnumerateInstanceExtensionProperties(layer, &n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkExtensionProperties *p = PyMem_Calloc(n, sizeof *p);
    if (p == NULL)
        return 0;
    int found = 0;
    if (ct_gfn.vkEnumerateInstanceExtensionProperties(layer, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(p[i].extensionName, name) == 0;
    PyMem_Free(p);
    return found;
}

static int
Instance_init(CtInstance *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"validation", "app_name", NULL};
    int validation = 0;
    const char *app_name = "cthreads";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|ps", kwlist, &validation, &app_name))
        return -1;
    CtState *st = self->st;
    if (self->instance != VK_NULL_HANDLE) {
        ct_raise(st->GpuInvalidArgument, "Instance is already initialized");
        return -1;
    }
    if (self->module == NULL) {
        self->module = PyType_GetModule(Py_TYPE(self));
        Py_XINCREF(self->module);
    }
    if (!ct_loader_ready()) {
        ct_raise(st->VulkanLoaderNotFound, "the Vulkan loader is not loaded; call load() first");
        return -1;
    }
    uint32_t iver = VK_API_VERSION_1_0;
    if (ct_gfn.vkEnumerateInstanceVersion != NULL)
        ct_gfn.vkEnumerateInstanceVersion(&iver);
    uint32_t want = iver >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
    self->api_version = want;

    const char *layers[1];
    const char *exts[1];
    uint32_t nlayers = 0, nexts = 0;
    VkDebugUtilsMessengerCreateInfoEXT mci;
    fill_messenger_info(&mci);
    if (validation) {
        if (has_layer("VK_LAYER_KHRONOS_validation") &&
            (has_instance_ext(NULL, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
             has_instance_ext("VK_LAYER_KHRONOS_validation", VK_EXT_DEBUG_UTILS_EXTENSION_NAME))) {
            layers[nlayers++] = "VK_LAYER_KHRONOS_validation";
            exts[nexts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        } else {
            ct_validation_push("[error cthreads] CTHREADS_VALIDATION is set but "
                               "VK_LAYER_KHRONOS_validation (with VK_EXT_debug_utils) is not "
                               "installed: apt-get install vulkan-validationlayers");
            validation = 0;
        }
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = app_name,
        .applicationVersion = 1,
        .pEngineName = "cthreads",
        .engineVersion = 1,
        .apiVersion = want,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &mci : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = nlayers,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = nexts,
        .ppEnabledExtensionNames = exts,
    };
    VkInstance inst = VK_NULL_HANDLE;
    VkResult r;
    pthread_once(&atfork_once, register_atfork);
    Py_BEGIN_ALLOW_THREADS
    r = ct_gfn.vkCreateInstance(&ci, NULL, &inst);
    Py_END_ALLOW_THREADS
    if (r != VK_SUCCESS) {
        ct_raise_vk(st, r, "vkCreateInstance (Vulkan %u.%u)", VK_API_VERSION_MAJOR(want),
                    VK_API_VERSION_MINOR(want));
        return -1;
    }
    self->instance = inst;
#define CT_LOAD_INST(name) self->fn.name = (PFN_##name)ct_get_instance_proc(inst, #name);
    CT_INSTANCE_FUNCS(CT_LOAD_INST)
    CT_INSTANCE_OPT_FUNCS(CT_LOAD_INST)
#undef CT_LOAD_INST
#define CT_CHECK_INST(name)                                                              \
    if (self->fn.name == NULL) {                                                         \
        ct_raise(st->VulkanInitFailed, "the Vulkan loader does not provide " #name         \
                 " (Vulkan 1.2 is required): update libvulkan1 and the driver");          \
        return -1;                                                                       \
    }
    CT_INSTANCE_FUNCS(CT_CHECK_INST)
#undef CT_CHECK_INST
    if (validation && self->fn.vkCreateDebugUtilsMessengerEXT != NULL) {
        r = self->fn.vkCreateDebugUtilsMessengerEXT(inst, &mci, NULL, &self->messenger);
        if (r != VK_SUCCESS) {
            ct_raise_vk(st, r, "vkCreateDebugUtilsMessengerEXT");
            return -1;
        }
    }
    self->validation = validation;
    return 0;
}

static void
instance_destroy(CtInstance *self)
{
    ct_device_exts_clear(self); /* (physdev.c; also after _forget: the memory is ours) */
    if (self->instance == VK_NULL_HANDLE)
        return;
    if (self->messenger != VK_NULL_HANDLE && self->fn.vkDestroyDebugUtilsMessengerEXT)
        self->fn.vkDestroyDebugUtilsMessengerEXT(self->instance, self->messenger, NULL);
    self->messenger = VK_NULL_HANDLE;
    self->fn.vkDestroyInstance(self->instance, NULL);
    self->instance = VK_NULL_HANDLE;
}

/* The exit of a child process forked with a Vulkan instance open ends with _exit(): the C
   exit handlers registered before fork() belong to the parent's driver state. Mesa's (lavapipe)
   joins the parent's worker threads, which do not exist in the child: with glibc that crashes
   (SIGSEGV) or hangs once the child made threads of its own, whose stacks reuse theirs.
   Registered in the child, this handler runs before those (last in, first out); Python's own
   finalization (atexit handlers, our teardown, buffers flushed) is over by then. */
#if defined(__GLIBC__)
static void
exit_now(int status, void *arg)
{
    (void)arg;
    fflush(NULL);
    _exit(status);
}
#endif

static int exit_now_registered = 0;

/* _forget(): in a child process after fork(): the VkInstance is the parent's; drop it without
   calling Vulkan (its devices must be forgotten first, Device._forget). */
static PyObject *
Instance_forget(CtInstance *self, PyObject *unused)
{
#if defined(__GLIBC__)
    if (self->instance != VK_NULL_HANDLE && !exit_now_registered) {
        on_exit(exit_now, NULL);
        exit_now_registered = 1;
    }
#endif
    self->instance = VK_NULL_HANDLE;
    self->messenger = VK_NULL_HANDLE;
    self->ndevices = 0;
    Py_RETURN_NONE;
}

static PyObject *
Instance_destroy(CtInstance *self, PyObject *unused)
{
    if (self->ndevices > 0)
        return ct_raise(self->st->GpuInvalidArgument,
                        "cannot destroy the Vulkan instance while %d device(s) made from it "
                        "are alive; destroy them first", self->ndevices);
    instance_destroy(self);
    Py_RETURN_NONE;
}

static PyObject *
Instance_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    CtInstance *self = (CtInstance *)PyType_GenericNew(type, args, kwds);
    if (self != NULL)
        self->st = PyType_GetModuleState(type);
    return (PyObject *)self;
}

static void
Instance_dealloc(CtInstance *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    instance_destroy(self);
    Py_XDECREF(self->module);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
Instance_physical_devices(CtInstance *self, PyObject *unused)
{
    if (self->instance == VK_NULL_HANDLE)
        return ct_raise(self->st->GpuUseAfterDestroy,
                        "the Vulkan instance is not initialized or was destroyed (shutdown())");
    uint32_t n = 0;
    VkResult r;
    /* the first enumeration is where some drivers bring their devices up (tens of ms): let
       the kernels that prepare() compiles meanwhile have the GIL */
    Py_BEGIN_ALLOW_THREADS
    r = self->fn.vkEnumeratePhysicalDevices(self->instance, &n, NULL);
    Py_END_ALLOW_THREADS
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return ct_raise_vk(self->st, r, "vkEnumeratePhysicalDevices");
    VkPhysicalDevice *pds = PyMem_Calloc(n ? n : 1, sizeof *pds);
    if (pds == NULL)
        return PyErr_NoMemory();
    r = self->fn.vkEnumeratePhysicalDevices(self->instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        PyMem_Free(pds);
        return ct_raise_vk(self->st, r, "vkEnumeratePhysicalDevices");
    }
    PyObject *out = PyList_New(0);
    for (uint32_t i = 0; out != NULL && i < n; i++) {
        PyObject *d = ct_describe_physical_device(self, pds[i], (int)i);
        if (d == NULL || PyList_Append(out, d) < 0)
            Py_CLEAR(out);
        Py_XDECREF(d);
    }
    PyMem_Free(pds);
    return out;
}

static PyObject *
Instance_get_validation(CtInstance *self, void *c)
{
    return PyBool_FromLong(self->validation);
}

static PyMethodDef Instance_methods[] = {
    {"physical_devices", (PyCFunction)Instance_physical_devices, METH_NOARGS,
     "physical_devices() -> list[dict]: plain data describing every physical device."},
    {"_forget", (PyCFunction)Instance_forget, METH_NOARGS,
     "_forget() -> None: after fork(), in the child: drop the parent's instance untouched"},
    {"destroy", (PyCFunction)Instance_destroy, METH_NOARGS,
     "destroy() -> None: destroy the VkInstance (after every device)."},
    {NULL}
};

static PyGetSetDef Instance_getset[] = {
    {"validation", (getter)Instance_get_validation, NULL, "whether validation is active", NULL},
    {NULL}
};

CT_TYPE_SPEC(ct_instance_spec, "Instance", CtInstance, 0,
    {Py_tp_doc, "A VkInstance (with the validation layer when asked)."},
    {Py_tp_init, Instance_init},
    {Py_tp_new, Instance_new},
    {Py_tp_dealloc, Instance_dealloc},
    {Py_tp_methods, Instance_methods},
    {Py_tp_getset, Instance_getset});
