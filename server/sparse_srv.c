/* sparse_srv: sparse aggregation, global selection, region handover on a server. */
#include "server/sparse_srv.h"
#include "server/sparse_srv_internal.h"
#include "core/coo.h"
#include "common/error.h"
#include "common/log.h"
#include "core/sparse_wire.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------ */

int ordo__ssrv_list_add(msglist_t *l, ordo__msg_t *m)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        ordo__msg_t *p = realloc(l->m, sizeof *p * (size_t)cap);
        if (!p) return ORDO_ERR_NOMEM;
        l->m = p;
        l->cap = cap;
    }
    ordo__msg_move(&l->m[l->n++], m);
    return 0;
}

void ordo__ssrv_list_remove(msglist_t *l, int i)
{
    ordo__msg_close(&l->m[i]);
    l->m[i] = l->m[--l->n];
}

static void list_free(msglist_t *l)
{
    for (int i = 0; i < l->n; i++)
        ordo__msg_close(&l->m[i]);
    free(l->m);
}

static int reserve(ordo__sparse_srv_t *srv, size_t bytes)
{
    if (bytes <= srv->buf_cap) return 0;
    uint8_t *p = realloc(srv->buf, bytes);
    if (!p) return ordo__error_set(ORDO_ERR_NOMEM, "sparse: no memory for %zu bytes", bytes);
    srv->buf = p;
    srv->buf_cap = bytes;
    return 0;
}

/* a message to worker w on the data socket (its last known connection) */
static void to_worker(ordo__sparse_srv_t *srv, ordo__msg_t *m, int w, int type, int64_t iter,
                      uint32_t chunk, uint64_t req, int dtype)
{
    ordo__msg_init(m, type);
    m->sock = srv->data_sock;
    memcpy(m->rid, srv->rid[w], srv->rid_len[w]);
    m->rid_len = srv->rid_len[w];
    m->hdr.role = ORDO_ROLE_SERVER;
    m->hdr.rank = srv->rank;
    m->hdr.req = req;
    m->hdr.iter = iter;
    m->hdr.key = ORDO_SPARSE_KEY;
    m->hdr.chunk = chunk;
    m->hdr.dtype = (uint8_t)dtype;
}

/* refuse m: ERROR to a worker (its run then stops with the reason), a log line for others */
void ordo__ssrv_refuse(ordo__sparse_srv_t *srv, const ordo__msg_t *m, const char *why)
{
    ORDO_WARN("sparse: dropped %s (iter %lld chunk %u) from %s %d: %s",
              ordo__wire_type_name(m->hdr.type), (long long)m->hdr.iter, m->hdr.chunk,
              ordo__wire_role_name(m->hdr.role), m->hdr.rank, why);
    if (m->hdr.role != ORDO_ROLE_WORKER || m->sock != srv->data_sock) return;
    ordo__msg_t e;
    ordo__msg_init(&e, ORDO_MSG_ERROR);
    e.sock = srv->data_sock;
    memcpy(e.rid, m->rid, m->rid_len);
    e.rid_len = m->rid_len;
    e.hdr.role = ORDO_ROLE_SERVER;
    e.hdr.rank = srv->rank;
    e.hdr.req = m->hdr.req;
    e.hdr.iter = m->hdr.iter;
    e.hdr.key = ORDO_SPARSE_KEY;
    e.hdr.chunk = m->hdr.chunk;
    ordo__msg_add_text(&e, why);
    ordo__transport_send(srv->node->tp, &e);
}

/* ---- life --------------------------------------------------------------------------- */

