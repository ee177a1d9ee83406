/* What a device's first vkCreateShaderModule and first compute pipeline cost, and what each
 * loads (issue 19: on the H200 the first pipeline of a warm prepare() takes ~10 ms more than
 * the others).
 *
 * Usage: first_module [--preload LIB ...] [--app-cache] [--push] [--warm-up MS] [--ask PARTS]
 *                     [--api13] [--open-thread]
 * Creates an instance and a device (one compute queue, bufferDeviceAddress), then two shader
 * modules of the built-in tiny.comp and a compute pipeline of each (no pipeline cache: the
 * driver's own disk cache is whatever the environment gives), timing each. Prints one JSON
 * object: the steps' ms, `loaded_by_module` and `loaded_by_pipeline`, the shared objects
 * /proc/self/maps gains during the first module and during the first pipeline.
 * --preload LIB: dlopen LIB on a thread started before vkCreateInstance (what loading it early,
 * beside the instance and device creation, would save the first module and pipeline).
 * --app-cache: the pipelines go through an (empty) VkPipelineCache of the application, as
 * cthreads' do (does the driver's disk cache still serve them?). --push: the pipeline layout
 * has 128 bytes of push constants, as cthreads' layouts do. --warm-up MS: right after
 * vkCreateDevice a thread builds a pipeline of a second module (tiny.comp with another
 * workgroup width: no in-memory hit for the measured one) while the main thread sleeps MS ms
 * (a kernel's frontend), then the measured pipelines are built (does the driver's first-build
 * cost go with the first pipeline, whichever it is?). --ask PARTS: the device asks for those
 * parts of what cthreads asks (floor_steps.c's like_cthreads: features, atomicf, extmem,
 * extsem, coopmat, bf16, execprops, copyq, or all). --api13: the instance asks for Vulkan 1.3,
 * as cthreads' does. --open-thread: the instance and device are created on a thread that
 * ends before the pipelines are made (as prepare()'s opener thread). Build: gcc first_module.c floor_steps.c -ldl -lpthread.
 */
#include "floor.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "tiny_spv.h"

PFN_vkGetInstanceProcAddr gipa;

/* the paths of the shared objects mapped now, one per line, into buf */
static void mapped(char *buf, size_t size)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    size_t used = 0;
    buf[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path || !strstr(path, ".so"))
            continue;
        path[strcspn(path, "\n")] = '\0';
        if (strstr(buf, path))
            continue;
        size_t n = strlen(path);
        if (used + n + 2 >= size)
            break;
        memcpy(buf + used, path, n);
        used += n;
        buf[used++] = '\n';
        buf[used] = '\0';
    }
    if (f)
        fclose(f);
}

/* the lines of `after` missing from `before`, as a JSON list (strtok: `after` is cut up) */
static void print_gained(const char *before, char *after)
{
    int first = 1;
    printf("[");
    for (char *line = strtok(after, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(before, line)) {
            printf("%s\"%s\"", first ? "" : ", ", line);
            first = 0;
        }
    printf("]");
}

static void *preload(void *arg)
{
    char **libs = arg;
    for (; *libs; libs++)
        if (!dlopen(*libs, RTLD_NOW | RTLD_LOCAL))
            fprintf(stderr, "first_module: %s\n", dlerror());
    return NULL;
}

/* --warm-up's thread: one pipeline, its time in ms */
typedef struct {
    VkDevice dev;
    PFN_vkCreateComputePipelines create_pipes;
    VkPipelineCache cache;
    VkComputePipelineCreateInfo cpci;
    double ms;
} WarmUp;

static void *warm_up(void *arg)
{
    WarmUp *w = arg;
    VkPipeline p;
    double t = now_ms();
    CHECK(w->create_pipes(w->dev, w->cache, 1, &w->cpci, NULL, &p));
    w->ms = now_ms() - t;
    return NULL;
}

/* the instance and the device, on whichever thread calls it (--open-thread: one that exits) */
typedef struct {
    int api13;
    const char *ask;
    VkInstance inst;
    VkPhysicalDevice pd;
    VkDevice dev;
    PFN_vkGetDeviceProcAddr get_device_proc;
    double t1, t2;
} Opened;

static void *open_device(void *arg)
{
    Opened *o = arg;
    IFN(NULL, vkCreateInstance);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .apiVersion = o->api13 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    CHECK(vkCreateInstance(&ici, NULL, &o->inst));
    o->t1 = now_ms();
    IFN(o->inst, vkEnumeratePhysicalDevices);
    IFN(o->inst, vkCreateDevice);
    IFN(o->inst, vkGetDeviceProcAddr);
    uint32_t n = 1;
    vkEnumeratePhysicalDevices(o->inst, &n, &o->pd);
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .bufferDeviceAddress = VK_TRUE};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &v12,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    Requests requests;
    if (o->ask)
        like_cthreads(o->inst, o->pd, &requests, &dci, o->ask);
    CHECK(vkCreateDevice(o->pd, &dci, NULL, &o->dev));
    o->t2 = now_ms();
    o->get_device_proc = vkGetDeviceProcAddr;
    return NULL;
}

