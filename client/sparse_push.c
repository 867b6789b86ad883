/* sparse_push: top-k pushes, sparse pull answers and region switches on a worker. */
#include "client/sparse_push.h"
#include "core/coo.h"
#include "common/durable.h"
#include "common/error.h"
#include "common/log.h"
#include "core/plan.h"
#include "core/sparse_wire.h"
#include "core/regions.h"
#include "core/sparsify.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_NONE, OP_PULL, OP_PUSH } op_kind_t;

/* the position histogram weighs an iteration HIST_DECAY^age: the load drifts while training
 * goes (fast at first), and recent iterations predict the next period best */
#define HIST_DECAY 0.9
/* histogram weights are sent as counts scaled by this */
#define HIST_SCALE 1000.0

/* a reused threshold may select up to this many times k; beyond it the iteration pushes
 * the exact top-k instead (docs/sparse-live.md) */
#define LOCAL_SLACK 1.15

struct ordo__sparse_push {
    ordo__ps_t *ps;
    const ordo__keys_t *k; /* the layout: keys in order */
    ordo__sparse_plan_t plan;
    int S;
    float *params;
    const float *grads;
    ordo__sparsify_t *sp;
    /* what this iteration pushes: the sparsifier's selection, or its exact top-k when a
     * reused threshold overshot (index order) */
    const ordo__coo_entry_t *mine;
    size_t n_mine, trimmed;
    ordo__coo_entry_t *top;
    float *vals;
    uint32_t *scratch, *idx;
    size_t cap_top;
    int64_t version;
    /* regions in force, and the next ones (in force from next_E) */
    uint32_t *bounds, epoch;
    bool has_next;
    uint32_t *next_bounds, next_epoch;
    int64_t next_E;
    int64_t expect_E; /* a POSHIST was sent: REGIONS for this iteration will come (-1 none) */
    /* the request under way */
    op_kind_t op;
    int64_t op_iter;
    bool op_sent, op_switch; /* requests sent; regions must switch before sending */
    bool *answered;
    int n_answered;
    /* its figures */
    int64_t bytes_push, bytes_pull, ctl_bytes, dense_bytes;
    size_t global, consumed;
    uint64_t *per_server;
    int64_t mismatched;
    char stats[512];
    int64_t stats_push, stats_pull;
    uint8_t *buf;
    size_t cap;
    double *hist;     /* positions pushed, older iterations weighted down by HIST_DECAY */
    uint64_t *counts; /* the report */
};

static int reserve(ordo__sparse_push_t *sp, size_t bytes)
{
    if (bytes <= sp->cap) return 0;
    uint8_t *p = realloc(sp->buf, bytes);
    if (!p) return ordo__error_set(ORDO_ERR_NOMEM, "sparse: no memory for %zu bytes", bytes);
    sp->buf = p;
    sp->cap = bytes;
    return 0;
}

static void sparse_msg(ordo__msg_t *m, int type, int64_t iter, uint32_t chunk, int dtype)
{
    ordo__msg_init(m, type);
    m->hdr.iter = iter;
    m->hdr.key = ORDO_SPARSE_KEY;
    m->hdr.chunk = chunk;
    m->hdr.dtype = (uint8_t)dtype;
}

static int hook(void *ctx, ordo__msg_t *m);