int ordo__sparse_srv_new(ordo__node_t *node, const ordo__conf_t *conf, const ordo__plan_t *plan,
                        int data_sock, ordo__sparse_srv_t **out)
{
    *out = NULL;
    if (!plan->has_sparse) return 0;
    ordo__sparse_plan_t p;
    int rc = ordo__sparse_wire_plan_copy(&plan->sparse, &p);
    if (rc) return rc;
    ordo__sparse_srv_t *srv = calloc(1, sizeof *srv);
    if (!srv) {
        ordo__sparse_wire_plan_fini(&p);
        return ORDO_ERR_NOMEM;
    }
    srv->plan = p;
    srv->node = node;
    srv->data_sock = data_sock;
    srv->rank = node->rank;
    srv->S = node->n_servers;
    srv->W = node->n_workers;
    srv->sgd = (ordo__sparse_sgd_t){.lr = (float)conf->lr,
                                   .momentum = (float)conf->momentum,
                                   .weight_decay = (float)conf->weight_decay,
                                   .mean = conf->aggregate == ORDO_AGG_MEAN};
    size_t n = p.n, S1 = (size_t)srv->S + 1, W = (size_t)srv->W;
    srv->params = calloc(n, sizeof *srv->params);
    srv->momentum = calloc(n, sizeof *srv->momentum);
    srv->bounds = malloc(sizeof *srv->bounds * S1);
    srv->next_bounds = malloc(sizeof *srv->next_bounds * S1);
    srv->held = calloc(W, sizeof *srv->held);
    srv->has_held = calloc(W, sizeof *srv->has_held);
    srv->rid = calloc(W, sizeof *srv->rid);
    srv->rid_len = calloc(W, sizeof *srv->rid_len);
    srv->push_req = calloc(W, sizeof *srv->push_req);
    srv->moves = calloc(2 * S1, sizeof *srv->moves);
    srv->incoming = calloc(2 * S1, sizeof *srv->incoming);
    srv->peer_sock = malloc(sizeof *srv->peer_sock * S1);
    srv->maghist = malloc(sizeof *srv->maghist * ORDO_REGIONS_MAGHIST_BINS);
    if (!srv->params || !srv->momentum || !srv->bounds || !srv->next_bounds || !srv->held ||
        !srv->has_held || !srv->rid || !srv->rid_len || !srv->push_req || !srv->moves ||
        !srv->incoming || !srv->peer_sock || !srv->maghist) {
        ordo__sparse_srv_destroy(&srv);
        return ORDO_ERR_NOMEM;
    }
    for (size_t s = 0; s < S1; s++)
        srv->peer_sock[s] = -1;
    memcpy(srv->bounds, p.bounds, sizeof *srv->bounds * S1);
    rc = ordo__sparse_agg_new(&srv->agg, ordo__ssrv_lo(srv), ordo__ssrv_hi(srv), srv->W,
                             ORDO_SPARSE_AGG_DENSE, p.threshold_period);
    if (rc) {
        ordo__sparse_srv_destroy(&srv);
        return rc;
    }
    ORDO_INFO("sparse: this server owns [%u, %u) of %u entries; k = %u per iteration over %d "
              "server%s",
              ordo__ssrv_lo(srv), ordo__ssrv_hi(srv), p.n, p.k, srv->S, srv->S == 1 ? "" : "s");
    ORDO_INFO("sparse: sgd lr %g, momentum %g, weight decay %g", (double)srv->sgd.lr,
              (double)srv->sgd.momentum, (double)srv->sgd.weight_decay);
    *out = srv;
    return 0;
}

void ordo__sparse_srv_destroy(ordo__sparse_srv_t **pp)
{
    ordo__sparse_srv_t *srv = *pp;
    if (!srv) return;
    if (srv->t > 0)
        ORDO_INFO(
            "sparse: %lld iterations: %.1f entries pushed to this server and %.1f selected "
            "per iteration (%llu reuse iterations re-evaluated); regions epoch %u, %llu entries "
            "handed over, %llu taken over",
            (long long)srv->t, (double)srv->entries_in / (double)srv->t,
            (double)srv->entries_out / (double)srv->t, (unsigned long long)srv->capped, srv->epoch,
            (unsigned long long)srv->handed_over, (unsigned long long)srv->received_over);
    if (srv->held)
        for (int w = 0; w < srv->W; w++)
            if (srv->has_held[w]) ordo__msg_close(&srv->held[w]);
    list_free(&srv->future);
    list_free(&srv->handovers);
    ordo__sparse_agg_destroy(&srv->agg);
    ordo__sparse_wire_plan_fini(&srv->plan);
    free(srv->params);
    free(srv->momentum);
    free(srv->bounds);
    free(srv->next_bounds);
    free(srv->held);
    free(srv->has_held);
    free(srv->rid);
    free(srv->rid_len);
    free(srv->push_req);
    free(srv->moves);
    free(srv->incoming);
    free(srv->peer_sock);
    free(srv->dp);
    free(srv->maghist);
    free(srv->buf);
    free(srv);
    *pp = NULL;
}

