/* executor: one worker's iterations over a model graph, computed on this thread while a
 * bound libordo handle moves the values and gradients (worker/executor.h). */
#include "worker/executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

enum { TRACK_COMPUTE = 0, TRACK_WAIT = 2 };

struct ordo__exec {
    ordo__exec_opts_t o;
    int n; /* parameters = tensors */
    float **params, **grads; /* the library's buffers */
    int64_t *ready_iter;     /* per parameter: the iteration whose value is in (-1: none) */
    int64_t *arrive_ns;      /* per parameter: when it came */
    int64_t *op_end_ns;      /* per op: end of its forward in this iteration (0: not run) */
    float *snap;             /* ordo__exec_snapshot's block, NULL: none */
    bool bound;
};

/* ---- arrivals ----------------------------------------------------------------------- */

static void take(ordo__exec_t *e, const ordo_arrival_t *a)
{
    if (a->tensor < 0 || a->tensor >= e->n) return;
    e->ready_iter[a->tensor] = a->iter;
    e->arrive_ns[a->tensor] = a->t_ns;
}

/* takes every arrival there is; 0 or the cluster's failure */
static int take_all(ordo__exec_t *e)
{
    ordo_arrival_t a;
    int rc;
    while ((rc = ordo_next_arrival(e->o.ordo, &a, 0)) == 0)
        take(e, &a);
    return rc == ORDO_ERR_TIMEDOUT ? 0 : rc;
}

/* the op to run next among those not run yet whose inputs have ended and whose parameters of
 * iteration iter have arrived: the one that became ready first (ties: listed order), as the
 * simulator's rule (docs/ordering.md), or -1 */
static int runnable(const ordo__exec_t *e, int64_t iter)
{
    const ordo__model_t *m = e->o.model;
    int best = -1;
    int64_t best_ready = INT64_MAX;
    for (int op = 0; op < m->n_ops; op++) {
        if (e->op_end_ns[op]) continue;
        int64_t ready = 0;
        bool ok = true;
        for (int i = 0; ok && i < m->ops[op].n_inputs; i++) {
            int64_t end = e->op_end_ns[m->ops[op].inputs[i]];
            ok = end != 0;
            if (end > ready) ready = end;
        }
        for (int j = 0; ok && j < m->ops[op].n_params; j++) {
            int p = m->ops[op].params[j];
            ok = e->ready_iter[p] == iter;
            if (ok && e->arrive_ns[p] > ready) ready = e->arrive_ns[p];
        }
        if (ok && ready < best_ready) {
            best = op;
            best_ready = ready;
        }
    }
    return best;
}

/* the next forward op (runnable), waiting for arrivals while there is none; the op or the
 * cluster's failure */
static int next_op(ordo__exec_t *e, int64_t iter, int64_t *waited_ns)
{
    int rc = take_all(e);
    if (rc) return rc;
    int op = runnable(e, iter);
    if (op >= 0) return op;
    int64_t t0 = ordo__clock_ns();
    while (op < 0) {
        ordo_arrival_t a;
        if ((rc = ordo_next_arrival(e->o.ordo, &a, -1)) != 0) return rc;
        take(e, &a);
        if ((rc = take_all(e)) != 0) return rc;
        op = runnable(e, iter);
    }
    int64_t now = ordo__clock_ns();
    *waited_ns += now - t0;
    if (e->o.trace)
        ordo_trace_span(e->o.ordo, e->o.model->ops[op].name, "wait", TRACK_WAIT, t0, now - t0,
                        NULL);
    return op;
}

/* ---- life cycle --------------------------------------------------------------------- */

