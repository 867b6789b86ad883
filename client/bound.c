/* bound: a bound model's thread, its command and arrival queues, and the waits of the
 * program's thread on them (client/bound.h). */
#include "client/bound.h"
#include "client/compress.h"
#include "client/bound_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/trace.h"
#include "client/push.h"

/* ---- queues ------------------------------------------------------------------------- */

int ordo__bound_post_cmd(ordo__bound_t *b, cmd_t c)
{
    pthread_mutex_lock(&b->mu);
    if (b->q_n == b->q_cap) {
        int cap = b->q_cap ? b->q_cap * 2 : 64;
        cmd_t *p = malloc(sizeof *p * (size_t)cap);
        if (!p) {
            pthread_mutex_unlock(&b->mu);
            free(c.text);
            return ordo__error_set(ORDO_ERR_NOMEM, "out of memory for the bound model's commands");
        }
        for (int i = 0; i < b->q_n; i++)
            p[i] = b->q[(b->q_head + i) % b->q_cap];
        free(b->q);
        b->q = p;
        b->q_cap = cap;
        b->q_head = 0;
    }
    b->q[(b->q_head + b->q_n++) % b->q_cap] = c;
    pthread_mutex_unlock(&b->mu);
    ordo__ps_wake(b->o.ps);
    return 0;
}

static int post(ordo__bound_t *b, cmd_kind_t kind, int key, int64_t iter)
{
    return ordo__bound_post_cmd(b, (cmd_t){kind, key, iter, NULL, NULL, 0});
}

/* under mu: key's value of iter is in */
static void arrived(ordo__bound_t *b, int key, int64_t iter, int64_t t_ns)
{
    if (b->a_n == b->a_cap) {
        int cap = b->a_cap * 2;
        ordo_arrival_t *p = malloc(sizeof *p * (size_t)cap);
        if (!p) {
            b->fatal = ordo__error_set(ORDO_ERR_NOMEM, "out of memory for arrivals");
            snprintf(b->fatal_msg, sizeof b->fatal_msg, "%s", ordo__error_text(b->fatal));
            return;
        }
        for (int i = 0; i < b->a_n; i++)
            p[i] = b->arr[(b->a_head + i) % b->a_cap];
        free(b->arr);
        b->arr = p;
        b->a_cap = cap;
        b->a_head = 0;
    }
    b->arr[(b->a_head + b->a_n++) % b->a_cap] = (ordo_arrival_t){key, iter, t_ns};
    b->ready_iter[key] = iter;
    if (iter == b->cur_pull && b->pulls_left > 0) b->pulls_left--;
}

