/* What the two files of the C floor (floor.c: the timed steps and main; floor_steps.c: the
 * first dispatch and the --like-cthreads device requests) share: the error check, the clock,
 * the loader's vkGetInstanceProcAddr and the functions floor_steps.c gives floor.c.
 */
#ifndef CTHREADS_C_FLOOR_H
#define CTHREADS_C_FLOOR_H

#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#define CHECK(x)                                                                    \
    do {                                                                            \
        VkResult r_ = (x);                                                          \
        if (r_ != VK_SUCCESS) {                                                     \
            fprintf(stderr, "floor: %s failed (VkResult %d)\n", #x, (int)r_);       \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* the loader's entry point, set by main once dlopen succeeded */
extern PFN_vkGetInstanceProcAddr gipa;
#define IFN(inst, name) PFN_##name name = (PFN_##name)gipa(inst, #name)

/* --like-cthreads: the feature chain and extensions native/device.c enables (what the device
 * has of them; its external-memory check simplified to "listed"), into `dci` */
typedef struct {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af;
    struct { VkStructureType sType; void *pNext; VkBool32 cooperativeMatrix, robust; } cm;
    struct { VkStructureType sType; void *pNext; VkBool32 shaderBFloat16Type, dot, coopmat; } bf;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe;
    VkDeviceQueueCreateInfo queues[2];
    const char *exts[8];
} Requests;

void like_cthreads(VkInstance inst, VkPhysicalDevice pd, Requests *q, VkDeviceCreateInfo *dci,
                   const char *parts);

/* One dispatch of the built-in module, checked; its time in ms */
double first_dispatch(VkDevice dev, VkPhysicalDevice pd, VkInstance inst, VkQueue queue,
                      uint32_t family, VkDescriptorSetLayout dsl, VkPipelineLayout layout,
                      VkPipeline pipe);

#endif
