/* members: what every file of the scheduler does with a member (a registered node): name
 * it in messages, start its liveness afresh, and address messages to it. Nothing here calls
 * back into the files that handle members' messages. */
#include "common/clock.h"
#include "common/transport.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/scheduler_internal.h"

const char *ordo__sched_member_name(const member_t *m, char *buf, size_t size)
{
    if (m->rank >= 0 && m->pid == 0) /* died while no scheduler ran: no process of it known */
        snprintf(buf, size, "%s %d (its process died while no scheduler ran)",
                 ordo__wire_role_name(m->role), m->rank);
    else if (m->rank >= 0)
        snprintf(buf, size, "%s %d (pid %d%s%s)", ordo__wire_role_name(m->role), m->rank, m->pid,
                 m->endpoint[0] ? ", " : "", m->endpoint);
    else
        snprintf(buf, size, "unranked %s (pid %d)", ordo__wire_role_name(m->role), m->pid);
    return buf;
}

void ordo__sched_msg_to(const sched_t *s, const uint8_t *rid, size_t rid_len, int type,
                        ordo__msg_t *m)
{
    ordo__msg_init(m, type);
    m->sock = s->sock;
    memcpy(m->rid, rid, rid_len);
    m->rid_len = rid_len;
    m->hdr.role = ORDO_ROLE_SCHEDULER;
    m->hdr.rank = 0;
}

void ordo__sched_reply(sched_t *s, const uint8_t *rid, size_t rid_len, int type, const char *text)
{
    ordo__msg_t m;
    ordo__sched_msg_to(s, rid, rid_len, type, &m);
    if (text) {
        m.hdr.dtype = ORDO_DTYPE_JSON;
        ordo__msg_add_text(&m, text);
    }
    ordo__transport_send(s->tp, &m);
}

void ordo__sched_member_fresh(sched_t *s, member_t *m, json_t *o)
{
    json_t *beat = json_object_get(o, "beat");
    m->beat = json_is_integer(beat) && json_integer_value(beat) > 0
                  ? (uint64_t)json_integer_value(beat)
                  : 0;
    m->hb_rid_len = 0;
    m->batch_req = 0; /* a new process numbers its requests afresh */
    ordo__liveness_init(&m->live, ordo__clock_ns(), s->conf.timeout_ms,
                       ordo__conf_timeout_max_ms(&s->conf), 2 * s->conf.heartbeat_ms);
}
