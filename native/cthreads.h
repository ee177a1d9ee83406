/* cthreads._native — shared declarations of the C extension (not a Python API).
 *
 * Module state, object structs (Instance, allocations, Buffer, Pipeline, features), sizes and
 * shared macros; the parts it includes: vk_funcs.h (Vulkan entry points), device.h (the Device
 * struct and its parts), protos.h (the functions the .c files provide to each other).
 */
#ifndef CTHREADS_NATIVE_H
#define CTHREADS_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>

#include "vk_funcs.h"

/* ---- module state ---------------------------------------------------------------------- */

/* the exception classes taken from cthreads.errors at module init, and the module's types:
   listed once, for the struct and for module.c's init, traverse and clear */
#define CT_STATE_CLASSES(X)                                                                 \
    X(CThreadsGPUError) X(VulkanLoaderNotFound) X(VulkanNoDevice) X(VulkanInitFailed)       \
    X(VulkanOutOfMemory) X(GpuInvalidArgument) X(GpuArgumentTypeError) X(GpuUseAfterDestroy) \
    X(GpuDeviceLost)
#define CT_STATE_TYPES(X) X(InstanceType) X(DeviceType) X(BufferType) X(PipelineType)

#define CT_DECLARE_CLASS(name) PyObject *name;
#define CT_DECLARE_TYPE(name) PyTypeObject *name;
typedef struct {
    CT_STATE_CLASSES(CT_DECLARE_CLASS)
    CT_STATE_TYPES(CT_DECLARE_TYPE)
} CtState;

extern struct PyModuleDef ct_module_def;

/* ---- objects --------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    CtState *st;
    PyObject *module;           /* keeps st alive */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    CtInstanceFns fn;
    int validation;
    int ndevices;               /* live devices: destroy() refuses while > 0 */
    uint32_t api_version;
    /* each physical device's extensions, listed once per instance (physdev.c): describing a
       device and opening it ask about a dozen of them, each a full enumeration before */
    struct CtDevExts { VkPhysicalDevice pd; VkExtensionProperties *ext; uint32_t n; } *dev_exts;
    int ndev_exts;
} CtInstance;

/* One VkBuffer bound to its own VkDeviceMemory; pooled by (memory type, size class). */
typedef struct CtAlloc {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;               /* NULL when not host-visible */
    VkDeviceSize capacity;
    VkDeviceAddress address;
    uint64_t last_use;          /* timeline value of the last submission using it */
    uint32_t type_index;
    int size_class;             /* -1: not pooled (freed on release) */
    int coherent;
    int exportable;             /* an 'export' allocation (external.c): pooled apart */
    VkDeviceSize memory_size;   /* allocationSize of `memory` (what CUDA imports) */
    struct CtAlloc *all_prev, *all_next; /* every live allocation of the device */
    struct CtAlloc *free_next;           /* pool free list */
} CtAlloc;

#define CT_NCLASS 200
#define CT_RING 64                 /* command buffers (one per batch) */
#define CT_MAX_PUSH 256
#define CT_TIMINGS 1024            /* elapsed_ms results remembered, by value */
#define CT_QPAIRS 1024             /* timestamp query pairs (one per timed submit in flight) */
#define CT_BATCH_MAX_CMDS 256      /* a pending batch is submitted once it holds this many... */
#define CT_BATCH_MAX_BYTES (64ull << 20) /* ...or this many bytes of copies and fills */
#define CT_LANES 4                 /* lane 0 = the default stream; 1..3 = streams (lane.c) */
#define CT_EXT_SEMS 8              /* semaphores shared with CUDA per device (external.c) */

/* CT_KIND_EXPORT: device memory CUDA can import (external.c); only with get_memory_fd */
enum { CT_KIND_DEVICE = 0, CT_KIND_UPLOAD = 1, CT_KIND_DOWNLOAD = 2, CT_KIND_EXPORT = 3, CT_NKINDS = 4 };
enum { CT_UNINIT = 0, CT_ALIVE = 1, CT_CLOSING = 2, CT_DESTROYED = 3 };

typedef struct CtPipeline CtPipeline;

#include "device.h"


