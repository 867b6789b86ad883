/* sparse_coord: global thresholds and balanced regions for sparse pushes. */
#include "scheduler/sparse_coord.h"
#include "common/error.h"
#include "common/log.h"
#include "core/sparse_wire.h"
#include "core/regions.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* one gathering of histograms: iteration, who has sent, the sum */
typedef struct {
    int64_t iter; /* -1: none under way */
    int got;
    bool *from;
    uint64_t *sum;
    size_t nbins;
} round_t;

struct ordo__sparse_coord {
    ordo__sparse_plan_t plan;
    int servers, workers;
    ordo_sparse_coord_send_fn send;
    void *ctx;
    round_t pos, mag;
    uint32_t epoch;
    uint32_t *bounds, *next;
    uint8_t *buf;
};

static int round_init(round_t *r, int senders, size_t nbins)
{
    r->iter = -1;
    r->nbins = nbins;
    r->from = calloc((size_t)senders, sizeof *r->from);
    r->sum = calloc(nbins, sizeof *r->sum);
    return r->from && r->sum ? 0 : ORDO_ERR_NOMEM;
}

static void round_fini(round_t *r)
{
    free(r->from);
    free(r->sum);
}

static void round_reset(round_t *r, int senders)
{
    r->iter = -1;
    r->got = 0;
    memset(r->from, 0, sizeof *r->from * (size_t)senders);
    memset(r->sum, 0, sizeof *r->sum * r->nbins);
}

int ordo__sparse_coord_new(const json_t *plan, int servers, int workers,
                          ordo_sparse_coord_send_fn send, void *ctx, ordo__sparse_coord_t **out)
{
    *out = NULL;
    /* the member as the nodes read it (core/sparse_wire.h), not the document printed and
     * parsed again */
    ordo__sparse_plan_t p;
    int rc = ordo__sparse_wire_plan_of(json_object_get(plan, "sparse"), servers, &p);
    if (rc == ORDO_ERR_NOTFOUND) return 0;
    if (rc) return rc;
    ordo__sparse_coord_t *c = calloc(1, sizeof *c);
    if (!c) {
        ordo__sparse_wire_plan_fini(&p);
        return ORDO_ERR_NOMEM;
    }
    c->plan = p;
    c->servers = servers;
    c->workers = workers;
    c->send = send;
    c->ctx = ctx;
    size_t big =
        ORDO_REGIONS_MAGHIST_BINS > (size_t)p.nbins ? ORDO_REGIONS_MAGHIST_BINS : (size_t)p.nbins;
    c->bounds = malloc(sizeof *c->bounds * ((size_t)servers + 1));
    c->next = malloc(sizeof *c->next * ((size_t)servers + 1));
    c->buf = malloc(ordo_sparse_wire_regions_size(servers) + 8 * big);
    if (!c->bounds || !c->next || !c->buf || round_init(&c->pos, workers, (size_t)p.nbins) ||
        round_init(&c->mag, servers, ORDO_REGIONS_MAGHIST_BINS)) {
        ordo__sparse_coord_destroy(&c);
        return ORDO_ERR_NOMEM;
    }
    memcpy(c->bounds, p.bounds, sizeof *c->bounds * ((size_t)servers + 1));
    *out = c;
    return 0;
}

void ordo__sparse_coord_destroy(ordo__sparse_coord_t **cp)
{
    ordo__sparse_coord_t *c = *cp;
    if (!c) return;
    ordo__sparse_wire_plan_fini(&c->plan);
    round_fini(&c->pos);
    round_fini(&c->mag);
    free(c->bounds);
    free(c->next);
    free(c->buf);
    free(c);
    *cp = NULL;
}

uint32_t ordo__sparse_coord_epoch(const ordo__sparse_coord_t *c)
{
    return c->epoch;
}

const uint32_t *ordo__sparse_coord_bounds(const ordo__sparse_coord_t *c)
{
    return c->bounds;
}