int ordo__exec_new(const ordo__exec_opts_t *o, ordo__exec_t **out)
{
    ordo__exec_t *e = calloc(1, sizeof *e);
    if (!e) return ORDO_ERR_NOMEM;
    e->o = *o;
    e->n = o->model->n_params;
    e->params = calloc((size_t)e->n + 1, sizeof *e->params);
    e->grads = calloc((size_t)e->n + 1, sizeof *e->grads);
    e->ready_iter = calloc((size_t)e->n + 1, sizeof *e->ready_iter);
    e->arrive_ns = calloc((size_t)e->n + 1, sizeof *e->arrive_ns);
    e->op_end_ns = calloc((size_t)o->model->n_ops + 1, sizeof *e->op_end_ns);
    if (!e->params || !e->grads || !e->ready_iter || !e->arrive_ns || !e->op_end_ns) {
        ordo__exec_destroy(&e);
        return ORDO_ERR_NOMEM;
    }
    ordo_bind_opts_t bo = {.pull_early = o->pull_early,
                           .shuffle = o->shuffle_pulls,
                           .seed = o->seed,
                           .iterations = o->iterations,
                           .forward_only = o->forward_only};
    int rc = ordo_bind(o->ordo, &bo);
    if (rc) {
        ordo__exec_destroy(&e);
        return rc;
    }
    e->bound = true;
    for (int i = 0; i < e->n; i++) {
        e->params[i] = ordo_value_buffer(o->ordo, i);
        e->grads[i] = ordo_grad_buffer(o->ordo, i);
        e->ready_iter[i] = -1;
    }
    if ((rc = ordo__compute_bind(o->compute, e->params, e->grads)) != 0) {
        ordo__exec_destroy(&e);
        return rc;
    }
    if (o->trace) {
        ordo_trace_track(o->ordo, TRACK_COMPUTE, "compute");
        ordo_trace_track(o->ordo, TRACK_WAIT, "waits");
    }
    *out = e;
    return 0;
}

void ordo__exec_destroy(ordo__exec_t **ep)
{
    ordo__exec_t *e = *ep;
    if (!e) return;
    if (e->bound) ordo_unbind(e->o.ordo);
    free(e->params);
    free(e->grads);
    free(e->ready_iter);
    free(e->arrive_ns);
    free(e->op_end_ns);
    free(e);
    *ep = NULL;
}

float *const *ordo__exec_params(const ordo__exec_t *e)
{
    return e->params;
}

int ordo__exec_init(ordo__exec_t *e, float *const *params)
{
    return ordo_bound_init_from(e->o.ordo, (const float *const *)params);
}

int ordo__exec_compute_on(ordo__exec_t *e, float *const *params)
{
    return ordo__compute_bind(e->o.compute, params ? params : e->params, e->grads);
}

/* ---- one iteration ------------------------------------------------------------------ */

/* [straggle] slowdown: a straggler's op takes slowdown times its measured time */
static void straggle_op(const ordo__exec_t *e, int64_t c0, int64_t *c1)
{
    if (e->o.slowdown <= 1) return;
    ordo__clock_sleep_until(*c1 + (int64_t)((e->o.slowdown - 1) * (double)(*c1 - c0)));
    *c1 = ordo__clock_ns();
}

static void span(const ordo__exec_t *e, const char *name, const char *cat, int64_t c0, int64_t c1)
{
    if (e->o.trace) ordo_trace_span(e->o.ordo, name, cat, TRACK_COMPUTE, c0, c1 - c0, NULL);
}

/* the forward pass of iteration t (values of pull_iter): each op as soon as it may run */
static int forward(ordo__exec_t *e, int64_t pull_iter, int64_t *waited, int64_t *computing)
{
    const ordo__model_t *m = e->o.model;
    memset(e->op_end_ns, 0, sizeof *e->op_end_ns * (size_t)m->n_ops);
    for (int k = 0; k < m->n_ops; k++) {
        int op = next_op(e, pull_iter, waited);
        if (op < 0) return op;
        int64_t c0 = ordo__clock_ns();
        int rc = ordo__compute_forward(e->o.compute, op);
        if (rc) return rc;
        int64_t c1 = ordo__clock_ns();
        straggle_op(e, c0, &c1);
        e->op_end_ns[op] = c1;
        *computing += c1 - c0;
        span(e, m->ops[op].name, "forward", c0, c1);
    }
    return 0;
}

/* the backward pass of iteration t: each gradient handed over once its op's backward ended */
static int backward(ordo__exec_t *e, int64_t t, int64_t *computing)
{
    const ordo__model_t *m = e->o.model;
    for (int op = m->n_ops - 1; op >= 0; op--) {
        int64_t c0 = ordo__clock_ns();
        int rc = ordo__compute_backward(e->o.compute, op);
        if (rc) return rc;
        int64_t c1 = ordo__clock_ns();
        straggle_op(e, c0, &c1);
        *computing += c1 - c0;
        span(e, m->ops[op].name, "backward", c0, c1);
        for (int j = 0; j < m->ops[op].n_params; j++) {
            /* a shared parameter's gradient is complete after the backward of the first op
             * reading it, which runs last: push it once, then */
            int p = m->ops[op].params[j];
            if (m->params[p].first_op != op) continue;
            if ((rc = ordo_grad_ready(e->o.ordo, p, t)) != 0) return rc;
        }
    }
    return 0;
}

