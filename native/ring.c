/* cthreads._native — ring: the batches' command buffers, the timeline semaphore and the
 * timestamp query pool: their creation and, at teardown, their destruction. The query pool is
 * made at the first timed submit (ct_ring_timed), not at open: most processes never time one,
 * and opening is what issue 19 counts.
 *
 * Python API: none directly (device.c creates and destroys the ring). What a completed batch
 * gives back while the device lives (retirement) is timeline.c's job.
 */
#include "cthreads.h"

#include <string.h>

/* A resettable command pool of queue family `family` in *pool (made unless there is one) and
   CT_RING primary command buffers from it in cbs: the compute ring's (ct_ring_create) and the
   copy lane's (lane.c). -1 with an exception naming the call and `what` ("" or " (copy
   lane)"); a pool whose creation failed is left VK_NULL_HANDLE. */
int
ct_command_ring_create(CtDevice *dev, uint32_t family, VkCommandPool *pool,
                       VkCommandBuffer cbs[CT_RING], const char *what)
{
    VkResult r = VK_SUCCESS;
    if (*pool == VK_NULL_HANDLE) {
        VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = family};
        r = dev->fn.vkCreateCommandPool(dev->device, &pci, NULL, pool);
    }
    if (r != VK_SUCCESS) {
        *pool = VK_NULL_HANDLE;
        ct_raise_vk(dev->st, r, "vkCreateCommandPool%s", what);
        return -1;
    }
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = *pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = CT_RING};
    r = dev->fn.vkAllocateCommandBuffers(dev->device, &ai, cbs);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkAllocateCommandBuffers%s", what);
        return -1;
    }
    return 0;
}

int
ct_ring_create(CtDevice *dev)
{
    dev->pending = -1;
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE, .initialValue = 0};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    VkResult r = dev->fn.vkCreateSemaphore(dev->device, &sci, NULL, &dev->timeline);
    if (r != VK_SUCCESS) {
        ct_raise_vk(dev->st, r, "vkCreateSemaphore (timeline)");
        return -1;
    }
    ct_open_mark(dev, CT_OPEN_TIMELINE);
    VkCommandBuffer cbs[CT_RING];
    if (ct_command_ring_create(dev, dev->queue_family, &dev->cmd_pool, cbs, "") < 0)
        return -1;
    for (int i = 0; i < CT_RING; i++)
        dev->ring[i].cb = cbs[i];
    ct_open_mark(dev, CT_OPEN_COMMAND_BUFFERS);
    return 0;
}

/* What a submit asking to be `timed` gets: 1 timestamps, 0 none (not asked, or the queue
   family takes none: elapsed_ms() is then None), -1 with an exception. The first timed submit
   creates the query pool; readers of it (batch.c's recording, timeline.c's results) only
   touch it for timed slots, which cannot exist before. GIL held, no lock held. */
int
ct_ring_timed(CtDevice *dev, int timed)
{
    if (!timed || dev->timestamp_bits == 0)
        return 0;
    if (dev->query_pool != VK_NULL_HANDLE)
        return 1;
    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = 2 * CT_QPAIRS};
    VkResult r = dev->fn.vkCreateQueryPool(dev->device, &qci, NULL, &dev->query_pool);
    if (r != VK_SUCCESS) {
        dev->query_pool = VK_NULL_HANDLE;
        ct_raise_vk(dev->st, r, "vkCreateQueryPool (timed=True)");
        return -1;
    }
    return 1;
}

/* After the background thread stopped and the device is idle: drop every reference. */
void
ct_ring_destroy(CtDevice *dev)
{
    dev->pending = -1;
    for (int i = 0; i < CT_RING; i++) {
        CtSlot *s = &dev->ring[i];
        PyObject **keep = s->keep;
        Py_ssize_t nk = s->nkeep;
        s->keep = NULL;
        s->nkeep = s->keep_cap = 0;
        s->state = CT_SLOT_FREE;
        PyMem_Free(s->timed);
        s->timed = NULL;
        s->ntimed = s->timed_cap = 0;
        for (Py_ssize_t k = 0; k < nk; k++)
            Py_DECREF(keep[k]);
        PyMem_Free(keep);
    }
    if (dev->device == VK_NULL_HANDLE)
        return;
    ct_lanes_destroy(dev);
    CT_DESTROY(dev, QueryPool, dev->query_pool);
    CT_DESTROY(dev, CommandPool, dev->cmd_pool);
    CT_DESTROY(dev, Semaphore, dev->timeline);
}
