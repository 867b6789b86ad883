/* executor: the compute thread / communication thread pair of a worker. */
#include "worker/executor.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "client/push.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    CMD_START,
    CMD_PUSH,
    CMD_STOP,
    CMD_PULL_ALL,
    CMD_INIT,
    CMD_REPORT,
    CMD_BARRIER,
    CMD_GRADS_DONE, /* the backward pass of an iteration ended */
    CMD_BATCH       /* ask the batch service for the next batch (text: the spec) */
} cmd_kind_t;

typedef struct {
    cmd_kind_t kind;
    int key;
    int64_t iter;
    char *text; /* CMD_REPORT: owned by the command */
} cmd_t;

struct ordo_exec {
    ordo_exec_opts_t o;
    int n; /* parameters = keys */
    float **params, **grads;
    int *order; /* pull request order */
    int *pull_keys, *pull_prio; /* one iteration's pull requests (communication thread) */
    uint64_t rng;
    pthread_t comm;
    bool comm_started;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* compute thread waits here */
    /* shared state, under mu */
    cmd_t *q;
    int q_head, q_n, q_cap;
    int64_t *ready_iter; /* per key: iteration whose value arrived (-1 none) */
    int64_t *arrive_ns;  /* per key: when that value arrived */
    int64_t *op_end_ns;  /* per op: end of its forward in this iteration (0 = not run) */
    int64_t *pull_start_ns;
    int64_t *push_start_ns; /* when each gradient was handed over (trace) */
    int64_t *want_iter;     /* per key: the last iteration asked for (communication thread) */
    int64_t cur_pull;       /* the iteration whose pulls pulls_left counts */
    float *snap;            /* ordo_exec_snapshot's block (compute thread), NULL = none */
    int pushes_left;
    int pulls_left;
    int fatal;
    int64_t cur_iter;
    float *const *init_values; /* CMD_INIT: what to send */
    bool init_done;
    int64_t barrier_done; /* the last barrier every worker reached (-1 none) */
    /* ordo_exec_next_batch: the answer (batch_rc: 0 a batch, 1, 2 the ends, < 0 refused) */
    bool batch_done;
    int batch_rc, batch_n;
    int64_t *batch_idx;
    int batch_cap;
    /* parameters and gradients are each one block in model order */
    float *param_block, *grad_block;
    /* the push path (client/push.h, owned by ps): its ops run on the communication thread,
     * on_event, have and stats under mu */
    ordo__push_t *path;
};

/* ---- helpers ------------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void post_text(ordo_exec_t *e, cmd_kind_t kind, int key, int64_t iter, char *text)
{
    pthread_mutex_lock(&e->mu);
    if (e->q_n == e->q_cap) {
        int cap = e->q_cap ? e->q_cap * 2 : 64;
        cmd_t *p = malloc(sizeof *p * (size_t)cap);
        ORDO_ASSERT(p != NULL);
        for (int i = 0; i < e->q_n; i++)
            p[i] = e->q[(e->q_head + i) % e->q_cap];
        free(e->q);
        e->q = p;
        e->q_cap = cap;
        e->q_head = 0;
    }
    e->q[(e->q_head + e->q_n++) % e->q_cap] = (cmd_t){kind, key, iter, text};
    pthread_mutex_unlock(&e->mu);
    ordo__ps_wake(e->o.ps);
}

static void post(ordo_exec_t *e, cmd_kind_t kind, int key, int64_t iter)
{
    post_text(e, kind, key, iter, NULL);
}

static int prio_of(const ordo_exec_t *e, int key)
{
    return e->o.priority ? e->o.priority[key] : key;
}

static const ordo_exec_t *sort_ctx;

static int by_priority(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int px = prio_of(sort_ctx, x), py = prio_of(sort_ctx, y);
    if (px != py) return px < py ? -1 : 1;
    return x - y;
}

/* ---- communication thread ----------------------------------------------------------- */

/* an event of the push path's own (ORDO__EV_HOOK): it may have brought every parameter's
 * value of ev->iter, or finished the iteration's pushes */
