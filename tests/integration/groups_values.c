/* groups_values: a bound-model worker written against the public API only (like
 * examples/groups.c, built and run by groups_example.sh) that checks where its value buffers
 * are and what they hold in host groups. Each worker reads /proc/self/maps and counts the
 * tensors whose ordo_value_buffer lies in the group's shared-memory segment (/dev/shm/ordo-*):
 * with [intra] values = shared, all of them, with copy none (argv[1]: "shared" or "copy").
 * Rank 0 checks that ordo_bound_init is refused when the buffers are shared, naming
 * ordo_bound_init_from, and sends the initial values with ordo_bound_init_from. In every
 * iteration t each tensor's buffer must hold exactly its value of t when it arrives and still
 * after the whole forward pass; between iterations t and t + 1, after ordo_pull_values(t + 1),
 * every buffer must hold its value of t + 1. With lr = 1 and aggregate = sum the value after
 * t updates is v0 - W(W + 1)/2 * t(t + 1)/2 (each worker's gradient is (rank + 1)(t + 1)).
 * In iteration 1 ordo_replan must be refused (ORDO_ERR_INVAL, naming the iteration and where
 * a bound model's re-plan belongs) and the run go on. Prints one line per worker; exits 1
 * when anything differs. */
#include <ordo/ordo.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS     5
#define N_TENSORS 3

static const char *names[N_TENSORS] = {"a.weight", "b.weight", "b.bias"};
static const int64_t sizes[N_TENSORS] = {300000, 4096, 100};

static int die(const char *what, int rc)
{
    fprintf(stderr, "groups_values: %s: %s (%s)\n", what, ordo_last_error(), ordo_strerror(rc));
    return 1;
}

static float initial(int k, int64_t i)
{
    return (float)(i % 7 + 10 * k);
}

/* tensor k's elements that differ from its value after t updates */
static long check(const float *v, int k, int64_t t, int W, const char *when)
{
    double drop = W * (W + 1) / 2.0 * (double)(t * (t + 1) / 2);
    long wrong = 0;
    for (int64_t i = 0; i < sizes[k]; i++)
        if (fabs(v[i] - (initial(k, i) - drop)) > 1e-3 * (1 + drop) && wrong++ < 2)
            fprintf(stderr, "groups_values: %s: %s[%lld] after %lld updates: %g, expected %g\n",
                    when, names[k], (long long)i, (long long)t, v[i], initial(k, i) - drop);
    return wrong;
}

/* is p inside a mapping of a file /dev/shm/ordo-* (the group's segment, unlinked once every
 * member attached: "(deleted)" follows the name)? */
static int in_segment(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[512];
    int found = 0;
    uintptr_t a = (uintptr_t)p;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char path[400] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %399s", &lo, &hi, path) < 2) continue;
        found = a >= lo && a < hi && strncmp(path, "/dev/shm/ordo-", 14) == 0;
    }
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "shared") && strcmp(argv[1], "copy"))) {
        fprintf(stderr, "usage: groups_values shared|copy [-c CONF --section.key=VALUE ...]\n");
        return 2;
    }
    bool shared = !strcmp(argv[1], "shared");
    ordo_t *o = NULL;
    int rc = ordo_new_args(argc - 1, argv + 1, &o);
    if (rc) return die("conf", rc);
    for (int k = 0; k < N_TENSORS; k++)
        if ((rc = ordo_declare(o, names[k], sizes[k], NULL)) != 0) return die("declare", rc);
    if ((rc = ordo_join(o)) != 0) return die("join", rc);
    int rank = ordo_rank(o), W = ordo_size(o);
    if ((rc = ordo_bind(o, NULL)) != 0) return die("bind", rc);
    long wrong = 0, checked = 0;
    int inside = 0;
    for (int k = 0; k < N_TENSORS; k++)
        inside += in_segment(ordo_value_buffer(o, k)) == 1;
    if (inside != (shared ? N_TENSORS : 0)) {
        fprintf(stderr, "groups_values: worker %d: %d of %d value buffers in the group's "
                "segment, expected %s\n", rank, inside, N_TENSORS, shared ? "all" : "none");
        wrong++;
    }
    if (rank == 0) {
        /* (with copied values it would send the buffers' zeros, and the servers keep the
         * first initial values) */
        rc = shared ? ordo_bound_init(o) : ORDO_ERR_INVAL;
        bool named = !shared || strstr(ordo_last_error(), "ordo_bound_init_from") != NULL;
        if (rc != ORDO_ERR_INVAL || !named) {
            fprintf(stderr, "groups_values: ordo_bound_init over shared values: %d (%s), "
                    "expected a refusal naming ordo_bound_init_from\n", rc, ordo_last_error());
            wrong++;
        }
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
    for (int64_t t = 0; t < ITERS; t++) {
        if ((rc = ordo_iter_begin(o, t)) != 0) return die("iter_begin", rc);
        if (t == 1) { /* a re-plan inside an iteration is refused, naming where it belongs */
            rc = ordo_replan(o, NULL, 1000);
            if (rc != ORDO_ERR_INVAL ||
                !strstr(ordo_last_error(), "ordo_replan: iteration 1 of the bound model is "
                                           "under way") ||
                !strstr(ordo_last_error(), "between ordo_iter_end(t) and ordo_iter_begin(t + 1)")) {
                fprintf(stderr, "groups_values: ordo_replan mid-iteration: %d, '%s'\n", rc,
                        ordo_last_error());
                wrong++;
            }
        }
        int have = 0, seen[N_TENSORS] = {0};
        while (have < N_TENSORS) { /* the forward pass: each value as it arrives */
            ordo_arrival_t a;
            if ((rc = ordo_next_arrival(o, &a, 60000)) != 0) return die("next_arrival", rc);
            if (a.iter != t || seen[a.tensor]) continue;
            seen[a.tensor] = 1;
            have++;
            wrong += check(ordo_value_buffer(o, a.tensor), a.tensor, t, W, "on arrival");
            checked++;
        }
        /* still value t once the forward pass is over, before this worker's gradients */
        for (int k = 0; k < N_TENSORS; k++, checked++)
            wrong += check(ordo_value_buffer(o, k), k, t, W, "after the forward pass");
        for (int k = N_TENSORS - 1; k >= 0; k--) {
            float *g = ordo_grad_buffer(o, k);
            for (int64_t i = 0; i < sizes[k]; i++)
                g[i] = (float)((rank + 1) * (t + 1));
            if ((rc = ordo_grad_ready(o, k, t)) != 0) return die("grad_ready", rc);
        }
        if ((rc = ordo_iter_end(o, t, 60000)) != 0) return die("iter_end", rc);
        /* between iterations (an evaluation, the final model): the values of t + 1 */
        if ((rc = ordo_pull_values(o, t + 1, 60000)) != 0) return die("pull_values", rc);
        for (int k = 0; k < N_TENSORS; k++, checked++)
            wrong += check(ordo_value_buffer(o, k), k, t + 1, W, "between iterations");
    }
    printf("groups_values: worker %d of %d: %d of %d value buffers in the group's segment, %ld "
           "tensors' values checked, %ld wrong\n", rank, W, inside, N_TENSORS, checked, wrong);
    if ((rc = ordo_leave(o)) != 0) return die("leave", rc);
    ordo_destroy(&o);
    return wrong ? 1 : 0;
}
