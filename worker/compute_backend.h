/* compute_backend: the private contract between worker/compute.c (dispatch and argument
 * checks) and the backend files compute_emulate.c, compute_cpu.c and compute_cuda.cu. Each
 * backend fills a vtable and keeps its state behind `impl`. */
#ifndef ORDO_COMPUTE_BACKEND_H
#define ORDO_COMPUTE_BACKEND_H

#include "core/nn.h"
#include "worker/compute.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ordo__compute_ops {
    int (*bind)(void *impl, float *const *params, float *const *grads);
    int (*set_batch)(void *impl, const float *x, const int *labels, int n);
    int (*forward)(void *impl, int op);
    int (*backward)(void *impl, int op);
    int (*loss)(void *impl, double *loss, int *correct);
    void (*destroy)(void *impl);
} ordo__compute_ops_t;

/* Each constructor makes the backend's state for m; compute.c has checked the arguments. */
int ordo__compute_emulate_new(const ordo__model_t *m, double compute_scale, void **impl,
                              const ordo__compute_ops_t **ops);
int ordo__compute_cpu_new(const ordo__model_t *m, void **impl, const ordo__compute_ops_t **ops);

/* ---- cuda: a plugin ----------------------------------------------------------------------
 * compute_cuda.cu is built (where CMake finds the CUDA toolkit) into the plugin
 * libordo_compute_cuda.so, never into ordo_compute: cuBLAS and cudart are mapped only by a
 * process that asks for cuda (loading libcublasLt alone adds ~94 MB of anonymous memory to a
 * process). compute_cuda_load.c finds and dlopens it the first time (ordo__compute_cuda),
 * and keeps it loaded. The plugin links no ordo library: compute_cuda_host.c forwards the
 * few functions compute_cuda.cu calls (ordo__error_set, core/nn.h's layer table) to the
 * program through the host table, so its errors land in the caller's error state. */
typedef struct ordo__compute_cuda_host {
    int abi; /* ORDO_COMPUTE_CUDA_PLUGIN_ABI */
    int (*error_set)(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    int (*nn_layers)(const ordo__model_t *m, ordo__nn_layer_t **out);
    int64_t (*nn_layer_in_len)(const ordo__nn_layer_t *l);
    int64_t (*nn_layer_out_len)(const ordo__nn_layer_t *l);
} ordo__compute_cuda_host_t;

typedef struct ordo__compute_cuda_backend {
    /* probe returns 1 when a CUDA device is usable, else 0 with *why set (static text) */
    int (*probe)(const char **why);
    /* create makes the backend's state for m (compute.c has checked the arguments) */
    int (*create)(const ordo__model_t *m, void **impl, const ordo__compute_ops_t **ops);
} ordo__compute_cuda_backend_t;

/* the version of the two tables above: a plugin of another version is refused by name */
#define ORDO_COMPUTE_CUDA_PLUGIN_ABI 1
/* the plugin's one exported symbol: ordo__compute_cuda_plugin(host) keeps host (static in the
 * program) and returns the backend, or NULL when host->abi differs */
#define ORDO_COMPUTE_CUDA_PLUGIN_ENTRY "ordo__compute_cuda_plugin"
#define ORDO_COMPUTE_CUDA_PLUGIN_FILE  "libordo_compute_cuda.so"
/* an environment variable naming the plugin's path overrides where it is looked for */
#define ORDO_COMPUTE_CUDA_PLUGIN_ENV "ORDO_CUDA_PLUGIN"
typedef const ordo__compute_cuda_backend_t *(*ordo__compute_cuda_plugin_fn)(
    const ordo__compute_cuda_host_t *host);

/* ordo__compute_cuda returns the cuda backend, loading the plugin on the first call, or NULL
 * with *why (static text) naming the file looked for and why it cannot be used: not built,
 * not found, a library it needs missing (the loader's message), another ABI. Looked for:
 * $ORDO_CUDA_PLUGIN (only there when set), else libordo_compute_cuda.so beside the program
 * (the build tree), else in the library folder next to the program's (installed: bin/ and
 * lib/, the wheel's _native/bin and _native/lib). Thread-safe. */
const ordo__compute_cuda_backend_t *ordo__compute_cuda(const char **why);

#ifdef __cplusplus
}
#endif

#endif
