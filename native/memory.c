/* cthreads._native — memory: memory-type choice, allocations and the size-class pool.
 *
 * Python API: none directly (Device.buffer / Buffer.release / Device.trim use it).
 * Every allocation is one VkBuffer (storage | device address | transfer src/dst) bound to its
 * own VkDeviceMemory (allocated with the device-address flag), mapped once when host-visible.
 * 'export' allocations (external.c) add external-memory info and a dedicated allocation.
 * Sizes round up to quarter-power-of-two classes; a released allocation goes back to its
 * class list and is reused only once the timeline passed its last use. On out-of-memory the
 * pool is trimmed and the allocation retried once.
 */
#include "cthreads.h"

#include <string.h>

#define CT_MIN_CLASS_SHIFT 8 /* 256 bytes */

const VkBufferUsageFlags ct_usage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

/* size class of n bytes and its capacity; -1 when beyond the table */
static int
size_class(VkDeviceSize n, VkDeviceSize *capacity)
{
    if (n <= (1u << CT_MIN_CLASS_SHIFT)) {
        *capacity = 1u << CT_MIN_CLASS_SHIFT;
        return 0;
    }
    int p = 63 - __builtin_clzll(n);
    VkDeviceSize step = (VkDeviceSize)1 << (p - 2);
    VkDeviceSize cap = (n + step - 1) / step * step;
    int cls = (p - CT_MIN_CLASS_SHIFT) * 4 + (int)(cap / step) - 4;
    *capacity = cap;
    return cls < CT_NCLASS ? cls : -1;
}

static int
pick_type(CtDevice *dev, uint32_t bits, VkMemoryPropertyFlags need, const VkMemoryPropertyFlags *prefs,
          int nprefs)
{
    int best = -1, best_score = -1;
    for (uint32_t t = 0; t < dev->memprops.memoryTypeCount; t++) {
        VkMemoryPropertyFlags fl = dev->memprops.memoryTypes[t].propertyFlags;
        if (!(bits & (1u << t)) || (fl & need) != need)
            continue;
        int score = 0;
        for (int i = 0; i < nprefs; i++) /* earlier preferences weigh more */
            if ((prefs[i] & 0x80000000u) ? !(fl & (prefs[i] & 0x7fffffffu)) : ((fl & prefs[i]) == prefs[i]))
                score += 1 << (nprefs - i);
        if (score > best_score) {
            best = (int)t;
            best_score = score;
        }
    }
    return best;
}

#define NOT(flag) (0x80000000u | (flag))

int
ct_memory_choose_types(CtDevice *dev)
{
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 256,
                              .usage = ct_usage};
    ct_queues_share(dev, &bci);
    VkBuffer b;
    VkResult r = dev->fn.vkCreateBuffer(dev->device, &bci, NULL, &b);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkCreateBuffer (probe)");
        return -1;
    }
    VkMemoryRequirements req;
    dev->fn.vkGetBufferMemoryRequirements(dev->device, b, &req);
    dev->fn.vkDestroyBuffer(dev->device, b, NULL);
    const VkMemoryPropertyFlags HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    int hvdl = ct_host_visible_device_local(&dev->memprops);
    VkMemoryPropertyFlags dprefs[] = {DL, hvdl ? (HV | HC) : NOT(HV)};
    VkMemoryPropertyFlags uprefs[] = {HC, NOT(DL), NOT(CA)};
    VkMemoryPropertyFlags rprefs[] = {CA, HC, NOT(DL)};
    dev->kind_type[CT_KIND_DEVICE] = pick_type(dev, req.memoryTypeBits, 0, dprefs, 2);
    dev->kind_type[CT_KIND_UPLOAD] = pick_type(dev, req.memoryTypeBits, HV, uprefs, 3);
    dev->kind_type[CT_KIND_DOWNLOAD] = pick_type(dev, req.memoryTypeBits, HV, rprefs, 3);
    /* export buffers (external.c): the device buffers' preferences among the types an
       exportable buffer accepts; none fits: no export at all (never a failure) */
    dev->kind_type[CT_KIND_EXPORT] = dev->kind_type[CT_KIND_DEVICE];
    if (dev->get_memory_fd != NULL) {
        VkExternalMemoryBufferCreateInfo ext;
        bci.pNext = ct_external_buffer_info(&ext);
        int t = -1;
        if (dev->fn.vkCreateBuffer(dev->device, &bci, NULL, &b) == VK_SUCCESS) {
            VkMemoryRequirements xreq;
            dev->fn.vkGetBufferMemoryRequirements(dev->device, b, &xreq);
            dev->fn.vkDestroyBuffer(dev->device, b, NULL);
            t = pick_type(dev, xreq.memoryTypeBits, 0, dprefs, 2);
        }
        if (t < 0)
            dev->get_memory_fd = NULL;
        else
            dev->kind_type[CT_KIND_EXPORT] = t;
    }
    for (int k = 0; k < CT_NKINDS; k++)
        if (dev->kind_type[k] < 0) {
            ct_raise(dev->st->VulkanInitFailed,
                     "device '%s' has no suitable memory type for %s buffers",
                     dev->props.deviceName, k == 0 ? "device" : k == 1 ? "upload" : "download");
            return -1;
        }
    uint32_t heap = dev->memprops.memoryTypes[dev->kind_type[CT_KIND_DEVICE]].heapIndex;
    VkDeviceSize hs = dev->memprops.memoryHeaps[heap].size;
    dev->pool_cap = hs / 4 < ((VkDeviceSize)1 << 30) ? hs / 4 : ((VkDeviceSize)1 << 30);
    return 0;
}

