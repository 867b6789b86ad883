/* bench_calibrate: `ordo-bench calibrate`, the merge planner's cost model a, b, c fitted from
 * push bursts and round trips of W workers against real ordo processes. */
#include "tools/bench_pushpull.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "core/merge_cost.h"
#include "tools/bench.h"
#include "client/ps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- calibrate ---------------------------------------------------------------------- */

#define CAL_BURST 8 /* pushes in flight at once for the per-message (pipelined) figures */

/* seconds from pushing keys[0..n) (at once) to the last PUSH_DONE */
static int push_burst(ordo__ps_t *w, const int *keys, int n, float *grad, int64_t *iter,
                      double *secs)
{
    int rc;
    int64_t t0 = ordo__clock_ns(), last = t0;
    for (int i = 0; i < n; i++)
        if ((rc = ordo__ps_push(w, keys[i], grad, iter[keys[i]], 0)) != 0) return rc;
    for (int got = 0; got < n;) {
        ordo__ps_event_t ev;
        if ((rc = ordo__ps_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind != ORDO__EV_PUSH_DONE) continue;
        iter[ev.key]++;
        last = ev.t_ns;
        got++;
    }
    *secs = (double)(last - t0) / 1e9;
    return 0;
}

/* pull keys[0..n) at their next iteration (waits for every worker's pushes) */
static int pull_keys(ordo__ps_t *w, const int *keys, int n, float *val, const int64_t *iter)
{
    int rc;
    for (int i = 0; i < n; i++)
        if ((rc = ordo__ps_pull(w, keys[i], val, iter[keys[i]], 0)) != 0) return rc;
    for (int got = 0; got < n;) {
        ordo__ps_event_t ev;
        if ((rc = ordo__ps_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind == ORDO__EV_PULL_DONE) got++;
    }
    return 0;
}

/* wait until every worker of the calibration reached barrier *id (then the next id): a
 * worker that got its pulled values first would otherwise start its next burst while the
 * server's link still carries the other workers' values, and its pushes' acks would queue
 * behind them (with one server and 4 workers, several ms at 256 KiB on 10 Gbit/s) */
static int sync_workers(ordo__ps_t *w, int64_t *id)
{
    int rc = ordo__ps_barrier(w, ++*id);
    if (rc) return rc;
    for (;;) {
        ordo__ps_event_t ev;
        if ((rc = ordo__ps_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind == ORDO__EV_BARRIER && ev.iter == *id) return 0;
    }
}

/* what one worker measures; every worker of a calibration runs the same sequence, so they
 * stay in step (each round trip and each burst's pulls wait for all of them) */
typedef struct {
    const ordo__bench_opts_t *o;
    const int64_t *sizes;
    int n_keys, n_rt, n_burst;
    const int *burst_of; /* [n_burst] first key of each burst size */
    int64_t *iter;       /* per key: the next iteration */
    int64_t barrier;     /* the last barrier id */
    float *val, *grad;
    double *t, *t1;                        /* [reps] scratch */
    double rt_y[24], msg_y[12], one_y[12]; /* medians: round trip per size; per message and
                                            * one push alone per burst size */
} cal_t;

static int calibrate_run(ordo__ps_t *w, cal_t *c, bool print)
{
    const ordo__bench_opts_t *o = c->o;
    int rc;
    for (int i = 0; i < c->n_keys; i++) /* the servers keep the first initial value they get */
        if ((rc = ordo__ps_init(w, i, c->val)) != 0) return rc;
    for (int i = 0; i < c->n_rt; i++) {
        /* one round trip: the push, and the pull of the value it makes (the server answers
         * the pull once the push is applied, so both travel in one round trip) */
        ordo__bench_times_t rt;
        for (int r = -1; r < o->reps; r++) {
            if ((rc = ordo__bench_rtt(w, i, c->val, c->grad, &c->iter[i], 1, false, &rt)) != 0)
                return rc;
            if (r >= 0) c->t[r] = rt.push_pull_s; /* a warm-up and one measured round trip */
        }
        c->rt_y[i] = ordo__merge_median(c->t, o->reps);
        double per_msg = -1;
        if (i % 2 == 0) {
            /* a burst of CAL_BURST pushes in flight against one push: the difference is what
             * each further message costs when pushes are pipelined (latency paid once); the
             * pulls after each burst keep every worker in the same iteration */
            int k = i / 2, keys[CAL_BURST];
            for (int j = 0; j < CAL_BURST; j++)
                keys[j] = c->burst_of[k] + j;
            double one, many;
            for (int r = -1; r < o->reps; r++) {
                if ((rc = push_burst(w, keys, 1, c->grad, c->iter, &one)) != 0) return rc;
                if ((rc = pull_keys(w, keys, 1, c->val, c->iter)) != 0) return rc;
                if ((rc = sync_workers(w, &c->barrier)) != 0) return rc;
                if ((rc = push_burst(w, keys, CAL_BURST, c->grad, c->iter, &many)) != 0) return rc;
                if ((rc = pull_keys(w, keys, CAL_BURST, c->val, c->iter)) != 0) return rc;
                if ((rc = sync_workers(w, &c->barrier)) != 0) return rc;
                if (r >= 0) {
                    c->t[r] = (many - one) / (CAL_BURST - 1);
                    c->t1[r] = one;
                }
            }
            c->one_y[k] = ordo__merge_median(c->t1, o->reps);
            /* with per-message costs below the noise the difference can come out negative */
            c->msg_y[k] = per_msg = fmax(0.0, ordo__merge_median(c->t, o->reps));
        }
        if (!print) continue;
        char pm[32] = "null";
        if (per_msg >= 0) snprintf(pm, sizeof pm, "%.2f", per_msg * 1e6);
        if (o->json)
            printf("{\"bytes\":%lld,\"round_trip_us\":%.2f,\"per_msg_us\":%s}\n",
                   (long long)c->sizes[i], c->rt_y[i] * 1e6, pm);
        else if (per_msg >= 0)
            printf("%10lld %14.1f %14.1f\n", (long long)c->sizes[i], c->rt_y[i] * 1e6,
                   per_msg * 1e6);
        else
            printf("%10lld %14.1f %14s\n", (long long)c->sizes[i], c->rt_y[i] * 1e6, "");
        fflush(stdout);
    }
    return 0;
}

/* a worker forked by the calibration: joins, measures the same sequence, and leaves */
static int calibrate_child(cal_t *c, const ordo__bench_child_t *sched)
{
    ordo__ps_t *w = NULL;
    int rc = ordo__bench_join(c->o, sched, &w);
    if (!rc) rc = calibrate_run(w, c, false);
    if (!rc) rc = ordo__ps_finish(w, NULL);
    if (rc && w) ordo__ps_abort(w, "a calibration worker failed");
    ordo__ps_destroy(&w);
    return rc ? 1 : 0;
}

int ordo__bench_calibrate(int argc, char **argv)
{
    ordo__bench_opts_t o = {
        .reps = 9, .min_bytes = 1024, .max_bytes = 4 << 20, .partition = 1 << 30, .segment = 0};
    int rc =
        ordo__bench_parse_opts(argc, argv, &o,
                              "[--json] [--reps N] [--min BYTES] [--max BYTES] [--bandwidth RATE] "
                              "[--latency-us US] [--msg-us US] [--workers N] [--servers N] "
                              "[--io-thread]");
    if (rc) return rc > 0 ? 0 : 2;
    if (o.workers < 1) o.workers = 1;
    /* keys: one per round-trip size (min, 2 min, 4 min, ... max), then CAL_BURST per
     * burst size (every other round-trip size) */
    int64_t sizes[256];
    int n_rt = 0, n_burst = 0, burst_of[12];
    for (int64_t b = o.min_bytes; b <= o.max_bytes && n_rt < 24; b *= 2)
        sizes[n_rt++] = b;
    int n = n_rt;
    for (int i = 0; i < n_rt; i += 2) {
        burst_of[n_burst++] = n;
        for (int j = 0; j < CAL_BURST; j++)
            sizes[n++] = sizes[i];
    }
    ordo__bench_child_t sched = {0}, srv[ORDO_BENCH_MAX_SERVERS] = {{0}};
    pid_t kids[64];
    int n_kids = 0;
    ordo__ps_t *w = NULL;
    cal_t c = {.o = &o,
               .sizes = sizes,
               .n_keys = n,
               .n_rt = n_rt,
               .n_burst = n_burst,
               .burst_of = burst_of};
    c.iter = calloc((size_t)n, sizeof *c.iter);
    c.val = calloc((size_t)o.max_bytes / 4 + 1, sizeof(float));
    c.grad = calloc((size_t)o.max_bytes / 4 + 1, sizeof(float));
    c.t = malloc(sizeof *c.t * (size_t)o.reps);
    c.t1 = malloc(sizeof *c.t1 * (size_t)o.reps);
    double rt_x[24], msg_x[12], a_rt, b_rt, a_msg, b_msg, a_one, b_one;
    ordo__merge_cost_t cost;
    if (!c.iter || !c.val || !c.grad || !c.t || !c.t1) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    if ((rc = ordo__bench_start_daemons(sizes, n, &o, &sched, srv)) != 0) goto done;
    /* the other workers: forked before this process starts any ZeroMQ thread */
    fflush(stdout);
    for (; n_kids < o.workers - 1; n_kids++) {
        kids[n_kids] = fork();
        if (kids[n_kids] < 0) {
            rc = ordo__error_set(ORDO_ERR_IO, "cannot fork a calibration worker");
            goto done;
        }
        if (kids[n_kids] == 0) _exit(calibrate_child(&c, &sched));
    }
    if ((rc = ordo__bench_join(&o, &sched, &w)) != 0) goto done;
    if (!o.json)
        printf("ordo push+pull calibration, %d server%s + %d worker%s on loopback, link %s%.3g "
               "gbit/s, latency %g us, %g us per message, median of %d\n%10s %14s %14s\n",
               o.servers > 1 ? o.servers : 1, o.servers > 1 ? "s" : "", o.workers,
               o.workers > 1 ? "s" : "", o.bandwidth_bps > 0 ? "" : "unpaced ",
               o.bandwidth_bps / 1e9, o.latency_us, o.msg_us, o.reps, "bytes", "round_trip_us",
               "per_msg_us");
    if ((rc = calibrate_run(w, &c, true)) != 0) goto done;
    for (int i = 0; i < n_rt; i++)
        rt_x[i] = (double)sizes[i];
    for (int k = 0; k < n_burst; k++)
        msg_x[k] = (double)sizes[2 * k];
    if ((rc = ordo__merge_fit_cost(rt_x, c.rt_y, n_rt, &a_rt, &b_rt)) != 0) goto done;
    if ((rc = ordo__merge_fit_planner(msg_x, c.msg_y, c.one_y, n_burst, o.bandwidth_bps,
                                     &cost)) != 0)
        goto done;
    a_msg = cost.a;
    b_msg = cost.b_msg;
    a_one = cost.a_one;
    b_one = cost.b_one;
    double b_plan = cost.b, c_plan = cost.c;
    if (o.json) {
        printf("{\"fit\":\"round_trip\",\"a_s\":%.9g,\"b_s_per_byte\":%.9g}\n", a_rt, b_rt);
        printf("{\"fit\":\"one_push\",\"a_s\":%.9g,\"b_s_per_byte\":%.9g}\n", a_one, b_one);
        printf("{\"fit\":\"per_message\",\"a_s\":%.9g,\"b_s_per_byte\":%.9g,"
               "\"merge_a_us\":%.4g,\"merge_b_ns\":%.4g,\"merge_c_ns\":%.4g}\n",
               a_msg, b_msg, a_msg * 1e6, b_plan * 1e9, c_plan * 1e9);
    } else {
        printf("round trip (push + pull):    a = %.1f us, b = %.4g ns/byte\n", a_rt * 1e6,
               b_rt * 1e9);
        printf("one push alone (to its ack): a = %.1f us, b = %.4g ns/byte\n", a_one * 1e6,
               b_one * 1e9);
        printf("per message (pipelined):     a = %.1f us, b = %.4g ns/byte\n", a_msg * 1e6,
               b_msg * 1e9);
        printf("for the merge planner: [push] merge_a_us = %.4g, merge_b_ns = %.4g, merge_c_ns = "
               "%.4g\n",
               a_msg * 1e6, b_plan * 1e9, c_plan * 1e9);
    }
done:
    if (rc) fprintf(stderr, "ordo-bench calibrate: %s\n", ordo__error_text(rc));
    if (rc && w) ordo__ps_abort(w, "the calibration failed");
    ordo__bench_stop_cluster(&sched, srv, &w);
    for (int i = 0; i < n_kids; i++) {
        int st;
        if (kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] &&
            !(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !rc)
            rc = ordo__error_set(ORDO_ERR_IO, "calibration worker %d failed", i + 1);
    }
    free(c.iter);
    free(c.val);
    free(c.grad);
    free(c.t);
    free(c.t1);
    return rc ? 1 : 0;
}
