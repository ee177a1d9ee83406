/* cthreads._native — shared declarations of the C extension (not a Python API).
 *
 * Vulkan entry-point tables (X-macros), object structs (Instance, Device, Buffer, Pipeline),
 * module state, and the functions the .c files provide to each other.
 * Every Vulkan function is loaded at run time: vulkan.h is included with VK_NO_PROTOTYPES.
 */
#ifndef CTHREADS_NATIVE_H
#define CTHREADS_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

/* ---- entry points ---------------------------------------------------------------------- */

/* resolved with vkGetInstanceProcAddr(NULL, ...) */
#define CT_GLOBAL_FUNCS(X)                 \
    X(vkCreateInstance)                    \
    X(vkEnumerateInstanceLayerProperties)  \
    X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceVersion)

/* resolved with vkGetInstanceProcAddr(instance, ...) */
#define CT_INSTANCE_FUNCS(X)                       \
    X(vkDestroyInstance)                           \
    X(vkEnumeratePhysicalDevices)                  \
    X(vkGetPhysicalDeviceProperties)               \
    X(vkGetPhysicalDeviceProperties2)              \
    X(vkGetPhysicalDeviceFeatures2)                \
    X(vkGetPhysicalDeviceMemoryProperties)         \
    X(vkGetPhysicalDeviceQueueFamilyProperties)    \
    X(vkEnumerateDeviceExtensionProperties)        \
    X(vkCreateDevice)                              \
    X(vkGetDeviceProcAddr)

/* optional instance functions (debug utils; external memory queries, external.c) */
#define CT_INSTANCE_OPT_FUNCS(X)           \
    X(vkCreateDebugUtilsMessengerEXT)      \
    X(vkDestroyDebugUtilsMessengerEXT)     \
    X(vkGetPhysicalDeviceExternalBufferProperties)

/* resolved with vkGetDeviceProcAddr(device, ...) */
#define CT_DEVICE_FUNCS(X)                 \
    X(vkDestroyDevice)                     \
    X(vkGetDeviceQueue)                    \
    X(vkDeviceWaitIdle)                    \
    X(vkCreateBuffer)                      \
    X(vkDestroyBuffer)                     \
    X(vkGetBufferMemoryRequirements)       \
    X(vkAllocateMemory)                    \
    X(vkFreeMemory)                        \
    X(vkBindBufferMemory)                  \
    X(vkMapMemory)                         \
    X(vkUnmapMemory)                       \
    X(vkFlushMappedMemoryRanges)           \
    X(vkInvalidateMappedMemoryRanges)      \
    X(vkGetBufferDeviceAddress)            \
    X(vkCreateShaderModule)                \
    X(vkDestroyShaderModule)               \
    X(vkCreatePipelineLayout)              \
    X(vkDestroyPipelineLayout)             \
    X(vkCreateComputePipelines)            \
    X(vkDestroyPipeline)                   \
    X(vkCreatePipelineCache)               \
    X(vkDestroyPipelineCache)              \
    X(vkGetPipelineCacheData)              \
    X(vkCreateCommandPool)                 \
    X(vkDestroyCommandPool)                \
    X(vkAllocateCommandBuffers)            \
    X(vkBeginCommandBuffer)                \
    X(vkEndCommandBuffer)                  \
    X(vkCmdBindPipeline)                   \
    X(vkCmdPushConstants)                  \
    X(vkCmdDispatch)                       \
    X(vkCmdCopyBuffer)                     \
    X(vkCmdFillBuffer)                     \
    X(vkCmdPipelineBarrier)                \
    X(vkCmdResetQueryPool)                 \
    X(vkCmdWriteTimestamp)                 \
    X(vkCreateQueryPool)                   \
    X(vkDestroyQueryPool)                  \
    X(vkGetQueryPoolResults)               \
    X(vkCreateSemaphore)                   \
    X(vkDestroySemaphore)                  \
    X(vkGetSemaphoreCounterValue)          \
    X(vkWaitSemaphores)                    \
    X(vkSignalSemaphore)                   \
    X(vkQueueSubmit)