int ordo__sparse_push_new(ordo__ps_t *ps, float *params, const float *grads,
                          ordo__sparse_push_t **out)
{
    *out = NULL;
    const ordo__keys_t *k = ordo__ps_keys(ps);
    int64_t total = 0;
    for (int key = 0; key < k->n_keys; key++)
        total += k->numel[key];
    int S = ordo__ps_keys(ps)->n_servers;
    const ordo__plan_t *plan = ordo__ps_plan(ps);
    if (!plan->has_sparse) return 0;
    ordo__sparse_plan_t p;
    int rc = ordo__sparse_wire_plan_copy(&plan->sparse, &p);
    if (rc) return rc;
    if ((int64_t)p.n != total) {
        ordo__sparse_wire_plan_fini(&p);
        return ordo__error_set(ORDO_ERR_PROTO, "sparse plan for %u entries; the tensors have %lld",
                              p.n, (long long)total);
    }
    ordo__sparse_push_t *sp = calloc(1, sizeof *sp);
    if (!sp) {
        ordo__sparse_wire_plan_fini(&p);
        return ORDO_ERR_NOMEM;
    }
    sp->plan = p;
    sp->ps = ps;
    sp->k = k;
    sp->S = S;
    sp->params = params;
    sp->grads = grads;
    sp->version = -1;
    sp->expect_E = -1;
    sp->bounds = malloc(sizeof *sp->bounds * ((size_t)S + 1));
    sp->next_bounds = malloc(sizeof *sp->next_bounds * ((size_t)S + 1));
    sp->answered = calloc((size_t)S, sizeof *sp->answered);
    sp->per_server = calloc((size_t)S, sizeof *sp->per_server);
    sp->hist = calloc((size_t)p.nbins, sizeof *sp->hist);
    sp->counts = calloc((size_t)p.nbins, sizeof *sp->counts);
    /* a push holds at most ORDO_SPARSIFY_OVERSHOOT * k entries (worker/sparsify.h) */
    size_t most =
        (size_t)p.k * ORDO_SPARSIFY_OVERSHOOT < p.n ? (size_t)p.k * ORDO_SPARSIFY_OVERSHOOT : p.n;
    sp->idx = malloc(sizeof *sp->idx * (most + 1));
    if (!sp->bounds || !sp->next_bounds || !sp->answered || !sp->per_server || !sp->hist ||
        !sp->counts || !sp->idx) {
        ordo__sparse_push_destroy(&sp);
        return ORDO_ERR_NOMEM;
    }
    memcpy(sp->bounds, p.bounds, sizeof *sp->bounds * ((size_t)S + 1));
    if ((rc = ordo__sparsify_new(&sp->sp, p.n, p.k, p.threshold_period)) != 0) {
        ordo__sparse_push_destroy(&sp);
        return rc;
    }
    ordo__ps_set_hook(ps, ORDO_SPARSE_KEY, hook, sp);
    ORDO_INFO("sparse pushes: %u entries, k = %u (density %g), %d server regions", p.n, p.k,
              p.density, S);
    *out = sp;
    return 0;
}

void ordo__sparse_push_destroy(ordo__sparse_push_t **spp)
{
    ordo__sparse_push_t *sp = *spp;
    if (!sp) return;
    if (sp->ps && sp->sp) ordo__ps_set_hook(sp->ps, ORDO_SPARSE_KEY, NULL, NULL);
    ordo__sparsify_destroy(&sp->sp);
    ordo__sparse_wire_plan_fini(&sp->plan);
    free(sp->bounds);
    free(sp->next_bounds);
    free(sp->answered);
    free(sp->per_server);
    free(sp->hist);
    free(sp->counts);
    free(sp->buf);
    free(sp->top);
    free(sp->vals);
    free(sp->scratch);
    free(sp->idx);
    free(sp);
    *spp = NULL;
}

int64_t ordo__sparse_push_version(const ordo__sparse_push_t *sp)
{
    return sp->version;
}

const char *ordo__sparse_push_stats(const ordo__sparse_push_t *sp, int64_t *bytes_push,
                                   int64_t *bytes_pull)
{
    *bytes_push = sp->stats_push;
    *bytes_pull = sp->stats_pull;
    return sp->stats;
}

int ordo__sparse_push_init(ordo__sparse_push_t *sp, float *const *values)
{
    int rc = reserve(sp, (size_t)sp->plan.n * sizeof(float));
    if (rc) return rc;
    float *flat = (float *)sp->buf;
    size_t at = 0;
    for (int p = 0; p < sp->k->n_keys; p++) {
        memcpy(flat + at, values[p], (size_t)sp->k->numel[p] * sizeof(float));
        at += (size_t)sp->k->numel[p];
    }
    for (int s = 0; s < sp->S; s++) {
        uint32_t lo = sp->plan.bounds[s], hi = sp->plan.bounds[s + 1];
        ordo__msg_t m;
        sparse_msg(&m, ORDO_MSG_INIT, 0, lo, ORDO_DTYPE_F32);
        if ((rc = ordo__msg_add_copy(&m, flat + lo, (size_t)(hi - lo) * sizeof(float))) != 0) {
            ordo__msg_close(&m);
            return rc;
        }
        if ((rc = ordo__ps_send(sp->ps, s, &m)) != 0) return rc;
    }
    return 0;
}