static void path_done(ordo_exec_t *e, const ordo__ps_event_t *ev)
{
    pthread_mutex_lock(&e->mu);
    ordo__push_done_t done = e->path->ops->on_event(e->path, ev);
    if (done == ORDO__PUSH_DONE_PULLED) {
        for (int i = 0; i < e->n; i++)
            e->ready_iter[i] = ev->iter;
        e->pulls_left = 0;
    } else if (done == ORDO__PUSH_DONE_PUSHED) {
        e->pushes_left = 0;
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void issue_pulls(ordo_exec_t *e, int64_t iter)
{
    if (e->o.shuffle_pulls) {
        for (int i = e->n - 1; i > 0; i--) {
            int j = (int)(splitmix(&e->rng) % (uint64_t)(i + 1));
            int t = e->order[i];
            e->order[i] = e->order[j];
            e->order[j] = t;
        }
    }
    int64_t now = ordo_clock_ns();
    int n = 0;
    for (int i = 0; i < e->n; i++) {
        int key = e->order[i];
        if (e->o.pull_early && e->want_iter[key] >= iter) continue; /* asked for after its push */
        e->want_iter[key] = iter;
        e->pull_start_ns[key] = now;
        e->pull_keys[n] = key;
        /* under `none` the request order is the only order there is */
        e->pull_prio[n++] = e->o.shuffle_pulls ? i : prio_of(e, key);
    }
    int rc = e->path->ops->pulls(e->path, iter, e->pull_keys, e->pull_prio, n, e->params);
    if (rc) {
        pthread_mutex_lock(&e->mu);
        e->fatal = rc;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
}

/* a gradient of iteration iter to the push engine; with pull_early, the value it leads to
 * asked for at once (the server holds the request until every worker's push is in) */
static int push_then_pull(ordo_exec_t *e, int key, int64_t iter)
{
    int rc = e->path->ops->grad_ready(e->path, key, e->grads[key], iter,
                                      e->o.priority ? e->o.priority[key] : 0);
    if (rc || !e->o.pull_early || iter + 1 >= e->o.iterations || e->want_iter[key] > iter)
        return rc;
    e->want_iter[key] = iter + 1;
    e->pull_start_ns[key] = ordo_clock_ns();
    return ordo__ps_pull(e->o.ps, key, e->params[key], iter + 1, prio_of(e, key));
}

static void *comm_main(void *arg)
{
    ordo_exec_t *e = arg;
    char args[128];
    for (;;) {
        ordo__ps_event_t ev;
        int rc = ordo__ps_poll(e->o.ps, -1, &ev);
        if (rc) {
            ORDO_ERROR("%s", ordo_error_text(rc));
            pthread_mutex_lock(&e->mu);
            e->fatal = rc;
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
            return NULL;
        }
        if (ev.kind == ORDO__EV_PULL_DONE) {
            if (e->o.trace) {
                snprintf(args, sizeof args, "{\"iter\":%lld}", (long long)ev.iter);
                ordo_trace_complete(e->o.trace, e->o.model->params[ev.key].name, "pull", 1,
                                    e->pull_start_ns[ev.key], ev.t_ns - e->pull_start_ns[ev.key],
                                    args);
            }
            pthread_mutex_lock(&e->mu);
            e->ready_iter[ev.key] = ev.iter;
            e->arrive_ns[ev.key] = ev.t_ns;
            if (ev.iter == e->cur_pull) e->pulls_left--; /* not an early pull's */
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        if (ev.kind == ORDO__EV_PUSH_DONE) {
            if (e->o.trace) {
                snprintf(args, sizeof args, "{\"iter\":%lld}", (long long)ev.iter);
                ordo_trace_complete(e->o.trace, e->o.model->params[ev.key].name, "push", 3,
                                    e->push_start_ns[ev.key], ev.t_ns - e->push_start_ns[ev.key],
                                    args);
            }
            pthread_mutex_lock(&e->mu);
            if (--e->pushes_left == 0) pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        if (ev.kind == ORDO__EV_HOOK) {
            path_done(e, &ev);
            continue;
        }
        if (ev.kind == ORDO__EV_BATCH) {
            pthread_mutex_lock(&e->mu);
            int64_t epoch;
            e->batch_rc = ordo__ps_batch_take(e->o.ps, e->batch_idx, e->batch_cap, &e->batch_n,
                                              &epoch);
            e->batch_done = true;
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        if (ev.kind == ORDO__EV_BARRIER) {
            pthread_mutex_lock(&e->mu);
            e->barrier_done = ev.iter;
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        /* WAKE: drain the command queue */
        for (;;) {
            pthread_mutex_lock(&e->mu);
            if (e->q_n == 0) {
                pthread_mutex_unlock(&e->mu);
                break;
            }
            cmd_t c = e->q[e->q_head];
            e->q_head = (e->q_head + 1) % e->q_cap;
            e->q_n--;
            pthread_mutex_unlock(&e->mu);
            if (c.kind == CMD_STOP) return NULL;
            if (c.kind == CMD_REPORT) {
                ordo__ps_report(e->o.ps, c.text);
                free(c.text);
                continue;
            }
            if (c.kind == CMD_BATCH) {
                rc = ordo__ps_batch_request(e->o.ps, c.text, -1, c.iter);
                free(c.text);
                if (rc) {
                    pthread_mutex_lock(&e->mu);
                    e->batch_rc = rc;
                    e->batch_done = true;
                    pthread_cond_broadcast(&e->cv);
                    pthread_mutex_unlock(&e->mu);
                }
                continue;
            }
            if (c.kind == CMD_INIT) {
                /* only this thread may touch the sockets */
                rc = e->path->ops->init(e->path, e->init_values);
                pthread_mutex_lock(&e->mu);
                if (rc) e->fatal = rc;
                e->init_done = true;
                pthread_cond_broadcast(&e->cv);
                pthread_mutex_unlock(&e->mu);
                continue;
            }
            if (c.kind == CMD_START || c.kind == CMD_PULL_ALL) {
                issue_pulls(e, c.iter);
            } else {
                /* pushes: the plan's order; without a plan, the order they became ready */
                if (c.kind == CMD_GRADS_DONE)
                    rc = e->path->ops->grads_done(e->path, c.iter);
                else if (c.kind == CMD_BARRIER)
                    rc = ordo__ps_barrier(e->o.ps, c.iter);
                else
                    rc = push_then_pull(e, c.key, c.iter);
                if (rc) {
                    pthread_mutex_lock(&e->mu);
                    e->fatal = rc;
                    pthread_cond_broadcast(&e->cv);
                    pthread_mutex_unlock(&e->mu);
                }
            }
        }
    }
}

/* ---- public ------------------------------------------------------------------------- */

int ordo_exec_new(const ordo_exec_opts_t *o, ordo_exec_t **out)
{
    ordo_exec_t *e = calloc(1, sizeof *e);
    if (!e) return ORDO_ERR_NOMEM;
    e->o = *o;
    e->n = o->model->n_params;
    e->rng = o->seed * 0x100000001b3ull + (uint64_t)ordo__ps_rank(o->ps) + 1;
    e->barrier_done = -1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->params = calloc((size_t)e->n, sizeof *e->params);
    e->grads = calloc((size_t)e->n, sizeof *e->grads);
    e->order = calloc((size_t)e->n, sizeof *e->order);
    e->pull_keys = calloc((size_t)e->n + 1, sizeof *e->pull_keys);
    e->pull_prio = calloc((size_t)e->n + 1, sizeof *e->pull_prio);
    e->path = ordo__ps_push_path(o->ps);
    e->ready_iter = calloc((size_t)e->n, sizeof *e->ready_iter);
    e->arrive_ns = calloc((size_t)e->n + 1, sizeof *e->arrive_ns);
    e->op_end_ns = calloc((size_t)o->model->n_ops + 1, sizeof *e->op_end_ns);
    if (!e->arrive_ns || !e->op_end_ns) goto nomem;
    e->pull_start_ns = calloc((size_t)e->n, sizeof *e->pull_start_ns);
    e->push_start_ns = calloc((size_t)e->n, sizeof *e->push_start_ns);
    e->want_iter = malloc((size_t)e->n * sizeof *e->want_iter);
    if (!e->params || !e->grads || !e->order || !e->pull_keys || !e->pull_prio ||
        !e->ready_iter || !e->pull_start_ns ||
        !e->push_start_ns || !e->want_iter)
        goto nomem;
    for (int i = 0; i < e->n; i++)
        e->want_iter[i] = -1;
    e->cur_pull = -1;
    int64_t total = ordo_model_total_numel(o->model), at = 0;
    e->param_block = calloc((size_t)total + 1, sizeof(float));
    e->grad_block = calloc((size_t)total + 1, sizeof(float));
    if (!e->param_block || !e->grad_block) goto nomem;
    for (int i = 0; i < e->n; i++) {
        e->params[i] = e->param_block + at;
        /* merged pushes: a gradient computed in its merge buffer is not copied there; the
         * iteration ends only when every push was acknowledged, so the next backward cannot
         * overwrite one still being sent */
        float *home = ordo__ps_grad_home(o->ps, i);
        e->grads[i] = home ? home : e->grad_block + at;
        at += o->model->params[i].numel;
        e->order[i] = i;
        e->ready_iter[i] = -1;
    }
    sort_ctx = e;
    qsort(e->order, (size_t)e->n, sizeof *e->order, by_priority);
    int rc = e->path->ops->bind(e->path, o->model, e->param_block, e->grad_block);
    if (!rc) rc = ordo_compute_bind(o->compute, e->params, e->grads);
    /* an early pull follows a key's push: none without them */
    if (!e->path->ops->key_pushes || o->forward_only) e->o.pull_early = false;
    if (rc) {
        ordo_exec_destroy(&e);
        return rc;
    }
    if (pthread_create(&e->comm, NULL, comm_main, e) != 0) {
        ordo_exec_destroy(&e);
        return ordo_error_set(ORDO_ERR_IO, "cannot start the communication thread");
    }
    e->comm_started = true;
    if (o->trace) {
        ordo_trace_name_track(o->trace, 0, "compute");
        ordo_trace_name_track(o->trace, 1, "pulls");
        ordo_trace_name_track(o->trace, 2, "waits");
        ordo_trace_name_track(o->trace, 3, "pushes");
    }
    *out = e;
    return 0;
nomem:
    ordo_exec_destroy(&e);
    return ORDO_ERR_NOMEM;
}

void ordo_exec_destroy(ordo_exec_t **ep)
{
    ordo_exec_t *e = *ep;
    if (!e) return;
    if (e->comm_started) {
        post(e, CMD_STOP, 0, 0);
        pthread_join(e->comm, NULL);
    }
    e->path->ops->unbind(e->path); /* nothing to drop when bind never ran */
    free(e->param_block);
    free(e->grad_block);
    free(e->params);
    free(e->grads);
    free(e->order);
    free(e->pull_keys);
    free(e->pull_prio);
    free(e->ready_iter);
    free(e->arrive_ns);
    free(e->op_end_ns);
    free(e->pull_start_ns);
    free(e->push_start_ns);
    free(e->want_iter);
    for (int i = 0; i < e->q_n; i++)
        free(e->q[(e->q_head + i) % e->q_cap].text);
    free(e->q);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
    *ep = NULL;
}

float *const *ordo_exec_params(const ordo_exec_t *e)
{
    return e->params;
}

int ordo_exec_init(ordo_exec_t *e, float *const *params)
{
    pthread_mutex_lock(&e->mu);
    e->init_values = params;
    e->init_done = false;
    pthread_mutex_unlock(&e->mu);
    post(e, CMD_INIT, 0, 0);
    pthread_mutex_lock(&e->mu);
    while (!e->init_done && !e->fatal)
        pthread_cond_wait(&e->cv, &e->mu);
    int rc = e->fatal;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* the next forward op to run (compute thread): among the ops not run yet whose inputs have
 * ended and whose parameters of iteration iter have arrived, the one that became ready
 * first (ties: listed order), as the simulator's rule (docs/ordering.md); waits while none is
 * ready. Returns the op, or the fatal error. */
static int next_op(ordo_exec_t *e, int64_t iter, int64_t *waited_ns)
{
    const ordo_model_t *m = e->o.model;
    int64_t t0 = 0;
    int best = -1;
    pthread_mutex_lock(&e->mu);
    for (;;) {
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
        if (best >= 0 || e->fatal) break;
        if (!t0) t0 = ordo_clock_ns();
        pthread_cond_wait(&e->cv, &e->mu);
    }
    int rc = e->fatal;
    pthread_mutex_unlock(&e->mu);
    if (t0) {
        int64_t now = ordo_clock_ns();
        *waited_ns += now - t0;
        if (e->o.trace && best >= 0)
            ordo_trace_complete(e->o.trace, m->ops[best].name, "wait", 2, t0, now - t0, NULL);
    }
    return rc ? rc : best;
}

/* under mu: the pulls of iteration iter are the ones to count; with pull_early the values
 * that already arrived after their pushes stay, every other key is still to come */
static void expect_pulls(ordo_exec_t *e, int64_t iter)
{
    e->cur_pull = iter;
    e->pulls_left = e->n;
    for (int i = 0; i < e->n; i++) {
        if (e->o.pull_early && e->ready_iter[i] == iter)
            e->pulls_left--;
        else
            e->ready_iter[i] = -1;
    }
}

/* [straggle] slowdown: a straggler's op takes slowdown times its measured time */
static void straggle_op(const ordo_exec_t *e, int64_t c0, int64_t *c1)
{
    if (e->o.slowdown <= 1) return;
    ordo_clock_sleep_until(*c1 + (int64_t)((e->o.slowdown - 1) * (double)(*c1 - c0)));
    *c1 = ordo_clock_ns();
}

int ordo_exec_iteration(ordo_exec_t *e, int64_t t, const float *x, const int *labels, int n,
                        ordo_exec_stats_t *st)
{
    const ordo_model_t *m = e->o.model;
    int rc;
    int64_t pull_iter = e->o.forward_only ? 0 : t;
    memset(st, 0, sizeof *st);
    if (e->o.forward_only && ordo__ps_n_workers(e->o.ps) > 1) {
        /* nothing else keeps forward-only workers in step (no pushes, no new versions):
         * iteration t starts when every worker has reached it */
        if ((rc = ordo_exec_barrier(e, t)) != 0) return rc;
    }
    st->t_start_ns = ordo_clock_ns();
    pthread_mutex_lock(&e->mu);
    e->cur_iter = t;
    e->pushes_left = e->o.forward_only ? 0 : e->path->ops->key_pushes ? e->n : 1;
    /* a path whose pushes are answered with the new values may have them already */
    bool have = e->path->ops->have(e->path, pull_iter);
    if (have) {
        e->cur_pull = pull_iter;
        e->pulls_left = 0;
        for (int i = 0; i < e->n; i++)
            e->ready_iter[i] = pull_iter;
    } else {
        expect_pulls(e, pull_iter);
        have = e->pulls_left == 0; /* pull_early: everything arrived after its push */
    }
    pthread_mutex_unlock(&e->mu);
    /* (early: the communication thread skips the keys it asked for after their pushes) */
    if (!have) post(e, CMD_START, 0, pull_iter);

    if (x && (rc = ordo_compute_set_batch(e->o.compute, x, labels, n)) != 0) return rc;
    int64_t waited = 0, computing = 0;
    double delay = e->o.straggle
                       ? ordo_conf_straggle_delay_ms(e->o.straggle, ordo__ps_rank(e->o.ps), t)
                       : 0;
    if (delay > 0) { /* a transient straggler: this iteration's compute is late */
        int64_t d0 = ordo_clock_ns();
        ordo_clock_sleep_until(d0 + (int64_t)(delay * 1e6));
        computing += ordo_clock_ns() - d0;
    }
    memset(e->op_end_ns, 0, sizeof *e->op_end_ns * (size_t)m->n_ops);
    for (int k = 0; k < m->n_ops; k++) {
        int op = next_op(e, pull_iter, &waited);
        if (op < 0) return op;
        int64_t c0 = ordo_clock_ns();
        if ((rc = ordo_compute_forward(e->o.compute, op)) != 0) return rc;
        int64_t c1 = ordo_clock_ns();
        straggle_op(e, c0, &c1);
        e->op_end_ns[op] = c1; /* only this thread reads it after the pass starts */
        computing += c1 - c0;
        if (e->o.trace)
            ordo_trace_complete(e->o.trace, m->ops[op].name, "forward", 0, c0, c1 - c0, NULL);
    }
    st->t_forward_end_ns = ordo_clock_ns();
    if (e->snap) { /* every parameter of iteration t is in, and no push of t has gone */
        memcpy(e->snap, e->param_block, sizeof(float) * (size_t)ordo_model_total_numel(m));
        e->snap = NULL;
    }
    if (!e->o.forward_only) {
        for (int op = m->n_ops - 1; op >= 0; op--) {
            int64_t c0 = ordo_clock_ns();
            if ((rc = ordo_compute_backward(e->o.compute, op)) != 0) return rc;
            int64_t c1 = ordo_clock_ns();
            straggle_op(e, c0, &c1);
            computing += c1 - c0;
            if (e->o.trace)
                ordo_trace_complete(e->o.trace, m->ops[op].name, "backward", 0, c0, c1 - c0, NULL);
            for (int j = 0; j < m->ops[op].n_params; j++) {
                /* a shared parameter's gradient is complete after the backward of the first op
                 * reading it, which runs last: push it once, then */
                if (m->params[m->ops[op].params[j]].first_op != op) continue;
                /* read by the communication thread after it takes the command */
                e->push_start_ns[m->ops[op].params[j]] = ordo_clock_ns();
                post(e, CMD_PUSH, m->ops[op].params[j], t);
            }
        }
        post(e, CMD_GRADS_DONE, 0, t);
    }
    double loss = 0;
    int correct = 0;
    ordo_compute_loss(e->o.compute, &loss, &correct);
    /* the iteration ends when every push is acknowledged (the gradient buffers are free
     * again) and every pull of it arrived */
    int64_t w0 = ordo_clock_ns();
    pthread_mutex_lock(&e->mu);
    while ((e->pushes_left > 0 || e->pulls_left > 0) && !e->fatal)
        pthread_cond_wait(&e->cv, &e->mu);
    rc = e->fatal;
    pthread_mutex_unlock(&e->mu);
    if (rc) return rc;
    st->t_push_done_ns = st->t_end_ns = ordo_clock_ns();
    if (e->o.trace && !e->o.forward_only)
        ordo_trace_complete(e->o.trace, "pushes to finish", "wait", 2, w0, st->t_end_ns - w0,
                            NULL);
    int64_t bytes = ordo_model_total_bytes(m);
    st->bytes_pull = bytes;
    st->bytes_push = e->o.forward_only ? 0 : bytes;
    if (!e->o.forward_only) {
        pthread_mutex_lock(&e->mu);
        e->path->ops->stats(e->path, &st->bytes_push, &st->bytes_pull, st->extra,
                            sizeof st->extra);
        pthread_mutex_unlock(&e->mu);
    }
    st->step_ms = (double)(st->t_end_ns - st->t_start_ns) / 1e6;
    st->wait_ms = (double)waited / 1e6;
    st->compute_ms = (double)computing / 1e6;
    st->loss = loss;
    st->correct = correct;
    return 0;
}

int ordo_exec_path_state(ordo_exec_t *e, const char *path, bool save)
{
    if (!e->path->ops->state) return 0;
    pthread_mutex_lock(&e->mu);
    int rc = e->path->ops->state(e->path, path, save);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int ordo_exec_barrier(ordo_exec_t *e, int64_t id)
{
    post(e, CMD_BARRIER, 0, id);
    pthread_mutex_lock(&e->mu);
    while (e->barrier_done < id && !e->fatal) pthread_cond_wait(&e->cv, &e->mu);
    int rc = e->fatal;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int ordo_exec_pull_all(ordo_exec_t *e, int64_t t)
{
    pthread_mutex_lock(&e->mu);
    expect_pulls(e, t);
    pthread_mutex_unlock(&e->mu);
    post(e, CMD_PULL_ALL, 0, t);
    pthread_mutex_lock(&e->mu);
    while (e->pulls_left > 0 && !e->fatal)
        pthread_cond_wait(&e->cv, &e->mu);
    int rc = e->fatal;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

void ordo_exec_snapshot(ordo_exec_t *e, float *block)
{
    e->snap = block;
}

void ordo_exec_report(ordo_exec_t *e, const char *json)
{
    char *copy = strdup(json);
    if (copy) post_text(e, CMD_REPORT, 0, 0, copy);
}

int ordo_exec_next_batch(ordo_exec_t *e, const char *spec, int64_t iter, int64_t *idx, int cap,
                         int *count)
{
    char *copy = strdup(spec);
    if (!copy) return ORDO_ERR_NOMEM;
    pthread_mutex_lock(&e->mu);
    e->batch_done = false;
    e->batch_idx = idx;
    e->batch_cap = cap;
    pthread_mutex_unlock(&e->mu);
    post_text(e, CMD_BATCH, 0, iter, copy);
    pthread_mutex_lock(&e->mu);
    while (!e->batch_done && !e->fatal) pthread_cond_wait(&e->cv, &e->mu);
    int rc = e->fatal ? e->fatal : e->batch_rc;
    *count = e->batch_n;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

bool ordo_exec_pulls_early(const ordo_exec_t *e)
{
    return e->o.pull_early;
}
