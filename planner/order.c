/* order: communication dependencies, the TicTac properties (M, P, M+), TAO and TIO, channel
 * assignment and the plan entry point. Dependency sets are bitsets over parameters; TAO
 * keeps per-op counters up to date as recvs leave the outstanding set, so one step costs
 * O(ops x (channels + log ops) + ops x R / 64). Times are integer nanoseconds. */
#include "planner/order.h"

#include "common/error.h"
#include "planner/search.h"
#include "planner/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TICK_INF INT64_MAX

struct ordo__order_graph {
    int n_params;
    int n_ops;
    int n_channels;
    int words;       /* 64-bit words per dependency set */
    uint64_t *dep;   /* n_ops x words: op's communication dependencies */
    int *channel;    /* per parameter */
    int64_t *recv_t; /* per parameter, in ticks */
    int64_t *op_t;   /* per op, in ticks */
    double tick_us;  /* microseconds per tick (1e-3), or 1 for the unit oracle */
    int timed;       /* built with a time oracle */
};

/* to_ticks rounds a time to whole nanoseconds, capped at 1e14 ns (about 28 hours) so that
 * sums over thousands of recvs stay far from overflow. */
static int64_t to_ticks(double us)
{
    double ns = us * 1000.0;
    return ns >= 1e14 ? (int64_t)1e14 : (int64_t)llround(ns);
}

void ordo__order_graph_destroy(ordo__order_graph_t **pg)
{
    if (!pg || !*pg) return;
    ordo__order_graph_t *g = *pg;
    free(g->dep);
    free(g->channel);
    free(g->recv_t);
    free(g->op_t);
    free(g);
    *pg = NULL;
}

