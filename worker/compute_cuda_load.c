/* compute_cuda_load: finds the cuda backend's plugin (libordo_compute_cuda.so,
 * compute_backend.h), loads it once on the first use and never unloads it (CUDA does not
 * survive being unloaded). A process that never asks for cuda never maps cuBLAS or cudart. */
#include "common/error.h"
#include "common/log.h"
#include "worker/compute_backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ORDO_PLUGIN_LIBDIR: the library folder relative to the programs' (CMake: "../lib") */
#ifndef ORDO_PLUGIN_LIBDIR
#define ORDO_PLUGIN_LIBDIR "../lib"
#endif

static const ordo__compute_cuda_host_t host = {
    .abi = ORDO_COMPUTE_CUDA_PLUGIN_ABI,
    .error_set = ordo__error_set,
    .nn_layers = ordo__nn_layers,
    .nn_layer_in_len = ordo__nn_layer_in_len,
    .nn_layer_out_len = ordo__nn_layer_out_len,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const ordo__compute_cuda_backend_t *backend;
static char why_not[4096]; /* why it did not load (backend NULL) */

/* find fills path with where the plugin is: $ORDO_CUDA_PLUGIN; else the first of the
 * program's folder and its library folder that holds it. Returns false, why_not filled,
 * when neither does. */
static bool find(char *path, size_t size, bool *from_env)
{
    const char *env = getenv(ORDO_COMPUTE_CUDA_PLUGIN_ENV);
    *from_env = env && env[0];
    if (*from_env) {
        snprintf(path, size, "%s", env);
        return true;
    }
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || n == (ssize_t)sizeof exe - 1) {
        snprintf(why_not, sizeof why_not,
                 "cannot find " ORDO_COMPUTE_CUDA_PLUGIN_FILE ": /proc/self/exe: %s (set "
                 ORDO_COMPUTE_CUDA_PLUGIN_ENV " to the plugin's path)",
                 n <= 0 ? strerror(errno) : "a path too long");
        return false;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    char beside[1100], libdir[1200];
    snprintf(beside, sizeof beside, "%s/%s", exe, ORDO_COMPUTE_CUDA_PLUGIN_FILE);
    snprintf(libdir, sizeof libdir, "%s/%s/%s", exe, ORDO_PLUGIN_LIBDIR,
             ORDO_COMPUTE_CUDA_PLUGIN_FILE);
    struct stat st;
    if (stat(beside, &st) == 0) {
        snprintf(path, size, "%s", beside);
        return true;
    }
    if (stat(libdir, &st) == 0) {
        snprintf(path, size, "%s", libdir);
        return true;
    }
    snprintf(why_not, sizeof why_not,
             "the cuda backend is not installed: no %s and no %s (it is built where CMake finds "
             "the CUDA toolkit; or set " ORDO_COMPUTE_CUDA_PLUGIN_ENV " to the plugin's path)",
             beside, libdir);
    return false;
}

static void load(void)
{
    char path[1200];
    bool from_env;
    if (!find(path, sizeof path, &from_env)) return;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(why_not, sizeof why_not, "cannot load %s%s: %s", path,
                 from_env ? " (" ORDO_COMPUTE_CUDA_PLUGIN_ENV ")" : "", dlerror());
        return;
    }
    ordo__compute_cuda_plugin_fn entry =
        (ordo__compute_cuda_plugin_fn)dlsym(dl, ORDO_COMPUTE_CUDA_PLUGIN_ENTRY);
    const ordo__compute_cuda_backend_t *b = entry ? entry(&host) : NULL;
    if (!b) {
        snprintf(why_not, sizeof why_not, "%s: %s", path,
                 entry ? "built for another version of ordo (plugin ABI differs)"
                       : "no " ORDO_COMPUTE_CUDA_PLUGIN_ENTRY " in it");
        dlclose(dl);
        return;
    }
    ORDO_DEBUG("compute: the cuda backend from %s", path);
    backend = b;
}

const ordo__compute_cuda_backend_t *ordo__compute_cuda(const char **why)
{
    pthread_once(&once, load);
    if (!backend && why) *why = why_not;
    return backend;
}