int64_t ordo__sparse_srv_iteration(const ordo__sparse_srv_t *srv)
{
    return srv->t;
}

/* ---- pushes ------------------------------------------------------------------------- */

/* a push of the current iteration packed with the regions in force: validate and hold it */
static void hold_push(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    char why[320];
    int w = m->hdr.rank;
    size_t len = 0, count;
    const uint8_t *data = ordo__msg_data(m, 0, &len);
    if (srv->has_held[w] || srv->summed) {
        snprintf(why, sizeof why, "a second push of iteration %lld", (long long)m->hdr.iter);
        ordo__ssrv_refuse(srv, m, why);
        return;
    }
    int rc = ordo__coo_check(data, len, ordo__ssrv_lo(srv), ordo__ssrv_hi(srv), &count);
    if (rc) {
        ordo__ssrv_refuse(srv, m, ordo__error_text(rc));
        return;
    }
    srv->push_req[w] = m->hdr.req;
    ordo__msg_move(&srv->held[w], m);
    srv->has_held[w] = true;
    srv->n_held++;
    srv->entries_in += count;
}

/* a push from a worker: now, or kept until the regions it was packed with are in force */
static void on_push(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    char why[320];
    if (m->hdr.dtype != ORDO_DTYPE_COO || m->nframes != 1) {
        ordo__ssrv_refuse(srv, m, "a sparse PUSH needs one COO payload frame");
        return;
    }
    if (m->hdr.iter != srv->t) {
        snprintf(why, sizeof why, "push of iteration %lld; the server is at iteration %lld",
                 (long long)m->hdr.iter, (long long)srv->t);
        ordo__ssrv_refuse(srv, m, why);
        return;
    }
    if (m->hdr.chunk < srv->epoch) {
        snprintf(why, sizeof why, "push packed with regions of epoch %u; epoch %u is in force",
                 m->hdr.chunk, srv->epoch);
        ordo__ssrv_refuse(srv, m, why);
        return;
    }
    if (m->hdr.chunk == srv->epoch && srv->has_next && srv->next_E == srv->t) {
        snprintf(why, sizeof why, "push packed with regions of epoch %u; epoch %u is in force",
                 m->hdr.chunk, srv->next_epoch);
        ordo__ssrv_refuse(srv, m, why);
        return;
    }
    if (m->hdr.chunk > srv->epoch) {
        if (srv->future.n >= 4 * srv->W) {
            ordo__ssrv_refuse(srv, m, "too many pushes waiting for new regions");
            return;
        }
        if (ordo__ssrv_list_add(&srv->future, m))
            ORDO_ERROR("sparse: out of memory keeping a push");
        return;
    }
    hold_push(srv, m);
}

/* pushes that waited for the regions now in force */
static void take_future(ordo__sparse_srv_t *srv)
{
    for (int i = 0; i < srv->future.n;) {
        ordo__msg_t *m = &srv->future.m[i];
        if (m->hdr.chunk > srv->epoch) {
            i++;
            continue;
        }
        ordo__msg_t tmp;
        ordo__msg_move(&tmp, m);
        srv->future.m[i] = srv->future.m[--srv->future.n];
        if (tmp.hdr.chunk == srv->epoch && tmp.hdr.iter == srv->t)
            hold_push(srv, &tmp);
        else
            ordo__ssrv_refuse(srv, &tmp, "push packed with regions that never came into force");
        ordo__msg_close(&tmp);
    }
}

/* ---- the iteration ------------------------------------------------------------------ */