int main(int argc, char **argv)
{
    static char before[1 << 16], after[1 << 16];
    char *libs[64] = {0};
    int nlibs = 0, app_cache = 0, push = 0;
    double warm_up_sleep = -1;
    const char *ask = NULL;
    int api13 = 0, open_thread = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc && nlibs < 63)
            libs[nlibs++] = argv[++i];
        else if (strcmp(argv[i], "--app-cache") == 0)
            app_cache = 1;
        else if (strcmp(argv[i], "--push") == 0)
            push = 1;
        else if (strcmp(argv[i], "--warm-up") == 0 && i + 1 < argc)
            warm_up_sleep = atof(argv[++i]);
        else if (strcmp(argv[i], "--ask") == 0 && i + 1 < argc)
            ask = argv[++i];
        else if (strcmp(argv[i], "--api13") == 0)
            api13 = 1;
        else if (strcmp(argv[i], "--open-thread") == 0)
            open_thread = 1;
    double t0 = now_ms();
    pthread_t th;
    if (nlibs)
        pthread_create(&th, NULL, preload, libs);
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "first_module: %s\n", dlerror());
        return 1;
    }
    gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    Opened o = {.api13 = api13, .ask = ask};
    if (open_thread) { /* the thread ends before any pipeline is made, as prepare()'s opener */
        pthread_t opener;
        pthread_create(&opener, NULL, open_device, &o);
        pthread_join(opener, NULL);
    } else {
        open_device(&o);
    }
    VkInstance inst = o.inst;
    VkDevice dev = o.dev;
    PFN_vkGetDeviceProcAddr vkGetDeviceProcAddr = o.get_device_proc;
    (void)inst;
    double t1 = o.t1, t2 = o.t2;
    if (nlibs)
        pthread_join(th, NULL);
    double t3 = now_ms();
    PFN_vkCreateShaderModule create_module =
        (PFN_vkCreateShaderModule)vkGetDeviceProcAddr(dev, "vkCreateShaderModule");
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = sizeof tiny_spv, .pCode = tiny_spv};
    VkShaderModule sm1, sm2;
    mapped(before, sizeof before);
    double t4 = now_ms();
    CHECK(create_module(dev, &smci, NULL, &sm1));
    double t5 = now_ms();
    mapped(after, sizeof after);
    double t6 = now_ms();
    CHECK(create_module(dev, &smci, NULL, &sm2));
    double t7 = now_ms();
    PFN_vkCreateDescriptorSetLayout create_dsl =
        (PFN_vkCreateDescriptorSetLayout)vkGetDeviceProcAddr(dev, "vkCreateDescriptorSetLayout");
    PFN_vkCreatePipelineLayout create_layout =
        (PFN_vkCreatePipelineLayout)vkGetDeviceProcAddr(dev, "vkCreatePipelineLayout");
    PFN_vkCreateComputePipelines create_pipes =
        (PFN_vkCreateComputePipelines)vkGetDeviceProcAddr(dev, "vkCreateComputePipelines");
    VkDescriptorSetLayoutBinding binding = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                            VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo dslci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 1,
        .pBindings = &binding};
    VkDescriptorSetLayout dsl;
    CHECK(create_dsl(dev, &dslci, NULL, &dsl));
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1, .pSetLayouts = &dsl,
                                       .pushConstantRangeCount = push ? 1 : 0,
                                       .pPushConstantRanges = &range};
    VkPipelineLayout layout;
    CHECK(create_layout(dev, &plci, NULL, &layout));
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = sm1, .pName = "main"},
        .layout = layout};
    VkPipelineCache cache = VK_NULL_HANDLE;
    if (app_cache) {
        PFN_vkCreatePipelineCache create_cache =
            (PFN_vkCreatePipelineCache)vkGetDeviceProcAddr(dev, "vkCreatePipelineCache");
        VkPipelineCacheCreateInfo pcci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
        CHECK(create_cache(dev, &pcci, NULL, &cache));
    }
    WarmUp w = {.dev = dev, .create_pipes = create_pipes, .cache = cache, .cpci = cpci, .ms = -1};
    pthread_t warm_thread;
    if (warm_up_sleep >= 0) {
        static uint32_t other[sizeof tiny_spv / 4];
        memcpy(other, tiny_spv, sizeof tiny_spv);
        for (size_t i = 0; i + 3 < sizeof other / 4; i++) /* OpConstant %uint %0x1a 64 -> 32 */
            if (other[i] == 0x0004002b && other[i + 2] == 0x1a && other[i + 3] == 64)
                other[i + 3] = 32;
        VkShaderModuleCreateInfo oci = smci;
        oci.pCode = other;
        CHECK(create_module(dev, &oci, NULL, &w.cpci.stage.module));
        pthread_create(&warm_thread, NULL, warm_up, &w);
        struct timespec ts = {(time_t)(warm_up_sleep / 1e3),
                              (long)((warm_up_sleep - 1e3 * (long)(warm_up_sleep / 1e3)) * 1e6)};
        nanosleep(&ts, NULL);
    }
    static char before_pipe[1 << 16], after_pipe[1 << 16];
    VkPipeline p1, p2;
    mapped(before_pipe, sizeof before_pipe);
    double t8 = now_ms();
    CHECK(create_pipes(dev, cache, 1, &cpci, NULL, &p1));
    double t9 = now_ms();
    mapped(after_pipe, sizeof after_pipe);
    cpci.stage.module = sm2;
    double t10 = now_ms();
    CHECK(create_pipes(dev, cache, 1, &cpci, NULL, &p2));
    double t11 = now_ms();
    if (warm_up_sleep >= 0)
        pthread_join(warm_thread, NULL);
    printf("{\"ask\": \"%s\", \"api13\": %d, \"open_thread\": %d, ", ask ? ask : "", api13,
           open_thread);
    printf("\"app_cache\": %d, \"push\": %d, \"warm_up_sleep_ms\": %.1f, "
           "\"warm_up_pipeline_ms\": %.3f, ", app_cache, push, warm_up_sleep, w.ms);
    printf("\"preloaded\": %d, \"instance_ms\": %.3f, \"device_ms\": %.3f, "
           "\"preload_wait_ms\": %.3f, \"first_module_ms\": %.3f, \"second_module_ms\": %.3f, "
           "\"first_pipeline_ms\": %.3f, \"second_pipeline_ms\": %.3f, \"loaded_by_module\": ",
           nlibs, t1 - t0, t2 - t1, t3 - t2, t5 - t4, t7 - t6, t9 - t8, t11 - t10);
    print_gained(before, after);
    printf(", \"loaded_by_pipeline\": ");
    print_gained(before_pipe, after_pipe);
    printf("}\n");
    return 0; /* (the process exits: the driver's objects go with it) */
}
