/* merge_cost: a model's backward timeline, the messages a group travels as, the iteration
 * time of a grouping under the cost model (a + b * bytes on the link, then c * bytes at the
 * receiver, and the early pulls' stage), the packer the optimal planner shares, and the fit
 * of a, b and c from measured pushes. */
#include "core/merge_cost.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/merge_packer.h"

/* ======================================================================================= */
/* timeline                                                                                */
/* ======================================================================================= */

void ordo__merge_timeline_destroy(ordo__merge_timeline_t **pt)
{
    if (!pt || !*pt) return;
    ordo__merge_timeline_t *t = *pt;
    free(t->layer_op);
    free(t->tb_s);
    free(t->ready_s);
    free(t->layer_bytes);
    free(t->order);
    free(t->layer_first);
    free(t->layer_of_param);
    free(t);
    *pt = NULL;
}

int ordo__merge_timeline_new(const ordo__model_t *m, ordo__merge_timeline_t **out)
{
    if (!m || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_timeline_new: no model");
    int rc = ORDO_ERR_NOMEM;
    int P = m->n_params, O = m->n_ops;
    int *owner = malloc(((size_t)P + 1) * sizeof *owner);
    ordo__merge_timeline_t *t = calloc(1, sizeof *t);
    if (!owner || !t) goto fail;

    /* A parameter's gradient is complete when the backward of its first reader (forward
     * order) ends: that op owns it. */
    for (int p = 0; p < P; p++)
        owner[p] = -1;
    for (int o = 0; o < O; o++)
        for (int k = 0; k < m->ops[o].n_params; k++) {
            int p = m->ops[o].params[k];
            if (p < 0 || p >= P) {
                rc = ordo__error_set(ORDO_ERR_INVAL, "model '%s': op '%s' names parameter %d of %d",
                                    m->name, m->ops[o].name, p, P);
                goto fail;
            }
            if (owner[p] < 0) owner[p] = o;
        }
    for (int p = 0; p < P; p++)
        if (owner[p] < 0) {
            rc = ordo__error_set(ORDO_ERR_INVAL, "model '%s': parameter '%s' is read by no op", m->name,
                                m->params[p].name);
            goto fail;
        }

    t->n_params = P;
    t->layer_op = malloc(((size_t)O + 1) * sizeof *t->layer_op);
    t->tb_s = malloc(((size_t)O + 1) * sizeof *t->tb_s);
    t->ready_s = malloc(((size_t)O + 1) * sizeof *t->ready_s);
    t->layer_bytes = calloc((size_t)O + 1, sizeof *t->layer_bytes);
    t->order = malloc(((size_t)P + 1) * sizeof *t->order);
    t->layer_first = malloc(((size_t)O + 2) * sizeof *t->layer_first);
    t->layer_of_param = malloc(((size_t)P + 1) * sizeof *t->layer_of_param);
    if (!t->layer_op || !t->tb_s || !t->ready_s || !t->layer_bytes || !t->order ||
        !t->layer_first || !t->layer_of_param)
        goto fail;

    /* Walk backward (reverse forward order); ops owning nothing add their time to the
     * next layer. */
    double pending_us = 0, clock_s = 0;
    int L = 0, np = 0;
    for (int o = O - 1; o >= 0; o--) {
        const ordo__model_op_t *op = &m->ops[o];
        int owns = 0;
        for (int k = 0; k < op->n_params; k++)
            if (owner[op->params[k]] == o) owns = 1;
        if (!owns) {
            pending_us += op->bwd_us;
            continue;
        }
        double tb = (pending_us + op->bwd_us) * 1e-6;
        pending_us = 0;
        clock_s += tb;
        t->layer_op[L] = o;
        t->tb_s[L] = tb;
        t->ready_s[L] = clock_s;
        t->layer_first[L] = np;
        for (int k = 0; k < op->n_params; k++) {
            int p = op->params[k];
            if (owner[p] != o) continue;
            t->order[np++] = p;
            t->layer_of_param[p] = L;
            t->layer_bytes[L] += m->params[p].bytes;
        }
        L++;
    }
    ORDO_ASSERT(np == P);
    t->layer_first[L] = np;
    t->n_layers = L;
    free(owner);
    *out = t;
    return 0;
fail:
    if (rc == ORDO_ERR_NOMEM) ordo__error_set(rc, "model '%s': out of memory", m->name);
    free(owner);
    ordo__merge_timeline_destroy(&t);
    return rc;
}

/* ======================================================================================= */
/* cost model                                                                              */
/* ======================================================================================= */

int ordo__merge_grouping_valid(int n, const int *group_of)
{
    if (n < 0 || (n > 0 && !group_of)) return 0;
    for (int i = 0; i < n; i++) {
        int prev = i ? group_of[i - 1] : -1;
        if (i == 0 ? group_of[0] != 0 : (group_of[i] != prev && group_of[i] != prev + 1)) return 0;
    }
    return 1;
}

double ordo__merge_comm_times(int n, const double *ready_s, const int64_t *bytes,
                             const int *group_of, double a, double b, double c,
                             const ordo__merge_pieces_t *pieces, double *start_s, double *end_s)
{
    return ordo__merge_comm_times3(n, ready_s, bytes, group_of, a, b, c, 0, 0, pieces, start_s,
                                  end_s);
}

double ordo__merge_comm_times3(int n, const double *ready_s, const int64_t *bytes,
                              const int *group_of, double a, double b, double c, double p,
                              double pm, const ordo__merge_pieces_t *pieces, double *start_s,
                              double *end_s)
{
    return ordo__merge_times(n, ready_s, bytes, group_of, a, b, c, p, pm,
                             ordo__merge_pull_resources(pieces), pieces, start_s, end_s);
}

double ordo__merge_times(int n, const double *ready_s, const int64_t *bytes, const int *group_of,
                         double a, double b, double c, double p, double pm, int P,
                         const ordo__merge_pieces_t *pieces, double *start_s, double *end_s)
{
    ORDO_ASSERT(ordo__merge_grouping_valid(n, group_of));
    ORDO_ASSERT(!pieces || pieces->n_items == n);
    ordo__merge_packer_t k;
    if (pieces && ordo__merge_packer_init(&k, pieces, 1, &a, &b, &c) != 0) return NAN;
    /* link free, receiver free, pull resources free */
    double end = 0, done = 0, back[ORDO__MERGE_PULLS_MAX] = {0};
    ORDO_ASSERT(P == 1 || (pieces && P == pieces->n_servers && P <= ORDO__MERGE_PULLS_MAX));
    int64_t pulled[ORDO__MERGE_PULLS_MAX];
    int values[ORDO__MERGE_PULLS_MAX];
    bool pulls = p > 0 || pm > 0;
    int i = 0;
    while (i < n) {
        int g = group_of[i], first = i;
        double ready = 0;
        int64_t sum = 0;
        if (pieces) ordo__merge_packer_reset(&k);
        for (; i < n && group_of[i] == g; i++) {
            if (ready_s[i] > ready) ready = ready_s[i];
            sum += bytes[i];
            if (pieces) ordo__merge_packer_add(&k, i);
        }
        int n_msgs = pieces ? k.count : 1;
        double phi = pieces ? ordo__merge_packer_phi(&k, 0) : a + b * (double)sum;
        double start = end > ready ? end : ready;
        ordo_merge_send(&end, &done, ready, n_msgs, sum, phi, a, b, c);
        double group_end = done;
        if (pulls) {
            if (pieces) {
                ordo__merge_packer_pulls(&k, P, pulled, values);
            } else { /* one value per item */
                pulled[0] = sum;
                values[0] = i - first;
            }
            group_end = ordo_merge_pull(back, P, done, p, pm, pulled, values);
        }
        if (start_s) start_s[g] = start;
        if (end_s) end_s[g] = group_end;
    }
    if (pieces) ordo__merge_packer_free(&k);
    return pulls ? ordo_merge_pulls_end(back, P) : done;
}

/* ======================================================================================= */
/* messages of a group                                                                     */
/* ======================================================================================= */

void ordo__merge_pieces_destroy(ordo__merge_pieces_t **pp)
{
    if (!pp || !*pp) return;
    free((*pp)->first);
    free((*pp)->server);
    free((*pp)->bytes);
    free((*pp)->run_key);
    free((*pp)->run_off);
    free(*pp);
    *pp = NULL;
}

int ordo__merge_pieces_new(const ordo__merge_timeline_t *t, const ordo__keys_t *keys,
                          int64_t max_bytes, const int *order, ordo__merge_pieces_t **out)
{
    int per_layer = order == NULL;
    if (!t || !keys || !out || max_bytes < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_pieces_new: bad arguments");
    if (keys->n_keys != t->n_params)
        return ordo__error_set(ORDO_ERR_INVAL, "key map of %d keys for a model of %d parameters",
                              keys->n_keys, t->n_params);
    int n = per_layer ? t->n_layers : t->n_params;
    ordo__merge_pieces_t *pc = calloc(1, sizeof *pc);
    if (!pc) return ORDO_ERR_NOMEM;
    pc->n_servers = keys->n_servers;
    pc->max_bytes = max_bytes;
    pc->n_items = n;
    pc->first = malloc(((size_t)n + 1) * sizeof *pc->first);
    pc->server = malloc(((size_t)keys->n_slices + 1) * sizeof *pc->server);
    pc->bytes = malloc(((size_t)keys->n_slices + 1) * sizeof *pc->bytes);
    pc->run_key = malloc(((size_t)keys->n_slices + 1) * sizeof *pc->run_key);
    pc->run_off = malloc(((size_t)keys->n_slices + 1) * sizeof *pc->run_off);
    if (!pc->first || !pc->server || !pc->bytes || !pc->run_key || !pc->run_off) {
        ordo__merge_pieces_destroy(&pc);
        return ORDO_ERR_NOMEM;
    }
    /* parameters in push order, each one's slices in chunk order: the order in which a
     * worker packs a server's share of a group */
    int s = 0;
    for (int i = 0; i < n; i++) {
        pc->first[i] = s;
        int p0 = per_layer ? t->layer_first[i] : i, p1 = per_layer ? t->layer_first[i + 1] : i + 1;
        for (int q = p0; q < p1; q++) {
            int key = per_layer ? t->order[q] : order[q];
            if (key < 0 || key >= t->n_params) {
                ordo__merge_pieces_destroy(&pc);
                return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_pieces_new: order[%d] = %d", q, key);
            }
            for (int c = 0; c < keys->n_chunks[key]; c++) {
                const ordo__slice_t *sl = &keys->slices[keys->first_slice[key] + c];
                pc->server[s] = sl->server;
                pc->bytes[s] = sl->numel * (int64_t)keys->elem_size;
                pc->run_key[s] = keys->n_chunks[key] > 1 ? key : -1;
                pc->run_off[s] = sl->offset * (int64_t)keys->elem_size;
                s++;
            }
        }
    }
    pc->first[n] = s;
    *out = pc;
    return 0;
}

int ordo__merge_pieces_check(const ordo__merge_pieces_t *pc, int n)
{
    if (!pc || pc->n_items != n || pc->n_servers < 1 || pc->max_bytes < 0 || !pc->first ||
        pc->first[0] != 0)
        return ordo__error_set(ORDO_ERR_INVAL, "message layout: not one for %d items", n);
    for (int i = 0; i < n; i++)
        if (pc->first[i + 1] < pc->first[i])
            return ordo__error_set(ORDO_ERR_INVAL, "message layout: item %d has a negative count", i);
    for (int s = 0; s < pc->first[n]; s++)
        if (pc->server[s] < 0 || pc->server[s] >= pc->n_servers || pc->bytes[s] <= 0)
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "message layout: slice %d: server %d of %d, %lld bytes", s,
                                  pc->server[s], pc->n_servers, (long long)pc->bytes[s]);
    if (!pc->run_key != !pc->run_off)
        return ordo__error_set(ORDO_ERR_INVAL, "message layout: run_key and run_off go together");
    return 0;
}

int ordo__merge_packer_init(ordo__merge_packer_t *k, const ordo__merge_pieces_t *pc, int nq,
                            const double *a, const double *b, const double *c)
{
    int S = pc->n_servers;
    memset(k, 0, sizeof *k);
    k->pc = pc;
    k->nq = nq;
    for (int q = 0; q < nq; q++) {
        k->a[q] = a[q];
        k->b[q] = b[q];
        k->c[q] = c[q];
    }
    k->n = calloc((size_t)S + 1, sizeof *k->n);
    k->run = calloc((size_t)S + 1, sizeof *k->run);
    k->run_end = calloc((size_t)S + 1, sizeof *k->run_end);
    k->closed = calloc((size_t)S + 1, sizeof *k->closed);
    k->open = calloc((size_t)S + 1, sizeof *k->open);
    k->slices = calloc((size_t)S + 1, sizeof *k->slices);
    k->psi[0] = calloc((size_t)S + 1, sizeof *k->psi[0]);
    k->psi[1] = calloc((size_t)S + 1, sizeof *k->psi[1]);
    if (!k->n || !k->run || !k->run_end || !k->closed || !k->open || !k->slices || !k->psi[0] ||
        !k->psi[1]) {
        ordo__merge_packer_free(k);
        return ORDO_ERR_NOMEM;
    }
    ordo__merge_packer_reset(k);
    return 0;
}

void ordo__merge_packer_free(ordo__merge_packer_t *k)
{
    free(k->n);
    free(k->run);
    free(k->run_end);
    free(k->closed);
    free(k->open);
    free(k->slices);
    free(k->psi[0]);
    free(k->psi[1]);
    memset(k, 0, sizeof *k);
}

void ordo__merge_packer_reset(ordo__merge_packer_t *k)
{
    size_t S = (size_t)k->pc->n_servers;
    memset(k->n, 0, S * sizeof *k->n);
    memset(k->closed, 0, S * sizeof *k->closed);
    memset(k->open, 0, S * sizeof *k->open);
    memset(k->slices, 0, S * sizeof *k->slices);
    k->count = 0;
    k->bytes = 0;
}

/* the psi term of server v's r-th message (from 1) under model q, with `before` bytes of
 * its messages before it and `len` its own: r a + b (before + len) - c before, counted from
 * the server's first message (ordo__merge_packer_phi adds the servers before it) */
static double psi_term(const ordo__merge_packer_t *k, int q, int r, int64_t before, int64_t len)
{
    return (double)r * k->a[q] + k->b[q] * (double)(before + len) - k->c[q] * (double)before;
}

void ordo__merge_packer_add(ordo__merge_packer_t *k, int i)
{
    const ordo__merge_pieces_t *pc = k->pc;
    for (int s = pc->first[i]; s < pc->first[i + 1]; s++) {
        int v = pc->server[s], key = pc->run_key ? pc->run_key[s] : -1;
        int64_t b = pc->bytes[s];
        /* as the worker packs: a new message when none is open, when this slice would take
         * the open one past max_bytes (a slice is never split), and when it does not continue
         * the open one's kind: a chunked key's slice continues a run of that key's consecutive
         * slices, a key of one slice a message of such keys */
        bool same = key >= 0 ? k->run[v] == key && k->run_end[v] == pc->run_off[s] : k->run[v] < 0;
        if (key >= 0) k->run_end[v] = pc->run_off[s] + b;
        if (k->n[v] == 0 || !same || (pc->max_bytes > 0 && k->open[v] + b > pc->max_bytes)) {
            k->run[v] = key;
            if (k->n[v] > 0) { /* the open message closes */
                for (int q = 0; q < k->nq; q++) {
                    double y = psi_term(k, q, k->n[v], k->closed[v], k->open[v]);
                    if (k->n[v] == 1 || y > k->psi[q][v]) k->psi[q][v] = y;
                }
                k->closed[v] += k->open[v];
            }
            k->open[v] = b;
            k->n[v]++;
            k->count++;
        } else {
            k->open[v] += b;
        }
        k->bytes += b;
        k->slices[v]++;
    }
}

int ordo__merge_pull_resources(const ordo__merge_pieces_t *pc)
{
    return pc && pc->n_servers <= ORDO__MERGE_PULLS_MAX ? pc->n_servers : 1;
}

void ordo__merge_packer_pulls(const ordo__merge_packer_t *k, int P, int64_t *out, int *msgs)
{
    int S = k->pc->n_servers;
    if (P == S) {
        for (int v = 0; v < S; v++) {
            out[v] = k->closed[v] + k->open[v];
            msgs[v] = k->slices[v];
        }
        return;
    }
    out[0] = 0; /* one resource: the busiest server's share, every pulled value */
    msgs[0] = 0;
    for (int v = 0; v < S; v++) {
        if (k->closed[v] + k->open[v] > out[0]) out[0] = k->closed[v] + k->open[v];
        msgs[0] += k->slices[v];
    }
}

double ordo__merge_packer_phi(const ordo__merge_packer_t *k, int q)
{
    /* phi over the messages in sending order (server order): server v's r-th message is
     * the group's (off + r)-th with `before` bytes ahead of the server's first, so its term
     * is off a + (b - c) before + psi_term */
    double phi = -INFINITY;
    int off = 0;
    int64_t before = 0;
    for (int v = 0; v < k->pc->n_servers; v++) {
        if (k->n[v] == 0) continue;
        double own = psi_term(k, q, k->n[v], k->closed[v], k->open[v]);
        if (k->n[v] > 1 && k->psi[q][v] > own) own = k->psi[q][v];
        double y = (double)off * k->a[q] + (k->b[q] - k->c[q]) * (double)before + own;
        if (y > phi) phi = y;
        off += k->n[v];
        before += k->closed[v] + k->open[v];
    }
    return phi;
}

/* ======================================================================================= */
/* calibration                                                                             */
/* ======================================================================================= */

int ordo__merge_fit_cost(const double *bytes, const double *secs, int n, double *a, double *b)
{
    if (!bytes || !secs || !a || !b)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_fit_cost: missing argument");
    if (n < 2) return ordo__error_set(ORDO_ERR_INVAL, "fit needs at least 2 measurements, got %d", n);
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(bytes[i]) || !isfinite(secs[i]) || bytes[i] < 0 || secs[i] < 0)
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "measurement %d (%g bytes, %g s): values must be finite and "
                                  ">= 0",
                                  i, bytes[i], secs[i]);
        mx += bytes[i];
        my += secs[i];
    }
    mx /= n;
    my /= n;
    /* Centred sums keep the fit accurate when sizes are large and times small. */
    double sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sxx += (bytes[i] - mx) * (bytes[i] - mx);
        sxy += (bytes[i] - mx) * (secs[i] - my);
    }
    if (!(sxx > 0))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fit needs at least 2 distinct sizes (all %d are %g "
                              "bytes)",
                              n, bytes[0]);
    double fb = sxy / sxx, fa = my - fb * mx;
    if (fa < 0 || fb < 0) {
        /* The free fit breaks a >= 0 or b >= 0, so the constrained optimum lies on an edge:
         * b = 0 (a is the mean) or a = 0 (a fit through the origin). Take the better. */
        double sx2 = 0, sxy0 = 0;
        for (int i = 0; i < n; i++) {
            sx2 += bytes[i] * bytes[i];
            sxy0 += bytes[i] * secs[i];
        }
        double b0 = sxy0 / sx2, sse_a = 0, sse_b = 0;
        for (int i = 0; i < n; i++) {
            sse_a += (secs[i] - my) * (secs[i] - my);
            sse_b += (secs[i] - b0 * bytes[i]) * (secs[i] - b0 * bytes[i]);
        }
        if (sse_a <= sse_b) {
            fa = my;
            fb = 0;
        } else {
            fa = 0;
            fb = b0;
        }
    }
    *a = fa;
    *b = fb;
    return 0;
}

