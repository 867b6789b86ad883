/* compute_backend: the private contract between worker/compute.c (dispatch and argument
 * checks) and the backend files compute_emulate.c, compute_cpu.c and compute_cuda.cu. Each
 * backend fills a vtable and keeps its state behind `impl`. */
#ifndef ORDO_COMPUTE_BACKEND_H
#define ORDO_COMPUTE_BACKEND_H

#include "worker/compute.h"

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
int ordo__compute_cuda_new(const ordo__model_t *m, void **impl, const ordo__compute_ops_t **ops);

/* ordo__compute_cuda_probe returns 1 when a CUDA device is usable, else 0 with *why set. */
int ordo__compute_cuda_probe(const char **why);

#ifdef __cplusplus
}
#endif

#endif
