/* The two optional parts of the C floor (see floor.c for what it measures): the first dispatch
 * of the built-in module (data[i] += 1, checked), and --like-cthreads' device requests (the
 * features and extensions native/device.c enables, as far as the device has them).
 */
#include "floor.h"

#include <string.h>

/* One dispatch of the built-in module (data[i] += 1 over 64 words), submitted and waited with a
 * fence; returns its time in ms and checks the result. */
double first_dispatch(VkDevice dev, VkPhysicalDevice pd, VkInstance inst, VkQueue queue,
                      uint32_t family, VkDescriptorSetLayout dsl, VkPipelineLayout layout,
                      VkPipeline pipe)
{
    double t0 = now_ms();
    IFN(inst, vkGetPhysicalDeviceMemoryProperties);
    PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
#define GFN(name) PFN_##name name = (PFN_##name)gdpa(dev, #name)
    GFN(vkCreateBuffer);
    GFN(vkGetBufferMemoryRequirements);
    GFN(vkAllocateMemory);
    GFN(vkBindBufferMemory);
    GFN(vkMapMemory);
    GFN(vkCreateDescriptorPool);
    GFN(vkAllocateDescriptorSets);
    GFN(vkUpdateDescriptorSets);
    GFN(vkCreateCommandPool);
    GFN(vkAllocateCommandBuffers);
    GFN(vkBeginCommandBuffer);
    GFN(vkCmdBindPipeline);
    GFN(vkCmdBindDescriptorSets);
    GFN(vkCmdDispatch);
    GFN(vkCmdPipelineBarrier);
    GFN(vkEndCommandBuffer);
    GFN(vkCreateFence);
    GFN(vkQueueSubmit);
    GFN(vkWaitForFences);
    GFN(vkDestroyFence);
    GFN(vkDestroyCommandPool);
    GFN(vkDestroyDescriptorPool);
    GFN(vkDestroyBuffer);
    GFN(vkFreeMemory);
    GFN(vkDeviceWaitIdle);
#undef GFN
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = 256,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buf;
    CHECK(vkCreateBuffer(dev, &bci, NULL, &buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint32_t type = UINT32_MAX;
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t t = 0; t < mp.memoryTypeCount && type == UINT32_MAX; t++)
        if ((req.memoryTypeBits & (1u << t)) && (mp.memoryTypes[t].propertyFlags & want) == want)
            type = t;
    if (type == UINT32_MAX) {
        fprintf(stderr, "floor: no host-visible coherent memory\n");
        exit(1);
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    VkDeviceMemory mem;
    CHECK(vkAllocateMemory(dev, &mai, NULL, &mem));
    CHECK(vkBindBufferMemory(dev, buf, mem, 0));
    uint32_t *words;
    CHECK(vkMapMemory(dev, mem, 0, 256, 0, (void **)&words));
    for (int i = 0; i < 64; i++)
        words[i] = (uint32_t)i;

    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 1,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VkDescriptorPool pool;
    CHECK(vkCreateDescriptorPool(dev, &dpci, NULL, &pool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = pool,
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &dsl};
    VkDescriptorSet set;
    CHECK(vkAllocateDescriptorSets(dev, &dsai, &set));
    VkDescriptorBufferInfo dbi = {buf, 0, 256};
    VkWriteDescriptorSet wds = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                .dstSet = set,
                                .descriptorCount = 1,
                                .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                .pBufferInfo = &dbi};
    vkUpdateDescriptorSets(dev, 1, &wds, 0, NULL);

    VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .queueFamilyIndex = family};
    VkCommandPool cpool;
    CHECK(vkCreateCommandPool(dev, &cpci, NULL, &cpool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = cpool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1};
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cb));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    CHECK(vkBeginCommandBuffer(cb, &bi));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    vkCmdDispatch(cb, 1, 1, 1);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &mb, 0, NULL, 0, NULL);
    CHECK(vkEndCommandBuffer(cb));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    CHECK(vkCreateFence(dev, &fci, NULL, &fence));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &cb};
    CHECK(vkQueueSubmit(queue, 1, &si, fence));
    CHECK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
    double t1 = now_ms();
    for (int i = 0; i < 64; i++)
        if (words[i] != (uint32_t)i + 1) {
            fprintf(stderr, "floor: wrong result at %d: %u\n", i, words[i]);
            exit(1);
        }
    CHECK(vkDeviceWaitIdle(dev));
    vkDestroyFence(dev, fence, NULL);
    vkDestroyCommandPool(dev, cpool, NULL);
    vkDestroyDescriptorPool(dev, pool, NULL);
    vkDestroyBuffer(dev, buf, NULL);
    vkFreeMemory(dev, mem, NULL);
    return t1 - t0;
}