int ordo__exec_iteration(ordo__exec_t *e, int64_t t, const float *x, const int *labels, int n,
                        ordo__exec_stats_t *st)
{
    const ordo__model_t *m = e->o.model;
    ordo_t *o = e->o.ordo;
    int rc;
    int64_t pull_iter = e->o.forward_only ? 0 : t;
    memset(st, 0, sizeof *st);
    if (e->o.forward_only && ordo_size(o) > 1) {
        /* nothing else keeps forward-only workers in step (no pushes, no new versions):
         * iteration t starts when every worker has reached it */
        if ((rc = ordo_barrier(o, -1)) != 0) return rc;
    }
    st->t_start_ns = ordo__clock_ns();
    /* a forward-only run reads version 0 every iteration: the values pulled again this time
     * are the ones to wait for (an iteration of training has a new number) */
    if (e->o.forward_only)
        for (int i = 0; i < e->n; i++)
            e->ready_iter[i] = -1;
    if ((rc = ordo_iter_begin(o, t)) != 0) return rc;
    if (x && (rc = ordo__compute_set_batch(e->o.compute, x, labels, n)) != 0) return rc;
    int64_t waited = 0, computing = 0;
    double delay = e->o.straggle
                       ? ordo__conf_straggle_delay_ms(e->o.straggle, ordo_rank(o), t)
                       : 0;
    if (delay > 0) { /* a transient straggler: this iteration's compute is late */
        int64_t d0 = ordo__clock_ns();
        ordo__clock_sleep_until(d0 + (int64_t)(delay * 1e6));
        computing += ordo__clock_ns() - d0;
    }
    if ((rc = forward(e, pull_iter, &waited, &computing)) != 0) return rc;
    st->t_forward_end_ns = ordo__clock_ns();
    if (e->snap) { /* every parameter of iteration t is in, and no push of t has gone */
        for (int i = 0, at = 0; i < e->n; at += (int)m->params[i].numel, i++)
            memcpy(e->snap + at, e->params[i], sizeof(float) * (size_t)m->params[i].numel);
        e->snap = NULL;
    }
    if (!e->o.forward_only && (rc = backward(e, t, &computing)) != 0) return rc;
    double loss = 0;
    int correct = 0;
    ordo__compute_loss(e->o.compute, &loss, &correct);
    /* the iteration ends when the gradient buffers are free again (every push acknowledged;
     * in host groups summed in the group, the owners' pushes going on during the next
     * iteration, whose ops wait for their own values) and every value of it arrived */
    int64_t w0 = ordo__clock_ns();
    if ((rc = ordo_iter_end(o, t, -1)) != 0) return rc;
    st->t_push_done_ns = st->t_end_ns = ordo__clock_ns();
    if (e->o.trace && !e->o.forward_only)
        ordo_trace_span(o, "pushes to finish", "wait", TRACK_WAIT, w0, st->t_end_ns - w0, NULL);
    ordo_iter_bytes(o, &st->bytes_push, &st->bytes_pull, st->extra, sizeof st->extra);
    st->step_ms = (double)(st->t_end_ns - st->t_start_ns) / 1e6;
    st->wait_ms = (double)waited / 1e6;
    st->compute_ms = (double)computing / 1e6;
    st->loss = loss;
    st->correct = correct;
    return 0;
}

/* ---- the rest of a run -------------------------------------------------------------- */

int ordo__exec_path_state(ordo__exec_t *e, const char *path, bool save)
{
    return save ? ordo_save_state(e->o.ordo, path) : ordo_load_state(e->o.ordo, path);
}

int ordo__exec_barrier(ordo__exec_t *e)
{
    return ordo_barrier(e->o.ordo, -1);
}

int ordo__exec_pull_all(ordo__exec_t *e, int64_t t)
{
    return ordo_pull_values(e->o.ordo, t, -1);
}

void ordo__exec_snapshot(ordo__exec_t *e, float *block)
{
    e->snap = block;
}

int ordo__exec_report(ordo__exec_t *e, const char *json)
{
    return ordo_report(e->o.ordo, json);
}
