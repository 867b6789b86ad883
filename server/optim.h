/* optim: the server's optimizer, SGD with momentum and weight decay in PyTorch's form
 * (torch.optim.SGD without dampening or Nesterov; v starts at zero, so the first v is g):
 *   g = scale * sum_of_pushes + weight_decay * w;   v = momentum * v + g;   w -= lr * v
 * (without momentum, w -= lr * g). scale is 1/W for [optimizer] aggregate = mean. With
 * average set the value is the aggregate itself, w = scale * sum_of_pushes (a tensor whose
 * workers run their own optimizer on the averaged gradient). */
#ifndef ORDO_OPTIM_H
#define ORDO_OPTIM_H

#include <stdint.h>

typedef struct ordo__optim {
    float lr, momentum, weight_decay;
    int average; /* 1: no update rule, the value becomes the aggregate of the pushes */
} ordo__optim_t;

/* ordo__optim_step updates n weights out_w from w (they may alias) with the summed gradient
 * g times scale; mom (n floats, NULL when momentum is 0) holds the velocity. Contiguous,
 * branch-free loops the compiler vectorizes. */
void ordo__optim_step(const ordo__optim_t *o, float *out_w, const float *w, float *mom,
                     const float *g, float scale, int64_t n);

/* ordo__optim_step_sum is ordo__optim_step with the gradient acc + g (acc may be NULL for
 * g alone): the last push of an iteration is summed and applied in one pass. */
void ordo__optim_step_sum(const ordo__optim_t *o, float *out_w, const float *w, float *mom,
                         const float *acc, const float *g, float scale, int64_t n);


#endif
