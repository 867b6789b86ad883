/* bench_intra: reduce-scatter + all-gather bandwidth of the shm backend against memcpy, with
 * the members' contributions copied into the group's memory (copy), written there in place
 * (inplace: a gradient computed in the segment, sums made where values are shared, every
 * member's fetch a copy of the values into its own buffer: the hierarchical path under
 * [intra] values = copy), and with the values read where they are shared too (shared: fetch
 * copies nothing, as the path does under [intra] values = shared, its default, where a bound
 * model's value buffers are the segment's values). */
#include "tools/bench_intra.h"
#include "common/clock.h"
#include "common/error.h"
#include "client/intra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#define TIMEOUT_MS 10000

/* wait until pred(slot) holds: bounded by the backend's checks, and by TIMEOUT_MS for a
 * member that left early (a failed one) */
static int wait_for(ordo__intra_t *it, int slot, int64_t iter, bool reduce)
{
    int64_t until = ordo__clock_ns() + (int64_t)TIMEOUT_MS * 1000000;
    for (;;) {
        uint64_t g = it->ops->generation(it);
        if (reduce ? it->ops->reduced(it, slot, iter) : it->ops->published(it, slot, iter))
            return 0;
        if (ordo__clock_ns() > until)
            return ordo__error_set(ORDO_ERR_TIMEDOUT, "slot %d of round %lld not %s in %d ms",
                                  slot, (long long)iter, reduce ? "reduced" : "published",
                                  TIMEOUT_MS);
        int rc = it->ops->wait(it, g, 50);
        if (rc) return rc;
    }
}

enum { MODE_COPY, MODE_INPLACE, MODE_SHARED, N_MODES };
static const char *const mode_name[N_MODES] = {"copy", "inplace", "shared"};

/* one member: reps rounds, each timed from a barrier to its own last fetch; member 0 writes
 * the round times (the slowest member's, via the shared array). inplace and shared: the
 * contribution is already in the member's area (written there before the rounds, as a
 * gradient computed there would be), the owner sums straight into the shared value; shared:
 * the member fetches into the shared value itself (nothing copied: the round ends when it
 * has seen every slot published) */
