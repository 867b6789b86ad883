/* hello_ordo: a worker written against the public API only (docs/api.md). It joins the
 * cluster of hello_ordo.ini, declares three tensors, lets rank 0 set their initial values, and
 * for ITERS iterations pushes a gradient of (rank + 1) * (t + 1) in every element and pulls
 * the result (push then pull, or one pushpull, on alternate iterations), checking every value. With
 * lr = 1 and aggregate = sum the servers' update makes the value after t iterations v0 - t(t + 1)/2
 * * W(W + 1)/2, exactly.
 *
 *   cc hello_ordo.c $(pkg-config --cflags --libs ordo) -o hello_ordo
 *   ./hello_ordo hello_ordo.ini cluster.scheduler=tcp://HOST:PORT */
#include <ordo/ordo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ITERS /* cc -DITERS=N: a longer run (tests/integration/replicas_declared.sh) */
#define ITERS 5
#endif
#define N_TENSORS 3

static const char *names[N_TENSORS] = {"layer1.weight", "layer1.bias", "layer2.weight"};
static const int64_t sizes[N_TENSORS] = {65536, 256, 2560};

static int die(const char *what, int rc)
{
    fprintf(stderr, "hello_ordo: %s: %s (%s)\n", what, ordo_last_error(), ordo_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    ordo_t *o = NULL;
    int rc = ordo_new(argc > 1 ? argv[1] : NULL, &o);
    if (rc) return die("conf", rc);
    for (int i = 2; i < argc; i++) { /* section.key=value overrides */
        char *eq = strchr(argv[i], '=');
        if (!eq) return fprintf(stderr, "hello_ordo: '%s' is not key=value\n", argv[i]), 2;
        *eq = '\0';
        if ((rc = ordo_set(o, argv[i], eq + 1)) != 0) return die("setting", rc);
    }
    float *val[N_TENSORS], *grad[N_TENSORS];
    for (int k = 0; k < N_TENSORS; k++) {
        if ((rc = ordo_declare(o, names[k], sizes[k], NULL)) != 0) return die("declare", rc);
        val[k] = malloc(sizeof(float) * (size_t)sizes[k]);
        grad[k] = malloc(sizeof(float) * (size_t)sizes[k]);
        if (!val[k] || !grad[k]) return fprintf(stderr, "hello_ordo: out of memory\n"), 1;
    }
    if ((rc = ordo_join(o)) != 0) return die("join", rc);
    int rank = ordo_rank(o), W = ordo_size(o);
    printf("hello_ordo: worker %d of %d, %d servers, ordo %s\n", rank, W, ordo_num_servers(o),
           ordo_version());
    if (rank == 0)
        for (int k = 0; k < N_TENSORS; k++) {
            for (int64_t i = 0; i < sizes[k]; i++)
                val[k][i] = (float)(i % 10 + k);
            if ((rc = ordo_init(o, k, val[k])) != 0) return die("init", rc);
        }

    long wrong = 0, checked = 0;
    ordo_handle_t h[N_TENSORS];
    for (int k = 0; k < N_TENSORS; k++) /* the first layer is needed first: priority k */
        if ((rc = ordo_pull(o, k, val[k], k, &h[k])) != 0) return die("pull", rc);
    for (int t = 0;; t++) {
        /* wait for this iteration's values: ordo_test polls the first layer's (a program
         * would compute between the polls), ordo_wait blocks for the others */
        while ((rc = ordo_test(o, h[0])) == ORDO_ERR_AGAIN) {
        }
        if (rc) return die("test", rc);
        for (int k = 1; k < N_TENSORS; k++)
            if ((rc = ordo_wait(o, h[k], -1)) != 0) return die("wait", rc);
        double shift = (double)t * (t + 1) / 2 * W * (W + 1) / 2;
        for (int k = 0; k < N_TENSORS; k++)
            for (int64_t i = 0; i < sizes[k]; i++, checked++)
                if (val[k][i] != (float)(i % 10 + k - shift) && wrong++ < 5)
                    fprintf(stderr, "hello_ordo: %s[%lld] = %g after %d updates, expected %g\n",
                            names[k], (long long)i, val[k][i], t, i % 10 + k - shift);
        if (t == ITERS) break;
        for (int k = N_TENSORS - 1; k >= 0; k--) { /* backward: last layer's gradient first */
            for (int64_t i = 0; i < sizes[k]; i++)
                grad[k][i] = (float)((rank + 1) * (t + 1));
            if (t % 2 == 0) { /* a push nobody waits for, then the pull of its result */
                if ((rc = ordo_push(o, k, grad[k], k, NULL)) != 0) return die("push", rc);
                if ((rc = ordo_pull(o, k, val[k], k, &h[k])) != 0) return die("pull", rc);
            } else { /* both in one message each way */
                if ((rc = ordo_pushpull(o, k, grad[k], val[k], k, &h[k])) != 0)
                    return die("pushpull", rc);
            }
        }
    }
    if ((rc = ordo_wait_all(o, -1)) != 0) return die("wait_all", rc);
    if ((rc = ordo_barrier(o, -1)) != 0) return die("barrier", rc);
    printf("hello_ordo: worker %d: %d iterations, %ld values checked, %ld wrong\n", rank, ITERS,
           checked, wrong);
    if (wrong)
        ordo_abort(o, "pulled values were wrong");
    else if ((rc = ordo_leave(o)) != 0)
        return die("leave", rc);
    ordo_destroy(&o);
    for (int k = 0; k < N_TENSORS; k++) {
        free(val[k]);
        free(grad[k]);
    }
    return wrong ? 1 : 0;
}
