/* cthreads._native — queues: which queues a Device asks for and where each lane submits.
 *
 * Python API: none (device.c calls it around vkCreateDevice). The compute family (physdev.c's
 * choice) gives min(CT_LANES, queueCount, knobs.lane_queues) queues to the lanes (lane.c); the
 * copy lane gets one queue of a transfer-only family (neither GRAPHICS nor COMPUTE: the DMA
 * copy engines of discrete GPUs) where the device has one and knobs.copy_queue allows.
 */
#include "cthreads.h"

/* the family of the copy lane for knobs.copy_queue (0 off, 1 a transfer-only family, 2 the
   compute family's queue 0: tests the copy lane's mechanism where no such family exists), or
   UINT32_MAX for none. fam: the device's n families. */
static uint32_t
pick_copy_family(const CtDevice *self, const VkQueueFamilyProperties *fam, uint32_t n)
{
    if (self->knobs.copy_queue == 2)
        return self->queue_family;
    if (self->knobs.copy_queue == 0)
        return UINT32_MAX;
    /* a family that only copies first (video and optical-flow families may list TRANSFER
       too), else any with TRANSFER and neither GRAPHICS nor COMPUTE */
    const VkQueueFlags other = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
    const VkQueueFlags plain = VK_QUEUE_TRANSFER_BIT | VK_QUEUE_SPARSE_BINDING_BIT |
                               VK_QUEUE_PROTECTED_BIT;
    uint32_t loose = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        VkQueueFlags f = fam[i].queueFlags;
        if (!(f & VK_QUEUE_TRANSFER_BIT) || (f & other) || fam[i].queueCount == 0)
            continue;
        if (!(f & ~plain))
            return i;
        if (loose == UINT32_MAX)
            loose = i;
    }
    return loose;
}

/* Fill qci (room for 2) for vkCreateDevice; sets nqueues and copy_family (and the families
   buffers are shared between). Returns how many entries it filled. */
uint32_t
ct_queues_plan(CtDevice *self, VkDeviceQueueCreateInfo *qci, const float *prio)
{
    uint32_t nfam = 0, nq = 1;
    self->copy_family = UINT32_MAX;
    self->inst->fn.vkGetPhysicalDeviceQueueFamilyProperties(self->phys, &nfam, NULL);
    if (self->queue_family < nfam && nfam <= 64) {
        VkQueueFamilyProperties fam[64];
        self->inst->fn.vkGetPhysicalDeviceQueueFamilyProperties(self->phys, &nfam, fam);
        nq = fam[self->queue_family].queueCount;
        nq = nq < 1 ? 1 : nq > CT_LANES ? CT_LANES : nq;
        if (nq > self->knobs.lane_queues)
            nq = (uint32_t)self->knobs.lane_queues;
        self->copy_family = pick_copy_family(self, fam, nfam);
    }
    self->nqueues = nq;
    self->share_families[0] = self->queue_family;
    self->nshare = 1;
    qci[0] = (VkDeviceQueueCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                       .queueFamilyIndex = self->queue_family,
                                       .queueCount = nq, .pQueuePriorities = prio};
    if (self->copy_family == UINT32_MAX || self->copy_family == self->queue_family)
        return 1;
    self->share_families[self->nshare++] = self->copy_family;
    qci[1] = (VkDeviceQueueCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                       .queueFamilyIndex = self->copy_family, .queueCount = 1,
                                       .pQueuePriorities = prio};
    return 2;
}

/* After vkCreateDevice: the queues of lane 0 (`queue`), of lanes 1.. and of the copy lane. */
void
ct_queues_fetch(CtDevice *self)
{
    self->fn.vkGetDeviceQueue(self->device, self->queue_family, 0, &self->queue);
    for (uint32_t k = 0; k < CT_LANES; k++) /* lane k on queue k (mod the queues there are) */
        self->fn.vkGetDeviceQueue(self->device, self->queue_family, k % self->nqueues,
                                  &self->lane_queue[k]);
    self->copy_queue = VK_NULL_HANDLE;
    if (self->copy_family != UINT32_MAX)
        self->fn.vkGetDeviceQueue(self->device, self->copy_family, 0, &self->copy_queue);
}

/* The sharing of every buffer (memory.c): CONCURRENT between the compute and the copy family
   when the copy lane has a family of its own, so that either queue may use any buffer with no
   queue-family ownership transfer (a transfer is a release barrier on one queue and an acquire
   on the other per buffer and hand-over, and the pool hands buffers between streams, uploads
   and kernels all the time). The spec lets CONCURRENT be slower; bench/streams.py's kernel
   and copy times on the H200 would show it. EXCLUSIVE otherwise (one family). */
void
ct_queues_share(const CtDevice *self, VkBufferCreateInfo *bci)
{
    if (self->nshare > 1) {
        bci->sharingMode = VK_SHARING_MODE_CONCURRENT;
        bci->queueFamilyIndexCount = self->nshare;
        bci->pQueueFamilyIndices = self->share_families;
    } else
        bci->sharingMode = VK_SHARING_MODE_EXCLUSIVE;
}
