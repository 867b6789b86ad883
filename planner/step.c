/* step: the training step model (slices, credit, greedy answers, the next forward pass)
 * and the resource bound of a step. */
#include "planner/step.h"

#include "common/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEP_ITERS          5  /* simulated steps; the last one is reported */
#define WIRE_OVERHEAD_BYTES 64 /* the transport's framing, as the emulated link counts it */
#define SERVER_LOOKAHEAD_US                                                                        \
    5000.0 /* servers hand an answer over this long before the link frees                          \
            */

typedef struct {
    int param;
    int64_t bytes;
    int channel;
    int prio;
    double ready; /* push: gradient ready; answer: value ready at the server */
    double done;  /* push: at the server; answer: at the worker */
    double link_us;     /* on a worker's link (the push) */
    double srv_link_us; /* on a server's link (one copy of the answer) */
} slice_t;

static double link_us(double msg_us, double bps, double bytes)
{
    double t = msg_us;
    if (bps > 0) t += (bytes + WIRE_OVERHEAD_BYTES) * 8e6 / bps;
    return t;
}

static double scale_or_1(double s)
{
    return s > 0 ? s : 1.0;
}

/* the server of the slice that starts at byte off of parameter p */
static int slice_channel(const ordo__step_opts_t *o, int p, int64_t off)
{
    const ordo__keys_t *k = o->keys;
    if (!k) return o->channel ? o->channel[p] : 0;
    int64_t elem = off / (int64_t)k->elem_size;
    int first = k->first_slice[p], n = k->n_chunks[p];
    for (int c = n - 1; c > 0; c--)
        if (k->slices[first + c].offset <= elem) return k->slices[first + c].server;
    return k->slices[first].server;
}

/* cut every parameter into slices of at most o->slice_bytes, in listed order */
static int make_slices(const ordo__model_t *m, const int *priority, const ordo__step_opts_t *o,
                       slice_t **out, int *n_out)
{
    int n = 0;
    for (int p = 0; p < m->n_params; p++) {
        int64_t b = m->params[p].bytes, s = o->slice_bytes;
        n += s > 0 && b > s ? (int)((b + s - 1) / s) : 1;
    }
    slice_t *sl = calloc((size_t)n, sizeof *sl);
    if (!sl) return ordo__error_set(ORDO_ERR_NOMEM, "step: out of memory");
    int i = 0;
    double srv_bps = o->server_bandwidth_bps > 0 ? o->server_bandwidth_bps : o->bandwidth_bps;
    for (int p = 0; p < m->n_params; p++) {
        int64_t b = m->params[p].bytes, s = o->slice_bytes, off = 0;
        int k = s > 0 && b > s ? (int)((b + s - 1) / s) : 1;
        for (int c = 0; c < k; c++, i++) {
            sl[i].param = p;
            sl[i].bytes = b / k + (c < b % k ? 1 : 0); /* equal pieces, as the key map cuts */
            sl[i].channel = slice_channel(o, p, off);
            sl[i].prio = priority ? priority[p] : 0;
            /* a per-parameter wire factor (compression = auto's choice) on top of the
             * cluster's scales */
            double wf = o->wire_factor ? o->wire_factor[p] : 1.0;
            sl[i].link_us = link_us(o->msg_us, o->bandwidth_bps,
                                    (double)sl[i].bytes * scale_or_1(o->push_wire_scale) * wf);
            sl[i].srv_link_us = link_us(o->msg_us, srv_bps,
                                        (double)sl[i].bytes * scale_or_1(o->answer_wire_scale) *
                                            wf);
            off += sl[i].bytes;
        }
    }
    *out = sl;
    *n_out = n;
    return 0;
}

/* the best queued slice of idx[0..n) ready by t: smallest priority, then the first ready (equal
 * priorities, no order at all included, go first come first served), then listed order; -1
 * when none is ready */
static int pick(const slice_t *sl, const int *idx, const char *taken, int n, double t)
{
    int best = -1;
    for (int j = 0; j < n; j++) {
        const slice_t *s = &sl[idx[j]];
        if (taken[j] || s->ready > t) continue;
        const slice_t *b = best < 0 ? NULL : &sl[idx[best]];
        if (!b || s->prio < b->prio || (s->prio == b->prio && s->ready < b->ready) ||
            (s->prio == b->prio && s->ready == b->ready && idx[j] < idx[best]))
            best = j;
    }
    return best;
}