struct CtPipeline {
    PyObject_HEAD
    CtDevice *dev;              /* strong ref */
    VkPipeline pipeline;
    VkPipelineLayout layout;
    uint32_t push_size;
    int cache_hit;              /* 1/0: found in the pipeline cache or not; -1: not reported */
    uint64_t build_ns;          /* the driver's calls that made it (module, layout, pipeline) */
    CtPipeline *prev, *next;    /* in dev->pipelines while alive */
};

typedef struct {
    PyObject_HEAD
    CtDevice *dev;              /* strong ref */
    CtAlloc *alloc;             /* NULL after release */
    Py_ssize_t nbytes;
    int kind;
} CtBuffer;

/* VkPhysicalDeviceCooperativeMatrixFeaturesKHR (VK_KHR_cooperative_matrix; Debian 12's Vulkan
 * headers predate it): sType 1000506000 */
#define CT_STYPE_COOPMAT_FEATURES ((VkStructureType)1000506000)
typedef struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} CtCoopMatFeatures;

/* VkPhysicalDeviceShaderBfloat16FeaturesKHR (VK_KHR_shader_bfloat16, bf16 tiles; Debian 12's
 * headers predate it): sType 1000141000 */
#define CT_STYPE_BFLOAT16_FEATURES ((VkStructureType)1000141000)
#define CT_BFLOAT16_EXT "VK_KHR_shader_bfloat16"
typedef struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderBFloat16Type;
    VkBool32 shaderBFloat16DotProduct;
    VkBool32 shaderBFloat16CooperativeMatrix;
} CtBf16Features;

/* features of a physical device (chained structs valid only for api >= 1.2) */
typedef struct {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af;
    int has_atomic_float_ext;
    CtCoopMatFeatures cm;       /* valid when has_coopmat_ext */
    int has_coopmat_ext;        /* VK_KHR_cooperative_matrix (tile kernels) */
    CtBf16Features bf16;        /* valid when has_bf16_ext */
    int has_bf16_ext;           /* VK_KHR_shader_bfloat16 (bf16 tiles; only with coopmat) */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe; /* valid when has_exec_props_ext */
    int has_exec_props_ext;     /* VK_KHR_pipeline_executable_properties (pipeline statistics) */
    uint32_t api;
} CtFeatures;

/* PyMemberDef codes by their names of this Python version (3.12 renamed them) */
#if PY_VERSION_HEX >= 0x030C0000
#define CT_T_OBJECT_EX Py_T_OBJECT_EX
#define CT_T_PYSSIZET Py_T_PYSSIZET
#define CT_READONLY Py_READONLY
#else
#include <structmember.h>
#define CT_T_OBJECT_EX T_OBJECT_EX
#define CT_T_PYSSIZET T_PYSSIZET
#define CT_READONLY READONLY
#endif

/* One type's slot table and spec (every type of the module is made this way); the slots are
   the remaining arguments: CT_TYPE_SPEC(ct_x_spec, "X", CtX, 0, {Py_tp_doc, "..."}, ...). */
#define CT_TYPE_SPEC(spec, tpname, ctype, extra_flags, ...)                                 \
    static PyType_Slot spec##_slots[] = {__VA_ARGS__, {0, NULL}};                        \
    PyType_Spec spec = {.name = "cthreads._native." tpname, .basicsize = sizeof(ctype),     \
                        .flags = Py_TPFLAGS_DEFAULT | (extra_flags), .slots = spec##_slots}

/* destroy a device's Vulkan object when there is one, and forget its handle */
#define CT_DESTROY(dev, Kind, handle)                                                      \
    do {                                                                                   \
        if ((handle) != VK_NULL_HANDLE)                                                    \
            (dev)->fn.vkDestroy##Kind((dev)->device, (handle), NULL);                      \
        (handle) = VK_NULL_HANDLE;                                                         \
    } while (0)

/* fields read without their lock (documented per field) */
#define CT_LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define CT_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define CT_COUNT(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

/* a CPU pause for spin loops: no system call, lets the sibling hyperthread run */
static inline void
ct_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

#include "protos.h"

#endif