/* add one node's histogram to round r; returns 1 when the round is complete */
static int gather(round_t *r, int senders, int rank, ordo__msg_t *m, const char *what)
{
    size_t len = 0;
    const void *data = ordo__msg_data(m, 0, &len);
    if (m->nframes != 1)
        return ordo__error_set(ORDO_ERR_PROTO, "%s: %d payload frames, expected 1", what, m->nframes);
    if (m->hdr.iter < 0 || (r->iter >= 0 && m->hdr.iter != r->iter))
        return ordo__error_set(ORDO_ERR_PROTO, "%s of iteration %lld while gathering iteration %lld",
                              what, (long long)m->hdr.iter, (long long)r->iter);
    if (r->from[rank])
        return ordo__error_set(ORDO_ERR_PROTO, "%s: a second histogram for iteration %lld", what,
                              (long long)m->hdr.iter);
    int rc = ordo__sparse_wire_add_counts(data, len, r->nbins, r->sum, what);
    if (rc) return rc;
    r->iter = m->hdr.iter;
    r->from[rank] = true;
    return ++r->got == senders;
}

/* max over regions of the expected load, relative to the mean */
static double imbalance(const ordo__sparse_coord_t *c, const uint32_t *bounds)
{
    double max = 0, total = 0;
    for (int s = 0; s < c->servers; s++) {
        double l = ordo__regions_load(c->pos.sum, c->pos.nbins, c->plan.n, bounds[s], bounds[s + 1]);
        total += l;
        if (l > max) max = l;
    }
    return total > 0 ? max * c->servers / total : 1.0;
}

static int rebalance(ordo__sparse_coord_t *c)
{
    int S = c->servers;
    int rc = ordo__regions_balance(c->pos.sum, c->pos.nbins, c->plan.n, S, c->next);
    if (rc) return rc;
    double before = imbalance(c, c->bounds), after = imbalance(c, c->next);
    int64_t E = c->pos.iter + 1;
    c->epoch++;
    memcpy(c->bounds, c->next, sizeof *c->bounds * ((size_t)S + 1));
    ordo__sparse_wire_put_regions(c->epoch, c->bounds, S, c->buf);
    size_t len = ordo_sparse_wire_regions_size(S);
    c->send(c->ctx, ORDO_ROLE_SERVER, ORDO_SPARSE_REGIONS, E, c->buf, len);
    c->send(c->ctx, ORDO_ROLE_WORKER, ORDO_SPARSE_REGIONS, E, c->buf, len);
    char list[256];
    int at = 0;
    for (int s = 1; s < S && at < (int)sizeof list - 16; s++)
        at += snprintf(list + at, sizeof list - (size_t)at, "%s%u", s > 1 ? " " : "", c->bounds[s]);
    list[at] = '\0';
    ORDO_INFO("sparse: regions of epoch %u from iteration %lld split at [%s]: expected max load "
              "%.3f x mean (%.3f x with the previous regions)",
              c->epoch, (long long)E, list, after, before);
    return 0;
}

int ordo__sparse_coord_on_msg(ordo__sparse_coord_t *c, int role, int rank, ordo__msg_t *m)
{
    int rc;
    switch (m->hdr.chunk) {
    case ORDO_SPARSE_POSHIST:
        if (role != ORDO_ROLE_WORKER || rank < 0 || rank >= c->workers)
            return ordo__error_set(ORDO_ERR_PROTO, "POSHIST from a node that is not a worker");
        if ((rc = gather(&c->pos, c->workers, rank, m, "POSHIST")) <= 0) return rc;
        rc = rebalance(c);
        round_reset(&c->pos, c->workers);
        return rc;
    case ORDO_SPARSE_MAGHIST: {
        if (role != ORDO_ROLE_SERVER || rank < 0 || rank >= c->servers)
            return ordo__error_set(ORDO_ERR_PROTO, "MAGHIST from a node that is not a server");
        if ((rc = gather(&c->mag, c->servers, rank, m, "MAGHIST")) <= 0) return rc;
        float thr = ordo__regions_maghist_threshold(c->mag.sum, c->plan.k);
        ordo__sparse_wire_put_float(thr, c->buf);
        c->send(c->ctx, ORDO_ROLE_SERVER, ORDO_SPARSE_THRESHOLD, c->mag.iter, c->buf, 4);
        ORDO_DEBUG("sparse: global threshold %g for iteration %lld", (double)thr,
                   (long long)c->mag.iter);
        round_reset(&c->mag, c->servers);
        return 0;
    }
    default:
        return ordo__error_set(ORDO_ERR_PROTO, "sparse message of unknown kind %u", m->hdr.chunk);
    }
}
