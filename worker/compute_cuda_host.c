/* compute_cuda_host: the plugin side of the cuda backend's plugin (libordo_compute_cuda.so,
 * worker/compute_backend.h): its one exported entry point, and the few functions
 * compute_cuda.cu calls from common/ and core/, which forward to the program that loaded it
 * (the host table), so the plugin carries no copy of them and no error state of its own.
 * Built into the plugin only. */
#include "common/error.h"
#include "worker/compute_backend.h"

#include <stdarg.h>
#include <stdio.h>

static const ordo__compute_cuda_host_t *host;

int ordo__error_set(int rc, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return host->error_set(rc, "%s", text);
}

int ordo__nn_layers(const ordo__model_t *m, ordo__nn_layer_t **out)
{
    return host->nn_layers(m, out);
}

int64_t ordo__nn_layer_in_len(const ordo__nn_layer_t *l)
{
    return host->nn_layer_in_len(l);
}

int64_t ordo__nn_layer_out_len(const ordo__nn_layer_t *l)
{
    return host->nn_layer_out_len(l);
}

/* in compute_cuda.cu */
extern const ordo__compute_cuda_backend_t ordo__compute_cuda_backend;

__attribute__((visibility("default"))) const ordo__compute_cuda_backend_t *
ordo__compute_cuda_plugin(const ordo__compute_cuda_host_t *h);

const ordo__compute_cuda_backend_t *ordo__compute_cuda_plugin(const ordo__compute_cuda_host_t *h)
{
    if (!h || h->abi != ORDO_COMPUTE_CUDA_PLUGIN_ABI) return NULL;
    host = h;
    return &ordo__compute_cuda_backend;
}