/* earliest ready time among the untaken slices of idx */
static double next_ready(const slice_t *sl, const int *idx, const char *taken, int n)
{
    double t = INFINITY;
    for (int j = 0; j < n; j++)
        if (!taken[j] && sl[idx[j]].ready < t) t = sl[idx[j]].ready;
    return t;
}

/* one link carrying the slices idx[0..n): each goes, smallest priority first among those
 * ready, once less than ahead_us of link time is committed before it; a slice holds the link
 * for copies times its link time and is done latency_us after that. *link_free carries the
 * link's state across steps. */
static void run_link(slice_t *sl, const int *idx, char *taken, int n, double ahead_us, int copies,
                     int server, double latency_us, double *link_free)
{
    memset(taken, 0, (size_t)n);
    double t = 0;
    for (int left = n; left > 0; left--) {
        double commit = *link_free - ahead_us;
        if (commit < t) commit = t;
        int j = pick(sl, idx, taken, n, commit);
        if (j < 0) {
            commit = next_ready(sl, idx, taken, n);
            j = pick(sl, idx, taken, n, commit);
        }
        taken[j] = 1;
        t = commit;
        slice_t *s = &sl[idx[j]];
        double start = *link_free > commit ? *link_free : commit;
        *link_free = start + (server ? s->srv_link_us : s->link_us) * copies;
        s->done = *link_free + latency_us;
    }
}

/* the compute of one step: the forward pass (each op once its parameters arrived), then the
 * backward pass; writes each parameter's gradient time and returns when compute is free */
static double compute_step(const ordo__model_t *m, const ordo__oracle_times_t *t, double start,
                           const double *arrived, double *grad)
{
    double c = start;
    for (int j = 0; j < m->n_ops; j++) {
        const ordo__model_op_t *op = &m->ops[j];
        for (int k = 0; k < op->n_params; k++)
            if (arrived[op->params[k]] > c) c = arrived[op->params[k]];
        c += t->fwd_us[j];
    }
    for (int j = m->n_ops - 1; j >= 0; j--) {
        c += t->bwd_us[j];
        for (int k = 0; k < m->ops[j].n_params; k++) {
            int p = m->ops[j].params[k];
            if (m->params[p].first_op == j) grad[p] = c;
        }
    }
    return c;
}

static void bound(const ordo__model_t *m, const ordo__oracle_times_t *t, const slice_t *sl, int n,
                  const ordo__step_opts_t *o, ordo__step_result_t *r)
{
    r->compute_us = 0;
    for (int j = 0; j < m->n_ops; j++)
        r->compute_us += t->fwd_us[j] + t->bwd_us[j];
    r->push_us = 0;
    double *per = calloc((size_t)o->n_channels, sizeof *per);
    for (int i = 0; i < n; i++) {
        r->push_us += sl[i].link_us;
        if (per) per[sl[i].channel] += sl[i].srv_link_us * o->n_workers;
    }
    r->answer_us = 0;
    for (int c = 0; per && c < o->n_channels; c++)
        if (per[c] > r->answer_us) r->answer_us = per[c];
    free(per);
    r->bound_us = fmax(r->compute_us, fmax(r->push_us, r->answer_us));
    r->n_messages = n;
}

