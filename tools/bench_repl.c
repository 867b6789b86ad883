/* bench_repl: replicated vs unreplicated push+pull round trips (tools/bench_repl.h). Both
 * clusters run at once; each size's round trips alternate between them, so that the
 * machine's slow moments hit both alike, and each keeps its best. With replicas the primary's
 * answer waits for the backup to acknowledge the new value: one more copy of the slice over
 * loopback and one more hop, which is what the ratio shows. */
#include "tools/bench_repl.h"
#include "common/clock.h"
#include "common/error.h"
#include "client/ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ordo__bench_replicas(const int64_t *sizes, int n, const ordo__bench_opts_t *o)
{
    ordo__bench_opts_t opt[2] = {*o, *o};
    ordo__bench_child_t sched[2] = {{0}}, srv[2][ORDO_BENCH_MAX_SERVERS] = {{{0}}};
    ordo__ps_t *w[2] = {NULL, NULL};
    int R = o->replicas, rc = 0;
    for (int c = 0; c < 2; c++) {
        opt[c].servers = R;
        opt[c].replicas = c ? R : 1;
        if (!rc) rc = ordo__bench_start_cluster(sizes, n, &opt[c], &sched[c], srv[c], &w[c]);
    }
    if (rc) {
        fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
        for (int c = 0; c < 2; c++)
            ordo__bench_stop_cluster(&sched[c], srv[c], &w[c]);
        return 1;
    }
    if (!o->json) {
        printf("ordo fused push+pull with %d replicas vs none: two clusters of %d servers + 1 "
               "worker on loopback at once, partition_bytes %lld, segment_bytes %lld, best of at "
               "least %d rounds and %g s per size (taking turns)\n",
               R, R, (long long)o->partition, (long long)o->segment, o->reps, o->min_time_s);
        printf("%10s %10s %10s %10s %10s %8s %7s\n", "bytes", "r1_us", "r1_GB/s", "rN_us",
               "rN_GB/s", "rN/r1", "rounds");
    }
    for (int i = 0; i < n && rc == 0; i++) {
        float *val = malloc((size_t)sizes[i]), *grad = calloc(1, (size_t)sizes[i]);
        int64_t iter[2] = {0, 0};
        double best[2] = {1e30, 1e30};
        for (int c = 0; c < 2; c++)
            ordo__ps_init(w[c], i, grad);
        int rounds = 0;
        int64_t until = ordo__clock_ns() + (int64_t)(o->min_time_s * 1e9);
        for (int r = -1; (r < o->reps || ordo__clock_ns() < until) && rc == 0; r++) {
            for (int c = 0; c < 2 && rc == 0; c++) {
                ordo__bench_times_t t;
                if ((rc = ordo__bench_once(w[c], i, val, grad, &iter[c], true, &t)) != 0) break;
                if (r >= 0 && t.push_pull_s < best[c]) best[c] = t.push_pull_s;
            }
            rounds = r + 1;
        }
        free(val);
        free(grad);
        if (rc) break;
        double b2 = 2.0 * (double)sizes[i];
        if (o->json)
            printf("{\"bytes\":%lld,\"replicas\":%d,\"r1_us\":%.1f,\"rn_us\":%.1f,\"ratio\":%.3f,"
                   "\"rounds\":%d}\n",
                   (long long)sizes[i], R, best[0] * 1e6, best[1] * 1e6, best[1] / best[0], rounds);
        else
            printf("%10lld %10.1f %10.3f %10.1f %10.3f %8.2f %7d\n", (long long)sizes[i],
                   best[0] * 1e6, b2 / best[0] / 1e9, best[1] * 1e6, b2 / best[1] / 1e9,
                   best[1] / best[0], rounds);
        fflush(stdout);
    }
    if (!o->json && rc == 0)
        printf("r1: replicas = 1, rN: replicas = %d; GB/s counts the bytes pushed plus the bytes "
               "pulled; rN/r1 is the round trip's time with copies over without; %ld cores online\n",
               R, sysconf(_SC_NPROCESSORS_ONLN));
    if (rc) fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
    for (int c = 0; c < 2; c++)
        ordo__bench_stop_cluster(&sched[c], srv[c], &w[c]);
    return rc ? 1 : 0;
}