static int has_device_ext(VkInstance inst, VkPhysicalDevice pd, const char *name)
{
    IFN(inst, vkEnumerateDeviceExtensionProperties);
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
    int found = 0;
    for (uint32_t i = 0; i < n && !found; i++)
        found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

void like_cthreads(VkInstance inst, VkPhysicalDevice pd, Requests *q, VkDeviceCreateInfo *dci)
{
    IFN(inst, vkGetPhysicalDeviceFeatures2);
    int atomic_float = has_device_ext(inst, pd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    memset(q, 0, sizeof *q);
    q->af.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    q->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    q->v12.pNext = atomic_float ? &q->af : NULL;
    q->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    q->v11.pNext = &q->v12;
    q->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    q->f2.pNext = &q->v11;
    vkGetPhysicalDeviceFeatures2(pd, &q->f2); /* what the device has ... */
    VkPhysicalDeviceFeatures have = q->f2.features;
    memset(&q->f2.features, 0, sizeof q->f2.features); /* ... of what device.c asks for */
    q->f2.features.shaderInt64 = have.shaderInt64;
    q->f2.features.shaderInt16 = have.shaderInt16;
    q->f2.features.shaderFloat64 = have.shaderFloat64;
    VkPhysicalDeviceVulkan11Features v11 = q->v11;
    memset(&q->v11, 0, sizeof q->v11);
    q->v11.sType = v11.sType;
    q->v11.pNext = &q->v12;
    q->v11.storageBuffer16BitAccess = v11.storageBuffer16BitAccess;
    q->v11.variablePointersStorageBuffer = v11.variablePointersStorageBuffer;
    q->v11.variablePointers = v11.variablePointers;
    VkPhysicalDeviceVulkan12Features v12 = q->v12;
    memset(&q->v12, 0, sizeof q->v12);
    q->v12.sType = v12.sType;
    q->v12.pNext = v12.pNext;
    q->v12.bufferDeviceAddress = VK_TRUE;
    q->v12.timelineSemaphore = VK_TRUE;
    q->v12.storageBuffer8BitAccess = v12.storageBuffer8BitAccess;
    q->v12.shaderInt8 = v12.shaderInt8;
    q->v12.shaderFloat16 = v12.shaderFloat16;
    q->v12.scalarBlockLayout = v12.scalarBlockLayout;
    q->v12.vulkanMemoryModel = v12.vulkanMemoryModel;
    q->v12.vulkanMemoryModelDeviceScope = v12.vulkanMemoryModelDeviceScope;
    q->v12.shaderBufferInt64Atomics = v12.shaderBufferInt64Atomics;
    q->v12.shaderSubgroupExtendedTypes = v12.shaderSubgroupExtendedTypes;
    VkBool32 f32_atomics = q->af.shaderBufferFloat32Atomics;
    VkBool32 f32_add = q->af.shaderBufferFloat32AtomicAdd;
    memset(&q->af, 0, sizeof q->af);
    q->af.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    q->af.shaderBufferFloat32Atomics = f32_atomics;
    q->af.shaderBufferFloat32AtomicAdd = f32_add;
    uint32_t next = 0;
    if (atomic_float)
        q->exts[next++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    if (has_device_ext(inst, pd, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME))
        q->exts[next++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    /* (VK_KHR_cooperative_matrix is left out: its feature struct needs headers >= 1.3.255) */
    dci->pNext = &q->f2;
    dci->enabledExtensionCount = next;
    dci->ppEnabledExtensionNames = q->exts;
}
