/* compute_cuda_load: finds the cuda backend's plugin (libordo_compute_cuda.so,
 * compute_backend.h), loads it once on the first use and never unloads it (CUDA does not
 * survive being unloaded). A process that never asks for cuda never maps cuBLAS or cudart. */
#include "common/error.h"
#include "common/log.h"
#include "common/plugin.h"
#include "worker/compute_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

static const ordo__plugin_t plugin = {
    .file = ORDO_COMPUTE_CUDA_PLUGIN_FILE,
    .env = ORDO_COMPUTE_CUDA_PLUGIN_ENV,
    .entry = ORDO_COMPUTE_CUDA_PLUGIN_ENTRY,
    .missing = "the cuda backend is not installed",
    .hint = "it is built where CMake finds the CUDA toolkit",
};

/* load: from $ORDO_CUDA_PLUGIN, else the program's folder, else its library folder */
static void load(void)
{
    char exe[1024], libdir[1100], why[512];
    const char *env = getenv(plugin.env); /* named, the folders are not looked at */
    if (!ordo__plugin_exe_dir(exe, sizeof exe, why, sizeof why) && !(env && env[0])) {
        snprintf(why_not, sizeof why_not, "cannot find %s: %s (set %s to the plugin's path)",
                 plugin.file, why, plugin.env);
        return;
    }
    snprintf(libdir, sizeof libdir, "%s/%s", exe, ORDO_PLUGIN_LIBDIR);
    const char *dirs[] = {exe, libdir};
    ordo__plugin_found_t f;
    if (!ordo__plugin_load(&plugin, dirs, 2, &f, why_not, sizeof why_not)) return;
    const ordo__compute_cuda_backend_t *b = ((ordo__compute_cuda_plugin_fn)f.entry)(&host);
    if (!b) {
        snprintf(why_not, sizeof why_not, "%s: built for another version of ordo (plugin ABI "
                 "differs)", f.path);
        ordo__plugin_unload(&f);
        return;
    }
    ORDO_DEBUG("compute: the cuda backend from %s", f.path);
    backend = b;
}

const ordo__compute_cuda_backend_t *ordo__compute_cuda(const char **why)
{
    pthread_once(&once, load);
    if (!backend && why) *why = why_not;
    return backend;
}
