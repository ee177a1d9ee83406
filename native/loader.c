/* cthreads._native — loader: dlopen of the Vulkan loader and the global entry-point table.
 *
 * Python API: none directly; module.c exposes `load(libname) -> None` (raises
 * VulkanLoaderNotFound) and `loaded() -> bool`, both built on these functions.
 * The library is opened once per process, on first use, never at import.
 */
#include "cthreads.h"

#include <dlfcn.h>

CtGlobalFns ct_gfn;
PFN_vkGetInstanceProcAddr ct_get_instance_proc = NULL;
static void *ct_lib = NULL;

int
ct_loader_ready(void)
{
    return ct_get_instance_proc != NULL;
}

int
ct_loader_load(CtState *st, const char *libname)
{
    if (ct_get_instance_proc != NULL)
        return 0;
    void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        ct_raise(st->VulkanLoaderNotFound,
                 "could not load the Vulkan loader '%s' (%s). Install it with "
                 "'apt-get install libvulkan1 mesa-vulkan-drivers' (software Vulkan) or a GPU "
                 "driver, or point CTHREADS_VULKAN_LIBRARY at libvulkan.so.1",
                 libname, why ? why : "dlopen failed");
        return -1;
    }
    PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    if (gipa == NULL) {
        dlclose(lib);
        ct_raise(st->VulkanLoaderNotFound,
                 "'%s' does not export vkGetInstanceProcAddr: it is not a Vulkan loader. "
                 "Install libvulkan1 or fix CTHREADS_VULKAN_LIBRARY", libname);
        return -1;
    }
#define CT_LOAD_GLOBAL(name) ct_gfn.name = (PFN_##name)gipa(NULL, #name);
    CT_GLOBAL_FUNCS(CT_LOAD_GLOBAL)
#undef CT_LOAD_GLOBAL
    if (ct_gfn.vkCreateInstance == NULL || ct_gfn.vkEnumerateInstanceExtensionProperties == NULL ||
        ct_gfn.vkEnumerateInstanceLayerProperties == NULL) {
        dlclose(lib);
        memset(&ct_gfn, 0, sizeof ct_gfn);
        ct_raise(st->VulkanLoaderNotFound,
                 "the Vulkan loader '%s' lacks vkCreateInstance. Reinstall libvulkan1", libname);
        return -1;
    }
    ct_lib = lib;
    ct_get_instance_proc = gipa;
    return 0;
}