#define CT_DECLARE_PFN(name) PFN_##name name;

typedef struct {
    CT_GLOBAL_FUNCS(CT_DECLARE_PFN)
} CtGlobalFns;

typedef struct {
    CT_INSTANCE_FUNCS(CT_DECLARE_PFN)
    CT_INSTANCE_OPT_FUNCS(CT_DECLARE_PFN)
} CtInstanceFns;

typedef struct {
    CT_DEVICE_FUNCS(CT_DECLARE_PFN)
} CtDeviceFns;

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

enum { CT_SLOT_FREE = 0, CT_SLOT_OPEN = 1, CT_SLOT_SUBMITTED = 2 };

/* One batch: a command buffer holding the commands of one or more submit() calls, whose
 * timeline values are first..value; it signals `value`. state moves FREE -> OPEN (being
 * appended to, the pending batch) -> SUBMITTED under state_lock, and back to FREE when retired
 * (GIL held). keep / timed are touched only with the GIL held. */
typedef struct {
    VkCommandBuffer cb;
    int state;                  /* CT_SLOT_*; read without the lock with __atomic loads */
    uint64_t first, value;
    int ncmds;
    VkDeviceSize nbytes;
    VkPipeline bound;           /* pipeline bound at the end of the recording so far */
    PyObject **keep;            /* strong references released when the batch retires */
    Py_ssize_t nkeep, keep_cap;
    struct CtTimed { uint64_t value; uint32_t pair; } *timed;
    int ntimed, timed_cap;
} CtSlot;

/* CT_KIND_EXPORT: device memory CUDA can import (external.c); only with get_memory_fd */
enum { CT_KIND_DEVICE = 0, CT_KIND_UPLOAD = 1, CT_KIND_DOWNLOAD = 2, CT_KIND_EXPORT = 3, CT_NKINDS = 4 };
enum { CT_UNINIT = 0, CT_ALIVE = 1, CT_CLOSING = 2, CT_DESTROYED = 3 };

typedef struct CtPipeline CtPipeline;

/* Submission policy (benchmarking knobs, not a user API; native/README.md lists them), handed
 * in by cthreads/config.py at device creation (knobs.c). Times in nanoseconds. All uint64_t:
 * knobs.c sets and shows them through one table. */
typedef struct {
    uint64_t coalesce;          /* CTHREADS_COALESCE (1): 0 = every submit goes out at once */
    uint64_t batch_max;         /* CTHREADS_BATCH_MAX (256): commands per batch */
    uint64_t stream_ns;         /* CTHREADS_STREAM_US (100): submits this close form a stream */
    uint64_t spin_ns;           /* CTHREADS_SPIN_US (30): a host wait polls this long */
    uint64_t poll_ns;           /* CTHREADS_POLL_NS (500): pause between a host's polls */
    uint64_t bg_spin_ns;        /* CTHREADS_BG_SPIN_US (20): the thread polls this long */
    uint64_t bg_poll_ns;        /* CTHREADS_BG_POLL_NS (1000): pause between its polls */
    uint64_t bg_hot_ns;         /* CTHREADS_BG_HOT_US (200): watches for work after a submit */
    uint64_t bg_delay_ns;       /* CTHREADS_BG_DELAY_US (20): a batch's minimum age at submit */
    uint64_t lock_spin_ns;      /* CTHREADS_LOCK_SPIN_US (20): spin on a held lock first */
    uint64_t lane_queues;       /* CTHREADS_LANE_QUEUES (CT_LANES): queues the lanes may use */
    uint64_t inflight;          /* CTHREADS_INFLIGHT (1): batches the thread keeps on the queue;
                                   2 overlaps a submit's cost with the batch before it */
    uint64_t spin_yield;        /* CTHREADS_SPIN_YIELD (1 on CPU devices, else 0): spin loops
                                   sched_yield instead of pausing (the "device" needs the CPU) */
} CtKnobs;

