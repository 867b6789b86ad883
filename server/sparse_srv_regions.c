/* sparse_srv_regions: region switches and the handover of values and momentum between
 * servers (the server's sparse module, see sparse_srv.h). */
#include "common/error.h"
#include "common/log.h"
#include "core/sparse_wire.h"
#include "server/sparse_srv_internal.h"

#include <string.h>

/* ---- regions: switching and handover ------------------------------------------------- */

static void send_handover(ordo__sparse_srv_t *srv, const ordo__regions_move_t *mv, int64_t E)
{
    if (srv->peer_sock[mv->to] < 0) {
        int sock = ordo__transport_connect(srv->node->tp, srv->node->server_endpoints[mv->to], 1);
        if (sock < 0) {
            ORDO_ERROR("sparse: cannot reach server %d for a handover: %s", mv->to,
                       ordo__error_text(sock));
            return;
        }
        srv->peer_sock[mv->to] = sock;
    }
    size_t bytes = (size_t)(mv->hi - mv->lo) * sizeof(float);
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_INIT);
    m.sock = srv->peer_sock[mv->to];
    m.hdr.role = ORDO_ROLE_SERVER;
    m.hdr.rank = srv->rank;
    m.hdr.iter = E;
    m.hdr.key = ORDO_SPARSE_KEY;
    m.hdr.chunk = mv->lo;
    m.hdr.dtype = ORDO_DTYPE_F32;
    if (ordo__msg_add_copy(&m, srv->params + mv->lo, bytes) ||
        ordo__msg_add_copy(&m, srv->momentum + mv->lo, bytes)) {
        ordo__msg_close(&m);
        ORDO_ERROR("sparse: out of memory handing over [%u, %u)", mv->lo, mv->hi);
        return;
    }
    ordo__transport_send(srv->node->tp, &m);
    srv->handed_over += mv->hi - mv->lo;
}

/* the regions announced for iteration t take effect: hand over what leaves, expect what
 * comes */
int ordo__ssrv_switch_regions(ordo__sparse_srv_t *srv)
{
    int S = srv->S;
    size_t nm = ordo__regions_moves(srv->bounds, srv->next_bounds, S, srv->moves, 2 * (size_t)S + 2);
    srv->n_incoming = 0;
    for (size_t i = 0; i < nm; i++) {
        if (srv->moves[i].from == srv->rank) send_handover(srv, &srv->moves[i], srv->t);
        if (srv->moves[i].to == srv->rank) srv->incoming[srv->n_incoming++] = srv->moves[i];
    }
    memcpy(srv->bounds, srv->next_bounds, sizeof *srv->bounds * ((size_t)S + 1));
    srv->epoch = srv->next_epoch;
    srv->has_next = false;
    int rc = ordo__sparse_agg_set_range(srv->agg, ordo__ssrv_lo(srv), ordo__ssrv_hi(srv));
    if (rc) return rc;
    ORDO_DEBUG("sparse: iteration %lld: epoch %u, region [%u, %u), %d range%s to take over",
               (long long)srv->t, srv->epoch, ordo__ssrv_lo(srv), ordo__ssrv_hi(srv),
               srv->n_incoming, srv->n_incoming == 1 ? "" : "s");
    return 0;
}

/* take the handovers kept so far that the current switch waits for */
void ordo__ssrv_take_handovers(ordo__sparse_srv_t *srv)
{
    for (int i = 0; i < srv->handovers.n;) {
        ordo__msg_t *m = &srv->handovers.m[i];
        int match = -1;
        for (int j = 0; j < srv->n_incoming; j++) {
            const ordo__regions_move_t *mv = &srv->incoming[j];
            if (m->hdr.iter == srv->t && m->hdr.rank == mv->from && m->hdr.chunk == mv->lo)
                match = j;
        }
        if (match < 0) {
            if (m->hdr.iter < srv->t) {
                ORDO_WARN("sparse: dropped a handover of [%u, ...) for iteration %lld from server "
                          "%d that no switch expects",
                          m->hdr.chunk, (long long)m->hdr.iter, m->hdr.rank);
                ordo__ssrv_list_remove(&srv->handovers, i);
                continue;
            }
            i++;
            continue;
        }
        const ordo__regions_move_t mv = srv->incoming[match];
        size_t len = 0, mlen = 0;
        const void *v = ordo__msg_data(m, 0, &len), *mo = ordo__msg_data(m, 1, &mlen);
        if (len != (size_t)(mv.hi - mv.lo) * 4 || mlen != len) {
            ORDO_WARN("sparse: dropped a handover of [%u, %u) from server %d: %zu bytes, expected "
                      "%zu",
                      mv.lo, mv.hi, mv.from, len, (size_t)(mv.hi - mv.lo) * 4);
            ordo__ssrv_list_remove(&srv->handovers, i);
            continue;
        }
        ordo__sparse_wire_get_f32s(v, len, srv->params + mv.lo);
        ordo__sparse_wire_get_f32s(mo, mlen, srv->momentum + mv.lo);
        srv->received_over += mv.hi - mv.lo;
        srv->incoming[match] = srv->incoming[--srv->n_incoming];
        ordo__ssrv_list_remove(&srv->handovers, i);
    }
}

void ordo__ssrv_on_handover(ordo__sparse_srv_t *srv, ordo__msg_t *m)
{
    size_t len = 0;
    if (m->hdr.type != ORDO_MSG_INIT || m->hdr.rank < 0 || m->hdr.rank >= srv->S ||
        m->hdr.rank == srv->rank || m->nframes != 2 || m->hdr.iter < srv->t ||
        !ordo__msg_data(m, 0, &len)) {
        ordo__ssrv_refuse(srv, m, "not a handover this server can take");
        return;
    }
    if (srv->handovers.n >= 4 * srv->S) {
        ordo__ssrv_refuse(srv, m, "too many handovers waiting");
        return;
    }
    if (ordo__ssrv_list_add(&srv->handovers, m))
        ORDO_ERROR("sparse: out of memory keeping a handover");
}