int ordo__step_simulate(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                       const ordo__step_opts_t *o, ordo__step_result_t *out)
{
    if (!m || !t || !o || !out || o->n_workers < 1 || o->n_channels < 1 || t->n_ops != m->n_ops ||
        o->slice_bytes < 0 || o->credit_bytes < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_simulate: bad arguments");
    if (o->keys && (o->keys->n_keys != m->n_params || o->keys->n_servers != o->n_channels))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_simulate: a key map of %d keys on %d "
                              "servers for %d parameters on %d", o->keys->n_keys,
                              o->keys->n_servers, m->n_params, o->n_channels);
    for (int p = 0; o->channel && p < m->n_params; p++)
        if (o->channel[p] < 0 || o->channel[p] >= o->n_channels)
            return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_simulate: parameter %d on channel %d",
                                  p, o->channel[p]);
    slice_t *sl = NULL;
    int n = 0, rc = make_slices(m, priority, o, &sl, &n);
    if (rc) return rc;
    size_t np = (size_t)m->n_params;
    double *arrived = calloc(np, sizeof *arrived), *grad = calloc(np, sizeof *grad);
    double *srv_free = calloc((size_t)o->n_channels, sizeof *srv_free);
    int *idx = malloc(sizeof *idx * (size_t)n), *cidx = malloc(sizeof *cidx * (size_t)n);
    char *taken = malloc((size_t)n);
    if (!arrived || !grad || !srv_free || !idx || !cidx || !taken) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "step: out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    double credit_us = o->bandwidth_bps > 0 ? (double)o->credit_bytes * 8e6 / o->bandwidth_bps : 0;
    double c = 0, push_free = 0, end[STEP_ITERS];
    for (int it = 0; it < STEP_ITERS; it++) {
        c = compute_step(m, t, c, arrived, grad);
        end[it] = c;
        for (int i = 0; i < n; i++)
            sl[i].ready = grad[sl[i].param];
        run_link(sl, idx, taken, n, credit_us, 1, 0, o->latency_us, &push_free);
        /* the answer: with early pulls the push asked for it; else the next iteration's pull
         * does, and the iteration ends once its last push is in (measured: with pulls at the
         * start a step is the pushes' time plus the answers', docs/planning.md) */
        double pushed = c;
        for (int i = 0; i < n; i++)
            pushed = fmax(pushed, sl[i].done);
        for (int i = 0; i < n; i++)
            sl[i].ready = o->early_pulls ? sl[i].done : fmax(sl[i].done, pushed + o->latency_us);
        for (int ch = 0; ch < o->n_channels; ch++) {
            int k = 0;
            for (int i = 0; i < n; i++)
                if (sl[i].channel == ch) cidx[k++] = i;
            run_link(sl, cidx, taken, k, SERVER_LOOKAHEAD_US, o->n_workers, 1, o->latency_us,
                     &srv_free[ch]);
        }
        memset(arrived, 0, sizeof *arrived * np);
        for (int i = 0; i < n; i++)
            if (sl[i].done > arrived[sl[i].param]) arrived[sl[i].param] = sl[i].done;
    }
    ordo__step_result_t r;
    bound(m, t, sl, n, o, &r);
    r.step_us = end[STEP_ITERS - 1] - end[STEP_ITERS - 2];
    *out = r;
fail:
    free(taken);
    free(cidx);
    free(idx);
    free(srv_free);
    free(grad);
    free(arrived);
    free(sl);
    return rc;
}

int ordo__step_tune(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                   const ordo__step_opts_t *o, int64_t *slice_bytes, int64_t *credit_bytes,
                   ordo__step_result_t *out)
{
    static const int64_t all_slices[] = {4 << 20, 2 << 20, 1 << 20, 512 << 10, 256 << 10};
    static const int64_t all_credits[] = {4 << 20, 1 << 20, 256 << 10, 64 << 10};
    /* a value the caller fixed (not negative) is the only candidate */
    const int64_t *slices = o->slice_bytes < 0 ? all_slices : &o->slice_bytes;
    const int64_t *credits = o->credit_bytes < 0 ? all_credits : &o->credit_bytes;
    size_t n_slices = o->slice_bytes < 0 ? sizeof all_slices / sizeof *all_slices : 1;
    size_t n_credits = o->credit_bytes < 0 ? sizeof all_credits / sizeof *all_credits : 1;
    ordo__step_opts_t q = *o;
    ordo__step_result_t best = {.step_us = INFINITY}, r;
    int64_t bs = 0, bc = 0;
    for (size_t i = 0; i < n_slices; i++)
        for (size_t j = 0; j < n_credits; j++) {
            q.slice_bytes = slices[i];
            q.credit_bytes = o->credit_bytes >= 0 || credits[j] > o->credit_floor_bytes
                                 ? credits[j]
                                 : o->credit_floor_bytes;
            int rc = ordo__step_simulate(m, t, priority, &q, &r);
            if (rc) return rc;
            /* a smaller slice or credit must gain 0.5 %: messages cost more than the model says */
            if (r.step_us < best.step_us * 0.995) {
                best = r;
                bs = q.slice_bytes;
                bc = q.credit_bytes;
            }
        }
    *slice_bytes = bs;
    *credit_bytes = bc;
    *out = best;
    return 0;
}

