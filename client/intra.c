/* intra: picks an intra-host backend by name, resolves intra.backend = auto for this worker,
 * and finds the NCCL backend: linked in (ordo-worker) or the plugin libordo_nccl.so beside
 * libordo (client/intra.h), loaded once and never unloaded. */
#include "client/intra.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PLUGIN_FILE "libordo_nccl.so"
#define PLUGIN_ENV  "ORDO_NCCL_PLUGIN"

/* ---- the plugin ---------------------------------------------------------------------- */

static void host_log_write(int level, const char *text)
{
    ordo__log_write((ordo__log_level_t)level, "%s", text);
}

static const ordo__intra_host_t host = {
    .abi = ORDO_INTRA_PLUGIN_ABI,
    .error_set = ordo__error_set,
    .error_text = ordo__error_text,
    .log_write = host_log_write,
    .log_threshold = &ordo__log_threshold,
};

static pthread_once_t plugin_once = PTHREAD_ONCE_INIT;
static const ordo__intra_ops_t *plugin_ops;
static char plugin_why[1024]; /* why it did not load (plugin_ops NULL) */

/* plugin_path: $ORDO_NCCL_PLUGIN, else libordo_nccl.so in the folder of the object this
 * function is in (libordo.so; a program that links libordo statically: its own folder) */
static void plugin_path(char *path, size_t size, bool *from_env)
{
    const char *env = getenv(PLUGIN_ENV);
    *from_env = env && env[0];
    if (*from_env) {
        snprintf(path, size, "%s", env);
        return;
    }
    Dl_info info;
    const char *self = dladdr((void *)plugin_path, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(self, '/');
    if (slash)
        snprintf(path, size, "%.*s/%s", (int)(slash - self), self, PLUGIN_FILE);
    else
        snprintf(path, size, "%s", PLUGIN_FILE); /* the loader's search path */
}

static void plugin_load(void)
{
    char path[512];
    bool from_env;
    plugin_path(path, sizeof path, &from_env);
    struct stat st;
    if (!from_env && strchr(path, '/') && stat(path, &st) != 0 && errno == ENOENT) {
        snprintf(plugin_why, sizeof plugin_why,
                 "this libordo was built without NCCL (no %s; the NCCL backend needs the CUDA "
                 "toolkit and NCCL at build time, or set " PLUGIN_ENV " to the plugin)",
                 path);
        return;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(plugin_why, sizeof plugin_why, "cannot load %s%s: %s", path,
                 from_env ? " (" PLUGIN_ENV ")" : "", dlerror());
        return;
    }
    ordo__intra_plugin_fn entry = (ordo__intra_plugin_fn)dlsym(dl, ORDO_INTRA_PLUGIN_ENTRY);
    const ordo__intra_ops_t *ops = entry ? entry(&host) : NULL;
    if (!ops) {
        snprintf(plugin_why, sizeof plugin_why, "%s: %s", path,
                 entry ? "built for another version of libordo (plugin ABI differs)"
                       : "no " ORDO_INTRA_PLUGIN_ENTRY " in it");
        dlclose(dl);
        return;
    }
    /* kept loaded: CUDA and NCCL do not survive being unloaded */
    ORDO_DEBUG("intra: the NCCL backend from %s", path);
    plugin_ops = ops;
}

/* nccl_ops: the linked-in backend, else the plugin's; NULL with why filled when neither */
static const ordo__intra_ops_t *nccl_ops(const char **why)
{
    if (&ordo__intra_nccl_ops != NULL) return &ordo__intra_nccl_ops;
    pthread_once(&plugin_once, plugin_load);
    *why = plugin_why;
    return plugin_ops;
}

/* ---- choosing ------------------------------------------------------------------------ */

int ordo__intra_new(const char *backend, const ordo__intra_opts_t *o, ordo__intra_t **out)
{
    const ordo__intra_ops_t *ops = NULL;
    if (backend && strcmp(backend, "shm") == 0) ops = &ordo__intra_shm_ops;
    if (backend && strcmp(backend, "nccl") == 0) {
        const char *why = "";
        if (!(ops = nccl_ops(&why)))
            return ordo__error_set(ORDO_ERR_NOTSUP, "intra.backend nccl: %s", why);
    }
    if (!ops)
        return ordo__error_set(ORDO_ERR_INVAL, "intra.backend %s: no such backend (shm, nccl)",
                              backend ? backend : "(none)");
    return ops->create(o, out);
}

const char *ordo__intra_auto(int device)
{
    if (device != ORDO_DEVICE_CUDA) return "shm";
    const char *why = "";
    if (nccl_ops(&why)) return "nccl";
    ORDO_INFO("intra.backend = auto: CUDA tensors, but the NCCL backend cannot be used (%s): "
              "shm, through host memory",
              why);
    return "shm";
}

void ordo__intra_destroy(ordo__intra_t **pit)
{
    ordo__intra_t *it = *pit;
    if (!it) return;
    it->ops->destroy(it);
    *pit = NULL;
}