/* ---- requests ----------------------------------------------------------------------- */

/* the first entry of mine with index >= i */
static size_t lower_bound(const ordo__sparse_push_t *sp, uint32_t i)
{
    size_t a = 0, b = sp->n_mine;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (sp->mine[mid].index < i)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static int send_pushes(ordo__sparse_push_t *sp)
{
    for (int s = 0; s < sp->S; s++) {
        uint32_t lo = sp->bounds[s], hi = sp->bounds[s + 1];
        size_t first = lower_bound(sp, lo), count = lower_bound(sp, hi) - first;
        size_t len = ordo_coo_size(count);
        int rc = reserve(sp, len + 8);
        if (rc) return rc;
        ordo__coo_encode(sp->mine + first, count, sp->buf);
        ordo__msg_t m;
        sparse_msg(&m, ORDO_MSG_PUSH, sp->op_iter, sp->epoch, ORDO_DTYPE_COO);
        if ((rc = ordo__msg_add_copy(&m, sp->buf, len)) != 0) {
            ordo__msg_close(&m);
            return rc;
        }
        if ((rc = ordo__ps_send(sp->ps, s, &m)) != 0) return rc;
        sp->per_server[s] = count;
        sp->bytes_push += (int64_t)len;
    }
    return 0;
}

static int send_pulls(ordo__sparse_push_t *sp)
{
    for (int s = 0; s < sp->S; s++) {
        ordo__msg_t m;
        sparse_msg(&m, ORDO_MSG_PULL, sp->op_iter, sp->epoch, ORDO_DTYPE_NONE);
        int rc = ordo__ps_send(sp->ps, s, &m);
        if (rc) return rc;
    }
    return 0;
}

/* send the request under way once the regions it must use are in force */
static int try_send(ordo__sparse_push_t *sp)
{
    if (sp->op == OP_NONE || sp->op_sent) return 0;
    if (sp->op_switch) {
        if (!sp->has_next || sp->next_E != sp->op_iter) return 0; /* until REGIONS comes */
        memcpy(sp->bounds, sp->next_bounds, sizeof *sp->bounds * ((size_t)sp->S + 1));
        sp->epoch = sp->next_epoch;
        sp->has_next = false;
        sp->op_switch = false;
        if (sp->expect_E == sp->op_iter) sp->expect_E = -1;
    }
    sp->op_sent = true;
    return sp->op == OP_PUSH ? send_pushes(sp) : send_pulls(sp);
}

static int begin(ordo__sparse_push_t *sp, op_kind_t op, int64_t iter)
{
    if (sp->op != OP_NONE)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse: a request of iteration %lld is under way",
                              (long long)sp->op_iter);
    sp->op = op;
    sp->op_iter = iter;
    sp->op_sent = false;
    sp->op_switch = sp->expect_E == iter;
    sp->n_answered = 0;
    memset(sp->answered, 0, sizeof *sp->answered * (size_t)sp->S);
    return 0;
}

int ordo__sparse_push_pull(ordo__sparse_push_t *sp, int64_t version)
{
    int rc = begin(sp, OP_PULL, version);
    if (rc) return rc;
    sp->mismatched = 0;
    return try_send(sp);
}

