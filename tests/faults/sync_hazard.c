/* A deliberately racy Vulkan program for tests/faults/test_sync_validation.py: two copies into
 * one buffer with no barrier between them (write-after-write), in one command buffer
 * (`sync_hazard`) or in two submissions (`sync_hazard across`); `sync_hazard barrier` puts the
 * barrier in (the control: no message). Under the Khronos layer with
 * synchronization validation it must report SYNC-HAZARD-WRITE-AFTER-WRITE; every message is
 * printed as "MESSAGE <id>: <text>". cthreads itself cannot be made to race (native/record.c
 * puts a full barrier before every command), hence this stand-alone program. */
#include <stdio.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define CHECK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) { \
    fprintf(stderr, "%s failed: %d\n", #x, r_); return 2; } } while (0)

static VkBool32 VKAPI_PTR
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)sev, (void)types, (void)user;
    printf("MESSAGE %s: %s\n", data->pMessageIdName ? data->pMessageIdName : "?", data->pMessage);
    return VK_FALSE;
}

int
main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "within";
    int across = strcmp(mode, "across") == 0, fenced = strcmp(mode, "barrier") == 0;
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app, .enabledLayerCount = 1,
                                .ppEnabledLayerNames = layers, .enabledExtensionCount = 1,
                                .ppEnabledExtensionNames = exts};
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, NULL, &inst));
    PFN_vkCreateDebugUtilsMessengerEXT mk =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkCreateDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message};
    VkDebugUtilsMessengerEXT messenger;
    CHECK(mk(inst, &mci, NULL, &messenger));

    uint32_t n = 1;
    VkPhysicalDevice phys;
    VkResult er = vkEnumeratePhysicalDevices(inst, &n, &phys);
    if ((er != VK_SUCCESS && er != VK_INCOMPLETE) || n == 0) { fprintf(stderr, "no device\n"); return 3; }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = 0, .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    VkDevice dev;
    CHECK(vkCreateDevice(phys, &dci, NULL, &dev));
    VkQueue queue;
    vkGetDeviceQueue(dev, 0, 0, &queue);

    VkBuffer bufs[2];
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 256,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    for (int i = 0; i < 2; i++)
        CHECK(vkCreateBuffer(dev, &bci, NULL, &bufs[i]));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, bufs[0], &req);
    uint32_t type = 0;
    while (!(req.memoryTypeBits & (1u << type)))
        type++;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size * 2, .memoryTypeIndex = type};
    VkDeviceMemory mem;
    CHECK(vkAllocateMemory(dev, &mai, NULL, &mem));
    CHECK(vkBindBufferMemory(dev, bufs[0], mem, 0));
    CHECK(vkBindBufferMemory(dev, bufs[1], mem, req.size));

    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    VkCommandPool pool;
    CHECK(vkCreateCommandPool(dev, &pci, NULL, &pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cai, &cb));
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(cb, &begin));
    VkBufferCopy region = {.size = 256};
    vkCmdCopyBuffer(cb, bufs[0], bufs[1], 1, &region);
    if (fenced) {
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                             1, &mb, 0, NULL, 0, NULL);
    }
    if (!across)
        vkCmdCopyBuffer(cb, bufs[0], bufs[1], 1, &region); /* WAW on bufs[1] unless fenced */
    CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &cb};
    CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    if (across) { /* the second copy in a second submission, still with no barrier */
        VkCommandBuffer cb2;
        CHECK(vkAllocateCommandBuffers(dev, &cai, &cb2));
        CHECK(vkBeginCommandBuffer(cb2, &begin));
        vkCmdCopyBuffer(cb2, bufs[0], bufs[1], 1, &region);
        CHECK(vkEndCommandBuffer(cb2));
        si.pCommandBuffers = &cb2;
        CHECK(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    }
    CHECK(vkQueueWaitIdle(queue));

    vkDestroyCommandPool(dev, pool, NULL);
    vkDestroyBuffer(dev, bufs[0], NULL);
    vkDestroyBuffer(dev, bufs[1], NULL);
    vkFreeMemory(dev, mem, NULL);
    vkDestroyDevice(dev, NULL);
    PFN_vkDestroyDebugUtilsMessengerEXT rm =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkDestroyDebugUtilsMessengerEXT");
    rm(inst, messenger, NULL);
    vkDestroyInstance(inst, NULL);
    printf("DONE\n");
    return 0;
}
