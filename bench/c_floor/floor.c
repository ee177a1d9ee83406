/* The C floor of time to first result: what the Vulkan driver alone needs before a first
 * dispatch, for bench/first_result.py to measure in the same run as cthreads.
 *
 * Like native/loader.c, the loader is dlopen'ed (no link-time Vulkan). Timed, in order, each
 * step once (one process = one sample; the script starts it several times):
 *   dlopen                    dlopen("libvulkan.so.1") + vkGetInstanceProcAddr
 *   create_instance           vkCreateInstance (Vulkan 1.3 where the loader has it, else 1.2,
 *                             as cthreads asks; no layers, no extensions)
 *   enumerate                 vkEnumeratePhysicalDevices (count + list) and the properties of
 *                             each (to choose one, like cthreads: CTHREADS_DEVICE, else
 *                             discrete > integrated > virtual > cpu)
 *   create_device             vkCreateDevice: one compute queue, no features, no extensions
 *                             (with --bda: bufferDeviceAddress, which the SPIR-V cthreads emits
 *                             needs; with --like-cthreads: every feature and extension
 *                             native/device.c asks for where the device has it, one queue as
 *                             cthreads' default, so the difference to the plain floor is what
 *                             our requests cost the driver) + vkGetDeviceQueue
 *   shader_module_layout      vkCreateShaderModule + descriptor set and pipeline layouts
 *   create_pipeline_cache     a VkPipelineCache: empty, or with --cache FILE from that file's
 *                             data (cthreads' pipeline cache file: what loading it costs)
 *   create_pipeline           vkCreateComputePipelines of the module into that empty cache
 *   first_dispatch            built-in module only: a 256-byte host-visible buffer, its
 *                             descriptor set, a command buffer with one dispatch, submit and
 *                             fence wait (llvmpipe compiles the shader here, not in
 *                             vkCreateComputePipelines)
 *   destroy                   everything, device and instance included
 * The driver's own disk cache (NVIDIA's GLCache, Mesa's shader cache) is whatever the
 * environment points at: the script gives a fresh directory for cold runs.
 *
 * Usage: floor [--bda] [--like-cthreads] [--cache FILE] [module.spv [entry]]
 *        (default module: the built-in tiny.comp, "main")
 * Prints one JSON object: {"device": ..., "<step>_ms": ..., ...}.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "tiny_spv.h"

#define CHECK(x)                                                                    \
    do {                                                                            \
        VkResult r_ = (x);                                                          \
        if (r_ != VK_SUCCESS) {                                                     \
            fprintf(stderr, "floor: %s failed (VkResult %d)\n", #x, (int)r_);       \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static PFN_vkGetInstanceProcAddr gipa;
#define IFN(inst, name) PFN_##name name = (PFN_##name)gipa(inst, #name)

static uint32_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint32_t *words = malloc(n > 0 ? (size_t)n : 4);
    if (n <= 0 || n % 4 || fread(words, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "floor: %s is not a SPIR-V module\n", path);
        exit(1);
    }
    fclose(f);
    *size = (size_t)n;
    return words;
}

/* One dispatch of the built-in module (data[i] += 1 over 64 words), submitted and waited with a
 * fence; returns its time in ms and checks the result. */