static void send_maghist(ordo__sparse_srv_t *srv)
{
    memset(srv->maghist, 0, sizeof *srv->maghist * ORDO_REGIONS_MAGHIST_BINS);
    int rc = ordo__sparse_agg_maghist(srv->agg, srv->maghist);
    if (!rc) rc = reserve(srv, 8 * (size_t)ORDO_REGIONS_MAGHIST_BINS);
    if (rc) {
        ORDO_ERROR("sparse: magnitude histogram: %s", ordo__error_text(rc));
        return;
    }
    ordo__sparse_wire_put_counts(srv->maghist, ORDO_REGIONS_MAGHIST_BINS, srv->buf);
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PLAN);
    m.hdr.iter = srv->t;
    m.hdr.key = ORDO_SPARSE_KEY;
    m.hdr.chunk = ORDO_SPARSE_MAGHIST;
    m.hdr.dtype = ORDO_DTYPE_BYTES;
    if (ordo__msg_add_copy(&m, srv->buf, 8 * (size_t)ORDO_REGIONS_MAGHIST_BINS) == 0)
        ordo__node_send_ctl(srv->node, &m);
    else
        ordo__msg_close(&m);
    srv->waiting_thr = true;
}

/* select with the cached threshold, or, when that would take more than GLOBAL_SLACK times
 * or less than 1/GLOBAL_SLACK of the share of the last agreement (counted on a magnitude
 * histogram of the sums), this server's exact top `share` entries */
static int select_reuse(ordo__sparse_srv_t *srv)
{
    memset(srv->maghist, 0, sizeof *srv->maghist * ORDO_REGIONS_MAGHIST_BINS);
    int rc = ordo__sparse_agg_maghist(srv->agg, srv->maghist);
    if (rc) return rc;
    float thr = ordo__sparse_agg_threshold(srv->agg);
    uint32_t bits;
    memcpy(&bits, &thr, 4);
    /* the selection's size lies between the entries in bins above the threshold's bin and
     * those in it or above */
    size_t tb = bits >> ORDO_REGIONS_MAGHIST_SHIFT;
    uint64_t above = 0, at = tb < ORDO_REGIONS_MAGHIST_BINS ? srv->maghist[tb] : 0;
    for (size_t b = tb + 1; b < ORDO_REGIONS_MAGHIST_BINS; b++)
        above += srv->maghist[b];
    double share = (double)srv->share;
    if ((double)(above + at) <= GLOBAL_SLACK * share && (double)above >= share / GLOBAL_SLACK)
        return ordo__sparse_agg_select(srv->agg);
    srv->capped++;
    return ordo__sparse_agg_select_topk(srv->agg, srv->share);
}

/* apply the selection, answer every worker with the changed entries, end the iteration */
static int finish_iteration(ordo__sparse_srv_t *srv)
{
    uint32_t lo = ordo__ssrv_lo(srv);
    int rc = ordo__sparse_agg_apply_sgd(srv->agg, srv->params + lo, srv->momentum + lo, &srv->sgd);
    size_t len = ordo__sparse_agg_changed_size(srv->agg), nsel;
    if (!rc) rc = reserve(srv, len + 8);
    if (!rc) rc = ordo__sparse_agg_encode_changed(srv->agg, srv->params + lo, srv->buf, len, &len);
    if (rc) return rc;
    ordo__sparse_agg_selected(srv->agg, &nsel);
    srv->entries_out += nsel;
    for (int w = 0; w < srv->W; w++) {
        ordo__msg_t r;
        to_worker(srv, &r, w, ORDO_MSG_PULL_RESP, srv->t, srv->epoch, srv->push_req[w],
                  ORDO_DTYPE_COO);
        if ((rc = ordo__msg_add_copy(&r, srv->buf, len)) != 0) {
            ordo__msg_close(&r);
            return rc;
        }
        ordo__transport_send(srv->node->tp, &r);
        ordo__msg_close(&srv->held[w]);
        srv->has_held[w] = false;
    }
    ordo__sparse_agg_next(srv->agg);
    srv->n_held = 0;
    srv->summed = srv->selected = srv->waiting_thr = false;
    srv->t++;
    ordo__ssrv_ckpt_due(srv);
    return 0;
}