void
ct_alloc_free(CtDevice *dev, CtAlloc *a)
{
    if (a->all_prev)
        a->all_prev->all_next = a->all_next;
    else
        dev->all = a->all_next;
    if (a->all_next)
        a->all_next->all_prev = a->all_prev;
    dev->fn.vkDestroyBuffer(dev->device, a->buffer, NULL);
    dev->fn.vkFreeMemory(dev->device, a->memory, NULL);
    PyMem_Free(a);
}

static VkResult
alloc_new(CtDevice *dev, VkDeviceSize capacity, uint32_t type, int exportable, CtAlloc **out)
{
    VkExternalMemoryBufferCreateInfo ext;
    VkExportMemoryAllocateInfo exp;
    VkMemoryDedicatedAllocateInfo ded;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = capacity,
                              .usage = ct_usage,
                              .pNext = exportable ? ct_external_buffer_info(&ext) : NULL};
    ct_queues_share(dev, &bci); /* (both families where there is a copy lane: queues.c) */
    VkBuffer b = VK_NULL_HANDLE;
    VkDeviceMemory m = VK_NULL_HANDLE;
    void *mapped = NULL;
    VkResult r = dev->fn.vkCreateBuffer(dev->device, &bci, NULL, &b);
    if (r != VK_SUCCESS)
        return r;
    VkMemoryRequirements req;
    dev->fn.vkGetBufferMemoryRequirements(dev->device, b, &req);
    if (!(req.memoryTypeBits & (1u << type))) {
        dev->fn.vkDestroyBuffer(dev->device, b, NULL);
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = exportable ? ct_external_memory_info(&exp, &ded, b, &flags)
                                                    : (const void *)&flags,
                                .allocationSize = req.size, .memoryTypeIndex = type};
    r = dev->fn.vkAllocateMemory(dev->device, &mai, NULL, &m);
    if (r == VK_SUCCESS)
        r = dev->fn.vkBindBufferMemory(dev->device, b, m, 0);
    VkMemoryPropertyFlags fl = dev->memprops.memoryTypes[type].propertyFlags;
    if (r == VK_SUCCESS && (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        r = dev->fn.vkMapMemory(dev->device, m, 0, VK_WHOLE_SIZE, 0, &mapped);
    CtAlloc *a = r == VK_SUCCESS ? PyMem_Calloc(1, sizeof *a) : NULL;
    if (r == VK_SUCCESS && a == NULL)
        r = VK_ERROR_OUT_OF_HOST_MEMORY;
    if (r != VK_SUCCESS) {
        dev->fn.vkDestroyBuffer(dev->device, b, NULL);
        if (m != VK_NULL_HANDLE)
            dev->fn.vkFreeMemory(dev->device, m, NULL);
        return r;
    }
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = b};
    a->buffer = b;
    a->memory = m;
    a->mapped = mapped;
    a->capacity = capacity;
    a->address = dev->fn.vkGetBufferDeviceAddress(dev->device, &ai);
    a->type_index = type;
    a->coherent = (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    a->exportable = exportable;
    a->memory_size = req.size;
    a->all_next = dev->all;
    if (dev->all)
        dev->all->all_prev = a;
    dev->all = a;
    *out = a;
    return VK_SUCCESS;
}

/* the earliest last use in a free list: once that completed, one of them is free */
static uint64_t
min_last_use(const CtAlloc *a)
{
    uint64_t v = UINT64_MAX;
    for (; a != NULL; a = a->free_next)
        if (a->last_use < v)
            v = a->last_use;
    return v;
}

CtAlloc *
ct_alloc_get(CtDevice *dev, VkDeviceSize nbytes, int kind)
{
    uint32_t type = (uint32_t)dev->kind_type[kind];
    int exportable = kind == CT_KIND_EXPORT;
    uint32_t heap = dev->memprops.memoryTypes[type].heapIndex;
    VkDeviceSize heap_size = dev->memprops.memoryHeaps[heap].size;
    VkDeviceSize capacity;
    int cls = size_class(nbytes, &capacity);
    if (nbytes > heap_size || (dev->max_alloc && nbytes > dev->max_alloc)) {
        ct_raise(dev->st->VulkanOutOfMemory,
                 "cannot allocate %llu bytes of GPU memory on '%s': the memory heap holds %llu "
                 "bytes and one allocation may be at most %llu bytes. Use smaller inputs",
                 (unsigned long long)nbytes, dev->props.deviceName, (unsigned long long)heap_size,
                 (unsigned long long)dev->max_alloc);
        return NULL;
    }
    if (cls < 0 || capacity > heap_size || (dev->max_alloc && capacity > dev->max_alloc)) {
        cls = -1;
        capacity = (nbytes + 255) / 256 * 256;
    }
    if (cls >= 0) {
        for (int pass = 0; pass < 2; pass++) {
            for (CtAlloc **pp = &dev->pools[type][cls]; *pp != NULL; pp = &(*pp)->free_next) {
                CtAlloc *a = *pp;
                /* exportable and plain allocations share a list but never stand in for
                   each other */
                if (a->last_use <= dev->completed && a->exportable == exportable) {
                    *pp = a->free_next;
                    a->free_next = NULL;
                    dev->pooled_bytes -= a->capacity;
                    return a;
                }
            }
            /* none free yet: take what the background thread saw complete (no system call)
               or, failing that, read the counter once */
            if (pass == 0 && (dev->pools[type][cls] == NULL ||
                              ct_timeline_sync(dev, min_last_use(dev->pools[type][cls]),
                                               CT_SYNC_READ | CT_SYNC_QUIET) <= 0))
                break;
        }
    }
    CtAlloc *a = NULL;
    VkResult r = alloc_new(dev, capacity, type, exportable, &a);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        if (ct_timeline_sync(dev, UINT64_MAX, CT_SYNC_READ | CT_SYNC_RETIRE | CT_SYNC_TRIM) < 0)
            return NULL;
        r = alloc_new(dev, capacity, type, exportable, &a);
    }
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        ct_raise(dev->st->VulkanOutOfMemory,
                 "out of GPU memory allocating %llu bytes on '%s' (memory heap of %llu bytes, "
                 "%s). Free buffers or use smaller inputs",
                 (unsigned long long)nbytes, dev->props.deviceName, (unsigned long long)heap_size,
                 ct_vk_result_name(r));
        return NULL;
    }
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "allocating a %llu-byte buffer", (unsigned long long)nbytes);
        return NULL;
    }
    a->size_class = cls;
    return a;
}

