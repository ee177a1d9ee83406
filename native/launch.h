/* cthreads._native — the launcher's shared definitions: the encoded launch plan (the layout
 * cthreads/launch/plan.py packs, exported by FastLauncher.codes()) and the launcher object.
 * launch_plan.c builds a launcher from a plan; launch.c runs one launch, launch_size.c sizes
 * its dispatch. */
#ifndef CT_LAUNCH_H
#define CT_LAUNCH_H
#include "cthreads.h"

#include <string.h>

#define CT_LAUNCH_MAX_PARAMS 64
#define CT_LAUNCH_MAX_FIELDS (8 + 3 * CT_LAUNCH_MAX_PARAMS)
#define CT_LAUNCH_MAX_SELF 4

enum { P_LIST, P_INT, P_U64, P_BOOL, P_F32, P_F64, P_F16, P_COUNT };
enum { R_TOTAL, R_BASE_GROUP, R_GRID_X, R_TOTAL_Y, R_TOTAL_Z, R_ADDR, R_LEN, R_SCALAR, R_COUNT };

/* The encoded plan: packed by plan.py with the formats below, no padding in either. */
typedef struct {
    int32_t kind, writes;       /* writes: a list the kernel stores into */
    int64_t lo, hi;             /* P_INT range */
    int64_t itemsize;           /* P_LIST: bytes per element */
    char packs[8];              /* P_LIST: accepted pack codes, NUL-padded */
} LParam;
#define PARAM_FORMAT "=iiqqq8s"
typedef struct {
    uint32_t offset;
    int32_t role, param;        /* param: -1 for the sizing roles */
    char fmt, pad[3];           /* fmt: a struct code of 'IiQqfd' */
} LField;
#define FIELD_FORMAT "=Iiic3x"
typedef struct {
    int64_t n_index;            /* the `n` parameter, or -1: the longest list */
    int64_t wg[3];              /* logical workgroup shape */
    int64_t per;                /* grid-stride kernels: invocations per physical group */
    int64_t max_groups[3], observes, push_size, hz_read_only, hz_overlaps;
    int64_t spread_below;       /* grid-stride kernels: below this size, one invocation per */
    int64_t width;              /* element, in groups of `width` (sizing.grid_stride_groups) */
} LSizing;
#define SIZING_FORMAT "=14q"
/* the formats above describe these layouts exactly (struct.calcsize gives the same sizes) */
_Static_assert(sizeof(LParam) == 40 && sizeof(LField) == 16 && sizeof(LSizing) == 112,
               "launch.h: a plan layout no longer matches its struct format");

enum { W_32, W_64, W_F32 }; /* how a field's fmt stores its value (launch.c put) */
enum { J_DEVICE, J_VALUE, J_NAME, J_WRITTEN, J_COUNT }; /* GpuJob.QUEUED_FIELDS, in order */
/* the record protocol's fields (residency/arena.py RECORD_FIELDS, in that order): slots of
   each record type, read and written at offsets found once (0: a self-record type's `obj`,
   which is the record itself) */
enum { F_OBJ, F_GENERATION, F_PACK, F_COUNT, F_BUFFER, F_LAST_USE, F_LAST_WRITE, F_HAZARD,
       F_FIELDS };
enum { O_DEV, O_PIPE, O_RECORDS, O_CHANGES, O_RECORD_TYPE, O_JOB_TYPE, O_JOB_FIELDS, O_DEVICE_OBJ, O_NAME,
       O_SELF, O_COUNT = O_SELF + CT_LAUNCH_MAX_SELF };

typedef struct {
    PyObject_HEAD
    PyObject *ref[O_COUNT];     /* strong references (NULL-padded self-record types) */
    CtDevice *dev;              /* = ref[O_DEV] */
    int nself, nparams, nfields, nlists, alias_check;
    long long generation;
    Py_ssize_t joff[J_COUNT];   /* byte offsets of the job type's QUEUED_FIELDS slots */
    Py_ssize_t roff[1 + CT_LAUNCH_MAX_SELF][F_FIELDS]; /* of each record type's fields */
    PyObject *idkey[CT_LAUNCH_MAX_PARAMS]; /* per list parameter: id() of the last list... */
    void *idptr[CT_LAUNCH_MAX_PARAMS];     /* ...and its address (launch.c resident_record) */
    PyObject *found[CT_LAUNCH_MAX_PARAMS]; /* ...and its registry record (borrowed: the... */
    PyObject *seen;                        /* ...registry holds it while this is unchanged) */
    uint64_t packset[CT_LAUNCH_MAX_PARAMS][2]; /* per list parameter: its packs as a bit set */
    uint8_t width[CT_LAUNCH_MAX_FIELDS];   /* per field: W_32, W_64 or W_F32 (its fmt) */
    LSizing sz;
    LParam params[CT_LAUNCH_MAX_PARAMS];
    LField fields[CT_LAUNCH_MAX_FIELDS];
} CtLauncher;

PyObject *ct_launcher_launch(CtLauncher *self, PyObject *const *argv, Py_ssize_t argc);
/* launch_size.c: the one dispatch of a launch of `size`, and a launch's `grid` as the
   logical size (x, y, z); 0 where the launch takes the general path */
int ct_plan_dispatch(const CtLauncher *self, const long long size[3], uint64_t sz[4],
                     uint32_t groups[3]);
int ct_parse_grid(PyObject *grid, long long size[3]);
#endif
