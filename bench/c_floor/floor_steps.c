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

/* the parts of native/device.c's requests --ask can name (--like-cthreads: all of them) */
static int asks(const char *parts, const char *part)
{
    if (strcmp(parts, "all") == 0)
        return 1;
    size_t n = strlen(part);
    for (const char *p = parts; (p = strstr(p, part)) != NULL; p += n)
        if ((p == parts || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

void like_cthreads(VkInstance inst, VkPhysicalDevice pd, Requests *q, VkDeviceCreateInfo *dci,
                   const char *parts)
{
    IFN(inst, vkGetPhysicalDeviceFeatures2);
    IFN(inst, vkGetPhysicalDeviceQueueFamilyProperties);
    int atomic_float = asks(parts, "atomicf") &&
                       has_device_ext(inst, pd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    int coopmat = asks(parts, "coopmat") && has_device_ext(inst, pd, "VK_KHR_cooperative_matrix");
    int bf16 = coopmat && asks(parts, "bf16") && has_device_ext(inst, pd, "VK_KHR_shader_bfloat16");
    int exec_props = asks(parts, "execprops") &&
                     has_device_ext(inst, pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
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
    VkPhysicalDeviceVulkan11Features v11 = q->v11;
    memset(&q->v11, 0, sizeof q->v11);
    q->v11.sType = v11.sType;
    q->v11.pNext = &q->v12;
    VkPhysicalDeviceVulkan12Features v12 = q->v12;
    memset(&q->v12, 0, sizeof q->v12);
    q->v12.sType = v12.sType;
    q->v12.pNext = v12.pNext;
    q->v12.bufferDeviceAddress = VK_TRUE;
    q->v12.timelineSemaphore = VK_TRUE;
    if (asks(parts, "features")) {
        q->f2.features.shaderInt64 = have.shaderInt64;
        q->f2.features.shaderInt16 = have.shaderInt16;
        q->f2.features.shaderFloat64 = have.shaderFloat64;
        q->v11.storageBuffer16BitAccess = v11.storageBuffer16BitAccess;
        q->v11.variablePointersStorageBuffer = v11.variablePointersStorageBuffer;
        q->v11.variablePointers = v11.variablePointers;
        q->v12.storageBuffer8BitAccess = v12.storageBuffer8BitAccess;
        q->v12.shaderInt8 = v12.shaderInt8;
        q->v12.shaderFloat16 = v12.shaderFloat16;
        q->v12.scalarBlockLayout = v12.scalarBlockLayout;
        q->v12.vulkanMemoryModel = v12.vulkanMemoryModel;
        q->v12.vulkanMemoryModelDeviceScope = v12.vulkanMemoryModelDeviceScope;
        q->v12.shaderBufferInt64Atomics = v12.shaderBufferInt64Atomics;
        q->v12.shaderSubgroupExtendedTypes = v12.shaderSubgroupExtendedTypes;
    }
    VkBool32 f32_atomics = q->af.shaderBufferFloat32Atomics;
    VkBool32 f32_add = q->af.shaderBufferFloat32AtomicAdd;
    memset(&q->af, 0, sizeof q->af);
    q->af.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    q->af.shaderBufferFloat32Atomics = f32_atomics;
    q->af.shaderBufferFloat32AtomicAdd = f32_add;
    /* the structs Debian 12's headers predate, chained after v12 as device.c does */
    q->cm.sType = (VkStructureType)1000506000; /* cooperative matrix features */
    q->cm.pNext = q->v12.pNext;
    q->cm.cooperativeMatrix = VK_TRUE;
    if (coopmat)
        q->v12.pNext = &q->cm;
    q->bf.sType = (VkStructureType)1000141000; /* bfloat16 features */
    q->bf.pNext = q->v12.pNext;
    q->bf.shaderBFloat16Type = VK_TRUE;
    q->bf.coopmat = VK_TRUE;
    if (bf16)
        q->v12.pNext = &q->bf;
    q->pe.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
    q->pe.pNext = q->v12.pNext;
    q->pe.pipelineExecutableInfo = VK_TRUE;
    if (exec_props)
        q->v12.pNext = &q->pe;
    uint32_t next = 0;
    if (atomic_float)
        q->exts[next++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    int extmem = asks(parts, "extmem") && has_device_ext(inst, pd, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
    if (extmem)
        q->exts[next++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    if (extmem && asks(parts, "extsem") &&
        has_device_ext(inst, pd, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME))
        q->exts[next++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
    if (coopmat)
        q->exts[next++] = "VK_KHR_cooperative_matrix";
    if (bf16)
        q->exts[next++] = "VK_KHR_shader_bfloat16";
    if (exec_props)
        q->exts[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    /* the copy lane's queue: one of a transfer-only family, as native/queues.c picks it */
    q->queues[0] = *dci->pQueueCreateInfos;
    uint32_t nfam = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, NULL);
    VkQueueFamilyProperties fam[64];
    nfam = nfam > 64 ? 64 : nfam;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, fam);
    uint32_t nq = 1;
    for (uint32_t i = 0; asks(parts, "copyq") && i < nfam && nq == 1; i++) {
        VkQueueFlags f = fam[i].queueFlags;
        if ((f & VK_QUEUE_TRANSFER_BIT) && !(f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) &&
            fam[i].queueCount > 0) {
            q->queues[1] = q->queues[0];
            q->queues[1].queueFamilyIndex = i;
            nq = 2;
        }
    }
    dci->pNext = &q->f2;
    dci->enabledExtensionCount = next;
    dci->ppEnabledExtensionNames = q->exts;
    dci->queueCreateInfoCount = nq;
    dci->pQueueCreateInfos = q->queues;
}
