/* cthreads._native — the Device object: its ring slots (batches), policy knobs, event counters
 * and the CtDevice struct with its locks, queues, lanes, memory pool and timeline state.
 * Included by cthreads.h (after the module state, CtInstance, CtAlloc and the CT_* sizes).
 */
#ifndef CTHREADS_DEVICE_H
#define CTHREADS_DEVICE_H

enum { CT_SLOT_FREE = 0, CT_SLOT_OPEN = 1, CT_SLOT_SUBMITTED = 2 };

/* The phases of opening a device, in order (Device_init; stats.c names them in
   stats()["open_ms"]): each is the time from the previous mark to its own (ct_open_mark). */
typedef enum {
    CT_OPEN_PHYSICAL,        /* the physical device: properties, features, queue families */
    CT_OPEN_CREATE_DEVICE,   /* vkCreateDevice */
    CT_OPEN_FUNCTIONS,       /* vkGetDeviceProcAddr for every function, the queues */
    CT_OPEN_MEMORY,          /* memory type choices (probe buffers) */
    CT_OPEN_TIMELINE,        /* the device timeline semaphore */
    CT_OPEN_COMMAND_BUFFERS, /* the ring's command pool and its CT_RING command buffers */
    CT_OPEN_JOIN,            /* the join command buffer, allocated and recorded */
    CT_OPEN_LAYER_FENCES,    /* the slots' fences (only under validation with >1 queue) */
    CT_OPEN_PIPELINE_CACHE,  /* vkCreatePipelineCache from the file's data */
    CT_OPEN_THREADS,         /* the submission thread (and the pause calibration) */
    CT_OPEN_NPHASES
} CtOpenPhase;

/* One batch: a command buffer holding the commands of one or more submit() calls, whose
 * timeline values are first..value; it signals `value`. state moves FREE -> OPEN (being
 * appended to, the pending batch) -> SUBMITTED under state_lock, and back to FREE when retired
 * (GIL held). keep / timed are touched only with the GIL held. */
/* What a command buffer's recording so far left in place (record.c): the bound pipeline and
   the push constants last pushed, which later dispatches do not record again */
typedef struct {
    VkPipeline pipeline;
    VkPipelineLayout layout;    /* of the last push; VK_NULL_HANDLE: none yet */
    uint32_t push_size;
    uint8_t push[CT_MAX_PUSH];
} CtRecState;
typedef struct {
    VkCommandBuffer cb;
    VkCommandBuffer copy_cb;    /* from the copy lane's pool (lane.c), when there is one */
    int state;                  /* CT_SLOT_*; read without the lock with __atomic loads */
    uint64_t first, value;
    int ncmds;
    VkDeviceSize nbytes;
    CtRecState rec;             /* what the recording so far left bound (record.c) */
    PyObject **keep;            /* strong references released when the batch retires */
    Py_ssize_t nkeep, keep_cap;
    struct CtTimed { uint64_t value; uint32_t pair; } *timed;
    int ntimed, timed_cap;
    VkFence fence;              /* the validation layer's view of completion (timeline.c) */
    int fence_sent;             /* a submission of the batch carries `fence` (queue_lock) */
} CtSlot;


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
    uint64_t lane_queues;       /* CTHREADS_LANE_QUEUES (1): queues the lanes may use */
    uint64_t copy_queue;        /* CTHREADS_COPY_QUEUE (1, auto): 0 no copy lane; 1 one on a
                                   transfer-only family if any; 2 on the compute family (tests) */
    uint64_t pipeline_cache;    /* (1; CTHREADS_PIPELINE_CACHE, via pipeline_cache.py): 0 = builds
                                   go through no VkPipelineCache (the driver's own disk cache) */
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
    uint64_t copy_submits;      /* of those, submits on the copy queue (S) */
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
    /* the copy lane (queues.c, lane.c): stream copies on a queue of copy_family (UINT32_MAX:
       none, copy_queue NULL), signalling copy_sem = copy_value (queue_lock) */
    uint32_t copy_family;
    VkQueue copy_queue;
    VkCommandPool copy_pool;      /* copy_family's pool: the slots' copy_cb */
    VkSemaphore copy_sem;
    uint64_t copy_value;
    uint64_t lane_last[CT_LANES][2]; /* lane k's newest value on its compute queue [0] and on
                                        the copy queue [1] (state_lock): stream order */
    int layer_fences;             /* slots' fences in use (timeline.c: validation, >1 queue) */
    uint64_t layer_fence_waits;   /* completions told to the layer through them (GIL) */
    uint32_t share_families[2];   /* the families buffers are used from (queues.c) */
    uint32_t nshare;
    CtDeviceFns fn;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    VkDeviceSize max_alloc;
    int kind_type[CT_NKINDS];   /* memory type index per usage kind */
    uint32_t timestamp_bits;
    /* external memory (external.c): NULL when VK_KHR_external_memory_fd is not enabled */
    PFN_vkGetMemoryFdKHR get_memory_fd;
    /* semaphores CUDA imports (external.c): NULL without VK_KHR_external_semaphore_fd; made
       at the first CUDA exchange, never at device open; ext_alias[k] is ext_sem[k] imported
       back (waits on what CUDA signals go there), destroyed with the device */
    PFN_vkGetSemaphoreFdKHR get_semaphore_fd;
    PFN_vkImportSemaphoreFdKHR import_semaphore_fd;
    VkSemaphore ext_sem[CT_EXT_SEMS], ext_alias[CT_EXT_SEMS];
    int n_ext_sem;
    /* memory */
    CtAlloc *all;
    CtAlloc *pools[VK_MAX_MEMORY_TYPES][CT_NCLASS];
    CtAlloc *deferred;          /* unpooled allocations waiting for their last use */
    VkDeviceSize pooled_bytes, pool_cap;
    /* pipelines */
    VkPipelineCache cache;
    CtPipeline *pipelines;      /* live pipelines, destroyed with the device */
    int pipeline_stats;         /* VK_KHR_pipeline_executable_properties enabled (pipeline.c) */
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
    /* the cost of opening it (stats.c: stats()["open_ms"]), ns per phase (CtOpenPhase) */
    uint64_t open_t0, open_t, open_end, open_ns[CT_OPEN_NPHASES];
} CtDevice;

#endif