static double first_dispatch(VkDevice dev, VkPhysicalDevice pd, VkInstance inst, VkQueue queue,
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

/* --like-cthreads: the feature chain and extensions native/device.c enables (what the device
 * has of them; its external-memory check simplified to "listed"), into `dci` */
typedef struct {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af;
    const char *exts[3];
} Requests;

static void like_cthreads(VkInstance inst, VkPhysicalDevice pd, Requests *q,
                          VkDeviceCreateInfo *dci)
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

int main(int argc, char **argv)
{
    int bda = 0, like = 0, argi = 1;
    const char *cache_file = NULL;
    for (; argi < argc && strncmp(argv[argi], "--", 2) == 0; argi++) {
        if (strcmp(argv[argi], "--bda") == 0)
            bda = 1;
        else if (strcmp(argv[argi], "--like-cthreads") == 0)
            like = 1;
        else if (strcmp(argv[argi], "--cache") == 0 && argi + 1 < argc)
            cache_file = argv[++argi];
        else {
            fprintf(stderr, "floor: unknown option %s\n", argv[argi]);
            return 2;
        }
    }
    const uint32_t *code = tiny_spv;
    size_t code_size = sizeof tiny_spv;
    const char *entry = "main";
    if (argi < argc)
        code = read_file(argv[argi++], &code_size);
    if (argi < argc)
        entry = argv[argi++];

    double t0 = now_ms();
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "floor: %s\n", dlerror());
        return 1;
    }
    gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    IFN(NULL, vkCreateInstance);
    IFN(NULL, vkEnumerateInstanceVersion);
    double t1 = now_ms();

    uint32_t loader_version = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion)
        vkEnumerateInstanceVersion(&loader_version);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "cthreads-c-floor",
                             .apiVersion = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3
                                                                                : VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, NULL, &inst));
    double t2 = now_ms();

    IFN(inst, vkEnumeratePhysicalDevices);
    IFN(inst, vkGetPhysicalDeviceProperties);
    IFN(inst, vkGetPhysicalDeviceQueueFamilyProperties);
    IFN(inst, vkCreateDevice);
    IFN(inst, vkGetDeviceProcAddr);
    IFN(inst, vkDestroyInstance);
    uint32_t n = 0;
    CHECK(vkEnumeratePhysicalDevices(inst, &n, NULL));
    if (n == 0) {
        fprintf(stderr, "floor: no Vulkan device\n");
        return 1;
    }
    VkPhysicalDevice *pds = calloc(n, sizeof *pds);
    CHECK(vkEnumeratePhysicalDevices(inst, &n, pds));
    static const int rank[] = {4, 1, 0, 2, 3}; /* other, integrated, discrete, virtual, cpu */
    const char *sel = getenv("CTHREADS_DEVICE");
    VkPhysicalDevice pd = pds[0];
    VkPhysicalDeviceProperties props, p;
    int best = 99;
    for (uint32_t i = 0; i < n; i++) {
        vkGetPhysicalDeviceProperties(pds[i], &p);
        int r = p.deviceType <= 4 ? rank[p.deviceType] : 5;
        if (sel && *sel >= '0' && *sel <= '9')
            r = (uint32_t)atoi(sel) == i ? -1 : 99;
        else if (sel && *sel && strstr(p.deviceName, sel))
            r = -1;
        if (r < best) {
            best = r;
            pd = pds[i];
            props = p;
        }
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq, sizeof *qf);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    uint32_t family = 0;
    for (uint32_t i = 0; i < nq; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            family = i;
            break;
        }
    double t3 = now_ms();

    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .bufferDeviceAddress = VK_TRUE};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = bda ? &v12 : NULL,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    Requests requests;
    if (like)
        like_cthreads(inst, pd, &requests, &dci);
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));
#define DFN(name) PFN_##name name = (PFN_##name)vkGetDeviceProcAddr(dev, #name)
    DFN(vkGetDeviceQueue);
    VkQueue queue;
    vkGetDeviceQueue(dev, family, 0, &queue);
    double t4 = now_ms();

    DFN(vkCreateShaderModule);
    DFN(vkCreateDescriptorSetLayout);
    DFN(vkCreatePipelineLayout);
    DFN(vkCreatePipelineCache);
    DFN(vkCreateComputePipelines);
    DFN(vkDestroyPipeline);
    DFN(vkDestroyPipelineCache);
    DFN(vkDestroyPipelineLayout);
    DFN(vkDestroyDescriptorSetLayout);
    DFN(vkDestroyShaderModule);
    DFN(vkDestroyDevice);
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = code_size,
                                     .pCode = code};
    VkShaderModule sm;
    CHECK(vkCreateShaderModule(dev, &smci, NULL, &sm));
    VkDescriptorSetLayoutBinding binding = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                            VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo dslci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &binding};
    VkDescriptorSetLayout dsl;
    CHECK(vkCreateDescriptorSetLayout(dev, &dslci, NULL, &dsl));
    /* 128 bytes: the guaranteed minimum, enough for any cthreads parameter block in push
     * constants (a larger one travels in a buffer) */
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &dsl,
                                       .pushConstantRangeCount = 1,
                                       .pPushConstantRanges = &range};
    VkPipelineLayout layout;
    CHECK(vkCreatePipelineLayout(dev, &plci, NULL, &layout));
    double t5 = now_ms();

    VkPipelineCacheCreateInfo pcci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    size_t cache_bytes = 0;
    if (cache_file) { /* read apart from the timing below, as cthreads reads it in Python */
        FILE *f = fopen(cache_file, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            long len = ftell(f);
            fseek(f, 0, SEEK_SET);
            void *data = malloc(len > 0 ? (size_t)len : 1);
            if (len > 0 && fread(data, 1, (size_t)len, f) == (size_t)len) {
                pcci.initialDataSize = cache_bytes = (size_t)len;
                pcci.pInitialData = data;
            }
            fclose(f);
        }
    }
    double t5b = now_ms();
    VkPipelineCache cache;
    if (vkCreatePipelineCache(dev, &pcci, NULL, &cache) != VK_SUCCESS) {
        pcci.initialDataSize = 0; /* as device.c: data the driver refuses is dropped */
        CHECK(vkCreatePipelineCache(dev, &pcci, NULL, &cache));
    }
    double t6 = now_ms();

    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = sm,
                  .pName = entry},
        .layout = layout};
    VkPipeline pipe;
    CHECK(vkCreateComputePipelines(dev, cache, 1, &cpci, NULL, &pipe));
    double t7 = now_ms();

    double dispatch_ms = -1;
    if (code == tiny_spv)
        dispatch_ms = first_dispatch(dev, pd, inst, queue, family, dsl, layout, pipe);
    double t8 = now_ms();

    vkDestroyPipeline(dev, pipe, NULL);
    vkDestroyPipelineCache(dev, cache, NULL);
    vkDestroyPipelineLayout(dev, layout, NULL);
    vkDestroyDescriptorSetLayout(dev, dsl, NULL);
    vkDestroyShaderModule(dev, sm, NULL);
    vkDestroyDevice(dev, NULL);
    vkDestroyInstance(inst, NULL);
    double t9 = now_ms();

    printf("{\"device\": \"");
    for (const char *c = props.deviceName; *c; c++)
        if (*c != '"' && *c != '\\')
            putchar(*c);
    printf("\", \"bda\": %s, \"like_cthreads\": %s, \"cache_bytes\": %zu, "
           "\"dlopen_ms\": %.3f, \"create_instance_ms\": %.3f, "
           "\"enumerate_ms\": %.3f, \"create_device_ms\": %.3f, \"shader_module_layout_ms\": %.3f, "
           "\"create_pipeline_cache_ms\": %.3f, \"create_pipeline_ms\": %.3f, ",
           bda ? "true" : "false", like ? "true" : "false", cache_bytes, t1 - t0, t2 - t1,
           t3 - t2, t4 - t3, t5 - t4, t6 - t5b, t7 - t6);
    if (dispatch_ms >= 0)
        printf("\"first_dispatch_ms\": %.3f, ", t8 - t7);
    printf("\"destroy_ms\": %.3f}\n", t9 - t8);
    return 0;
}