/* the position histogram of the pushes, recent ones weighted most, for region balancing */
static int send_poshist(ordo__sparse_push_t *sp, int64_t iter)
{
    size_t nb = (size_t)sp->plan.nbins;
    int rc = reserve(sp, 8 * nb);
    if (rc) return rc;
    for (size_t b = 0; b < nb; b++)
        sp->counts[b] = (uint64_t)llround(sp->hist[b] * HIST_SCALE);
    ordo__sparse_wire_put_counts(sp->counts, nb, sp->buf);
    ordo__msg_t m;
    sparse_msg(&m, ORDO_MSG_PLAN, iter, ORDO_SPARSE_POSHIST, ORDO_DTYPE_BYTES);
    if ((rc = ordo__msg_add_copy(&m, sp->buf, 8 * nb)) != 0) {
        ordo__msg_close(&m);
        return rc;
    }
    sp->ctl_bytes += (int64_t)(8 * nb);
    sp->expect_E = iter + 1;
    return ordo__ps_send(sp->ps, -1, &m);
}

/* what to push: the selection, unless a reused threshold took more than LOCAL_SLACK * k
 * entries; then the exact top-k, which lies inside that selection (every entry at least as
 * large as the k-th largest is above the threshold) */
static int choose(ordo__sparse_push_t *sp)
{
    size_t c, k = sp->plan.k;
    const ordo__coo_entry_t *sel = ordo__sparsify_selected(sp->sp, &c);
    sp->mine = sel;
    sp->n_mine = c;
    sp->trimmed = 0;
    if (ordo__sparsify_last_exact(sp->sp) || (double)c <= LOCAL_SLACK * (double)k) return 0;
    if (c > sp->cap_top) {
        free(sp->top);
        free(sp->vals);
        free(sp->scratch);
        sp->top = malloc(sizeof *sp->top * c);
        sp->vals = malloc(sizeof *sp->vals * c);
        sp->scratch = malloc(sizeof *sp->scratch * c);
        sp->cap_top = sp->top && sp->vals && sp->scratch ? c : 0;
        if (!sp->cap_top) return ORDO_ERR_NOMEM;
    }
    for (size_t i = 0; i < c; i++)
        sp->vals[i] = sel[i].value;
    float thr;
    int rc = ordo__sparsify_topk(sp->vals, c, k, sp->scratch, sp->top, &thr);
    if (rc) return rc;
    for (size_t i = 0; i < k; i++)
        sp->top[i] = sel[sp->top[i].index]; /* positions, in order */
    sp->trimmed = c - k;
    sp->mine = sp->top;
    sp->n_mine = k;
    return 0;
}

int ordo__sparse_push_iteration(ordo__sparse_push_t *sp, int64_t iter)
{
    if (sp->version != iter)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "sparse: push of iteration %lld on parameters of "
                              "version %lld",
                              (long long)iter, (long long)sp->version);
    int rc = begin(sp, OP_PUSH, iter);
    if (rc) return rc;
    sp->bytes_push = sp->bytes_pull = sp->ctl_bytes = 0;
    sp->global = sp->consumed = 0;
    if ((rc = ordo__sparsify_push(sp->sp, sp->grads)) != 0 || (rc = choose(sp)) != 0) {
        sp->op = OP_NONE;
        return rc;
    }
    for (int b = 0; sp->S > 1 && b < sp->plan.nbins; b++)
        sp->hist[b] *= HIST_DECAY;
    for (size_t i = 0; sp->S > 1 && i < sp->n_mine; i++)
        sp->hist[ordo_regions_bin_of(sp->mine[i].index, sp->plan.n, (size_t)sp->plan.nbins)] += 1;
    if (sp->S > 1 && (iter + 1) % sp->plan.repartition_period == 0 &&
        (rc = send_poshist(sp, iter)) != 0)
        return rc;
    return try_send(sp);
}

/* ---- answers ------------------------------------------------------------------------ */

static void make_stats(ordo__sparse_push_t *sp)
{
    int n = snprintf(sp->stats, sizeof sp->stats,
                     ",\"sparse_k\":%u,\"sparse_local\":%zu,\"sparse_global\":%zu,"
                     "\"sparse_consumed\":%zu,\"sparse_exact\":%d,\"sparse_trimmed\":%zu,"
                     "\"sparse_epoch\":%u,\"sparse_ctl_bytes\":%lld,"
                     "\"sparse_dense_pull_bytes\":%lld",
                     sp->plan.k, sp->n_mine, sp->global, sp->consumed,
                     ordo__sparsify_last_exact(sp->sp) ? 1 : 0, sp->trimmed, sp->epoch,
                     (long long)sp->ctl_bytes, (long long)sp->dense_bytes);
    for (int s = 0; s < sp->S && n > 0 && (size_t)n < sizeof sp->stats; s++)
        n += snprintf(sp->stats + n, sizeof sp->stats - (size_t)n, ",\"sparse_load_s%d\":%llu", s,
                      (unsigned long long)sp->per_server[s]);
    sp->stats_push = sp->bytes_push;
    sp->stats_pull = sp->bytes_pull;
    sp->dense_bytes = 0;
}

