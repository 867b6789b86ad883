/* groups: a worker written against the public API only (docs/api.md) that hands its whole
 * iterations to the library (ordo_bind), so that whatever path the cluster's plan names
 * carries them: flat pushes, merged groups ([push] mode = merged), or host groups ([cluster]
 * local_size, [intra] backend = shm: the members sum their gradients in shared memory and one
 * owner per tensor pushes and pulls; the value buffers are then the group's shared memory,
 * which only the library writes). It declares four tensors, lets rank 0 send their initial
 * values from its own buffers, and for ITERS iterations computes a "gradient" of
 * (rank + 1) * (t + 1) in every element, in the buffers the library hands out, and takes each
 * value as it arrives, checking it. With lr = 1 and aggregate = sum the value after t updates is
 * v0 - W(W + 1)/2 * t(t + 1)/2, exactly; the program exits 1 when any value differs.
 *
 *   cc groups.c $(pkg-config --cflags --libs ordo) -o groups
 *   ordo-launch groups.ini --worker.command=./groups */
#include <ordo/ordo.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS     6
#define N_TENSORS 4

static const char *names[N_TENSORS] = {"embed.weight", "layer1.weight", "layer1.bias",
                                       "head.weight"};
static const int64_t sizes[N_TENSORS] = {65536, 32768, 256, 2560};

static int die(const char *what, int rc)
{
    fprintf(stderr, "groups: %s: %s (%s)\n", what, ordo_last_error(), ordo_strerror(rc));
    return 1;
}

static float initial(int k, int64_t i)
{
    return (float)(i % 10 + k);
}

/* checks tensor k's values of iteration t; returns the number of wrong elements */
static long check(const float *v, int k, int64_t t, int W)
{
    double drop = W * (W + 1) / 2.0 * (double)(t * (t + 1) / 2);
    long wrong = 0;
    for (int64_t i = 0; i < sizes[k]; i++)
        if (fabs(v[i] - (initial(k, i) - drop)) > 1e-3 * (1 + drop) && wrong++ < 3)
            fprintf(stderr, "groups: %s[%lld] after %lld updates: %g, expected %g\n", names[k],
                    (long long)i, (long long)t, v[i], initial(k, i) - drop);
    return wrong;
}

int main(int argc, char **argv)
{
    ordo_t *o = NULL;
    int rc = ordo_new_args(argc, argv, &o); /* -c CONF --section.key=VALUE, or ORDO_* */
    if (rc) return die("conf", rc);
    for (int k = 0; k < N_TENSORS; k++)
        if ((rc = ordo_declare(o, names[k], sizes[k], NULL)) != 0) return die("declare", rc);
    if ((rc = ordo_join(o)) != 0) return die("join", rc);
    int rank = ordo_rank(o), W = ordo_size(o);
    /* NULL: the conf's [order] pull and policy */
    if ((rc = ordo_bind(o, NULL)) != 0) return die("bind", rc);
    if (rank == 0) {
        /* from the program's own memory: in host groups the value buffers may be the group's
         * shared values, which only the library writes */
        float *init[N_TENSORS];
        for (int k = 0; k < N_TENSORS; k++) {
            init[k] = malloc(sizeof(float) * (size_t)sizes[k]);
            if (!init[k]) return die("init", ORDO_ERR_NOMEM);
            for (int64_t i = 0; i < sizes[k]; i++)
                init[k][i] = initial(k, i);
        }
        rc = ordo_bound_init_from(o, (const float *const *)init);
        for (int k = 0; k < N_TENSORS; k++)
            free(init[k]);
        if (rc) return die("init", rc);
    }
    long wrong = 0, checked = 0;
    for (int64_t t = 0; t < ITERS; t++) {
        if ((rc = ordo_iter_begin(o, t)) != 0) return die("iter_begin", rc);
        /* the forward pass: each tensor as its value of t arrives (early pulls may have
         * brought some already; an arrival of another iteration is not this one's) */
        int have = 0;
        int seen[N_TENSORS] = {0};
        while (have < N_TENSORS) {
            ordo_arrival_t a;
            if ((rc = ordo_next_arrival(o, &a, 60000)) != 0) return die("next_arrival", rc);
            if (a.iter != t || seen[a.tensor]) continue;
            seen[a.tensor] = 1;
            have++;
            wrong += check(ordo_value_buffer(o, a.tensor), a.tensor, t, W);
            checked++;
        }
        /* the backward pass, last tensor first: each gradient in the library's buffer */
        for (int k = N_TENSORS - 1; k >= 0; k--) {
            float *g = ordo_grad_buffer(o, k);
            for (int64_t i = 0; i < sizes[k]; i++)
                g[i] = (float)((rank + 1) * (t + 1));
            if ((rc = ordo_grad_ready(o, k, t)) != 0) return die("grad_ready", rc);
        }
        if ((rc = ordo_iter_end(o, t, 60000)) != 0) return die("iter_end", rc);
        if ((rc = ordo_step(o, 1, NAN)) != 0) return die("step", rc);
    }
    /* the values after the last update */
    if ((rc = ordo_pull_values(o, ITERS, 60000)) != 0) return die("pull_values", rc);
    for (int k = 0; k < N_TENSORS; k++, checked++)
        wrong += check(ordo_value_buffer(o, k), k, ITERS, W);
    printf("groups: worker %d of %d: %ld tensors' values checked, %ld wrong\n", rank, W, checked,
           wrong);
    if ((rc = ordo_leave(o)) != 0) return die("leave", rc);
    ordo_destroy(&o);
    return wrong ? 1 : 0;
}
