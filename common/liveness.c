/* liveness: adaptive heartbeat timeouts and probes (see liveness.h). */
#include "common/liveness.h"

#include <math.h>
#include <string.h>

#define ALPHA 0.125 /* weight of a new inter-arrival sample */
#define K_SD  6.0   /* standard deviations above the mean */

void ordo__liveness_init(ordo__liveness_t *l, int64_t now, int floor_ms, int ceil_ms, int probe_ms)
{
    memset(l, 0, sizeof *l);
    l->floor_ms = floor_ms;
    l->ceil_ms = ceil_ms < floor_ms ? floor_ms : ceil_ms;
    l->probe_ms = probe_ms;
    l->last_ns = now;
}

void ordo__liveness_seen(ordo__liveness_t *l, int64_t now)
{
    if (now > l->last_ns) l->last_ns = now;
    l->probe_ns = 0; /* answered, or alive anyway */
}

void ordo__liveness_beat(ordo__liveness_t *l, int64_t now)
{
    if (l->last_beat_ns > 0 && now > l->last_beat_ns) {
        double gap = (double)(now - l->last_beat_ns) / 1e6;
        if (l->beats == 0) {
            l->mean_ms = gap;
            l->var_ms = 0;
        } else { /* exponentially weighted mean and variance */
            double d = gap - l->mean_ms;
            l->mean_ms += ALPHA * d;
            l->var_ms = (1 - ALPHA) * (l->var_ms + ALPHA * d * d);
        }
        l->beats++;
    }
    l->last_beat_ns = now;
    ordo__liveness_seen(l, now);
}

int ordo__liveness_timeout_ms(const ordo__liveness_t *l)
{
    double t = l->beats ? l->mean_ms + K_SD * sqrt(l->var_ms) : 0;
    if (t < l->floor_ms) return l->floor_ms;
    if (t > l->ceil_ms) return l->ceil_ms;
    return (int)t;
}

int64_t ordo__liveness_silent_ms(const ordo__liveness_t *l, int64_t now)
{
    return now > l->last_ns ? (now - l->last_ns) / 1000000 : 0;
}

ordo__live_t ordo__liveness_check(ordo__liveness_t *l, int64_t now)
{
    if (l->probe_ns) return now - l->probe_ns > (int64_t)l->probe_ms * 1000000 ? ORDO_LIVE_DEAD
                                                                              : ORDO_LIVE_OK;
    if (ordo__liveness_silent_ms(l, now) <= ordo__liveness_timeout_ms(l)) return ORDO_LIVE_OK;
    l->probe_ns = now;
    return ORDO_LIVE_PROBE;
}

int64_t ordo__liveness_next_ns(const ordo__liveness_t *l)
{
    if (l->probe_ns) return l->probe_ns + (int64_t)l->probe_ms * 1000000 + 1;
    return l->last_ns + (int64_t)ordo__liveness_timeout_ms(l) * 1000000 + 1;
}