/* which server sent m, or a reason to refuse it */
static int answer_from(ordo__sparse_push_t *sp, const ordo__msg_t *m, op_kind_t want)
{
    int s = m->hdr.rank;
    if (m->hdr.role != ORDO_ROLE_SERVER || s < 0 || s >= sp->S || sp->op != want || !sp->op_sent ||
        m->hdr.iter != sp->op_iter || sp->answered[s]) {
        ORDO_WARN("sparse: dropped an unexpected answer (from %s %d, iteration %lld)",
                  ordo__wire_role_name(m->hdr.role), s, (long long)m->hdr.iter);
        return -1;
    }
    return s;
}

static int on_push_answer(ordo__sparse_push_t *sp, ordo__msg_t *m)
{
    int s = answer_from(sp, m, OP_PUSH);
    if (s < 0) return 0;
    size_t len = 0, used = 0;
    const uint8_t *data = ordo__msg_data(m, 0, &len);
    if (m->hdr.chunk != sp->epoch || m->nframes != 1)
        return ordo__error_set(ORDO_ERR_PROTO,
                              "server %d answered iteration %lld with regions of "
                              "epoch %u, not %u",
                              s, (long long)m->hdr.iter, m->hdr.chunk, sp->epoch);
    uint32_t lo = sp->bounds[s], hi = sp->bounds[s + 1];
    int rc = ordo__coo_patch(data, len, lo, hi, sp->params);
    if (rc) return rc;
    /* the residual rule: entries this worker pushed and the server selected are applied */
    size_t j = lower_bound(sp, lo), end = lower_bound(sp, hi);
    for (size_t i = 0; i < len / ORDO_COO_ENTRY_BYTES && j < end; i++) {
        uint32_t index = ordo__coo_get(data, i).index;
        while (j < end && sp->mine[j].index < index)
            j++;
        if (j < end && sp->mine[j].index == index) sp->idx[used++] = index;
    }
    if ((rc = ordo__sparsify_commit(sp->sp, sp->idx, used)) != 0) return rc;
    sp->answered[s] = true;
    sp->global += len / ORDO_COO_ENTRY_BYTES;
    sp->consumed += used;
    sp->bytes_pull += (int64_t)len;
    if (++sp->n_answered < sp->S) return 0;
    sp->version = sp->op_iter + 1;
    sp->op = OP_NONE;
    make_stats(sp);
    return ORDO_SPARSE_PUSH_PUSHED;
}

static int on_pull_answer(ordo__sparse_push_t *sp, ordo__msg_t *m)
{
    int s = answer_from(sp, m, OP_PULL);
    if (s < 0) return 0;
    uint32_t lo = sp->bounds[s], hi = sp->bounds[s + 1];
    size_t len = 0;
    const void *data = ordo__msg_data(m, 0, &len);
    if (m->nframes != 1 || m->hdr.chunk != lo || len != (size_t)(hi - lo) * sizeof(float))
        return ordo__error_set(ORDO_ERR_PROTO,
                              "server %d answered a pull of version %lld with "
                              "%zu bytes from %u; its region is [%u, %u)",
                              s, (long long)m->hdr.iter, len, m->hdr.chunk, lo, hi);
    if (sp->version == sp->op_iter) { /* the local copy must already be exactly this */
        float *fresh = malloc(len ? len : 1);
        if (!fresh) return ORDO_ERR_NOMEM;
        ordo__sparse_wire_get_f32s(data, len, fresh);
        for (uint32_t i = lo; i < hi; i++)
            sp->mismatched += fresh[i - lo] != sp->params[i];
        memcpy(sp->params + lo, fresh, len);
        free(fresh);
    } else {
        ordo__sparse_wire_get_f32s(data, len, sp->params + lo);
    }
    sp->answered[s] = true;
    sp->dense_bytes += (int64_t)len;
    if (++sp->n_answered < sp->S) return 0;
    if (sp->version == sp->op_iter)
        ORDO_INFO("sparse: the servers' parameters after %lld updates differ from this worker's "
                  "copy in %lld of %u entries",
                  (long long)sp->op_iter, (long long)sp->mismatched, sp->plan.n);
    sp->version = sp->op_iter;
    sp->op = OP_NONE;
    return ORDO_SPARSE_PUSH_PULLED;
}

