/* cthreads._spirvval: SPIR-V validation inside the process, with SPIRV-Tools' C API (the static
 * library of Debian's spirv-tools package), so compiling a kernel on a cache miss starts no
 * `spirv-val` process (slow to start under sandboxes such as gVisor).
 *
 * Python API:
 *   validate(words: bytes, env: str = "vulkan1.2") -> None
 *       raises ValueError with the validator's message when the module is invalid;
 *       the GIL is released while validating, and each call has its own context, so several
 *       threads may validate at once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <spirv-tools/libspirv.h>
#include <string.h>

static int
parse_env(const char *name, spv_target_env *env)
{
    static const struct {
        const char *name;
        spv_target_env env;
    } envs[] = {{"vulkan1.0", SPV_ENV_VULKAN_1_0},
                {"vulkan1.1", SPV_ENV_VULKAN_1_1},
                {"vulkan1.2", SPV_ENV_VULKAN_1_2},
                {"vulkan1.3", SPV_ENV_VULKAN_1_3}};
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++)
        if (strcmp(name, envs[i].name) == 0) {
            *env = envs[i].env;
            return 0;
        }
    PyErr_Format(PyExc_ValueError, "unknown target environment '%s' (use vulkan1.0 … vulkan1.3)",
                 name);
    return -1;
}

static PyObject *
validate(PyObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"words", "env", NULL};
    Py_buffer buf;
    const char *env_name = "vulkan1.2";
    spv_target_env env;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*|s", kwlist, &buf, &env_name))
        return NULL;
    if (parse_env(env_name, &env) < 0 || buf.len % 4 != 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "a SPIR-V module is a whole number of 32-bit words; "
                         "got %zd bytes", buf.len);
        PyBuffer_Release(&buf);
        return NULL;
    }
    spv_result_t result;
    char *message = NULL;
    Py_BEGIN_ALLOW_THREADS
    spv_context ctx = spvContextCreate(env);
    spv_const_binary_t binary = {(const uint32_t *)buf.buf, (size_t)buf.len / 4};
    spv_diagnostic diag = NULL;
    result = ctx ? spvValidate(ctx, &binary, &diag) : SPV_ERROR_INTERNAL;
    if (diag != NULL) {
        message = strdup(diag->error ? diag->error : "");
        spvDiagnosticDestroy(diag);
    }
    if (ctx)
        spvContextDestroy(ctx);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (result == SPV_SUCCESS) {
        free(message);
        Py_RETURN_NONE;
    }
    PyErr_Format(PyExc_ValueError, "error: %s", message ? message : "the module is invalid");
    free(message);
    return NULL;
}

static PyMethodDef methods[] = {
    {"validate", (PyCFunction)(void (*)(void))validate, METH_VARARGS | METH_KEYWORDS,
     "validate(words: bytes, env='vulkan1.2') -> None; ValueError(message) if invalid"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cthreads._spirvval",
    "SPIR-V validation in-process (SPIRV-Tools).", 0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__spirvval(void)
{
    return PyModuleDef_Init(&module);
}