/* answer the whole-region pulls whose version is here */
static void answer_pulls(ordo__sparse_srv_t *srv)
{
    if (!srv->initialized || srv->n_incoming > 0) return;
    uint32_t lo = ordo__ssrv_lo(srv), hi = ordo__ssrv_hi(srv);
    for (int i = 0; i < srv->n_dp;) {
        dpull_t d = srv->dp[i];
        if (d.version != srv->t || d.epoch != srv->epoch) {
            i++;
            continue;
        }
        srv->dp[i] = srv->dp[--srv->n_dp];
        ordo__msg_t r;
        to_worker(srv, &r, d.worker, ORDO_MSG_PULL_RESP, d.version, lo, d.req, ORDO_DTYPE_F32);
        if (ordo__msg_add_copy(&r, srv->params + lo, (size_t)(hi - lo) * sizeof(float)) == 0)
            ordo__transport_send(srv->node->tp, &r);
        else
            ordo__msg_close(&r);
    }
}

/* move the iteration along as far as what has arrived allows */
static void progress(ordo__sparse_srv_t *srv)
{
    for (;;) {
        if (srv->has_next && srv->next_E == srv->t && !srv->summed && srv->n_held == 0) {
            int rc = ordo__ssrv_switch_regions(srv);
            if (rc) ORDO_ERROR("sparse: switching regions: %s", ordo__error_text(rc));
            take_future(srv);
        }
        ordo__ssrv_take_handovers(srv);
        answer_pulls(srv);
        if (!srv->summed && srv->n_held == srv->W) {
            for (int w = 0; w < srv->W; w++) { /* in rank order: the same sums every run */
                size_t len = 0;
                const uint8_t *data = ordo__msg_data(&srv->held[w], 0, &len);
                int rc = ordo__sparse_agg_push_coo(srv->agg, w, data, len);
                if (rc) ORDO_ERROR("sparse: summing worker %d: %s", w, ordo__error_text(rc));
            }
            srv->summed = true;
        }
        if (srv->summed && !srv->selected && !srv->waiting_thr) {
            int rc;
            /* every server re-evaluates on the same iterations (all count the same way) */
            if (srv->t % srv->plan.threshold_period != 0) {
                rc = select_reuse(srv);
            } else if (srv->S == 1) {
                rc = ordo__sparse_agg_select_topk(srv->agg, srv->plan.k);
                ordo__sparse_agg_selected(srv->agg, &srv->share);
            } else {
                send_maghist(srv);
                return; /* until the scheduler's THRESHOLD */
            }
            if (rc) ORDO_ERROR("sparse: selection: %s", ordo__error_text(rc));
            srv->selected = rc == 0;
        }
        if (!srv->selected || srv->n_incoming > 0 || !srv->initialized) return;
        int rc = finish_iteration(srv);
        if (rc) {
            ORDO_ERROR("sparse: iteration %lld: %s", (long long)srv->t, ordo__error_text(rc));
            return;
        }
    }
}

/* ---- messages ----------------------------------------------------------------------- */

static void on_init(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    char why[320];
    size_t len = 0;
    const void *data = ordo__msg_data(m, 0, &len);
    uint32_t lo = ordo__ssrv_lo(srv), hi = ordo__ssrv_hi(srv);
    if (m->hdr.dtype != ORDO_DTYPE_F32 || m->nframes != 1 || srv->epoch != 0 ||
        m->hdr.chunk != lo || len != (size_t)(hi - lo) * 4) {
        snprintf(why, sizeof why,
                 "a sparse INIT must hold the float32 values of this server's region [%u, %u) "
                 "of epoch 0 (got chunk %u, %zu bytes)",
                 lo, hi, m->hdr.chunk, len);
        ordo__ssrv_refuse(srv, m, why);
        return;
    }
    if (srv->initialized) return; /* the first init wins, as in dense mode */
    ordo__sparse_wire_get_f32s(data, len, srv->params + lo);
    srv->initialized = true;
}