static int member(const char *run, int lr, int L, int n_slots, const int64_t *off, int reps,
                  int mode, int64_t *times)
{
    bool inplace = mode != MODE_COPY;
    ordo__intra_opts_t o = {.run = run, .group = 0, .local_rank = lr, .local_size = L,
                           .n_slots = n_slots, .slot_off = off, .timeout_ms = TIMEOUT_MS};
    ordo__intra_t *it = NULL;
    int rc = ordo__intra_new("shm", &o, &it);
    if (rc) return rc;
    int64_t n = off[n_slots];
    float *grad = malloc(sizeof(float) * (size_t)n), *sum = malloc(sizeof(float) * (size_t)n),
          *out = malloc(sizeof(float) * (size_t)n);
    if (!grad || !sum || !out) rc = ORDO_ERR_NOMEM;
    for (int64_t i = 0; !rc && i < n; i++) grad[i] = (float)(i % 13);
    for (int s = 0; !rc && inplace && s < n_slots; s++)
        memcpy(it->ops->area(it, s), grad + off[s], sizeof(float) * (size_t)(off[s + 1] - off[s]));
    for (int r = 0; !rc && r <= reps; r++) { /* round 0 warms the pages up */
        if ((rc = it->ops->barrier(it)) != 0) break;
        int64_t t0 = ordo__clock_ns();
        for (int s = 0; s < n_slots; s++)
            it->ops->put(it, s, inplace ? it->ops->area(it, s) : grad + off[s], r);
        /* pipelined: each owned chunk is summed and published as soon as it is complete */
        for (int s = lr; s < n_slots && !rc; s += L) {
            if ((rc = wait_for(it, s, r, true)) != 0) break;
            float *dst = inplace ? it->ops->value_area(it, s) : sum + off[s];
            it->ops->sum(it, s, dst);
            it->ops->publish(it, s, dst, r);
        }
        for (int s = 0; s < n_slots && !rc; s++) {
            if ((rc = wait_for(it, s, r, false)) != 0) break;
            float *to = mode == MODE_SHARED ? it->ops->value_area(it, s) : out + off[s];
            it->ops->fetch(it, s, to); /* shared: nothing copied */
        }
        int64_t dt = ordo__clock_ns() - t0;
        if (r > 0) { /* the slowest member's time */
            int64_t cur = __atomic_load_n(&times[r - 1], __ATOMIC_ACQUIRE);
            while (dt > cur && !__atomic_compare_exchange_n(&times[r - 1], &cur, dt, false,
                                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            }
        }
    }
    if (!rc) rc = it->ops->barrier(it);
    const float *got = mode == MODE_SHARED ? it->ops->value_area(it, 0) : out;
    if (!rc && got[n - 1] != (float)L * (float)((n - 1) % 13)) rc = ORDO_ERR_PROTO;
    free(grad);
    free(sum);
    free(out);
    ordo__intra_destroy(&it);
    return rc;
}

static double median_s(int64_t *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    return (double)t[n / 2] / 1e9;
}

int ordo__bench_intra(int argc, char **argv)
{
    int64_t bytes = 64ll << 20, chunk = 4ll << 20;
    int reps = 5;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) chunk = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(i + 1 < argc || !strcmp(argv[i], "--help") ? stdout : stderr,
                    "usage: ordo-bench intra [--bytes N (67108864)] [--chunk N (4194304)] "
                    "[--reps R (5)] [--json]\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (bytes < 4 || chunk < 4 || reps < 1 || reps > 1000) {
        fprintf(stderr, "ordo-bench intra: --bytes and --chunk of at least 4, --reps 1..1000\n");
        return 2;
    }
    int n_slots = (int)((bytes + chunk - 1) / chunk);
    int64_t *off = malloc(sizeof *off * (size_t)(n_slots + 1)), n = bytes / 4;
    for (int s = 0; s <= n_slots; s++) off[s] = s == n_slots ? n : (int64_t)s * (chunk / 4);
    /* the floor: one memcpy of the model's bytes, in this process */
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    memset(a, 1, (size_t)n * 4);
    memset(b, 2, (size_t)n * 4);
    int64_t *mt = calloc((size_t)reps, sizeof *mt);
    for (int r = 0; r < reps; r++) {
        int64_t t0 = ordo__clock_ns();
        memcpy(b, a, (size_t)n * 4);
        mt[r] = ordo__clock_ns() - t0;
    }
    double floor_gbs = (double)bytes / median_s(mt, reps) / 1e9;
    free(a);
    free(b);
    free(mt);
    if (!json)
        printf("%-3s %-8s %10s %10s %12s %12s %9s\n", "L", "mode", "bytes", "chunk",
               "allred GB/s", "memcpy GB/s", "of floor");
    int status = 0;
    for (int v = 0; v < 2 * N_MODES; v++) {
        int L = v < N_MODES ? 2 : 4;
        const char *mode = mode_name[v % N_MODES];
        int64_t *times = mmap(NULL, sizeof(int64_t) * (size_t)reps, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        char run[64];
        snprintf(run, sizeof run, "bench%ld-%d", (long)getpid(), v);
        pid_t kids[4];
        for (int m = 1; m < L; m++)
            if ((kids[m] = fork()) == 0)
                _exit(member(run, m, L, n_slots, off, reps, v % N_MODES, times) ? 1 : 0);
        int rc = member(run, 0, L, n_slots, off, reps, v % N_MODES, times);
        for (int m = 1; m < L; m++) {
            int st = 0;
            waitpid(kids[m], &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st)) rc = rc ? rc : ORDO_ERR_IO;
        }
        if (rc) {
            fprintf(stderr, "ordo-bench intra: L = %d %s: %s\n", L, mode, ordo__error_text(rc));
            status = 1;
        } else {
            double gbs = (double)bytes / median_s(times, reps) / 1e9;
            if (json)
                printf("{\"L\":%d,\"mode\":\"%s\",\"bytes\":%lld,\"chunk\":%lld,"
                       "\"allreduce_gbs\":%.3f,\"memcpy_gbs\":%.3f,\"of_floor\":%.3f}\n",
                       L, mode, (long long)bytes, (long long)chunk, gbs, floor_gbs,
                       gbs / floor_gbs);
            else
                printf("%-3d %-8s %10lld %10lld %12.2f %12.2f %8.0f%%\n", L, mode,
                       (long long)bytes, (long long)chunk, gbs, floor_gbs, 100 * gbs / floor_gbs);
        }
        munmap(times, sizeof(int64_t) * (size_t)reps);
    }
    free(off);
    return status;
}
