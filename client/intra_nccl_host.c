/* intra_nccl_host: the plugin side of client/intra.h's NCCL plugin (libordo_nccl.so): its one
 * exported entry point, and the few ordo_common functions intra_nccl.c calls, which forward to
 * the libordo that loaded it (the host table), so the plugin carries no second copy of
 * ordo_common and no error state of its own. Built into the plugin only. */
#include "client/intra.h"
#include "common/error.h"
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>

static const ordo__intra_host_t *host;

/* every level reaches log_write, which checks libordo's own threshold */
int ordo__log_threshold = ORDO_LOG_DEBUG;

int ordo__error_set(int rc, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return host->error_set(rc, "%s", text);
}

const char *ordo__error_text(int rc)
{
    return host->error_text(rc);
}

void ordo__log_write(ordo__log_level_t level, const char *fmt, ...)
{
    if ((int)level < *host->log_threshold) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    host->log_write((int)level, text);
}

__attribute__((visibility("default"))) const ordo__intra_ops_t *
ordo__intra_nccl_plugin(const ordo__intra_host_t *h);

const ordo__intra_ops_t *ordo__intra_nccl_plugin(const ordo__intra_host_t *h)
{
    if (!h || h->abi != ORDO_INTRA_PLUGIN_ABI) return NULL;
    host = h;
    return &ordo__intra_nccl_ops;
}
