/* What a device's first vkCreateShaderModule costs, and what it loads (issue 19: on the H200
 * the first pipeline of a warm prepare() takes ~10 ms more than the others).
 *
 * Usage: first_module [--preload LIB ...]
 * Creates an instance and a device (one compute queue, bufferDeviceAddress), then two shader
 * modules of the built-in tiny.comp, timing each. Prints one JSON object: the steps' ms and
 * `loaded_by_module`, the shared objects /proc/self/maps gains during the first module.
 * --preload LIB: dlopen LIB on a thread started before vkCreateInstance (what loading it early,
 * beside the instance and device creation, would save the first module).
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

static void *preload(void *arg)
{
    char **libs = arg;
    for (; *libs; libs++)
        if (!dlopen(*libs, RTLD_NOW | RTLD_LOCAL))
            fprintf(stderr, "first_module: %s\n", dlerror());
    return NULL;
}

int main(int argc, char **argv)
{
    static char before[1 << 16], after[1 << 16];
    char *libs[64] = {0};
    int nlibs = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc && nlibs < 63)
            libs[nlibs++] = argv[++i];
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
    IFN(NULL, vkCreateInstance);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, NULL, &inst));
    double t1 = now_ms();
    IFN(inst, vkEnumeratePhysicalDevices);
    IFN(inst, vkCreateDevice);
    IFN(inst, vkGetDeviceProcAddr);
    uint32_t n = 1;
    VkPhysicalDevice pd;
    vkEnumeratePhysicalDevices(inst, &n, &pd);
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .bufferDeviceAddress = VK_TRUE};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &v12,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));
    double t2 = now_ms();
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
    printf("{\"preloaded\": %d, \"instance_ms\": %.3f, \"device_ms\": %.3f, "
           "\"preload_wait_ms\": %.3f, \"first_module_ms\": %.3f, \"second_module_ms\": %.3f, "
           "\"loaded_by_module\": [",
           nlibs, t1 - t0, t2 - t1, t3 - t2, t5 - t4, t7 - t6);
    int first = 1;
    for (char *line = strtok(after, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(before, line)) {
            printf("%s\"%s\"", first ? "" : ", ", line);
            first = 0;
        }
    printf("]}\n");
    return 0; /* (the process exits: the driver's objects go with it) */
}