static void on_pull(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    char why[320];
    if (m->hdr.iter < srv->t || m->hdr.chunk < srv->epoch) {
        snprintf(why, sizeof why,
                 "pull of version %lld with regions of epoch %u; the region is at version %lld, "
                 "epoch %u",
                 (long long)m->hdr.iter, m->hdr.chunk, (long long)srv->t, srv->epoch);
        ordo__ssrv_refuse(srv, m, why);
        return;
    }
    if (srv->n_dp >= 4 * srv->W) {
        ordo__ssrv_refuse(srv, m, "too many whole-region pulls waiting");
        return;
    }
    if (srv->n_dp == srv->cap_dp) {
        int cap = srv->cap_dp ? 2 * srv->cap_dp : 8;
        dpull_t *p = realloc(srv->dp, sizeof *p * (size_t)cap);
        if (!p) return;
        srv->dp = p;
        srv->cap_dp = cap;
    }
    srv->dp[srv->n_dp++] = (dpull_t){
        .worker = m->hdr.rank, .version = m->hdr.iter, .epoch = m->hdr.chunk, .req = m->hdr.req};
}

void ordo__sparse_srv_on_data(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    if (m->hdr.role == ORDO_ROLE_SERVER) {
        ordo__ssrv_on_handover(srv, m);
        progress(srv);
        return;
    }
    int w = m->hdr.rank;
    if (m->hdr.role != ORDO_ROLE_WORKER || w < 0 || w >= srv->W) {
        ordo__ssrv_refuse(srv, m, "sender is not a worker of this cluster");
        return;
    }
    memcpy(srv->rid[w], m->rid, m->rid_len);
    srv->rid_len[w] = m->rid_len;
    switch (m->hdr.type) {
    case ORDO_MSG_INIT:
        on_init(srv, m);
        break;
    case ORDO_MSG_PUSH:
        on_push(srv, m);
        break;
    case ORDO_MSG_PULL:
        on_pull(srv, m);
        break;
    default:
        ordo__ssrv_refuse(srv, m, "unexpected sparse message on the data port");
        return;
    }
    progress(srv);
}

void ordo__sparse_srv_on_ctl(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    size_t len = 0;
    const void *data = ordo__msg_data(m, 0, &len);
    int rc = 0;
    if (m->hdr.key != ORDO_SPARSE_KEY) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "a PLAN message that is not sparse");
    } else if (m->hdr.chunk == ORDO_SPARSE_THRESHOLD) {
        float thr;
        if (!srv->waiting_thr || m->hdr.iter != srv->t)
            rc = ordo__error_set(ORDO_ERR_PROTO, "THRESHOLD for iteration %lld; none is awaited",
                                (long long)m->hdr.iter);
        else if ((rc = ordo__sparse_wire_get_float(data, len, &thr)) == 0 &&
                 (rc = ordo__sparse_agg_select_threshold(srv->agg, thr)) == 0) {
            srv->waiting_thr = false;
            srv->selected = true;
            ordo__sparse_agg_selected(srv->agg, &srv->share);
        }
    } else if (m->hdr.chunk == ORDO_SPARSE_REGIONS) {
        uint32_t epoch;
        if (srv->has_next || m->hdr.iter < srv->t)
            rc = ordo__error_set(ORDO_ERR_PROTO, "REGIONS for iteration %lld came too late",
                                (long long)m->hdr.iter);
        else if ((rc = ordo__sparse_wire_get_regions(data, len, srv->S, srv->plan.n, &epoch,
                                                    srv->next_bounds)) == 0) {
            if (epoch != srv->epoch + 1) {
                rc = ordo__error_set(ORDO_ERR_PROTO, "REGIONS of epoch %u after epoch %u", epoch,
                                    srv->epoch);
            } else {
                srv->next_epoch = epoch;
                srv->next_E = m->hdr.iter;
                srv->has_next = true;
            }
        }
    } else {
        rc = ordo__error_set(ORDO_ERR_PROTO, "sparse message of kind %u from the scheduler",
                            m->hdr.chunk);
    }
    if (rc) ORDO_WARN("sparse: dropped a scheduler message: %s", ordo__error_text(rc));
    progress(srv);
}
