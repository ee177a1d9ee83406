/* cthreads._native — module: state, types and module-level functions.
 *
 * Python API:
 *   load(libname: str) -> None        dlopen the Vulkan loader (once per process); raises
 *                                     VulkanLoaderNotFound with an install hint
 *   loaded() -> bool                  whether load() succeeded
 *   validation_messages(clear=True) -> list[str]   messages captured from the validation layer
 *   Instance, Device, Buffer, Pipeline             types (instance.c, device.c, buffer.c,
 *                                                  pipeline.c)
 *   FastLauncher                                   type (launch.c): a kernel's queued-launch path
 *   KIND_DEVICE, KIND_UPLOAD, KIND_DOWNLOAD, MAX_PUSH (ints)
 * The exception classes come from cthreads.errors, imported at module init.
 */
#include "cthreads.h"

static CtState *
get_state(PyObject *module)
{
    return (CtState *)PyModule_GetState(module);
}

static PyObject *
ct_load(PyObject *module, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL)
        return NULL;
    if (ct_loader_load(get_state(module), name) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
ct_loaded(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(ct_loader_ready());
}

static PyObject *
ct_validation_messages(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"clear", NULL};
    int clear = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p", kwlist, &clear))
        return NULL;
    return ct_validation_drain(clear);
}

static PyObject *
ct_push_message(PyObject *module, PyObject *arg)
{
    const char *s = PyUnicode_AsUTF8(arg);
    if (s == NULL)
        return NULL;
    ct_validation_push(s);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"load", ct_load, METH_O, "load(libname) -> None: dlopen the Vulkan loader"},
    {"dlpack_capsule", ct_dlpack_capsule, METH_VARARGS,
     "dlpack_capsule(owner, data, shape, (code, bits, lanes), (device_type, device_id), "
     "versioned=False) -> a 'dltensor' (or 'dltensor_versioned') PyCapsule holding owner "
     "until consumed and deleted (external.c)"},
    {"loaded", ct_loaded, METH_NOARGS, "loaded() -> bool"},
    {"validation_messages", (PyCFunction)(void (*)(void))ct_validation_messages,
     METH_VARARGS | METH_KEYWORDS, "validation_messages(clear=True) -> list[str]"},
    {"push_validation_message", ct_push_message, METH_O,
     "push_validation_message(msg) -> None: record a message (for cthreads' own checks)"},
    {NULL}
};

static int
module_exec(PyObject *m)
{
    CtState *st = get_state(m);
    PyObject *errors = PyImport_ImportModule("cthreads.errors");
    if (errors == NULL)
        return -1;
#define GET_EXC(name)                                              \
    st->name = PyObject_GetAttrString(errors, #name);              \
    if (st->name == NULL) {                                        \
        Py_DECREF(errors);                                         \
        return -1;                                                 \
    }
    CT_STATE_CLASSES(GET_EXC)
#undef GET_EXC
    Py_DECREF(errors);
#define ADD_TYPE(field, spec, attr)                                                     \
    st->field = (PyTypeObject *)PyType_FromModuleAndSpec(m, &spec, NULL);               \
    if (st->field == NULL || PyModule_AddObjectRef(m, attr, (PyObject *)st->field) < 0) \
        return -1;
    ADD_TYPE(InstanceType, ct_instance_spec, "Instance")
    ADD_TYPE(DeviceType, ct_device_spec, "Device")
    ADD_TYPE(BufferType, ct_buffer_spec, "Buffer")
    ADD_TYPE(PipelineType, ct_pipeline_spec, "Pipeline")
#undef ADD_TYPE
    /* the types the module state does not keep: launch_plan.c's, bound.c's */
    PyType_Spec *plain[] = {&ct_launcher_spec, &ct_bound_spec, &ct_entry_spec};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        PyObject *tp = PyType_FromModuleAndSpec(m, plain[i], NULL);
        if (tp == NULL || PyModule_AddType(m, (PyTypeObject *)tp) < 0) {
            Py_XDECREF(tp);
            return -1;
        }
        Py_DECREF(tp);
    }
    if (PyModule_AddIntConstant(m, "KIND_DEVICE", CT_KIND_DEVICE) < 0 ||
        PyModule_AddIntConstant(m, "KIND_UPLOAD", CT_KIND_UPLOAD) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DOWNLOAD", CT_KIND_DOWNLOAD) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PUSH", CT_MAX_PUSH) < 0)
        return -1;
    return 0;
}

/* visit (or, with visit NULL, clear) every object the state holds */
static int
state_objects(PyObject *m, visitproc visit, void *arg)
{
    CtState *st = get_state(m);
    if (st == NULL)
        return 0;
#define ADDRESS(name) (PyObject **)&st->name,
    PyObject **held[] = {CT_STATE_CLASSES(ADDRESS) CT_STATE_TYPES(ADDRESS)};
#undef ADDRESS
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
        if (visit != NULL)
            Py_VISIT(*held[i]);
        else
            Py_CLEAR(*held[i]);
    }
    return 0;
}

static int
module_traverse(PyObject *m, visitproc visit, void *arg)
{
    return state_objects(m, visit, arg);
}

static int
module_clear(PyObject *m)
{
    return state_objects(m, NULL, NULL);
}

static void
module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL}
};

struct PyModuleDef ct_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cthreads._native",
    .m_doc = "Vulkan mechanism for cthreads: loader, instance, device, buffers, pipelines, "
             "submission. Policy lives in cthreads.runtime.",
    .m_size = sizeof(CtState),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModuleDef_Init(&ct_module_def);
}