static void fail(ordo__bound_t *b, int rc)
{
    pthread_mutex_lock(&b->mu);
    if (!b->fatal) {
        b->fatal = rc;
        snprintf(b->fatal_msg, sizeof b->fatal_msg, "%s", ordo__error_text(rc));
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* fatal_error (under mu) gives the calling thread the fatal error with its detail (the
 * dead peer's name, the scheduler's reason), 0 when there is none */
static int fatal_error(const ordo__bound_t *b)
{
    return b->fatal ? ordo__error_set(b->fatal, "%s", b->fatal_msg) : 0;
}

/* waits (under mu) until done(b) or the fatal error, up to timeout_ms (-1: no limit) */
int ordo__bound_wait_for(ordo__bound_t *b, bool (*done)(const ordo__bound_t *), int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    while (!done(b) && !b->fatal) {
        if (deadline < 0) {
            pthread_cond_wait(&b->cv, &b->mu);
            continue;
        }
        if (ordo__clock_ns() >= deadline)
            return ordo__error_set(ORDO_ERR_TIMEDOUT, "not complete after %d ms", timeout_ms);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (deadline - ordo__clock_ns());
        ts = (struct timespec){.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
        pthread_cond_timedwait(&b->cv, &b->mu, &ts);
    }
    return fatal_error(b);
}

/* ---- the thread --------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void trace_span(ordo__bound_t *b, int key, const char *cat, int track, int64_t t0,
                       int64_t t1, int64_t iter)
{
    if (!b->o.trace) return;
    char args[64];
    snprintf(args, sizeof args, "{\"iter\":%lld}", (long long)iter);
    ordo__trace_complete(b->o.trace, b->o.name[key], cat, track, t0, t1 - t0, args);
}

static void issue_pulls(ordo__bound_t *b, int64_t iter)
{
    if (b->o.run.shuffle) {
        for (int i = b->n - 1; i > 0; i--) {
            int j = (int)(splitmix(&b->rng) % (uint64_t)(i + 1));
            int t = b->order[i];
            b->order[i] = b->order[j];
            b->order[j] = t;
        }
    }
    int64_t now = ordo__clock_ns();
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        int key = b->order[i];
        /* asked for after its push (forward-only runs ask for version 0 every iteration) */
        if (b->o.run.pull_early && b->want_iter[key] >= iter) continue;
        b->want_iter[key] = iter;
        b->pull_start_ns[key] = now;
        b->pull_keys[n] = key;
        /* under `none` the request order is the only order there is */
        b->pull_prio[n++] = b->o.run.shuffle ? i : b->o.priority[key];
    }
    int rc = b->path->ops->pulls(b->path, iter, b->pull_keys, b->pull_prio, n, b->values);
    if (rc) fail(b, rc);
}

/* a gradient of iter to the push path; with early pulls the value it leads to is asked for
 * at once (the server holds the request until every worker's push is in) */
static int push_then_pull(ordo__bound_t *b, int key, int64_t iter)
{
    int rc = b->path->ops->grad_ready(b->path, key, b->grads[key], iter, b->o.priority[key]);
    if (rc || !b->o.run.pull_early || b->want_iter[key] > iter ||
        (b->o.run.iterations >= 0 && iter + 1 >= b->o.run.iterations))
        return rc;
    b->want_iter[key] = iter + 1;
    b->pull_start_ns[key] = ordo__clock_ns();
    return ordo__ps_pull(b->o.ps, key, b->values[key], iter + 1, b->o.priority[key]);
}

/* under mu: key's gradient buffer of iter is free (its push completed, or the path moved on to
 * its own copy of it) */
static void grad_freed(ordo__bound_t *b, int key, int64_t iter)
{
    if (iter <= b->freed[key]) return;
    bool counted = b->freed[key] < b->free_iter;
    b->freed[key] = iter;
    if (counted && iter >= b->free_iter && --b->frees_left == 0) pthread_cond_broadcast(&b->cv);
}

/* the program handed over key's gradient of iter: to the path now, or, while the key's
 * previous push is still outstanding (ordo_iter_end returned once the gradient buffers were
 * free, and a host group's owner pushes from one sum buffer per key), held until its PUSH_DONE */
static int hand_push(ordo__bound_t *b, int key, int64_t iter)
{
    if (b->path->ops->key_pushes && b->handed[key] > b->pushed[key]) {
        b->held[key] = iter;
        b->held_n++;
        return 0;
    }
    b->handed[key] = iter;
    return push_then_pull(b, key, iter);
}

/* a PUSH_DONE of key's push of iter; a push held behind it leaves now */
static int push_done(ordo__bound_t *b, int key, int64_t iter)
{
    pthread_mutex_lock(&b->mu);
    if (!b->path->ops->key_pushes) {
        if (--b->pushes_left == 0) pthread_cond_broadcast(&b->cv);
    } else {
        if (iter > b->pushed[key]) b->pushed[key] = iter;
        grad_freed(b, key, iter);
        if (--b->pushes_out == 0) pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    int64_t next = b->held[key];
    if (next < 0 || b->pushed[key] < b->handed[key]) return 0;
    b->held[key] = -1;
    return hand_push(b, key, next);
}

/* an event of the path's own (ORDO__EV_HOOK): it may have brought every value of ev->iter,
 * or finished the iteration's pushes */
static void path_event(ordo__bound_t *b, const ordo__ps_event_t *ev)
{
    pthread_mutex_lock(&b->mu);
    ordo__push_done_t done = b->path->ops->on_event(b->path, ev);
    if (done == ORDO__PUSH_DONE_PULLED) {
        for (int i = 0; i < b->n; i++)
            if (b->ready_iter[i] != ev->iter) arrived(b, i, ev->iter, ev->t_ns);
        if (ev->iter == b->cur_pull) b->pulls_left = 0;
    } else if (done == ORDO__PUSH_DONE_PUSHED) {
        b->pushes_left = 0;
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* runs one command; false on CMD_STOP */
/* take_batch hands the program the batch service's answer that is in */
static void take_batch(ordo__bound_t *b)
{
    pthread_mutex_lock(&b->mu);
    int64_t epoch;
    b->batch_rc = ordo__ps_batch_take(b->o.ps, b->batch_idx, b->batch_cap, &b->batch_n, &epoch);
    b->batch_done = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static bool run_command(ordo__bound_t *b, cmd_t c)
{
    int rc = 0;
    switch (c.kind) {
    case CMD_STOP:
        return false;
    case CMD_REPORT:
        rc = ordo__ps_report(b->o.ps, c.text);
        free(c.text);
        break;
    case CMD_INIT:
        rc = b->path->ops->init(b->path, c.buf ? (float *const *)c.buf : b->values);
        pthread_mutex_lock(&b->mu);
        b->init_done = true;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        break;
    case CMD_START:
        issue_pulls(b, c.iter);
        break;
    case CMD_GRADS_DONE:
        rc = b->path->ops->grads_done(b->path, c.iter);
        break;
    case CMD_BARRIER:
        rc = ordo__ps_barrier(b->o.ps, c.iter);
        break;
    case CMD_BCAST:
        rc = ordo__ps_broadcast(b->o.ps, c.iter, c.key, c.buf, c.bytes);
        break;
    case CMD_REPLAN:
        rc = ordo__ps_replan(b->o.ps, c.text, c.text ? c.buf : NULL);
        free(c.text);
        free(c.buf);
        break;
    case CMD_BATCH: {
        int brc = ordo__ps_batch_request(b->o.ps, c.text, c.key, c.iter);
        free(c.text);
        if (brc == 1) { /* asked for ahead and answered already */
            take_batch(b);
        } else if (brc) { /* refused before it left: the program's call fails with it */
            pthread_mutex_lock(&b->mu);
            b->batch_rc = brc;
            b->batch_done = true;
            pthread_cond_broadcast(&b->cv);
            pthread_mutex_unlock(&b->mu);
        }
        break;
    }
    case CMD_PUSH:
        if (b->path->ops->key_pushes) {
            pthread_mutex_lock(&b->mu);
            b->pushes_out++;
            pthread_mutex_unlock(&b->mu);
        }
        rc = hand_push(b, c.key, c.iter);
        break;
    }
    if (rc) fail(b, rc);
    return true;
}

static void *thread_main(void *arg)
{
    ordo__bound_t *b = arg;
    for (;;) {
        ordo__ps_event_t ev;
        int rc = ordo__ps_poll(b->o.ps, -1, &ev);
        if (rc) {
            ORDO_ERROR("%s", ordo__error_text(rc));
            fail(b, rc);
            return NULL;
        }
        if (ev.kind == ORDO__EV_PULL_DONE) {
            trace_span(b, ev.key, "pull", 1, b->pull_start_ns[ev.key], ev.t_ns, ev.iter);
            pthread_mutex_lock(&b->mu);
            arrived(b, ev.key, ev.iter, ev.t_ns);
            pthread_cond_broadcast(&b->cv);
            pthread_mutex_unlock(&b->mu);
        } else if (ev.kind == ORDO__EV_PUSH_DONE) {
            trace_span(b, ev.key, "push", 3, b->push_start_ns[2 * ev.key + (ev.iter & 1)],
                       ev.t_ns, ev.iter);
            rc = push_done(b, ev.key, ev.iter);
            if (rc) fail(b, rc);
        } else if (ev.kind == ORDO__EV_GRAD_FREE) {
            pthread_mutex_lock(&b->mu);
            grad_freed(b, ev.key, ev.iter);
            pthread_mutex_unlock(&b->mu);
        } else if (ev.kind == ORDO__EV_HOOK) {
            path_event(b, &ev);
        } else if (ev.kind == ORDO__EV_BATCH) {
            /* an answer asked for ahead waits in the library until the program asks */
            if (!ordo__ps_batch_unasked(b->o.ps)) take_batch(b);
        } else if (ev.kind == ORDO__EV_BCAST) {
            pthread_mutex_lock(&b->mu);
            if (ev.iter > b->bcast_done) b->bcast_done = ev.iter;
            pthread_cond_broadcast(&b->cv);
            pthread_mutex_unlock(&b->mu);
        } else if (ev.kind == ORDO__EV_REPLAN) {
            /* applied here, between iterations, by the thread that owns the handle */
            char *text = ordo__ps_replan_take(b->o.ps);
            int arc = 0;
            if (ordo__ps_replan_accepted(text)) /* the bound path stays: a host group's */
                arc = ordo__ps_replan_apply(b->o.ps, text, true);
            pthread_mutex_lock(&b->mu);
            free(b->replan_text);
            b->replan_text = text;
            b->replan_rc = arc;
            b->replan_done = true;
            pthread_cond_broadcast(&b->cv);
            pthread_mutex_unlock(&b->mu);
            if (arc) fail(b, arc); /* no push path: this worker cannot go on */
        } else if (ev.kind == ORDO__EV_BARRIER) {
            pthread_mutex_lock(&b->mu);
            if (ev.iter > b->barrier_done) b->barrier_done = ev.iter;
            pthread_cond_broadcast(&b->cv);
            pthread_mutex_unlock(&b->mu);
        } else if (ev.kind == ORDO__EV_WAKE) {
            for (;;) {
                pthread_mutex_lock(&b->mu);
                if (b->q_n == 0) {
                    pthread_mutex_unlock(&b->mu);
                    break;
                }
                cmd_t c = b->q[b->q_head];
                b->q_head = (b->q_head + 1) % b->q_cap;
                b->q_n--;
                pthread_mutex_unlock(&b->mu);
                if (!run_command(b, c)) return NULL;
            }
        }
    }
}

/* ---- life cycle --------------------------------------------------------------------- */

const ordo__bound_t *ordo__bound_sort_ctx;

int ordo__bound_by_priority(const void *x, const void *y)
{
    int a = *(const int *)x, c = *(const int *)y;
    int pa = ordo__bound_sort_ctx->o.priority[a], pc = ordo__bound_sort_ctx->o.priority[c];
    if (pa != pc) return pa < pc ? -1 : 1;
    return a - c;
}

int ordo__bound_new(const ordo__bound_opts_t *o, ordo__bound_t **out)
{
    ordo__bound_t *b = calloc(1, sizeof *b);
    if (!b) return ORDO_ERR_NOMEM;
    b->o = *o;
    int n = b->n = o->n;
    b->rng = o->run.seed * 0x100000001b3ull + (uint64_t)ordo__ps_rank(o->ps) + 1;
    b->barrier_done = -1;
    b->cur_pull = -1;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->values = calloc((size_t)n + 1, sizeof *b->values);
    b->grads = calloc((size_t)n + 1, sizeof *b->grads);
    b->own = calloc((size_t)n + 1, sizeof *b->own);
    b->order = calloc((size_t)n + 1, sizeof *b->order);
    b->pull_keys = calloc((size_t)n + 1, sizeof *b->pull_keys);
    b->pull_prio = calloc((size_t)n + 1, sizeof *b->pull_prio);
    b->ready_iter = calloc((size_t)n + 1, sizeof *b->ready_iter);
    b->want_iter = calloc((size_t)n + 1, sizeof *b->want_iter);
    b->pushed = calloc((size_t)n + 1, sizeof *b->pushed);
    b->freed = calloc((size_t)n + 1, sizeof *b->freed);
    b->handed = calloc((size_t)n + 1, sizeof *b->handed);
    b->held = calloc((size_t)n + 1, sizeof *b->held);
    b->pull_start_ns = calloc((size_t)n + 1, sizeof *b->pull_start_ns);
    b->push_start_ns = calloc(2 * (size_t)n + 1, sizeof *b->push_start_ns);
    b->a_cap = 4 * n + 16;
    b->arr = malloc(sizeof *b->arr * (size_t)b->a_cap);
    int64_t total = 0, at = 0;
    for (int i = 0; i < n; i++)
        total += o->numel[i];
    b->value_block = calloc((size_t)total + 1, sizeof(float));
    b->grad_block = calloc((size_t)total + 1, sizeof(float));
    if (!b->values || !b->grads || !b->own || !b->order || !b->pull_keys || !b->pull_prio ||
        !b->ready_iter || !b->want_iter || !b->pull_start_ns || !b->push_start_ns || !b->arr ||
        !b->pushed || !b->freed || !b->handed || !b->held || !b->value_block || !b->grad_block) {
        ordo__bound_destroy(&b);
        return ordo__error_set(ORDO_ERR_NOMEM, "out of memory for the bound model's buffers");
    }
    b->path = ordo__ps_push_path(o->ps);
    for (int i = 0; i < n; i++) {
        /* host groups with shared values: the group's value itself, written by the path only */
        float *shared = ordo__ps_value_home(o->ps, i);
        b->own[i] = b->value_block + at;
        b->values[i] = shared ? shared : b->own[i];
        b->shared |= shared != NULL;
        /* merged pushes: a gradient computed in its merge buffer is not copied there; the
         * iteration ends only when every gradient buffer is free again (its push acknowledged,
         * or a host group's sum made), so the next backward cannot overwrite one still read */
        float *home = ordo__ps_grad_home(o->ps, i);
        b->grads[i] = home ? home : b->grad_block + at;
        at += o->numel[i];
        b->order[i] = i;
        b->ready_iter[i] = -1;
        b->want_iter[i] = -1;
        b->pushed[i] = b->freed[i] = b->handed[i] = b->held[i] = -1;
    }
    ordo__bound_sort_ctx = b;
    qsort(b->order, (size_t)n, sizeof *b->order, ordo__bound_by_priority);
    int rc = b->path->ops->bind(b->path, b->value_block, b->grad_block);
    if (rc) {
        b->path = NULL; /* bind failed: nothing to unbind */
        ordo__bound_destroy(&b);
        return rc;
    }
    /* an early pull follows a key's push: none without key-by-key pushes */
    if (!b->path->ops->key_pushes || o->run.forward_only) b->o.run.pull_early = 0;
    if (b->o.run.pull_early)
        ORDO_INFO("pulls: early (each tensor's next value asked for right after its push)");
    if (pthread_create(&b->thread, NULL, thread_main, b) != 0) {
        ordo__bound_destroy(&b);
        return ordo__error_set(ORDO_ERR_IO, "cannot start the bound model's thread");
    }
    b->started = true;
    if (o->trace) {
        ordo__trace_name_track(o->trace, 1, "pulls");
        ordo__trace_name_track(o->trace, 3, "pushes");
    }
    *out = b;
    return 0;
}

void ordo__bound_destroy(ordo__bound_t **bp)
{
    ordo__bound_t *b = *bp;
    if (!b) return;
    if (b->started) {
        post(b, CMD_STOP, 0, 0);
        pthread_join(b->thread, NULL);
        if (b->held_n)
            ORDO_INFO("bound: %lld pushes waited for their tensor's previous push to complete",
                      (long long)b->held_n);
    }
    if (b->path) b->path->ops->unbind(b->path);
    for (int i = 0; i < b->q_n; i++) {
        cmd_t *c = &b->q[(b->q_head + i) % b->q_cap];
        free(c->text);
        if (c->kind == CMD_REPLAN) free(c->buf);
    }
    free(b->replan_text);
    free(b->q);
    free(b->arr);
    free(b->value_block);
    free(b->grad_block);
    free(b->values);
    free(b->grads);
    free(b->own);
    free(b->order);
    free(b->pull_keys);
    free(b->pull_prio);
    free(b->ready_iter);
    free(b->want_iter);
    free(b->pushed);
    free(b->freed);
    free(b->handed);
    free(b->held);
    free(b->pull_start_ns);
    free(b->push_start_ns);
    free(b->batch_idx);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
    *bp = NULL;
}

float *ordo__bound_value(const ordo__bound_t *b, int key)
{
    return b->values[key];
}

float *ordo__bound_grad(const ordo__bound_t *b, int key)
{
    return b->grads[key];
}

bool ordo__bound_forward_only(const ordo__bound_t *b)
{
    return b->o.run.forward_only != 0;
}

bool ordo__bound_pulls_early(const ordo__bound_t *b)
{
    return b->o.run.pull_early != 0;
}

/* ---- the program's calls ------------------------------------------------------------ */

static bool init_done(const ordo__bound_t *b)
{
    return b->init_done;
}

/* init_with sends values (NULL: the value buffers), which outlive the thread */
static int init_with(ordo__bound_t *b, float **values)
{
    pthread_mutex_lock(&b->mu);
    b->init_done = false;
    pthread_mutex_unlock(&b->mu);
    int rc = ordo__bound_post_cmd(b, (cmd_t){CMD_INIT, 0, 0, NULL, values, 0});
    if (rc) return rc;
    pthread_mutex_lock(&b->mu);
    rc = ordo__bound_wait_for(b, init_done, -1);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int ordo__bound_init(ordo__bound_t *b)
{
    if (b->shared)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "ordo_bound_init: the value buffers are the host group's shared "
                              "memory ([intra] values = shared), written only by the group's "
                              "owners; send the initial values from your own buffers with "
                              "ordo_bound_init_from, or set [intra] values = copy");
    return init_with(b, NULL);
}

int ordo__bound_init_from(ordo__bound_t *b, const float *const *values)
{
    /* copied into the binding's own block first (the value buffers themselves unless they are
     * shared): the call returns early on a failure of the cluster, and the thread may still
     * send them after the caller freed its buffers */
    for (int i = 0; i < b->n; i++)
        if (!values[i])
            return ordo__error_set(ORDO_ERR_INVAL, "ordo_bound_init_from: NULL values of "
                                  "tensor %d", i);
    for (int i = 0; i < b->n; i++)
        memcpy(b->own[i], values[i], sizeof(float) * (size_t)b->o.numel[i]);
    return init_with(b, b->own);
}

/* under mu: the values of iter are the ones to count; in training those already in stay
 * (early pulls, or an ordo_pull_values(iter) before ordo_iter_begin(iter): asking again for a
 * value the group may already have moved past would wait forever), every other value is asked
 * for again (a forward-only run reads version 0 every iteration, and each iteration's pulls
 * are what it measures) */
static void expect_pulls(ordo__bound_t *b, int64_t iter)
{
    b->cur_pull = iter;
    b->pulls_left = b->n;
    bool keep = b->o.run.pull_early || !b->o.run.forward_only;
    for (int i = 0; i < b->n; i++) {
        if (keep && b->ready_iter[i] == iter)
            b->pulls_left--;
        else
            b->ready_iter[i] = -1;
    }
}

int ordo__bound_iter_begin(ordo__bound_t *b, int64_t iter)
{
    int64_t pull_iter = b->o.run.forward_only ? 0 : iter;
    pthread_mutex_lock(&b->mu);
    int rc = fatal_error(b);
    if (rc) {
        pthread_mutex_unlock(&b->mu);
        return rc;
    }
    /* pushes are counted per key, so that those of iter - 1 may still complete now (the
     * gradient buffers were free when ordo_iter_end returned); a whole-iteration path counts
     * this iteration's one */
    bool keys = b->path->ops->key_pushes;
    b->pushes_left = b->o.run.forward_only || keys ? 0 : 1;
    b->free_iter = iter;
    b->frees_left = 0;
    for (int i = 0; keys && !b->o.run.forward_only && i < b->n; i++)
        b->frees_left += b->freed[i] < iter;
    /* arrivals of earlier iterations the program did not take are of no use now: drop them,
     * so that the queue stays within two iterations' worth over a long run */
    int kept = 0;
    for (int i = 0; i < b->a_n; i++) {
        ordo_arrival_t a = b->arr[(b->a_head + i) % b->a_cap];
        if (a.iter >= pull_iter) b->arr[(b->a_head + kept++) % b->a_cap] = a;
    }
    b->a_n = kept;
    bool have = false;
    if (b->path->ops->have(b->path, pull_iter)) {
        /* a path whose pushes are answered with the new values has them already */
        int64_t now = ordo__clock_ns();
        b->cur_pull = pull_iter;
        for (int i = 0; i < b->n; i++)
            if (b->ready_iter[i] != pull_iter) arrived(b, i, pull_iter, now);
        b->pulls_left = 0;
        have = true;
    } else {
        expect_pulls(b, pull_iter);
        have = b->pulls_left == 0; /* early pulls: everything arrived after its push */
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    /* (the thread skips the keys it asked for after their pushes) */
    return have ? 0 : post(b, CMD_START, 0, pull_iter);
}

static bool has_arrival(const ordo__bound_t *b)
{
    return b->a_n > 0;
}

int ordo__bound_next_arrival(ordo__bound_t *b, ordo_arrival_t *a, int timeout_ms)
{
    pthread_mutex_lock(&b->mu);
    int rc = ordo__bound_wait_for(b, has_arrival, timeout_ms);
    if (!rc || (b->a_n > 0 && rc != ORDO_ERR_TIMEDOUT)) {
        /* values that came before a failure are still handed out */
        if (b->a_n > 0) {
            *a = b->arr[b->a_head];
            b->a_head = (b->a_head + 1) % b->a_cap;
            b->a_n--;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int ordo__bound_grad_ready(ordo__bound_t *b, int key, int64_t iter)
{
    /* the trace's push starts when the program hands it over (the thread reads it after it
     * took the command, under mu) */
    b->push_start_ns[2 * key + (iter & 1)] = ordo__clock_ns();
    return post(b, CMD_PUSH, key, iter);
}

static bool pushes_answered(const ordo__bound_t *b)
{
    return b->pushes_out <= 0;
}

int ordo__bound_drain(ordo__bound_t *b, int timeout_ms)
{
    pthread_mutex_lock(&b->mu);
    int rc = ordo__bound_wait_for(b, pushes_answered, timeout_ms);
    int out = b->pushes_out;
    pthread_mutex_unlock(&b->mu);
    if (rc == ORDO_ERR_TIMEDOUT)
        ORDO_WARN("unbinding with %d pushes not answered after %d ms", out, timeout_ms);
    return rc;
}

static bool iter_done(const ordo__bound_t *b)
{
    return b->pushes_left <= 0 && b->frees_left <= 0 && b->pulls_left <= 0;
}

int ordo__bound_iter_end(ordo__bound_t *b, int64_t iter, int timeout_ms)
{
    if (!b->o.run.forward_only) {
        int rc = post(b, CMD_GRADS_DONE, 0, iter);
        if (rc) return rc;
    }
    pthread_mutex_lock(&b->mu);
    int rc = ordo__bound_wait_for(b, iter_done, timeout_ms);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void ordo__bound_iter_bytes(ordo__bound_t *b, int64_t *pushed, int64_t *pulled, char *extra,
                            size_t size)
{
    /* each tensor once each way, in its wire type (client/compress.h) */
    int64_t bytes = 0, push_bytes = 0;
    const ordo__compress_t *c = ordo__ps_compress(b->path->ps);
    for (int i = 0; i < b->n; i++) {
        int64_t pu, pl;
        ordo__compress_key_bytes(c, ordo__ps_keys(b->path->ps), i, &pu, &pl);
        push_bytes += pu;
        bytes += pl;
    }
    char none[1];
    if (!extra || size == 0) {
        extra = none;
        size = sizeof none;
    }
    extra[0] = '\0';
    *pulled = bytes;
    *pushed = b->o.run.forward_only ? 0 : push_bytes;
    if (b->o.run.forward_only) return;
    pthread_mutex_lock(&b->mu);
    b->path->ops->stats(b->path, pushed, pulled, extra, size);
    pthread_mutex_unlock(&b->mu);
}

static bool pulls_done(const ordo__bound_t *b)
{
    return b->pulls_left <= 0;
}

int ordo__bound_pull_values(ordo__bound_t *b, int64_t iter, int timeout_ms)
{
    pthread_mutex_lock(&b->mu);
    expect_pulls(b, iter);
    pthread_mutex_unlock(&b->mu);
    int rc = post(b, CMD_START, 0, iter);
    if (rc) return rc;
    pthread_mutex_lock(&b->mu);
    rc = ordo__bound_wait_for(b, pulls_done, timeout_ms);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int ordo__bound_state(ordo__bound_t *b, const char *path, bool save)
{
    /* the path's own state (sparse: residuals, thresholds), or the codecs' error-feedback
     * residuals (a sparse path takes no codec: push.compression is refused with it) */
    ordo__compress_t *c = ordo__ps_compress(b->path->ps);
    if (!b->path->ops->state && !ordo__compress_has_state(c)) return 0;
    /* a residual changes when its push is encoded, as it leaves: after ordo_iter_end a host
     * group's owner may still have pushes of the last iteration queued */
    if (save) {
        int rc = ordo__bound_drain(b, ORDO__BOUND_DRAIN_MS);
        if (rc) return rc;
    }
    pthread_mutex_lock(&b->mu);
    int rc = b->path->ops->state ? b->path->ops->state(b->path, path, save)
                                 : ordo__compress_state(c, path, save);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

