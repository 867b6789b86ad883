/* replica_none: the data handlers' replication hooks when slices have no replicas ([fault]
 * replicas = 1): nothing is parked, forwarded or re-sent, and acknowledgements go at once. */
#include "common/transport.h"
#include "server/replica.h"
#include "server/server_internal.h"

static void on_server_msg(ordo__server_t *s, ordo__msg_t *m)
{
    ordo__server_refuse(s, m, "sender is not a worker of this cluster");
}

static bool park(ordo__server_t *s, ordo__msg_t *m, int slice)
{
    (void)s;
    (void)m;
    (void)slice;
    return false;
}

/* resent, forward: no push is in twice, none goes to a backup */
static bool no_push_hook(ordo__server_t *s, ordo__msg_t *m, int slice, int worker)
{
    (void)s;
    (void)m;
    (void)slice;
    (void)worker;
    return false;
}

static bool has(const ordo__server_t *s, int slice, int worker, int64_t iter)
{
    (void)s;
    (void)slice;
    (void)worker;
    (void)iter;
    return false;
}

static void updated(ordo__server_t *s, int slice)
{
    (void)s;
    (void)slice;
}

static bool visible(const ordo__server_t *s, int slice, int64_t need)
{
    (void)s;
    (void)slice;
    (void)need;
    return true;
}

static void ack_push(ordo__server_t *s, int slice, int64_t iter, ordo__msg_t *ack)
{
    (void)slice;
    (void)iter;
    ordo__transport_send(s->node.tp, ack);
}

static void ack_merged(ordo__server_t *s, int n, int64_t iter, ordo__msg_t *ack)
{
    (void)n;
    (void)iter;
    ordo__transport_send(s->node.tp, ack);
}

const ordo__replication_t ordo__replication_none = {
    .name = "none",
    .on_server_msg = on_server_msg,
    .park = park,
    .resent = no_push_hook,
    .has = has,
    .forward = no_push_hook,
    .updated = updated,
    .visible = visible,
    .ack_push = ack_push,
    .ack_merged = ack_merged,
};