static int by_value(const void *x, const void *y)
{
    double u = *(const double *)x, v = *(const double *)y;
    return u < v ? -1 : u > v;
}

double ordo__merge_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* fit_robust fits y ~ a + b x over sizes that span three orders of magnitude: b from the
 * least-squares fit (which the largest sizes decide), a the median of y - b x (which the
 * small sizes, where b x is small, decide; a plain fit lets a few percent of noise at 4 MiB
 * swamp a per-message cost of tens of us), at least 0 */
static int fit_robust(const double *x, const double *y, int n, double *a, double *b)
{
    double fa, fb;
    int rc = ordo__merge_fit_cost(x, y, n, &fa, &fb);
    if (rc) return rc;
    double *r = malloc(sizeof *r * (size_t)n);
    if (!r) return ORDO_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        r[i] = y[i] - fb * x[i];
    double med = ordo__merge_median(r, n);
    free(r);
    *a = fmax(0.0, med);
    *b = fb;
    return 0;
}

int ordo__merge_fit_planner(const double *bytes, const double *per_msg, const double *one, int n,
                           double link_bps, ordo__merge_cost_t *out)
{
    int rc = fit_robust(bytes, per_msg, n, &out->a, &out->b_msg);
    if (!rc) rc = fit_robust(bytes, one, n, &out->a_one, &out->b_one);
    if (rc) return rc;
    /* The planner's two stages: the link (a + b * bytes) and then the receivers (c * bytes,
     * once a message has arrived). Pipelined pushes pay the link stage per message, one push
     * alone pays both. With W workers pushing at once the CPU of a small machine, not the
     * link, can bound the stream, so b is the pipelined slope when that is slower. */
    out->b = link_bps > 0 ? fmax(8.0 / link_bps, out->b_msg) : out->b_msg;
    out->c = fmax(0.0, out->b_one - out->b);
    return 0;
}
