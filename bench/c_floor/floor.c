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
 *                             cthreads' default, and the copy lane's transfer queue, so the
 *                             difference to the plain floor is what our requests cost the
 *                             driver; --ask PARTS: only those parts of it, a comma list of
 *                             features, atomicf, extmem, extsem, coopmat, bf16, execprops,
 *                             copyq) + vkGetDeviceQueue
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
 * Usage: floor [--bda] [--like-cthreads | --ask PARTS] [--app NAME] [--cache FILE]
 *              [module.spv [entry]]   (--app: the VkApplicationInfo name, default
 *              "cthreads-c-floor")
 *        (default module: the built-in tiny.comp, "main")
 * Prints one JSON object: {"device": ..., "<step>_ms": ..., ...}.
 * The first dispatch and --like-cthreads' requests are in floor_steps.c (shared: floor.h).
 */
#include "floor.h" /* first: it sets _POSIX_C_SOURCE for clock_gettime */

#include <dlfcn.h>
#include <string.h>

#include "tiny_spv.h"

PFN_vkGetInstanceProcAddr gipa;

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

int main(int argc, char **argv)
{
    int bda = 0, argi = 1;
    const char *cache_file = NULL, *ask = NULL, *app_name = "cthreads-c-floor";
    for (; argi < argc && strncmp(argv[argi], "--", 2) == 0; argi++) {
        if (strcmp(argv[argi], "--bda") == 0)
            bda = 1;
        else if (strcmp(argv[argi], "--like-cthreads") == 0)
            ask = "all";
        else if (strcmp(argv[argi], "--ask") == 0 && argi + 1 < argc)
            ask = argv[++argi];
        else if (strcmp(argv[argi], "--app") == 0 && argi + 1 < argc)
            app_name = argv[++argi];
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
                             .pApplicationName = app_name,
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
    if (ask)
        like_cthreads(inst, pd, &requests, &dci, ask);
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
    printf("\", \"bda\": %s, \"like_cthreads\": %s, \"ask\": \"%s\", \"cache_bytes\": %zu, "
           "\"dlopen_ms\": %.3f, \"create_instance_ms\": %.3f, "
           "\"enumerate_ms\": %.3f, \"create_device_ms\": %.3f, \"shader_module_layout_ms\": %.3f, "
           "\"create_pipeline_cache_ms\": %.3f, \"create_pipeline_ms\": %.3f, ",
           bda ? "true" : "false", ask ? "true" : "false", ask ? ask : "", cache_bytes, t1 - t0, t2 - t1,
           t3 - t2, t4 - t3, t5 - t4, t6 - t5b, t7 - t6);
    if (dispatch_ms >= 0)
        printf("\"first_dispatch_ms\": %.3f, ", t8 - t7);
    printf("\"destroy_ms\": %.3f}\n", t9 - t8);
    return 0;
}