int ordo__step_tune_auto(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                        ordo__step_opts_t *o)
{
    if (o->slice_bytes >= 0 && o->credit_bytes >= 0) return 0;
    int64_t slice = 0, credit = 0;
    ordo__step_result_t r;
    int rc = ordo__step_tune(m, t, priority, o, &slice, &credit, &r);
    if (rc) return rc;
    if (o->slice_bytes < 0) o->slice_bytes = slice;
    if (o->credit_bytes < 0) o->credit_bytes = credit;
    return 0;
}

/* scaled_times copies t with every op's compute time multiplied by f */
static int scaled_times(const ordo__oracle_times_t *t, double f, ordo__oracle_times_t *out)
{
    *out = *t;
    out->fwd_us = malloc(sizeof *out->fwd_us * (size_t)(t->n_ops ? t->n_ops : 1));
    out->bwd_us = malloc(sizeof *out->bwd_us * (size_t)(t->n_ops ? t->n_ops : 1));
    if (!out->fwd_us || !out->bwd_us) {
        free(out->fwd_us);
        free(out->bwd_us);
        return ordo__error_set(ORDO_ERR_NOMEM, "step: out of memory");
    }
    for (int j = 0; j < t->n_ops; j++) {
        out->fwd_us[j] = t->fwd_us[j] * f;
        out->bwd_us[j] = t->bwd_us[j] * f;
    }
    return 0;
}

int ordo__step_correct(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                      const ordo__step_opts_t *o, double measured_step_us,
                      double measured_compute_us, ordo__step_fit_t *out)
{
    if (!(measured_step_us > 0) || !isfinite(measured_step_us))
        return ordo__error_set(ORDO_ERR_INVAL, "step: a measured step of %g us", measured_step_us);
    ordo__step_result_t r;
    int rc = ordo__step_simulate(m, t, priority, o, &r);
    if (rc) return rc;
    /* compute: what the workers measured against what the profile says */
    double f = 1.0;
    if (measured_compute_us > 0 && isfinite(measured_compute_us) && r.compute_us > 0)
        f = fmin(fmax(measured_compute_us / r.compute_us, 0.05), 20.0);
    ordo__oracle_times_t ts;
    if ((rc = scaled_times(t, f, &ts)) != 0) return rc;
    /* the rest of the gap goes to the per-message cost: the modelled step grows with it, so
     * the cost that makes it the measured step is found by bisection (none when the model is
     * already slower with no message cost at all) */
    ordo__step_opts_t q = *o;
    double lo = 0, hi = fmax(2 * o->msg_us, 1000.0);
    q.msg_us = 0;
    if ((rc = ordo__step_simulate(m, &ts, priority, &q, &r)) != 0) goto done;
    if (r.step_us < measured_step_us) {
        for (;;) {
            q.msg_us = hi;
            if ((rc = ordo__step_simulate(m, &ts, priority, &q, &r)) != 0) goto done;
            if (r.step_us >= measured_step_us || hi >= 1e6) break;
            lo = hi;
            hi *= 4;
        }
        for (int i = 0; i < 30 && hi - lo > 0.01; i++) {
            q.msg_us = (lo + hi) / 2;
            if ((rc = ordo__step_simulate(m, &ts, priority, &q, &r)) != 0) goto done;
            if (r.step_us < measured_step_us)
                lo = q.msg_us;
            else
                hi = q.msg_us;
        }
        q.msg_us = hi;
    }
    /* the credit again, on the corrected model; the slice stays (the key map is cut) */
    q.credit_bytes = -1;
    int64_t slice, credit;
    if ((rc = ordo__step_tune(m, &ts, priority, &q, &slice, &credit, &r)) != 0) goto done;
    out->compute_factor = f;
    out->msg_us = q.msg_us;
    out->credit_bytes = credit;
    out->r = r;
done:
    free(ts.fwd_us);
    free(ts.bwd_us);
    return rc;
}
