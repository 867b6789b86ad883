/* grow_values: the [worker] command program of integration.sched_restart_grow (public API
 * only). One tensor of N floats, 0 at the start; worker r pushes r + 1 in every element at
 * each iteration (the conf: aggregate = sum, lr = 1), from the iteration it starts at (0, or
 * the one a worker that joins the run is given: ordo_tensor_version) to ITERS, pausing PAUSE
 * ms an iteration so that the run lasts, and reports each iteration (ordo_step). Every value
 * it pulls must be one integer in all elements; it prints the iteration it started at and the
 * final value, which the test checks against the iterations the workers joined at.
 *
 *   grow_values ITERS PAUSE_MS */
#include <ordo/ordo.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096

static int die(const char *what, int rc)
{
    fprintf(stderr, "grow_values: %s: %s (%s)\n", what, ordo_last_error(), ordo_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) return fprintf(stderr, "usage: grow_values ITERS PAUSE_MS\n"), 2;
    int64_t iters = atoll(argv[1]);
    long pause_ms = atol(argv[2]);
    static float val[N], grad[N];
    ordo_t *o = NULL;
    int rc = ordo_new(NULL, &o);
    if (rc) return die("conf", rc);
    if ((rc = ordo_declare(o, "w", N, NULL)) != 0) return die("declare", rc);
    if ((rc = ordo_join(o)) != 0) return die("join", rc);
    int rank = ordo_rank(o);
    int64_t t0 = ordo_tensor_version(o, 0);
    printf("grow_values: worker %d starts at iteration %lld\n", rank, (long long)t0);
    fflush(stdout);
    if (rank == 0 && t0 == 0 && (rc = ordo_init(o, 0, val)) != 0) return die("init", rc);
    long wrong = 0;
    ordo_handle_t h;
    if ((rc = ordo_pull(o, 0, val, 0, &h)) != 0) return die("pull", rc);
    struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000};
    for (int64_t t = t0;; t++) {
        if ((rc = ordo_wait(o, h, -1)) != 0) return die("wait", rc);
        for (int i = 0; i < N; i++)
            if (val[i] != val[0] || val[0] != floorf(val[0])) wrong++;
        if (t == iters) break;
        nanosleep(&pause, NULL); /* the computation */
        for (int i = 0; i < N; i++)
            grad[i] = (float)(rank + 1);
        if ((rc = ordo_push(o, 0, grad, 0, NULL)) != 0) return die("push", rc);
        if ((rc = ordo_pull(o, 0, val, 0, &h)) != 0) return die("pull", rc);
        if ((rc = ordo_step(o, 1, NAN)) != 0) return die("step", rc);
    }
    printf("grow_values: worker %d: final value %.1f after iteration %lld, %ld values wrong\n",
           rank, (double)val[0], (long long)iters, wrong);
    fflush(stdout);
    if ((rc = ordo_leave(o)) != 0) return die("leave", rc);
    ordo_destroy(&o);
    return wrong ? 1 : 0;
}