/* Event counters (Device.stats()["counters"]): what the submission path costs in system calls.
 * Fields marked (S) change under state_lock only; the others with relaxed atomic adds. */
typedef struct {
    uint64_t host_polls;        /* vkGetSemaphoreCounterValue by Python-side calls */
    uint64_t bg_polls;          /* ... by the background thread */
    uint64_t host_blocks;       /* vkWaitSemaphores by host waits */
    uint64_t bg_blocks;         /* ... by the background thread */
    uint64_t wakes;             /* condition-variable signals to the sleeping thread */
    uint64_t bg_sleeps;         /* times the thread went to sleep */
    uint64_t lock_blocks;       /* lock acquisitions that blocked after spinning (futex) */
    uint64_t clock_reads;       /* clock reads on the submit path (S) */
    uint64_t appends;           /* submits appended to a pending batch (S) */
    uint64_t deferred;          /* submits that opened a pending batch (S) */
    uint64_t direct;            /* submits that went out at once on an idle queue (S) */
    uint64_t full;              /* batches submitted by the caller for reaching the cap (S) */
    uint64_t flushes;           /* pending batches submitted by a host wait/poll */
    uint64_t bg_submits;        /* pending batches submitted by the background thread */
    uint64_t lane_submits;      /* submits on lanes 1.. (each: its lane, then a join on 0) (S) */
    uint64_t lane_waits;        /* of those, submits that waited for other work on the GPU (S) */
} CtCounters;

typedef struct {
    PyObject_HEAD
    CtState *st;
    CtInstance *inst;           /* strong ref */
    int state;
    int lost;
    int active;                 /* GIL-released operations in progress (ct_nogil_enter) */
    int abandoned;              /* _abandon(): left to the process's exit, never destroyed */
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    /* lanes (lane.c): lane 0 is `queue` + `timeline` above; lanes 1..CT_LANES-1 have their own
       queue where the family has several (else they share queue 0 under queue_lock) and their
       own timeline semaphore, signalled lane_value[k] by the lane's k-th submission */
    uint32_t nqueues;             /* distinct VkQueues in lane_queue (1 on lavapipe) */
    VkQueue lane_queue[CT_LANES];
    VkSemaphore lane_sem[CT_LANES];
    uint64_t lane_value[CT_LANES]; /* last value signalled on lane_sem (queue_lock) */
    VkCommandBuffer join_cb;      /* one barrier, recorded once (simultaneous use): a join */
    CtDeviceFns fn;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    VkDeviceSize max_alloc;
    int kind_type[CT_NKINDS];   /* memory type index per usage kind */
    uint32_t timestamp_bits;
    /* external memory (external.c): NULL when VK_KHR_external_memory_fd is not enabled */
    PFN_vkGetMemoryFdKHR get_memory_fd;
    uint8_t device_uuid[VK_UUID_SIZE];
    /* memory */
    CtAlloc *all;
    CtAlloc *pools[VK_MAX_MEMORY_TYPES][CT_NCLASS];
    CtAlloc *deferred;          /* unpooled allocations waiting for their last use */
    VkDeviceSize pooled_bytes, pool_cap;
    /* pipelines */
    VkPipelineCache cache;
    CtPipeline *pipelines;      /* live pipelines, destroyed with the device */
    /* submission (batch.c). Lock order: state_lock, then queue_lock. Neither holder ever
       waits for the GIL, runs Python code or allocates Python objects. */
    pthread_mutex_t queue_lock; /* vkQueueSubmit / vkDeviceWaitIdle */
    pthread_mutex_t state_lock; /* pending, submitted, next_value, slot OPEN/SUBMITTED, recording */
    pthread_mutex_t bg_lock;    /* guards only the sleep of the background submitter */
    pthread_cond_t bg_cond;     /* wakes it (signalled only while bg_sleeping) */
    pthread_t bg_thread;
    int bg_started, bg_stop;
    int bg_sleeping;            /* (atomic) the thread is, or is about to be, in bg_cond */
    uint64_t bg_wake_seq;       /* wake-ups sent (bg_lock) */
    int locks_ready;
    VkSemaphore timeline;
    VkCommandPool cmd_pool;
    VkQueryPool query_pool;
    CtSlot ring[CT_RING];
    int ring_next;              /* where the search for a free slot starts */
    int pending;                /* slot index of the open batch, -1 when none */
    uint64_t next_value;        /* last assigned timeline value */
    uint64_t submitted;         /* highest value handed to the queue */
    uint64_t submitted_prev;    /* (atomic) `submitted` before the latest batch went out */
    uint64_t completed;         /* cached semaphore counter (GIL) */
    uint64_t nbatches;          /* vkQueueSubmit calls made (written under queue_lock) */
    uint64_t queued;            /* (atomic) highest value whose vkQueueSubmit returned */
    uint64_t bg_completed;      /* (atomic) counter value the background thread last saw */
    uint64_t bg_submit_ns;      /* (atomic) when the background thread last submitted */
    uint64_t last_open_ns;      /* (atomic) when a submit last opened a batch (state_lock) */
    CtKnobs knobs;
    CtCounters cnt;
    /* failures of batch submissions; err_lock guards them (held for a few loads/stores) */
    pthread_mutex_t err_lock;
    int nfail;                  /* != 0: read the fields below under err_lock */
    VkResult fail_err, fail_unreported;
    uint64_t fail_lo, fail_hi;  /* values of the last failed batch */
    int bg_lost;                /* device loss seen by the background thread */
    VkResult inject;            /* test hook: the next queue submission "returns" this */
    /* timestamps (GIL) */
    uint32_t qnext;
    uint8_t qbusy[CT_QPAIRS];
    uint64_t qvalue[CT_QPAIRS];
    struct { uint64_t value; double ms; } timings[CT_TIMINGS];
} CtDevice;

