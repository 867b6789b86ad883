/* push_hier: the hierarchical path (the plan's "intra" member: [intra] backend with [cluster]
 * local_size > 1). The workers of a host group share their tensors through an intra backend
 * (client/intra.h) and only one member talks to the servers for each key, so a host sends and
 * receives one model's worth per iteration instead of L. Keys are sharded whole: each key (with
 * merged pushes, each merge group) has an owner, assigned greedily by bytes so every member
 * carries about 1/L of the model. Backward (reduce): every member puts its gradient into the
 * group's memory; the owner's intra thread sums the L contributions as soon as they are all in
 * and the owner pushes the sum with the dense or merged path inside, the value of the next
 * iteration riding on it (fused pull). Forward (all-gather): the owner publishes each value the
 * moment it arrives; every member's intra thread fetches the values of an iteration in the
 * order of the plan's priorities as they appear, and each becomes its own PULL_DONE, so the
 * forward pass waits for each op's own parameters only (DeAR's decoupled all-reduce with
 * TicTac's order); with [intra] overlap = false every PULL_DONE of an iteration waits for its
 * last all-gather (the all-reduce as one step, to measure what the decoupling gains). With the
 * shm backend the gradients are computed in the group's memory and the owner's values arrive
 * there; with [intra] values = shared (the default) a bound model's value buffers are those
 * shared values (value_home), so nothing is copied in or out at all, else each member fetches
 * (copies) every value into its own buffer. A key's value t + 1 is written into the shared
 * value only once every member put its gradient t: the owner asks for it with the push of the
 * group's sum, which needs every member's put. The servers count one pusher per
 * group and divide by every worker for the mean (server/server.c). Once the owner summed a key
 * the members' memory of it is free (ORDO__EV_GRAD_FREE: a bound model's iteration ends
 * without waiting for the servers; the owner's next push of the key, whose sum overwrites
 * h->sum, is held by client/bound.c until this one's PUSH_DONE). Sparse pushes keep the flat
 * path (the scheduler refuses the mix). */
#include "client/push.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/trace.h"
#include "client/intra.h"
#include "client/merge_buf.h"

#include "core/plan.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CODE_REDUCED = 1, CODE_GATHERED = 2, CODE_FAILED = 3, CODE_FREED = 4 };

typedef struct {
    ordo__push_t base;
    ordo__push_t *inner; /* dense or merged: how the owner's sums leave */
    ordo__intra_t *it;
    int L, lr, group, n_keys;
    int *owner;    /* [n_keys] local rank that pushes and pulls the key */
    int64_t *off;  /* [n_keys + 1] first float of each key */
    float *sum;    /* owner: the group's summed gradients (pushed from here) */
    float *val;    /* owner: the values pulled from the servers (published from here) */
    float **dst;   /* [n_keys] where each key's value goes (the executor's blocks) */
    int *prio;     /* [n_keys] the pending push's priority */
    int64_t *asked; /* [n_keys] owner: the iteration whose value it asked the servers for */
    bool *own_pull; /* [n_keys] that pull is outstanding (its answer is the path's) */
    /* the intra thread's work, under mu: per key the iteration to sum / to fetch (-1 none) */
    pthread_mutex_t mu;
    int64_t *want_sum, *want_val;
    /* the thread is fetching into dst outside mu; unbind waits on fetched until it is not, so
     * no value lands in a block the program freed */
    bool fetching;
    pthread_cond_t fetched;
    int *order; /* [n_keys] the order fetches are served in (the last pulls' priority order) */
    int *ready; /* [2 * n_keys] the thread's scratch: key and code */
    int *ready_code;
    int64_t *ready_iter;
    /* in place (the backend has area and summed): gradients are computed in the group's
     * memory (grad_home), so put copies nothing, and a non-owner's PUSH_DONE waits until the
     * owner summed the key (want_free); the owner pulls values straight into the shared
     * value (nothing copied at publish) */
    bool inplace;
    /* values read in place ([intra] values = shared, in place only): a bound model's value
     * buffers are the group's shared values (value_home), its fetches copy nothing */
    bool shared;
    int64_t *want_free;
    bool overlap;      /* false: an iteration's PULL_DONEs wait for its last all-gather */
    int *held;         /* [n_keys] the thread's fetched keys not yet announced (overlap off) */
    int64_t *held_iter;
    int n_held;
    pthread_t th;
    bool running, stop;
    char why[256]; /* the failure the thread saw */
    int why_rc;
    /* measurements: busy time of each phase (ns, atomic), bytes at the last stats call */
    int64_t reduce_ns, gather_ns;
    /* per key: the thread's last sum and fetch (start, duration), traced by local() */
    int64_t *span_sum, *span_fetch; /* [2 * n_keys] */
    char **names;                   /* [n_keys] parameter names from the plan, or NULL */
    bool track_named;
    int64_t last_push, last_pull;
} hier_t;