int ordo__order_graph_new(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *channel,
                         int n_channels, ordo__order_graph_t **out)
{
    if (!m || !out || m->n_params < 1 || m->n_ops < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_graph_new: empty model");
    if (t && (t->n_params != m->n_params || t->n_ops != m->n_ops))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_graph_new: times of another model");
    if (!channel) n_channels = 1;
    if (n_channels < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_graph_new: %d channels", n_channels);
    for (int p = 0; channel && p < m->n_params; p++)
        if (channel[p] < 0 || channel[p] >= n_channels)
            return ordo__error_set(ORDO_ERR_INVAL, "parameter '%s': channel %d not in [0, %d)",
                                  m->params[p].name, channel[p], n_channels);
    ordo__order_graph_t *g = calloc(1, sizeof *g);
    if (!g) goto oom;
    g->n_params = m->n_params;
    g->n_ops = m->n_ops;
    g->n_channels = n_channels;
    g->words = (m->n_params + 63) / 64;
    g->dep = calloc((size_t)m->n_ops * g->words, sizeof *g->dep);
    g->channel = calloc((size_t)m->n_params, sizeof *g->channel);
    g->recv_t = calloc((size_t)m->n_params, sizeof *g->recv_t);
    g->op_t = calloc((size_t)m->n_ops, sizeof *g->op_t);
    if (!g->dep || !g->channel || !g->recv_t || !g->op_t) goto oom;
    g->timed = t != NULL;
    g->tick_us = t ? 1e-3 : 1.0;
    for (int p = 0; p < m->n_params; p++) {
        g->channel[p] = channel ? channel[p] : 0;
        g->recv_t[p] = t ? to_ticks(t->recv_us[p]) : 1;
    }
    for (int i = 0; i < m->n_ops; i++) {
        const ordo__model_op_t *op = &m->ops[i];
        uint64_t *d = &g->dep[(size_t)i * g->words];
        g->op_t[i] = t ? to_ticks(t->fwd_us[i]) : 0;
        for (int k = 0; k < op->n_inputs; k++) {
            int in = op->inputs[k];
            ORDO_ASSERT(in >= 0 && in < i); /* the model lists ops topologically */
            const uint64_t *s = &g->dep[(size_t)in * g->words];
            for (int w = 0; w < g->words; w++)
                d[w] |= s[w];
        }
        for (int k = 0; k < op->n_params; k++) {
            int p = op->params[k];
            d[p / 64] |= UINT64_C(1) << (p % 64);
        }
    }
    *out = g;
    return 0;
oom:
    ordo__order_graph_destroy(&g);
    return ordo__error_set(ORDO_ERR_NOMEM, "ordo__order_graph_new: out of memory");
}

int ordo__order_depends(const ordo__order_graph_t *g, int op, int param)
{
    ORDO_ASSERT(g && op >= 0 && op < g->n_ops && param >= 0 && param < g->n_params);
    return (int)((g->dep[(size_t)op * g->words + param / 64] >> (param % 64)) & 1);
}

/* ---- properties over an outstanding set --------------------------------------------- */

typedef struct {
    int64_t m;
    int op;
} op_key_t;

/* state: the outstanding set R and every per-op quantity that depends on it. */
typedef struct {
    const ordo__order_graph_t *g;
    const int64_t *rt, *ot; /* times used (the graph's or the unit oracle's) */
    uint64_t *R;            /* outstanding recvs */
    int *cnt;               /* per op: |dep ∩ R| */
    long *idxsum;           /* per op: sum of the indices in dep ∩ R (the one, when cnt = 1) */
    int64_t *chsum;         /* n_ops x n_channels: per-channel sum of Time(r), r ∈ dep ∩ R */
    int64_t *m;             /* per op: M = max over channels of chsum */
    int64_t *p, *mplus;     /* per recv */
    op_key_t *keys;         /* scratch for the M+ pass */
    uint64_t *u;            /* scratch: recvs whose M+ is not yet known */
} state_t;

static void state_free(state_t *s)
{
    free(s->R);
    free(s->cnt);
    free(s->idxsum);
    free(s->chsum);
    free(s->m);
    free(s->p);
    free(s->mplus);
    free(s->keys);
    free(s->u);
}

static int is_out(const state_t *s, int r)
{
    return (int)((s->R[r / 64] >> (r % 64)) & 1);
}

static int64_t op_m(const state_t *s, int op)
{
    const int64_t *c = &s->chsum[(size_t)op * s->g->n_channels];
    int64_t best = 0;
    for (int k = 0; k < s->g->n_channels; k++)
        if (c[k] > best) best = c[k];
    return best;
}

/* state_init sets R to the outstanding recvs (NULL: all) and computes the per-op
 * counters from scratch. */
static int state_init(state_t *s, const ordo__order_graph_t *g, const int64_t *rt, const int64_t *ot,
                      const unsigned char *outstanding)
{
    memset(s, 0, sizeof *s);
    s->g = g;
    s->rt = rt;
    s->ot = ot;
    size_t no = (size_t)g->n_ops, np = (size_t)g->n_params;
    s->R = calloc((size_t)g->words, sizeof *s->R);
    s->u = calloc((size_t)g->words, sizeof *s->u);
    s->cnt = calloc(no, sizeof *s->cnt);
    s->idxsum = calloc(no, sizeof *s->idxsum);
    s->chsum = calloc(no * (size_t)g->n_channels, sizeof *s->chsum);
    s->m = calloc(no, sizeof *s->m);
    s->keys = calloc(no, sizeof *s->keys);
    s->p = calloc(np, sizeof *s->p);
    s->mplus = calloc(np, sizeof *s->mplus);
    if (!s->R || !s->u || !s->cnt || !s->idxsum || !s->chsum || !s->m || !s->keys || !s->p ||
        !s->mplus) {
        state_free(s);
        memset(s, 0, sizeof *s);
        return ordo__error_set(ORDO_ERR_NOMEM, "order: out of memory");
    }
    for (int r = 0; r < g->n_params; r++)
        if (!outstanding || outstanding[r]) s->R[r / 64] |= UINT64_C(1) << (r % 64);
    for (int op = 0; op < g->n_ops; op++) {
        const uint64_t *d = &g->dep[(size_t)op * g->words];
        for (int w = 0; w < g->words; w++) {
            uint64_t bits = d[w] & s->R[w];
            while (bits) {
                int r = w * 64 + __builtin_ctzll(bits);
                bits &= bits - 1;
                s->cnt[op]++;
                s->idxsum[op] += r;
                s->chsum[(size_t)op * g->n_channels + g->channel[r]] += rt[r];
            }
        }
        s->m[op] = op_m(s, op);
    }
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    const op_key_t *x = a, *y = b;
    if (x->m != y->m) return x->m < y->m ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

/* state_props recomputes P and M+ of the outstanding recvs (Algorithm 1). M+(r) is the
 * smallest M over ops needing r and another outstanding recv: visiting those ops by
 * increasing M, each recv takes the M of the first op that contains it. */
static void state_props(state_t *s)
{
    const ordo__order_graph_t *g = s->g;
    int remaining = 0;
    for (int r = 0; r < g->n_params; r++) {
        s->p[r] = 0;
        s->mplus[r] = TICK_INF;
    }
    for (int w = 0; w < g->words; w++) {
        s->u[w] = s->R[w];
        remaining += __builtin_popcountll(s->R[w]);
    }
    int nk = 0;
    for (int op = 0; op < g->n_ops; op++) {
        if (s->cnt[op] == 1)
            s->p[s->idxsum[op]] += s->ot[op];
        else if (s->cnt[op] > 1)
            s->keys[nk++] = (op_key_t){s->m[op], op};
    }
    qsort(s->keys, (size_t)nk, sizeof *s->keys, cmp_key);
    for (int k = 0; k < nk && remaining > 0; k++) {
        const uint64_t *d = &g->dep[(size_t)s->keys[k].op * g->words];
        for (int w = 0; w < g->words; w++) {
            uint64_t bits = d[w] & s->u[w];
            s->u[w] &= ~bits;
            while (bits) {
                int r = w * 64 + __builtin_ctzll(bits);
                bits &= bits - 1;
                s->mplus[r] = s->keys[k].m;
                remaining--;
            }
        }
    }
}

/* state_remove takes recv r out of R (its transfer is done). */
static void state_remove(state_t *s, int r)
{
    const ordo__order_graph_t *g = s->g;
    s->R[r / 64] &= ~(UINT64_C(1) << (r % 64));
    for (int op = 0; op < g->n_ops; op++) {
        if (!ordo__order_depends(g, op, r)) continue;
        s->cnt[op]--;
        s->idxsum[op] -= r;
        s->chsum[(size_t)op * g->n_channels + g->channel[r]] -= s->rt[r];
        s->m[op] = op_m(s, op);
    }
}

int ordo__order_properties(const ordo__order_graph_t *g, const unsigned char *outstanding,
                          double *op_mv, double *pv, double *m_plus)
{
    if (!g) return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_properties: no graph");
    state_t s;
    int rc = state_init(&s, g, g->recv_t, g->op_t, outstanding);
    if (rc) return rc;
    state_props(&s);
    for (int op = 0; op_mv && op < g->n_ops; op++)
        op_mv[op] = (double)s.m[op] * g->tick_us;
    for (int r = 0; r < g->n_params; r++) {
        if (pv) pv[r] = (double)s.p[r] * g->tick_us;
        if (m_plus) m_plus[r] = s.mplus[r] == TICK_INF ? INFINITY : (double)s.mplus[r] * g->tick_us;
    }
    state_free(&s);
    return 0;
}

/* ---- TAO and TIO ------------------------------------------------------------------------ */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* goes_before is the TAO comparator: recv a goes before recv b. */
static int goes_before(const state_t *s, int a, int b)
{
    int64_t x = min64(s->p[b], s->rt[a]);
    int64_t y = min64(s->p[a], s->rt[b]);
    if (x != y) return x < y;
    return s->mplus[a] < s->mplus[b];
}

int ordo__order_tao(const ordo__order_graph_t *g, int *priority)
{
    if (!g || !priority) return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_tao: bad args");
    if (!g->timed) return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_tao: graph has no times");
    state_t s;
    int rc = state_init(&s, g, g->recv_t, g->op_t, NULL);
    if (rc) return rc;
    for (int count = 0; count < g->n_params; count++) {
        state_props(&s);
        int best = -1;
        for (int r = 0; r < g->n_params; r++) {
            if (!is_out(&s, r)) continue;
            if (best < 0 || goes_before(&s, r, best)) best = r;
        }
        ORDO_ASSERT(best >= 0);
        priority[best] = count;
        state_remove(&s, best);
    }
    state_free(&s);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int ordo__order_tio(const ordo__order_graph_t *g, int *priority)
{
    if (!g || !priority) return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_tio: bad args");
    int rc = ORDO_ERR_NOMEM;
    int64_t *unit_r = malloc((size_t)g->n_params * sizeof *unit_r);
    int64_t *unit_o = calloc((size_t)g->n_ops, sizeof *unit_o);
    int64_t *sorted = malloc((size_t)g->n_params * sizeof *sorted);
    state_t s;
    memset(&s, 0, sizeof s);
    if (!unit_r || !unit_o || !sorted) {
        rc = ordo__error_set(rc, "ordo__order_tio: out of memory");
        goto fail;
    }
    for (int r = 0; r < g->n_params; r++)
        unit_r[r] = 1;
    if ((rc = state_init(&s, g, unit_r, unit_o, NULL))) goto fail;
    state_props(&s);
    /* priority = rank of M+ among the distinct values (infinity ranks last) */
    memcpy(sorted, s.mplus, (size_t)g->n_params * sizeof *sorted);
    qsort(sorted, (size_t)g->n_params, sizeof *sorted, cmp_i64);
    int n_distinct = 0;
    for (int k = 0; k < g->n_params; k++)
        if (k == 0 || sorted[k] != sorted[n_distinct - 1]) sorted[n_distinct++] = sorted[k];
    for (int r = 0; r < g->n_params; r++) {
        int lo = 0, hi = n_distinct - 1; /* sorted[lo..hi] holds mplus[r] */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sorted[mid] < s.mplus[r])
                lo = mid + 1;
            else
                hi = mid;
        }
        priority[r] = lo;
    }
    rc = 0;
fail:
    state_free(&s);
    free(unit_r);
    free(unit_o);
    free(sorted);
    return rc;
}

/* ---- channels and the plan -------------------------------------------------------------- */

typedef struct {
    int64_t bytes;
    int idx;
} by_bytes_t;

static int cmp_bytes_desc(const void *a, const void *b)
{
    const by_bytes_t *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int ordo__order_assign_channels(const ordo__model_t *m, int n_servers, int *channel)
{
    if (!m || !channel || n_servers < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_assign_channels: %d servers", n_servers);
    by_bytes_t *v = malloc(((size_t)m->n_params + 1) * sizeof *v);
    int64_t *load = calloc((size_t)n_servers, sizeof *load);
    if (!v || !load) {
        free(v);
        free(load);
        return ordo__error_set(ORDO_ERR_NOMEM, "ordo__order_assign_channels: out of memory");
    }
    for (int p = 0; p < m->n_params; p++)
        v[p] = (by_bytes_t){m->params[p].bytes, p};
    qsort(v, (size_t)m->n_params, sizeof *v, cmp_bytes_desc);
    for (int k = 0; k < m->n_params; k++) {
        int best = 0;
        for (int sv = 1; sv < n_servers; sv++)
            if (load[sv] < load[best]) best = sv;
        channel[v[k].idx] = best;
        load[best] += v[k].bytes;
    }
    free(v);
    free(load);
    return 0;
}

const char *ordo__order_policy_name(ordo__policy_t policy)
{
    switch (policy) {
    case ORDO_POLICY_NONE:
        return "none";
    case ORDO_POLICY_FIFO:
        return "fifo";
    case ORDO_POLICY_TIO:
        return "tio";
    case ORDO_POLICY_TAO:
        return "tao";
    case ORDO_POLICY_SEARCH:
        return "search";
    case ORDO_POLICY_FILE:
        return "file";
    case ORDO_POLICY_LAYER:
        return "layer";
    }
    return "?";
}

void ordo__order_opts_default(ordo__order_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->search_budget_ms = ORDO_ORDER_SEARCH_BUDGET_MS;
    o->seed = 1;
}

int ordo__order_plan(const ordo__model_t *m, const int *channel, int n_channels, double bandwidth_bps,
                    double latency_us, ordo__policy_t policy, int *priority)
{
    return ordo__order_plan_ex(m, channel, n_channels, bandwidth_bps, latency_us, policy, NULL,
                              priority);
}

int ordo__order_plan_ex(const ordo__model_t *m, const int *channel, int n_channels,
                       double bandwidth_bps, double latency_us, ordo__policy_t policy,
                       const ordo__order_opts_t *opts, int *priority)
{
    if (!m || !priority) return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_plan: bad args");
    ordo__order_opts_t def;
    if (!opts) {
        ordo__order_opts_default(&def);
        opts = &def;
    }
    if (policy == ORDO_POLICY_NONE || policy == ORDO_POLICY_FIFO) {
        for (int p = 0; p < m->n_params; p++)
            priority[p] = 0;
        return 0;
    }
    if (policy == ORDO_POLICY_LAYER) { /* ByteScheduler: the layer's place, no plan */
        for (int p = 0; p < m->n_params; p++)
            priority[p] = p;
        return 0;
    }
    if (policy != ORDO_POLICY_TIO && policy != ORDO_POLICY_TAO && policy != ORDO_POLICY_SEARCH)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_plan: policy '%s' is not computed",
                              ordo__order_policy_name(policy));
    ordo__oracle_times_t *t = NULL;
    ordo__order_graph_t *g = NULL;
    ordo__sim_t *sim = NULL;
    int *out = malloc(((size_t)m->n_params + 1) * sizeof *out);
    int rc = out ? 0 : ordo__error_set(ORDO_ERR_NOMEM, "ordo__order_plan: out of memory");
    if (rc) goto fail;
    if ((rc = ordo__oracle_times_new(m, bandwidth_bps, latency_us, opts->oracle, &t))) goto fail;
    if ((rc = ordo__order_graph_new(m, t, channel, n_channels, &g))) goto fail;
    if (policy == ORDO_POLICY_TIO) {
        rc = ordo__order_tio(g, out);
    } else {
        rc = ordo__order_tao(g, out);
        if (!rc && policy == ORDO_POLICY_SEARCH) {
            ordo__search_opts_t so;
            ordo__search_opts_default(&so);
            so.budget_ms = opts->search_budget_ms;
            so.max_evals = opts->search_evals;
            so.seed = opts->seed;
            if (so.budget_ms <= 0 && so.max_evals <= 0) so.budget_ms = ORDO_ORDER_SEARCH_BUDGET_MS;
            if (!(rc = ordo__sim_new(m, t, channel, n_channels, 0, &sim)))
                rc = ordo__search_run(sim, out, &so, out, NULL);
        }
    }
    if (rc) goto fail;
    memcpy(priority, out, (size_t)m->n_params * sizeof *out);
fail:
    ordo__sim_destroy(&sim);
    ordo__order_graph_destroy(&g);
    ordo__oracle_times_destroy(&t);
    free(out);
    return rc;
}
