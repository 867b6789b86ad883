/* isolated: a scheduler of a run under fault.scheduler = restart that hears none of its
 * members takes itself as the one cut off (its host partitioned, or the process paused):
 * it declares nobody dead and waits fault.scheduler_wait_ms for them to register again
 * (restart.c takes them back); docs/durability.md, "Partitions". */
#include "common/log.h"
#include "scheduler/scheduler_internal.h"

#include <stdio.h>

int ordo__sched_isolated(sched_t *s, int64_t now)
{
    if (s->conf.fault_scheduler != ORDO_SCHED_RESTART || !s->welcomed) return 0;
    int live = 0, heard = 0;
    int64_t quiet_ms = -1;
    for (int i = 0; i < s->n_members; i++) {
        const member_t *m = &s->members[i];
        if (m->dead || m->gone) continue;
        int64_t silent_ms = (now - m->last_seen_ns) / 1000000;
        live++;
        heard += silent_ms < s->conf.timeout_ms;
        if (quiet_ms < 0 || silent_ms < quiet_ms) quiet_ms = silent_ms;
    }
    if (live < 2) return 0; /* one member silent is that member's silence */
    if (heard && s->isolated_ns) {
        ORDO_INFO("a member was heard again %lld ms after every member fell silent: their "
                  "timeouts start afresh", (long long)(now - s->isolated_ns) / 1000000);
        for (int i = 0; i < s->n_members; i++)
            ordo__liveness_init(&s->members[i].live, now, s->conf.timeout_ms,
                               ordo__conf_timeout_max_ms(&s->conf), 2 * s->conf.heartbeat_ms);
        s->isolated_ns = 0;
        return 1;
    }
    if (heard) return 0;
    if (!s->isolated_ns) {
        s->isolated_ns = now - quiet_ms * 1000000;
        ORDO_WARN("every member has been silent for %lld ms: this scheduler takes itself as the "
                  "one cut off (its host partitioned, or itself paused) and declares nobody dead; "
                  "it waits up to %d ms for them to register again (fault.scheduler = restart)",
                  (long long)quiet_ms, s->conf.scheduler_wait_ms);
    }
    if ((now - s->isolated_ns) / 1000000 <= s->conf.scheduler_wait_ms) return 1;
    char why[300];
    snprintf(why, sizeof why, "every member has been silent for %lld ms, past "
             "fault.scheduler_wait_ms = %d ms", (long long)(now - s->isolated_ns) / 1000000,
             s->conf.scheduler_wait_ms);
    return ordo__sched_abort_run(s, why);
}
