/* cthreads._native — the Vulkan entry points the extension uses, as X-macro tables, and the
 * tables of function pointers made from them (loader.c, instance.c and device.c fill them).
 * Every Vulkan function is loaded at run time: vulkan.h is included with VK_NO_PROTOTYPES.
 * Included by cthreads.h.
 */
#ifndef CTHREADS_VK_FUNCS_H
#define CTHREADS_VK_FUNCS_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

/* ---- entry points ---------------------------------------------------------------------- */

/* resolved with vkGetInstanceProcAddr(NULL, ...) */
#define CT_GLOBAL_FUNCS(X)                 \
    X(vkCreateInstance)                    \
    X(vkEnumerateInstanceLayerProperties)  \
    X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceVersion)

/* resolved with vkGetInstanceProcAddr(instance, ...) */
#define CT_INSTANCE_FUNCS(X)                       \
    X(vkDestroyInstance)                           \
    X(vkEnumeratePhysicalDevices)                  \
    X(vkGetPhysicalDeviceProperties)               \
    X(vkGetPhysicalDeviceProperties2)              \
    X(vkGetPhysicalDeviceFeatures2)                \
    X(vkGetPhysicalDeviceMemoryProperties)         \
    X(vkGetPhysicalDeviceQueueFamilyProperties)    \
    X(vkEnumerateDeviceExtensionProperties)        \
    X(vkCreateDevice)                              \
    X(vkGetDeviceProcAddr)

/* optional instance functions (debug utils; external memory queries, external.c) */
#define CT_INSTANCE_OPT_FUNCS(X)           \
    X(vkCreateDebugUtilsMessengerEXT)      \
    X(vkDestroyDebugUtilsMessengerEXT)     \
    X(vkGetPhysicalDeviceExternalBufferProperties) \
    X(vkGetPhysicalDeviceExternalSemaphoreProperties)

/* resolved with vkGetDeviceProcAddr(device, ...) */
#define CT_DEVICE_FUNCS(X)                 \
    X(vkDestroyDevice)                     \
    X(vkGetDeviceQueue)                    \
    X(vkDeviceWaitIdle)                    \
    X(vkCreateBuffer)                      \
    X(vkDestroyBuffer)                     \
    X(vkGetBufferMemoryRequirements)       \
    X(vkAllocateMemory)                    \
    X(vkFreeMemory)                        \
    X(vkBindBufferMemory)                  \
    X(vkMapMemory)                         \
    X(vkUnmapMemory)                       \
    X(vkFlushMappedMemoryRanges)           \
    X(vkInvalidateMappedMemoryRanges)      \
    X(vkGetBufferDeviceAddress)            \
    X(vkCreateShaderModule)                \
    X(vkDestroyShaderModule)               \
    X(vkCreatePipelineLayout)              \
    X(vkDestroyPipelineLayout)             \
    X(vkCreateComputePipelines)            \
    X(vkDestroyPipeline)                   \
    X(vkCreatePipelineCache)               \
    X(vkDestroyPipelineCache)              \
    X(vkGetPipelineCacheData)              \
    X(vkCreateCommandPool)                 \
    X(vkDestroyCommandPool)                \
    X(vkAllocateCommandBuffers)            \
    X(vkBeginCommandBuffer)                \
    X(vkEndCommandBuffer)                  \
    X(vkCmdBindPipeline)                   \
    X(vkCmdPushConstants)                  \
    X(vkCmdDispatch)                       \
    X(vkCmdCopyBuffer)                     \
    X(vkCmdFillBuffer)                     \
    X(vkCmdPipelineBarrier)                \
    X(vkCmdResetQueryPool)                 \
    X(vkCmdWriteTimestamp)                 \
    X(vkCreateQueryPool)                   \
    X(vkDestroyQueryPool)                  \
    X(vkGetQueryPoolResults)               \
    X(vkCreateSemaphore)                   \
    X(vkDestroySemaphore)                  \
    X(vkGetSemaphoreCounterValue)          \
    X(vkWaitSemaphores)                    \
    X(vkSignalSemaphore)                   \
    X(vkCreateFence)                       \
    X(vkDestroyFence)                      \
    X(vkWaitForFences)                     \
    X(vkResetFences)                       \
    X(vkQueueSubmit)

#define CT_DECLARE_PFN(name) PFN_##name name;

typedef struct {
    CT_GLOBAL_FUNCS(CT_DECLARE_PFN)
} CtGlobalFns;

typedef struct {
    CT_INSTANCE_FUNCS(CT_DECLARE_PFN)
    CT_INSTANCE_OPT_FUNCS(CT_DECLARE_PFN)
} CtInstanceFns;

typedef struct {
    CT_DEVICE_FUNCS(CT_DECLARE_PFN)
} CtDeviceFns;

#endif
