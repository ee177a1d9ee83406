/* cthreads._native — knobs: the submission policy's tuning values (benchmarking, not a user API).
 *
 * Python API:
 *   Device(instance, index, pipeline_cache=None, knobs=None)   knobs: {name: int} (device.c
 *       parses the arguments; this file applies them), the values cthreads/config.py read from
 *       the CTHREADS_* variables (config.native_knobs()); a knob left out keeps its default
 *   Device.stats()["knobs"] -> dict                              every knob's value in use
 * No C file reads the environment: config.py is the only reader, and validates (naming the
 * variable); this side only checks names, types and ranges (GpuInvalidArgument naming the knob).
 */
#include "cthreads.h"

#include <stddef.h>

/* name (as in stats()["knobs"] and config.native_knobs()), field, default, range */
typedef struct {
    const char *name;
    size_t offset;
    uint64_t dflt, lo, hi;
} CtKnobDef;

#define CT_KNOB(field, dflt, lo, hi) {#field, offsetof(CtKnobs, field), dflt, lo, hi}
#define CT_DEVICE_DEFAULT UINT64_MAX /* spin_yield: decided by the device type */
static const CtKnobDef knob_defs[] = {
    CT_KNOB(coalesce, 1, 0, 1),
    CT_KNOB(batch_max, 256, 1, INT32_MAX),
    CT_KNOB(stream_ns, 100000, 0, UINT64_MAX),
    CT_KNOB(spin_ns, 30000, 0, UINT64_MAX),
    CT_KNOB(poll_ns, 500, 0, UINT64_MAX),
    CT_KNOB(bg_spin_ns, 20000, 0, UINT64_MAX),
    CT_KNOB(bg_poll_ns, 1000, 0, UINT64_MAX),
    CT_KNOB(bg_hot_ns, 200000, 0, UINT64_MAX),
    CT_KNOB(bg_delay_ns, 20000, 0, UINT64_MAX),
    CT_KNOB(lock_spin_ns, 20000, 0, UINT64_MAX),
    CT_KNOB(inflight, 1, 1, 2),
    CT_KNOB(spin_yield, CT_DEVICE_DEFAULT, 0, 1),
    CT_KNOB(lane_queues, 1, 1, CT_LANES), /* 1: on the H200 4 queues lost the device (README) */
    /* 1 (auto: the copy lane where a transfer-only family exists): its tests passed on the
       H200 with validation on, silent (2026-12-02 16:25, after the per-slot layer fences) */
    CT_KNOB(copy_queue, 1, 0, 2),
    /* 0: pipelines are built through no VkPipelineCache, so that the driver's own disk cache
       serves them (CTHREADS_PIPELINE_CACHE=driver; cthreads/runtime/pipeline_cache.py) */
    CT_KNOB(pipeline_cache, 1, 0, 1),
};
#define CT_NKNOBS ((int)(sizeof knob_defs / sizeof knob_defs[0]))

static uint64_t *
knob_field(CtKnobs *k, int i)
{
    return (uint64_t *)((char *)k + knob_defs[i].offset);
}

/* Set every knob to its default, then to the values of `given` (a dict, or NULL / None).
   cpu_device: the default of spin_yield (CPU devices need the cores their spinners would take).
   -1 with an exception on an unknown name, a non-int value or one out of range. */
int
ct_knobs_apply(CtState *st, CtKnobs *k, PyObject *given, int cpu_device)
{
    for (int i = 0; i < CT_NKNOBS; i++)
        *knob_field(k, i) = knob_defs[i].dflt;
    k->spin_yield = cpu_device ? 1 : 0;
    int rc = ct_dict_or_none(st, given, "knobs must be a dict of {name: int}");
    if (rc <= 0)
        return rc;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(given, &pos, &key, &value)) {
        int i = 0;
        while (i < CT_NKNOBS && !(PyUnicode_Check(key) &&
                                  PyUnicode_CompareWithASCIIString(key, knob_defs[i].name) == 0))
            i++;
        if (i == CT_NKNOBS) {
            ct_raise(st->GpuInvalidArgument, "unknown knob %R: the knobs are the keys of "
                     "Device.stats()['knobs'] (cthreads/config.py native_knobs())", key);
            return -1;
        }
        if (!PyLong_Check(value)) {
            ct_raise(st->GpuArgumentTypeError, "knob '%s' must be an int, got %s",
                     knob_defs[i].name, Py_TYPE(value)->tp_name);
            return -1;
        }
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (PyErr_Occurred() || v < knob_defs[i].lo || v > knob_defs[i].hi) {
            PyErr_Clear();
            ct_raise(st->GpuInvalidArgument, "knob '%s' must be an int from %llu to %llu, got %R",
                     knob_defs[i].name, (unsigned long long)knob_defs[i].lo,
                     (unsigned long long)knob_defs[i].hi, value);
            return -1;
        }
        *knob_field(k, i) = v;
    }
    return 0;
}

/* the knobs in use, as Device.stats()["knobs"] */
PyObject *
ct_knobs_dict(const CtKnobs *k)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < CT_NKNOBS; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(*knob_field((CtKnobs *)k, i));
        if (v == NULL || PyDict_SetItemString(d, knob_defs[i].name, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}