void
ct_alloc_put(CtDevice *dev, CtAlloc *a)
{
    if (a->size_class < 0) {
        ct_timeline_free_after_use(dev, a);
        return;
    }
    if (dev->pooled_bytes + a->capacity > dev->pool_cap) {
        ct_timeline_sync(dev, UINT64_MAX, CT_SYNC_READ | CT_SYNC_QUIET | CT_SYNC_TRIM);
        if (dev->pooled_bytes + a->capacity > dev->pool_cap && a->last_use <= dev->completed) {
            ct_alloc_free(dev, a);
            return;
        }
    }
    a->free_next = dev->pools[a->type_index][a->size_class];
    dev->pools[a->type_index][a->size_class] = a;
    dev->pooled_bytes += a->capacity;
}

void
ct_memory_destroy_all(CtDevice *dev)
{
    while (dev->all != NULL)
        ct_alloc_free(dev, dev->all);
    memset(dev->pools, 0, sizeof dev->pools);
    dev->deferred = NULL;
    dev->pooled_bytes = 0;
}

int
ct_sync_range(CtDevice *dev, CtAlloc *a, VkDeviceSize off, VkDeviceSize n, int flush)
{
    if (a->coherent || n == 0)
        return 0;
    VkDeviceSize atom = dev->props.limits.nonCoherentAtomSize ? dev->props.limits.nonCoherentAtomSize : 1;
    VkDeviceSize start = off / atom * atom;
    VkDeviceSize end = (off + n + atom - 1) / atom * atom;
    VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = a->memory,
                                 .offset = start,
                                 .size = end >= a->capacity ? VK_WHOLE_SIZE : end - start};
    VkResult r = flush ? dev->fn.vkFlushMappedMemoryRanges(dev->device, 1, &range)
                       : dev->fn.vkInvalidateMappedMemoryRanges(dev->device, 1, &range);
    return r == VK_SUCCESS ? 0 : -1;
}
