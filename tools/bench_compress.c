/* bench_compress: float32 against each wire codec, side by side (tools/bench_compress.h). The
 * clusters run at once and each size's round trips take turns between them, so that the
 * machine's slow moments hit all alike; each keeps its best time, and the CPU time of its two
 * processes is summed over every timed round. */
#include "tools/bench_compress.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/error.h"
#include "client/ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CODECS 8

int ordo__bench_compress(const int64_t *sizes, int n, const ordo__bench_opts_t *o)
{
    char specs[MAX_CODECS][96], list[512];
    int nc = 0, rc = 0;
    snprintf(specs[nc++], sizeof specs[0], "none");
    snprintf(list, sizeof list, "%s", o->compression);
    for (char *save = NULL, *t = strtok_r(list, " /", &save); t && nc < MAX_CODECS;
         t = strtok_r(NULL, " /", &save)) {
        ordo__codec_spec_t c;
        if ((rc = ordo__codec_parse(t, &c)) != 0) {
            fprintf(stderr, "ordo-bench pushpull: --compression: %s\n", ordo__error_text(rc));
            return 2;
        }
        if (c.id != ORDO__CODEC_NONE) snprintf(specs[nc++], sizeof specs[0], "%s", t);
    }
    ordo__bench_opts_t opt[MAX_CODECS];
    ordo__bench_child_t sched[MAX_CODECS] = {{0}}, srv[MAX_CODECS][ORDO_BENCH_MAX_SERVERS] = {{{0}}};
    ordo__ps_t *w[MAX_CODECS] = {NULL};
    for (int c = 0; c < nc && rc == 0; c++) {
        opt[c] = *o;
        opt[c].compression = specs[c];
        rc = ordo__bench_start_cluster(sizes, n, &opt[c], &sched[c], srv[c], &w[c]);
    }
    if (rc) {
        fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
        goto done;
    }
    if (!o->json) {
        printf("ordo fused push+pull per wire codec ([push] compression): %d clusters of 1 "
               "server + 1 worker on loopback at once, partition_bytes %lld, best of at least %d "
               "rounds and %g s per size (taking turns)\n",
               nc, (long long)o->partition, o->reps, o->min_time_s);
        printf("%10s %-18s %10s %11s %9s %9s %10s %10s %9s\n", "bytes", "codec", "fused_us",
               "Mvalues/s", "B/v push", "B/v pull", "cpu_ns/v", "srv_ns/v", "vs f32");
    }
    for (int i = 0; i < n && rc == 0; i++) {
        int64_t numel = sizes[i] / 4, iter[MAX_CODECS] = {0};
        float *val = malloc((size_t)sizes[i]), *grad = malloc((size_t)sizes[i]);
        for (int64_t j = 0; j < numel; j++)
            grad[j] = (float)((j * 7919) % 1000 - 500) * 1e-3f;
        double best[MAX_CODECS], cpu[MAX_CODECS] = {0}, scpu[MAX_CODECS] = {0};
        int64_t p0[MAX_CODECS], l0[MAX_CODECS], p1[MAX_CODECS], l1[MAX_CODECS];
        for (int c = 0; c < nc; c++) {
            best[c] = 1e30;
            ordo__ps_init(w[c], i, grad);
        }
        int rounds = 0;
        int64_t until = ordo__clock_ns() + (int64_t)(o->min_time_s * 1e9);
        for (int r = -1; (r < o->reps || ordo__clock_ns() < until) && rc == 0; r++) {
            for (int c = 0; c < nc && rc == 0; c++) {
                ordo__bench_times_t t;
                if (r == 0) ordo__ps_bytes(w[c], &p0[c], &l0[c]);
                int64_t s0 = ordo__bench_cpu_ns(srv[c][0].pid), c0 = ordo__bench_cpu_ns(0) + s0;
                if ((rc = ordo__bench_once(w[c], i, val, grad, &iter[c], true, &t)) != 0) break;
                if (r < 0) continue;
                int64_t s1 = ordo__bench_cpu_ns(srv[c][0].pid);
                cpu[c] += (double)(ordo__bench_cpu_ns(0) + s1 - c0);
                scpu[c] += (double)(s1 - s0);
                if (t.push_pull_s < best[c]) best[c] = t.push_pull_s;
            }
            rounds = r + 1;
        }
        free(val);
        free(grad);
        if (rc) break;
        for (int c = 0; c < nc; c++) {
            ordo__ps_bytes(w[c], &p1[c], &l1[c]);
            double per = (double)numel * rounds;
            double bpush = (double)(p1[c] - p0[c]) / per, bpull = (double)(l1[c] - l0[c]) / per;
            double mvps = (double)numel / best[c] / 1e6, cpu_ns = cpu[c] / per,
                   srv_ns = scpu[c] / per;
            double ratio = best[0] / best[c];
            if (o->json)
                printf("{\"bytes\":%lld,\"codec\":\"%s\",\"fused_us\":%.1f,\"mvalues_per_s\":%.2f,"
                       "\"bytes_per_value_push\":%.4f,\"bytes_per_value_pull\":%.4f,"
                       "\"cpu_ns_per_value\":%.3f,\"server_cpu_ns_per_value\":%.3f,"
                       "\"speed_vs_f32\":%.3f,\"rounds\":%d}\n",
                       (long long)sizes[i], specs[c], best[c] * 1e6, mvps, bpush, bpull, cpu_ns,
                       srv_ns, ratio, rounds);
            else
                printf("%10lld %-18s %10.1f %11.1f %9.3f %9.3f %10.3f %10.3f %8.2fx\n",
                       (long long)sizes[i], specs[c], best[c] * 1e6, mvps, bpush, bpull, cpu_ns,
                       srv_ns, ratio);
        }
        fflush(stdout);
    }
    if (!o->json && rc == 0)
        printf("Mvalues/s: values pushed (and as many pulled) per second, best fused round trip; "
               "B/v: bytes on the wire per value, measured; cpu_ns/v: CPU time of the worker and "
               "server processes per value round trip, mean over the timed rounds (srv_ns/v: the "
               "server's alone); vs f32: speed against float32 (none)\n");
done:
    for (int c = 0; c < nc; c++)
        ordo__bench_stop_cluster(&sched[c], srv[c], &w[c]);
    return rc ? 1 : 0;
}