static int on_regions(ordo__sparse_push_t *sp, ordo__msg_t *m)
{
    size_t len = 0;
    const void *data = ordo__msg_data(m, 0, &len);
    uint32_t epoch;
    int rc;
    if (sp->has_next || m->hdr.iter != sp->expect_E)
        return ordo__error_set(ORDO_ERR_PROTO, "sparse: REGIONS for iteration %lld; expected %lld",
                              (long long)m->hdr.iter, (long long)sp->expect_E);
    if ((rc = ordo__sparse_wire_get_regions(data, len, sp->S, sp->plan.n, &epoch,
                                           sp->next_bounds)) != 0)
        return rc;
    if (epoch != sp->epoch + 1)
        return ordo__error_set(ORDO_ERR_PROTO, "sparse: REGIONS of epoch %u after epoch %u", epoch,
                              sp->epoch);
    sp->next_epoch = epoch;
    sp->next_E = m->hdr.iter;
    sp->has_next = true;
    return try_send(sp);
}

static int hook(void *ctx, ordo__msg_t *m)
{
    ordo__sparse_push_t *sp = ctx;
    char why[512];
    switch (m->hdr.type) {
    case ORDO_MSG_PULL_RESP:
        return m->hdr.dtype == ORDO_DTYPE_COO ? on_push_answer(sp, m) : on_pull_answer(sp, m);
    case ORDO_MSG_PLAN:
        if (m->hdr.chunk == ORDO_SPARSE_REGIONS) return on_regions(sp, m);
        ORDO_WARN("sparse: dropped a scheduler message of kind %u", m->hdr.chunk);
        return 0;
    case ORDO_MSG_ERROR:
        return ordo__error_set(ORDO_ERR_PROTO,
                              "server %d refused a sparse request of iteration "
                              "%lld: %s",
                              m->hdr.rank, (long long)m->hdr.iter,
                              ordo__msg_text(m, 0, why, sizeof why));
    default:
        return 0;
    }
}

int ordo__sparse_push_state(ordo__sparse_push_t *sp, const char *path, bool save)
{
    size_t size = ordo__sparsify_state_size(sp->sp);
    uint8_t *buf = malloc(size + ORDO_DURABLE_TRAILER + 1);
    if (!buf) return ordo__error_set(ORDO_ERR_NOMEM, "no memory for the sparse state");
    int rc = 0;
    if (save) {
        /* durably, with a checksum: a death or a full disk leaves the last one whole */
        ordo__sparsify_state_get(sp->sp, buf);
        ordo__durable_t *d;
        if ((rc = ordo__durable_open(path, &d)) == 0) {
            (void)fwrite(buf, 1, size, ordo__durable_file(d)); /* the commit reports a failure */
            rc = ordo__durable_commit(&d, true, NULL);
        }
    } else {
        FILE *f = fopen(path, "rb");
        size_t got = f ? fread(buf, 1, size + ORDO_DURABLE_TRAILER + 1, f) : 0;
        bool had;
        if (f) fclose(f);
        if (!f)
            rc = ordo__error_set(ORDO_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        else if ((rc = ordo__durable_check(path, buf, &got, &had)) == 0 &&
                 (rc = ordo__sparsify_state_set(sp->sp, buf, got)) != 0)
            rc = ordo__error_context(rc, path);
    }
    free(buf);
    return rc;
}
