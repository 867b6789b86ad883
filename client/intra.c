/* intra: picks an intra-host backend by name, resolves intra.backend = auto for this worker,
 * and finds the NCCL backend: linked in (ordo-worker) or the plugin libordo_nccl.so beside
 * libordo (client/intra.h), loaded once and never unloaded. */
#include "client/intra.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "common/plugin.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

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
static char plugin_why[2048]; /* why it did not load (plugin_ops NULL) */

static const ordo__plugin_t plugin = {
    .file = PLUGIN_FILE,
    .env = PLUGIN_ENV,
    .entry = ORDO_INTRA_PLUGIN_ENTRY,
    .missing = "this libordo was built without NCCL",
    .hint = "the NCCL backend needs the CUDA toolkit and NCCL at build time",
};

/* plugin_load: from $ORDO_NCCL_PLUGIN, else the folder of the object this function is in
 * (libordo.so; a program that links libordo statically: its own folder) */
static void plugin_load(void)
{
    char dir[1024];
    ordo__plugin_dir_of((const void *)plugin_load, dir, sizeof dir);
    const char *dirs[] = {dir};
    ordo__plugin_found_t f;
    if (!ordo__plugin_load(&plugin, dirs, 1, &f, plugin_why, sizeof plugin_why)) return;
    const ordo__intra_ops_t *ops = ((ordo__intra_plugin_fn)f.entry)(&host);
    if (!ops) {
        snprintf(plugin_why, sizeof plugin_why, "%s: built for another version of libordo "
                 "(plugin ABI differs)", f.path);
        ordo__plugin_unload(&f);
        return;
    }
    ORDO_DEBUG("intra: the NCCL backend from %s", f.path);
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
