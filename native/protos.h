/* cthreads._native — the functions the .c files provide to each other, by file.
 * Included by cthreads.h (after every type).
 */
#ifndef CTHREADS_PROTOS_H
#define CTHREADS_PROTOS_H

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
void ct_device_exts_clear(CtInstance *inst);

/* external.c */
int ct_external_wanted(CtInstance *inst, VkPhysicalDevice pd);
int ct_external_semaphore_wanted(CtInstance *inst, VkPhysicalDevice pd);
void ct_external_init(CtDevice *dev, int enabled, int semaphores);
void ct_external_destroy(CtDevice *dev);
PyObject *ct_device_export_semaphore(CtDevice *dev, PyObject *unused);
PyObject *ct_device_semaphore_submit(CtDevice *dev, PyObject *args, PyObject *kw);
PyObject *ct_device_semaphore_value(CtDevice *dev, PyObject *arg);
PyObject *ct_device_semaphore_wait(CtDevice *dev, PyObject *args);
void ct_format_uuid(const uint8_t *uuid, char out[2 * VK_UUID_SIZE + 5]);
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
void ct_device_child_free(PyObject *self, CtDevice **dev); /* a Buffer's, a Pipeline's dealloc */

/* teardown.c */
void ct_device_destroy(CtDevice *self);         /* every Vulkan object; safe when half made */
PyObject *ct_device_abandon(CtDevice *self, PyObject *unused);
PyObject *ct_device_forget(CtDevice *self, PyObject *unused);

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
PyObject *ct_device_pipeline_statistics(CtDevice *dev, PyObject *args, PyObject *kwds);
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
                   CtRecState *rec, int bar);
void ct_record_reset(CtRecState *rec);
#define CT_BAR_HOST 1 /* ct_record_barrier: to host reads */
#define CT_BAR_COPY 2 /* ... on a transfer-only queue: transfer stages only */
void ct_record_barrier(CtDevice *dev, VkCommandBuffer cb, int flags);

/* queues.c */
uint32_t ct_queues_plan(CtDevice *self, VkDeviceQueueCreateInfo *qci, const float *prio);
void ct_queues_fetch(CtDevice *self);
void ct_queues_share(const CtDevice *self, VkBufferCreateInfo *bci);

/* ring.c */
int ct_command_ring_create(CtDevice *dev, uint32_t family, VkCommandPool *pool,
                           VkCommandBuffer cbs[CT_RING], const char *what);
int ct_ring_create(CtDevice *dev);
int ct_ring_timed(CtDevice *dev, int timed);
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
int ct_layer_fences_create(CtDevice *dev);
void ct_layer_fences_destroy(CtDevice *dev);
VkFence ct_layer_fence(const CtDevice *dev, const CtSlot *s);
PyObject *ct_device_layer_fences(CtDevice *dev, PyObject *unused);
PyObject *ct_device_copy_lane_wait(CtDevice *dev, PyObject *arg);
PyObject *ct_host_wait_semaphore(CtDevice *dev, VkSemaphore sem, uint64_t value, PyObject *timeout,
                                  const char *what);

/* stats.c */
PyObject *ct_device_stats(CtDevice *dev, PyObject *unused);
void ct_open_mark(CtDevice *dev, CtOpenPhase phase);

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
void ct_slot_append(CtDevice *dev, CtSlot *s, uint64_t value, uint32_t pair, const CtOp *ops,
                    Py_ssize_t n, PyObject *const *items, Py_ssize_t nitems, PyObject *kept,
                    int timed, int copy);
int ct_submit_ready(CtDevice *dev, int timed);
enum { CT_CLAIM_FAILED = -1, CT_CLAIM_AGAIN = -2 };
int ct_claim_slot(CtDevice *dev, int i, Py_ssize_t nkeep, int timed);
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
extern PyType_Spec ct_bound_spec, ct_entry_spec;

/* submit.c */
PyObject *ct_device_submit(CtDevice *dev, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);
PyObject *ct_device_wait(CtDevice *dev, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames);
PyObject *ct_device_completed(CtDevice *dev, PyObject *unused);
PyObject *ct_device_elapsed_ms(CtDevice *dev, PyObject *arg);
PyObject *ct_device_wait_idle(CtDevice *dev, PyObject *unused);

#endif
