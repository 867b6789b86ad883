/* ps_msgs: the messages a worker takes, one handler per type found through one table
 * (ordo__ps_msgs), and the handlers of the run's life (a refused request, the run aborted or
 * shut down, the scheduler silent or a new one's refusal, a wake-up, the intra path's own messages). The other
 * handlers live with what they change: values and acknowledgements in ps.c, barriers,
 * broadcasts and membership in ps_ctl.c, the plan in ps_plan.c, batches, peer state and
 * promotions in ps_batch.c, ps_state.c and ps_repl.c. ps.c's loop dispatches through the
 * table the join hands it (w->msgs), so that the data path depends on none of them. A new
 * message is one handler and one row. */
#include "client/ps.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node_rejoin.h"

#include "client/ps_internal.h"

static int on_error(ordo__ps_t *w, ordo__msg_t *m)
{
    (void)w;
    char buf[512];
    return ordo__error_set(ORDO_ERR_PROTO, "server %d refused %s key %u chunk %u: %s", m->hdr.rank,
                          "a request for", m->hdr.key, m->hdr.chunk,
                          ordo__msg_text(m, 0, buf, sizeof buf));
}

static int on_abort(ordo__ps_t *w, ordo__msg_t *m)
{
    char buf[512];
    w->aborted = true;
    return ordo__error_set(ORDO_ERR_ABORT, "run aborted: %s", ordo__msg_text(m, 0, buf, sizeof buf));
}

static int on_peer_dead(ordo__ps_t *w, ordo__msg_t *m)
{
    char buf[512];
    if (m->nframes > 0) { /* the transport's reason: a server or the scheduler refused us */
        w->aborted = true;
        return ordo__error_set(ORDO_ERR_AUTH, "%s", ordo__msg_text(m, 0, buf, sizeof buf));
    }
    return ordo__ps_sched_lost(w, m); /* fault.scheduler = restart: go on (ps_rejoin.c) */
}

/* a new scheduler's refusal (fault.scheduler = restart) */
static int on_reject(ordo__ps_t *w, ordo__msg_t *m)
{
    int rc = ordo__node_on_reject(&w->node, m);
    if (rc) w->aborted = true;
    return rc;
}

static int on_shutdown(ordo__ps_t *w, ordo__msg_t *m)
{
    (void)w, (void)m;
    return ordo__error_set(ORDO_ERR_CLOSED, "the scheduler shut the run down");
}

static int on_wake(ordo__ps_t *w, ordo__msg_t *m)
{
    (void)m;
    ordo__ps_add_event(w, ORDO__EV_WAKE, -1, -1);
    return 0;
}

/* posted by the path's own thread; the wire refuses the type */
static int on_intra(ordo__ps_t *w, ordo__msg_t *m)
{
    if (w->path->ops->local) return w->path->ops->local(w->path, m);
    ORDO_WARN("dropped an unexpected INTRA message");
    return 0;
}

const ordo__ps_msg_fn ordo__ps_msgs[ORDO_MSG_TYPE_MAX] = {
    [ORDO_MSG_PULL_RESP] = ordo__ps_on_pull_resp, /* ps.c */
    [ORDO_MSG_PUSH_ACK] = ordo__ps_on_push_ack,
    [ORDO_MSG_ERROR] = on_error,
    [ORDO_MSG_ABORT] = on_abort,
    [ORDO_MSG_PEER_DEAD] = on_peer_dead,
    [ORDO_MSG_WELCOME] = ordo__ps_rejoined, /* ps_rejoin.c: a new scheduler's */
    [ORDO_MSG_REJECT] = on_reject,
    [ORDO_MSG_SHUTDOWN] = on_shutdown,
    [ORDO_MSG_WAKE] = on_wake,
    [ORDO_MSG_INTRA] = on_intra,
    [ORDO_MSG_BARRIER_DONE] = ordo__ps_on_barrier_done, /* ps_ctl.c */
    [ORDO_MSG_BCAST] = ordo__ps_on_bcast,
    [ORDO_MSG_MEMBERS] = ordo__ps_on_members,
    [ORDO_MSG_REPLAN] = ordo__ps_take_replan,
    [ORDO_MSG_PLAN] = ordo__ps_on_plan,           /* ps_plan.c: a calibration's groups, a credit */
    [ORDO_MSG_BATCH] = ordo__ps_on_batch,         /* ps_batch.c */
    [ORDO_MSG_STATE_REQ] = ordo__ps_on_state_req, /* ps_state.c */
    [ORDO_MSG_STATE] = ordo__ps_on_state,
    [ORDO_MSG_KEYMAP] = ordo__ps_on_keymap, /* ps_repl.c: a server died; its backups took over */
};
