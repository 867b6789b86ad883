/* control_plane: what the scheduler takes, counted. Every message handle() is given is
 * counted by type (with its payload bytes); at the end of the run, or at an abort, the
 * summary gets a "control_plane" member and the log one line: the messages and bytes per
 * type, the members, the wall seconds since the scheduler started listening and its own CPU
 * (getrusage). scripts/experiments/control_plane.sh turns it into messages per member and
 * second (docs/formats.md, docs/planning.md). */
#include "common/clock.h"
#include "common/log.h"
#include "common/wire.h"
#include "scheduler/scheduler_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <zmq.h>

void ordo__sched_cp_count(sched_t *s, ordo__msg_t *m)
{
    if (m->hdr.type >= ORDO_MSG_TYPE_MAX) return;
    uint64_t bytes = 0;
    for (int i = 0; i < m->nframes; i++)
        bytes += zmq_msg_size(&m->frames[i]);
    s->cp_msgs[m->hdr.type]++;
    s->cp_bytes[m->hdr.type] += bytes;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void ordo__sched_cp_summary(sched_t *s)
{
    json_t *msgs = json_object(), *bytes = json_object();
    uint64_t n = 0, b = 0;
    for (int t = 0; t < ORDO_MSG_TYPE_MAX; t++) {
        if (!s->cp_msgs[t]) continue;
        json_object_set_new(msgs, ordo__wire_type_name(t), json_integer((json_int_t)s->cp_msgs[t]));
        json_object_set_new(bytes, ordo__wire_type_name(t),
                            json_integer((json_int_t)s->cp_bytes[t]));
        n += s->cp_msgs[t];
        b += s->cp_bytes[t];
    }
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    getrusage(RUSAGE_SELF, &ru);
    double user = tv_s(ru.ru_utime), sys = tv_s(ru.ru_stime);
    double wall = (double)(ordo__clock_ns() - s->start_ns) / 1e9;
    char line[512] = "";
    size_t len = 0;
    for (int t = 0; t < ORDO_MSG_TYPE_MAX && len < sizeof line; t++)
        if (s->cp_msgs[t])
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %llu", len ? ", " : "",
                                    ordo__wire_type_name(t), (unsigned long long)s->cp_msgs[t]);
    ORDO_INFO("control plane: %llu messages (%s), %llu payload bytes, %d members, "
              "%.2f s CPU (user %.2f, system %.2f) in %.1f s",
              (unsigned long long)n, line, (unsigned long long)b, s->n_members, user + sys, user,
              sys, wall);
    json_t *cp =
        json_pack("{s:o, s:o, s:I, s:I, s:i, s:f, s:f, s:f}", "messages", msgs, "bytes", bytes,
                  "messages_total", (json_int_t)n, "bytes_total", (json_int_t)b, "members",
                  s->n_members, "seconds", wall, "cpu_user_s", user, "cpu_system_s", sys);
    if (s->log && cp)
        ordo__runlog_set_section(s->log, "control_plane", cp);
    else
        json_decref(cp);
}
