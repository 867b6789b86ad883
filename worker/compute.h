/* compute: the worker's compute backends behind one interface. A backend runs one op of an
 * ordo model at a time, forward or backward, so the executor can start each forward op as
 * soon as its parameters arrive and push each op's gradients as soon as its backward ends.
 * Backends (common/conf.h's ordo__compute_t): emulate sleeps each op's profiled time times
 * compute_scale (any model); cpu runs the real kernels of worker/kernels.h on the built-in
 * networks (worker/nn.h); cuda runs the same ops with cuBLAS on the GPU (built when
 * ORDO_HAVE_CUDA). A context is used by one thread at a time. */
#ifndef ORDO_COMPUTE_H
#define ORDO_COMPUTE_H

#include <stdbool.h>

#include "common/conf.h"
#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ordo__compute_ctx_t is one backend instance bound to one model (ordo__compute_t, the name
 * the module's stem would give it, is conf.h's backend enum). */
typedef struct ordo__compute_ctx ordo__compute_ctx_t;

/* ordo__compute_new makes a context of backend kind (ORDO_COMPUTE_EMULATE, _CPU or _CUDA) for
 * model m, which must outlive it. It allocates every workspace for batches of up to
 * m->batch samples, so iterations allocate nothing. compute_scale (> 0) multiplies emulated
 * op times. Fails with ORDO_ERR_NOTSUP when cpu/cuda cannot run m's ops (detail names the op)
 * or when cuda is not built or no CUDA device is present ("no CUDA device"). */
int ordo__compute_new(int kind, const ordo__model_t *m, double compute_scale,
                     ordo__compute_ctx_t **out);

/* ordo__compute_bind gives the context the caller-owned per-parameter buffers, in model
 * parameter order (m->params[i].numel floats each): forward reads params[i], backward
 * overwrites grads[i] with the gradient of the batch's mean loss. The buffers must stay
 * valid until the next bind or destroy. emulate accepts NULL arrays (it touches nothing). */
int ordo__compute_bind(ordo__compute_ctx_t *c, float *const *params, float *const *grads);

/* ordo__compute_set_batch sets the input of the next forward pass: x holds n samples of the
 * network's input (1x28x28 floats each), labels n classes in [0, 10); 1 <= n <= m->batch.
 * cpu copies nothing (x and labels must stay valid until the pass ends); cuda copies both
 * to the device. emulate ignores the data. */
int ordo__compute_set_batch(ordo__compute_ctx_t *c, const float *x, const int *labels, int n);

/* ordo__compute_forward runs forward op `op`. Ops run in model order; an op reads the
 * outputs of its inputs and its parameters' current values from the bound buffers. */
int ordo__compute_forward(ordo__compute_ctx_t *c, int op);

/* ordo__compute_backward runs backward op `op`, in reverse model order after a complete
 * forward pass; when it returns, the grads of op's parameters are final in the bound
 * buffers (cuda copies them back before returning). */
int ordo__compute_backward(ordo__compute_ctx_t *c, int op);

/* ordo__compute_loss reports the last forward pass's mean loss and the number of samples
 * classified right (emulate reports 0 and 0). */
int ordo__compute_loss(ordo__compute_ctx_t *c, double *loss, int *correct);

/* ordo__compute_kind returns the context's backend kind. */
int ordo__compute_kind(const ordo__compute_ctx_t *c);

/* ordo__compute_calls returns how many forward and backward op calls the context ran. */
void ordo__compute_calls(const ordo__compute_ctx_t *c, long *forward, long *backward);

/* ordo__compute_kind_name returns "emulate", "cpu", "cuda" or "unknown". */
const char *ordo__compute_kind_name(int kind);

/* ordo__compute_cuda_available reports whether the cuda backend is built and a CUDA device
 * is present; when not, *why (if not NULL) gets a static reason such as "no CUDA device". */
bool ordo__compute_cuda_available(const char **why);

/* ordo__compute_destroy frees *c (device memory included) and sets it to NULL; NULL-safe. */
void ordo__compute_destroy(ordo__compute_ctx_t **c);

#ifdef __cplusplus
}
#endif

#endif