struct CtPipeline {
    PyObject_HEAD
    CtDevice *dev;              /* strong ref */
    VkPipeline pipeline;
    VkPipelineLayout layout;
    uint32_t push_size;
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

/* features of a physical device (chained structs valid only for api >= 1.2) */
typedef struct {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af;
    int has_atomic_float_ext;
    CtCoopMatFeatures cm;       /* valid when has_coopmat_ext */
    int has_coopmat_ext;        /* VK_KHR_cooperative_matrix (tile kernels) */
    uint32_t api;
} CtFeatures;

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

/* ---- cross-file functions -------------------------------------------------------------- */

/* loader.c */
int ct_loader_load(CtState *st, const char *libname);
int ct_loader_ready(void);
extern CtGlobalFns ct_gfn;
extern PFN_vkGetInstanceProcAddr ct_get_instance_proc;

/* errors.c */
const char *ct_vk_result_name(VkResult r);
PyObject *ct_raise_vk(CtState *st, VkResult r, const char *fmt, ...);
PyObject *ct_raise(PyObject *cls, const char *fmt, ...);
int ct_dict_or_none(CtState *st, PyObject *obj, const char *what);

/* instance.c */
extern PyType_Spec ct_instance_spec;
void ct_validation_push(const char *msg);
PyObject *ct_validation_drain(int clear);

/* physdev.c */
void ct_query_features(CtInstance *inst, VkPhysicalDevice pd, CtFeatures *f);
PyObject *ct_describe_physical_device(CtInstance *inst, VkPhysicalDevice pd, int index);
int ct_pick_queue_family(CtInstance *inst, VkPhysicalDevice pd, uint32_t *family,
                         uint32_t *timestamp_bits);

int ct_has_device_ext(CtInstance *inst, VkPhysicalDevice pd, const char *name);

/* external.c */
int ct_external_wanted(CtInstance *inst, VkPhysicalDevice pd);
void ct_external_init(CtDevice *dev, int enabled);
const void *ct_external_buffer_info(VkExternalMemoryBufferCreateInfo *ext);
const void *ct_external_memory_info(VkExportMemoryAllocateInfo *exp,
                                    VkMemoryDedicatedAllocateInfo *ded, VkBuffer buffer,
                                    const void *next);
PyObject *ct_device_external(CtDevice *dev, PyObject *unused);
PyObject *ct_buffer_export_fd(CtBuffer *self, PyObject *unused);
PyObject *ct_buffer_get_memory_size(CtBuffer *self, void *c);
PyObject *ct_dlpack_capsule(PyObject *module, PyObject *args);

/* device.c */
extern PyType_Spec ct_device_spec;
int ct_device_check(CtDevice *dev);             /* -1 + GpuUseAfterDestroy when not usable */

/* memory.c */
extern const VkBufferUsageFlags ct_usage; /* every allocation's buffer usage */
CtAlloc *ct_alloc_get(CtDevice *dev, VkDeviceSize nbytes, int kind);
void ct_alloc_put(CtDevice *dev, CtAlloc *a);
void ct_alloc_free(CtDevice *dev, CtAlloc *a);
void ct_memory_destroy_all(CtDevice *dev);
int ct_memory_choose_types(CtDevice *dev);
int ct_host_visible_device_local(const VkPhysicalDeviceMemoryProperties *mp);
int ct_sync_range(CtDevice *dev, CtAlloc *a, VkDeviceSize off, VkDeviceSize n, int flush);

/* buffer.c */
extern PyType_Spec ct_buffer_spec;
PyObject *ct_buffer_new(CtDevice *dev, Py_ssize_t nbytes, int kind);
CtAlloc *ct_buffer_usable(CtState *st, PyObject *obj, CtDevice *dev, const char *what);

/* pack.c */
PyObject *ct_buffer_pack_list(CtBuffer *self, PyObject *args, PyObject *kwds);
PyObject *ct_buffer_unpack_into_list(CtBuffer *self, PyObject *args, PyObject *kwds);

/* pipeline.c */
extern PyType_Spec ct_pipeline_spec;
PyObject *ct_device_pipeline(CtDevice *dev, PyObject *args, PyObject *kwds);
PyObject *ct_device_pipeline_cache_data(CtDevice *dev, PyObject *unused);
void ct_pipelines_destroy_all(CtDevice *dev);

/* record.c */
typedef struct {
    int kind; /* 0 dispatch, 1 copy, 2 fill */
    CtPipeline *pipe;
    uint32_t groups[3];
    CtAlloc *src, *dst;
    VkDeviceSize nbytes, src_off, dst_off;
    uint32_t fill;
    uint8_t push[CT_MAX_PUSH];
} CtOp;
int ct_parse_op(CtDevice *dev, PyObject *cmd, Py_ssize_t idx, CtOp *op);
void ct_record_ops(CtDevice *dev, VkCommandBuffer cb, const CtOp *ops, Py_ssize_t n,
                   VkPipeline *bound);
void ct_record_barrier(CtDevice *dev, VkCommandBuffer cb, int to_host);

/* ring.c */
int ct_ring_create(CtDevice *dev);
void ct_ring_destroy(CtDevice *dev);

/* timeline.c: what has completed (dev->completed) and what that frees */
#define CT_SYNC_READ 1       /* read the counter when dev->completed is below `want` */
#define CT_SYNC_QUIET 2      /* a failed read sets no exception */
#define CT_SYNC_RETIRE 4     /* retire completed batches and deferred frees */
#define CT_SYNC_RETIRE_NEW 8 /* ... only when dev->completed advanced */
#define CT_SYNC_TRIM 16      /* also free idle pooled allocations whose last use passed */
int ct_timeline_sync(CtDevice *dev, uint64_t want, int flags);
int ct_fold_completed(CtDevice *dev);
void ct_timeline_retire(CtDevice *dev);
void ct_timeline_free_after_use(CtDevice *dev, CtAlloc *a);
void ct_note_bg_completed(CtDevice *dev, uint64_t v);

/* stats.c */
PyObject *ct_device_stats(CtDevice *dev, PyObject *unused);

/* knobs.c */
int ct_knobs_apply(CtState *st, CtKnobs *k, PyObject *given, int cpu_device);
PyObject *ct_knobs_dict(const CtKnobs *k);

/* spin.c */
uint64_t ct_now_ns(void);
void ct_lock(CtDevice *dev, pthread_mutex_t *m);
VkResult ct_poll_counter(CtDevice *dev, uint64_t *value, int from_bg);
extern uint64_t ct_pauses_per_us;
void ct_spin_step(CtDevice *dev, uint64_t ns);
void ct_relax_ns(uint64_t ns);
void ct_calibrate_pause(void);
void ct_pause_without_gil(void);

/* batch.c */
VkResult ct_close_and_submit_unlock(CtDevice *dev, int i, int from_bg);
int ct_flush_pending(CtDevice *dev, uint64_t upto);
int ct_flush_pending_ex(CtDevice *dev, uint64_t upto, int closing);
int ct_nogil_enter(CtDevice *dev);
int ct_check_failed(CtDevice *dev, uint64_t value, int for_submit);
void ct_note_failure(CtDevice *dev, uint64_t lo, uint64_t hi, VkResult r, int from_bg);
int ct_reserve_slot(CtSlot *s, Py_ssize_t nkeep, int timed);
void ct_slot_append(CtDevice *dev, CtSlot *s, uint64_t value, uint32_t pair, const CtOp *ops,
                    Py_ssize_t n, PyObject *const *items, Py_ssize_t nitems, PyObject *kept,
                    int timed);
int ct_find_free_slot(CtDevice *dev);
uint64_t ct_oldest_submitted(CtDevice *dev);
uint64_t ct_enqueue(CtDevice *dev, const CtOp *ops, Py_ssize_t n, PyObject *const *items,
                    Py_ssize_t nitems, PyObject *kept, int timed);

/* lane.c */
int ct_lanes_create(CtDevice *dev);
void ct_lanes_destroy(CtDevice *dev);
uint64_t ct_enqueue_lane(CtDevice *dev, int lane, uint64_t after, const CtOp *ops, Py_ssize_t n,
                         PyObject *const *items, Py_ssize_t nitems, PyObject *kept, int timed);

/* submitter.c */
int ct_bg_start(CtDevice *dev);
void ct_bg_stop(CtDevice *dev);

/* wait.c; ct_wait_value's own results (not VkResults a driver returns) */
#define CT_WAIT_REFUSED ((VkResult)-0x70000001)     /* teardown began: nothing was waited for */
#define CT_WAIT_INTERRUPTED ((VkResult)-0x70000002) /* a signal handler raised (exception set) */
#define CT_WAIT_SLICE_NS 50000000ull /* blocking host waits take the GIL back this often */
VkResult ct_wait_value(CtDevice *dev, uint64_t value, uint64_t timeout_ns, uint64_t *seen);
int ct_wait_done(CtDevice *dev, uint64_t value, uint64_t timeout_ns);

/* launch.c */
extern PyType_Spec ct_launcher_spec;
extern PyType_Spec ct_bound_spec;

/* submit.c */
PyObject *ct_device_submit(CtDevice *dev, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);
PyObject *ct_device_wait(CtDevice *dev, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames);
PyObject *ct_device_completed(CtDevice *dev, PyObject *unused);
PyObject *ct_device_elapsed_ms(CtDevice *dev, PyObject *arg);
PyObject *ct_device_wait_idle(CtDevice *dev, PyObject *unused);

#endif