/* ---- the intra thread --------------------------------------------------------------- */

/* has every value the executor asked for been fetched? (overlap off: then they go at once) */
static bool all_gathered(hier_t *h)
{
    bool all = true;
    pthread_mutex_lock(&h->mu);
    for (int k = 0; k < h->n_keys && all; k++) all = h->want_val[k] < 0;
    pthread_mutex_unlock(&h->mu);
    return all;
}

/* collect moves what the group finished (a sum reduced, a gradient's buffer free, a value
 * published) into h->ready, under h->mu; how many, or -1 when the path stops */
static int collect(hier_t *h, const ordo__intra_ops_t *io)
{
    int n = 0;
    pthread_mutex_lock(&h->mu);
    if (h->stop) {
        pthread_mutex_unlock(&h->mu);
        return -1;
    }
    for (int i = 0; i < h->n_keys; i++) {
        int k = h->order[i];
        if (h->want_sum[k] >= 0 && io->reduced(h->it, k, h->want_sum[k])) {
            h->ready[n] = k;
            h->ready_code[n] = CODE_REDUCED;
            h->ready_iter[n++] = h->want_sum[k];
            h->want_sum[k] = -1;
        }
        if (h->want_free[k] >= 0 && io->summed(h->it, k, h->want_free[k])) {
            h->ready[n] = k;
            h->ready_code[n] = CODE_FREED;
            h->ready_iter[n++] = h->want_free[k];
            h->want_free[k] = -1;
        }
        if (h->want_val[k] >= 0 && io->published(h->it, k, h->want_val[k])) {
            h->ready[n] = k;
            h->ready_code[n] = CODE_GATHERED;
            h->ready_iter[n++] = h->want_val[k];
            h->want_val[k] = -1;
        }
    }
    h->fetching = n > 0;
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* serve takes ready entry i out of the group (the sum, the value) and tells the owning
 * thread (ordo__ps_post); a value is held back until all are in without overlap */
static void serve(hier_t *h, const ordo__intra_ops_t *io, int i)
{
    int64_t t0 = ordo__clock_ns();
    int k = h->ready[i];
    if (h->ready_code[i] == CODE_FREED) {
        ordo__ps_post(h->base.ps, CODE_FREED, k, h->ready_iter[i]);
    } else if (h->ready_code[i] == CODE_REDUCED) {
        io->sum(h->it, k, h->sum + h->off[k]);
        int64_t dt = ordo__clock_ns() - t0;
        __atomic_add_fetch(&h->reduce_ns, dt, __ATOMIC_RELAXED);
        h->span_sum[2 * k] = t0; /* read by local() after the post */
        h->span_sum[2 * k + 1] = dt;
        ordo__ps_post(h->base.ps, CODE_REDUCED, k, h->ready_iter[i]);
    } else {
        io->fetch(h->it, k, h->dst[k]);
        int64_t dt = ordo__clock_ns() - t0;
        __atomic_add_fetch(&h->gather_ns, dt, __ATOMIC_RELAXED);
        h->span_fetch[2 * k] = t0;
        h->span_fetch[2 * k + 1] = dt;
        if (h->overlap) {
            ordo__ps_post(h->base.ps, CODE_GATHERED, k, h->ready_iter[i]);
        } else {
            h->held[h->n_held] = k;
            h->held_iter[h->n_held++] = h->ready_iter[i];
        }
    }
}

static void *intra_main(void *arg)
{
    hier_t *h = arg;
    const ordo__intra_ops_t *io = h->it->ops;
    for (;;) {
        uint64_t gen = io->generation(h->it);
        int n = collect(h, io);
        if (n < 0) return NULL;
        for (int i = 0; i < n; i++)
            serve(h, io, i);
        if (n) {
            pthread_mutex_lock(&h->mu);
            h->fetching = false;
            pthread_cond_broadcast(&h->fetched);
            pthread_mutex_unlock(&h->mu);
        }
        if (h->n_held && all_gathered(h)) {
            for (int i = 0; i < h->n_held; i++)
                ordo__ps_post(h->base.ps, CODE_GATHERED, h->held[i], h->held_iter[i]);
            h->n_held = 0;
        }
        if (n) continue;
        int rc = io->wait(h->it, gen, 50);
        if (rc) {
            pthread_mutex_lock(&h->mu);
            h->why_rc = rc;
            snprintf(h->why, sizeof h->why, "%s", ordo__error_text(rc));
            pthread_mutex_unlock(&h->mu);
            ordo__ps_post(h->base.ps, CODE_FAILED, 0, 0);
            return NULL;
        }
    }
}

/* unbind: the program's value blocks go away. The next iteration's values may still be on
 * their way (asked for while the last forward pass ran): their fetches are dropped, and one
 * under way is waited for. The thread keeps serving the group (the other members' sums and
 * this member's owned keys) until the path stops. */
static void unbind(ordo__push_t *p)
{
    hier_t *h = (hier_t *)p;
    pthread_mutex_lock(&h->mu);
    for (int k = 0; k < h->n_keys; k++) h->want_val[k] = -1;
    while (h->fetching) pthread_cond_wait(&h->fetched, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void stop(ordo__push_t *p)
{
    hier_t *h = (hier_t *)p;
    if (!h->running) return;
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_mutex_unlock(&h->mu);
    h->it->ops->kick(h->it);
    pthread_join(h->th, NULL);
    h->running = false;
}

/* ---- bring-up ----------------------------------------------------------------------- */

static void destroy(ordo__push_t *p)
{
    hier_t *h = (hier_t *)p;
    stop(p);
    ordo__intra_destroy(&h->it);
    ordo__push_destroy(&h->inner);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->fetched);
    free(h->owner);
    free(h->off);
    free(h->sum);
    free(h->val);
    free(h->dst);
    free(h->prio);
    free(h->asked);
    free(h->own_pull);
    free(h->want_sum);
    free(h->want_val);
    free(h->order);
    free(h->ready);
    free(h->ready_iter);
    free(h->ready_code);
    free(h->want_free);
    free(h->held);
    free(h->held_iter);
    free(h->span_sum);
    free(h->span_fetch);
    for (int i = 0; h->names && i < h->n_keys; i++) free(h->names[i]);
    free(h->names);
    free(h);
}

/* owners: units (keys, or merge groups of keys) in order, each to the member with the fewest
 * bytes so far; every member computes the same assignment */
static void assign_owners(hier_t *h, int n_units, const int *start, const int *keys)
{
    int64_t load[ORDO_INTRA_MAX_LOCAL] = {0};
    for (int u = 0; u < n_units; u++) {
        int best = 0;
        for (int m = 1; m < h->L; m++)
            if (load[m] < load[best]) best = m;
        for (int i = start[u]; i < start[u + 1]; i++) {
            int k = keys[i];
            h->owner[k] = best;
            load[best] += h->off[k + 1] - h->off[k];
        }
    }
}

/* the intra backend's relay (nccl's unique ids): one broadcast through the scheduler per
 * group, rooted at its local rank 0; every worker of the run joins all of them, in group
 * order, and keeps its own group's bytes. The ids are far above those of ordo_broadcast's
 * (1, 2, ...), which runs with groups never call (they use the C API's flat path). */
#define RELAY_ID0 ((int64_t)1 << 40)

static int relay(void *ctx, void *buf, size_t bytes)
{
    hier_t *h = ctx;
    ordo__ps_t *ps = h->base.ps;
    int groups = ordo__ps_n_workers(ps) / h->L, rc = 0;
    int timeout_ms = ordo__ps_conf(ps)->startup_ms;
    void *other = malloc(bytes ? bytes : 1);
    if (!other) return ORDO_ERR_NOMEM;
    for (int g = 0; g < groups && !rc; g++)
        rc = ordo__ps_relay(ps, RELAY_ID0 + g, g * h->L, g == h->group ? buf : other, bytes,
                                timeout_ms);
    free(other);
    return rc;
}

/* alloc_keys makes h's per-key state for keys k (names from the plan's params): 0 or
 * ORDO_ERR_NOMEM (the caller destroys h) */
static int alloc_keys(hier_t *h, const ordo__keys_t *k, char *const *params)
{
    size_t n = (size_t)k->n_keys;
    h->n_keys = k->n_keys;
    h->owner = calloc(n, sizeof *h->owner);
    h->off = calloc(n + 1, sizeof *h->off);
    h->dst = calloc(n, sizeof *h->dst);
    h->prio = calloc(n, sizeof *h->prio);
    h->asked = malloc(n * sizeof *h->asked);
    h->own_pull = calloc(n, sizeof *h->own_pull);
    h->want_sum = malloc(n * sizeof *h->want_sum);
    h->want_val = malloc(n * sizeof *h->want_val);
    h->order = malloc(n * sizeof *h->order);
    h->ready = malloc(2 * n * sizeof *h->ready);
    h->ready_iter = malloc(2 * n * sizeof *h->ready_iter);
    h->ready_code = malloc(2 * n * sizeof *h->ready_code);
    h->want_free = malloc(n * sizeof *h->want_free);
    h->held = malloc(n * sizeof *h->held);
    h->held_iter = malloc(n * sizeof *h->held_iter);
    h->span_sum = calloc(2 * n, sizeof *h->span_sum);
    h->span_fetch = calloc(2 * n, sizeof *h->span_fetch);
    h->names = calloc(n, sizeof *h->names);
    for (size_t i = 0; h->names && params && i < n; i++)
        h->names[i] = strdup(params[i]);
    if (!h->owner || !h->off || !h->dst || !h->prio || !h->asked || !h->own_pull || !h->want_sum ||
        !h->want_val || !h->order || !h->ready || !h->ready_iter || !h->ready_code ||
        !h->want_free || !h->held || !h->held_iter || !h->span_sum || !h->span_fetch || !h->names)
        return ORDO_ERR_NOMEM;
    for (int i = 0; i < k->n_keys; i++) {
        h->off[i + 1] = h->off[i] + k->numel[i];
        h->asked[i] = h->want_sum[i] = h->want_val[i] = h->want_free[i] = -1;
        h->order[i] = i;
    }
    h->sum = malloc(sizeof(float) * (size_t)(h->off[n] + 1));
    h->val = malloc(sizeof(float) * (size_t)(h->off[n] + 1));
    return h->sum && h->val ? 0 : ORDO_ERR_NOMEM;
}

/* start_group opens the group's backend (intra.backend) and starts the thread that serves it */
static int start_group(hier_t *h, const ordo__plan_intra_t *intra, const ordo__conf_t *conf)
{
    int wr[ORDO_INTRA_MAX_LOCAL];
    for (int m = 0; m < h->L; m++) wr[m] = h->group * h->L + m;
    ordo__intra_opts_t io = {.run = intra->run,
                            .group = h->group,
                            .local_rank = h->lr,
                            .local_size = h->L,
                            .n_slots = h->n_keys,
                            .slot_off = h->off,
                            .timeout_ms = conf->timeout_ms,
                            .worker_rank = wr,
                            .slot_root = h->owner,
                            .relay = relay,
                            .relay_ctx = h};
    int rc = ordo__intra_new(intra->backend, &io, &h->it);
    if (rc) return rc;
    h->inplace = h->it->ops->area && h->it->ops->value_area && h->it->ops->summed &&
                 h->it->ops->area(h->it, 0) != NULL;
    h->shared = h->inplace && conf->intra_values == ORDO_INTRA_VALUES_SHARED;
    if (pthread_create(&h->th, NULL, intra_main, h) != 0)
        return ordo__error_set(ORDO_ERR_IO, "intra: cannot start its thread");
    h->running = true;
    return 0;
}

static int create(ordo__ps_t *ps, ordo__push_t **out)
{
    const ordo__keys_t *k = ordo__ps_keys(ps);
    const ordo__plan_t *plan = ordo__ps_plan(ps);
    const ordo__plan_intra_t *intra = &plan->intra;
    int L = intra->local_size, rank = ordo__ps_rank(ps), W = ordo__ps_n_workers(ps), rc;
    if (!plan->has_intra || L > ORDO_INTRA_MAX_LOCAL || W % L)
        return ordo__error_set(ORDO_ERR_PROTO, "plan member intra: local_size %d for %d workers "
                              "(at most %d)", L, W, ORDO_INTRA_MAX_LOCAL);
    /* pushes inside: the [push] mode's path (merged when the plan has groups) */
    const ordo__push_ops_t *inner = plan->has_merge ? &ordo__push_merged_ops : &ordo__push_dense_ops;
    hier_t *h = calloc(1, sizeof *h);
    if (!h) return ORDO_ERR_NOMEM;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->fetched, NULL);
    h->L = L;
    h->lr = rank % L;
    h->group = rank / L;
    h->overlap = intra->overlap;
    if ((rc = alloc_keys(h, k, plan->params)) != 0) goto fail;
    if (plan->has_merge) {
        assign_owners(h, plan->merge.n_groups, plan->merge.group_start, plan->merge.order);
    } else {
        int *start = malloc(((size_t)k->n_keys + 1) * sizeof *start);
        rc = ORDO_ERR_NOMEM;
        if (!start) goto fail;
        for (int i = 0; i <= k->n_keys; i++) start[i] = i;
        assign_owners(h, k->n_keys, start, h->order);
        free(start);
    }
    if ((rc = ordo__push_new(inner, ps, &h->inner)) != 0) goto fail;
    h->base.ps = ps; /* the relay and the thread use it before ordo__push_new sets it */
    if ((rc = start_group(h, intra, ordo__ps_conf(ps))) != 0) goto fail;
    int64_t mine = 0;
    for (int i = 0; i < k->n_keys; i++)
        if (h->owner[i] == h->lr) mine += k->numel[i];
    ORDO_INFO("intra: group %d member %d of %d (%s, %s pushes inside, values %s%s): pushes and "
              "pulls %.1f of %.1f MiB",
              h->group, h->lr, L, intra->backend, inner->name,
              h->shared ? "shared" : "copied", h->overlap ? "" : ", all-gathers not overlapped",
              (double)mine * 4 / 1048576.0, (double)h->off[k->n_keys] * 4 / 1048576.0);
    *out = &h->base;
    return 0;
fail:
    destroy(&h->base);
    return rc;
}

/* ---- key level ---------------------------------------------------------------------- */

/* backward: the member's gradient into the group; the owner's thread sums and pushes */
static int grad_ready(ordo__push_t *p, int key, const float *grad, int64_t iter, int priority)
{
    hier_t *h = (hier_t *)p;
    int64_t t0 = ordo__clock_ns();
    int rc = h->it->ops->put(h->it, key, grad, iter);
    __atomic_add_fetch(&h->reduce_ns, ordo__clock_ns() - t0, __ATOMIC_RELAXED);
    if (rc) return rc;
    if (h->owner[key] != h->lr) {
        ordo__ps_push_begin(p->ps, key, iter);
        if (!h->inplace) { /* the gradient was copied: its buffer is free again */
            ordo__ps_push_done(p->ps, key, iter);
            return 0;
        }
        pthread_mutex_lock(&h->mu); /* in place: free once the owner summed it */
        h->want_free[key] = iter;
        pthread_mutex_unlock(&h->mu);
        h->it->ops->kick(h->it);
        return 0;
    }
    pthread_mutex_lock(&h->mu);
    h->want_sum[key] = iter;
    h->prio[key] = priority;
    pthread_mutex_unlock(&h->mu);
    h->it->ops->kick(h->it);
    return 0;
}

static int pushpull_refused(ordo__push_t *p, int key, const float *src, float *dst, int64_t iter,
                            int priority)
{
    (void)p, (void)src, (void)dst, (void)iter, (void)priority;
    return ordo__error_set(ORDO_ERR_INVAL, "key %d: push-and-pull in one call does not work with "
                          "intra groups (intra.backend); push, then pull", key);
}

static void send_part(ordo__push_t *p, int group, int part, int64_t iter, int priority)
{
    hier_t *h = (hier_t *)p;
    h->inner->ops->send_part(h->inner, group, part, iter, priority);
}

static int group_ack(ordo__push_t *p, const ordo__msg_t *m)
{
    hier_t *h = (hier_t *)p;
    return h->inner->ops->group_ack(h->inner, m);
}

/* in place: this member's area of the group's memory; else copied in from wherever it is */
static float *grad_home(const ordo__push_t *p, int key)
{
    const hier_t *h = (const hier_t *)p;
    return h->inplace ? h->it->ops->area(h->it, key) : NULL;
}

/* where the owner's value of key arrives and is published from: in place, the group's
 * value itself. Every member is done with the previous one before the owner can ask for the
 * next: it is asked for with the push of the group's sum (local, CODE_REDUCED), which needs
 * every member's put of the key, and a member puts it (grad_ready) after its backward read
 * the value for the last time (a copying member fetched it before its forward) */
static float *val_of(hier_t *h, int key)
{
    return h->inplace ? h->it->ops->value_area(h->it, key) : h->val + h->off[key];
}

/* values = shared: a bound model's value buffer of key is the group's value itself */
static float *value_home(const ordo__push_t *p, int key)
{
    const hier_t *h = (const hier_t *)p;
    return h->shared ? h->it->ops->value_area(h->it, key) : NULL;
}

/* ---- iteration level ---------------------------------------------------------------- */

/* forward: the owner asks the servers for what nobody asked yet (iteration 0, a resume),
 * and every key's value comes from the group's memory as the owner publishes it */
static int pulls(ordo__push_t *p, int64_t iter, const int *keys, const int *priority, int n,
                 float *const *dst)
{
    hier_t *h = (hier_t *)p;
    for (int i = 0; i < n; i++) {
        int k = keys[i];
        if (h->owner[k] == h->lr && h->asked[k] < iter) {
            h->asked[k] = iter;
            int rc = ordo__ps_pull(p->ps, k, val_of(h, k), iter, priority[i]);
            if (rc) return rc;
            h->own_pull[k] = true;
        }
    }
    pthread_mutex_lock(&h->mu);
    int j = 0;
    for (int i = 0; i < n; i++) {
        int k = keys[i];
        h->dst[k] = dst[k];
        h->want_val[k] = iter;
        h->order[j++] = k;
        ordo__ps_pull_begin(p->ps, k, iter);
    }
    for (int k = 0; k < h->n_keys && j < h->n_keys; k++) { /* the rest keep their turn after */
        bool listed = false;
        for (int i = 0; i < n && !listed; i++) listed = keys[i] == k;
        if (!listed) h->order[j++] = k;
    }
    pthread_mutex_unlock(&h->mu);
    h->it->ops->kick(h->it);
    return 0;
}

/* the owner's value arrived: into the group's memory for everyone (the owner included) */
static bool pulled(ordo__push_t *p, int key, int64_t iter)
{
    hier_t *h = (hier_t *)p;
    if (!h->own_pull[key]) return false; /* a caller's own ordo__ps_pull */
    h->own_pull[key] = false;
    int64_t t0 = ordo__clock_ns();
    h->it->ops->publish(h->it, key, val_of(h, key), iter);
    __atomic_add_fetch(&h->gather_ns, ordo__clock_ns() - t0, __ATOMIC_RELAXED);
    return true;
}

/* a span of the intra phases on the run's trace (track 4, "intra") */
static void trace_span(hier_t *h, const char *phase, int k, const int64_t *span, int64_t iter)
{
    ordo__trace_t *t = ordo__ps_trace(h->base.ps);
    if (!t) return;
    if (!h->track_named) {
        ordo__trace_name_track(t, 4, "intra");
        h->track_named = true;
    }
    char name[160], args[64];
    if (h->names[k])
        snprintf(name, sizeof name, "%s %s", phase, h->names[k]);
    else
        snprintf(name, sizeof name, "%s key %d", phase, k);
    snprintf(args, sizeof args, "{\"iter\":%lld}", (long long)iter);
    ordo__trace_complete(t, name, "intra", 4, span[2 * k], span[2 * k + 1], args);
}

/* what the intra thread finished, on the thread that polls */
static int local(ordo__push_t *p, const ordo__msg_t *m)
{
    hier_t *h = (hier_t *)p;
    int k = (int)m->hdr.key;
    if (m->hdr.chunk == CODE_FAILED) {
        pthread_mutex_lock(&h->mu);
        char why[320];
        snprintf(why, sizeof why, "worker %d: %s", ordo__ps_rank(p->ps), h->why);
        pthread_mutex_unlock(&h->mu);
        /* the scheduler hears the reason from here: the executor's caller sees only the code */
        ordo__ps_abort(p->ps, why);
        return ordo__error_set(ORDO_ERR_ABORT, "%s", why);
    }
    if (k < 0 || k >= h->n_keys) return 0;
    if (m->hdr.chunk == CODE_FREED) {
        ordo__ps_push_done(p->ps, k, m->hdr.iter);
        return 0;
    }
    if (m->hdr.chunk == CODE_GATHERED) {
        trace_span(h, "all-gather", k, h->span_fetch, m->hdr.iter);
        ordo__ps_pull_done(p->ps, k, m->hdr.iter);
        return 0;
    }
    trace_span(h, "reduce-scatter", k, h->span_sum, m->hdr.iter);
    /* CODE_REDUCED: the group's sum leaves; its answer brings the next value (fused) */
    h->asked[k] = m->hdr.iter + 1;
    h->own_pull[k] = true;
    int rc = h->inner->ops->pushpull(h->inner, k, h->sum + h->off[k], val_of(h, k), m->hdr.iter,
                                     h->prio[k]);
    /* the members' gradients are summed: only h->sum is read from now on, until the push's
     * PUSH_DONE (the owner's next push of k, whose sum overwrites it, waits for that one:
     * client/bound.c holds it) */
    if (!rc) ordo__ps_grad_free(p->ps, k, m->hdr.iter);
    return rc;
}

static bool have(const ordo__push_t *p, int64_t iter)
{
    (void)p, (void)iter;
    return false;
}

/* the bytes this worker really moved since the last call, and each phase's busy time */
static void stats(const ordo__push_t *p, int64_t *bytes_push, int64_t *bytes_pull, char *extra,
                  size_t size)
{
    hier_t *h = (hier_t *)p;
    int64_t pu, pl;
    ordo__ps_bytes(p->ps, &pu, &pl);
    *bytes_push = pu - h->last_push;
    *bytes_pull = pl - h->last_pull;
    h->last_push = pu;
    h->last_pull = pl;
    int64_t r = __atomic_exchange_n(&h->reduce_ns, 0, __ATOMIC_RELAXED);
    int64_t g = __atomic_exchange_n(&h->gather_ns, 0, __ATOMIC_RELAXED);
    snprintf(extra, size, ",\"intra_reduce_ms\":%.4f,\"intra_gather_ms\":%.4f", (double)r / 1e6,
             (double)g / 1e6);
}

const ordo__push_ops_t ordo__push_hier_ops = {
    .name = "hier",
    .mode = -1, /* the plan's "intra" member picks it, whatever the [push] mode */
    .create = create,
    .destroy = destroy,
    .push = grad_ready,
    .pushpull = pushpull_refused,
    .send_part = send_part,
    .group_ack = group_ack,
    .grad_home = grad_home,
    .value_home = value_home,
    .key_pushes = true,
    .whole_iterations = true,
    .kept_on_replan = true,
    .bind = ordo__push_dense_bind,
    .unbind = unbind,
    .init = ordo__push_dense_init,
    .pulls = pulls,
    .grad_ready = grad_ready,
    .grads_done = ordo__push_dense_grads_done,
    .on_event = ordo__push_dense_on_event,
    .have = have,
    .stats = stats,
    .local = local,
    .pulled = pulled,
    .stop = stop,
};
