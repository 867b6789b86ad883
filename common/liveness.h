/* liveness: the verdict on one peer from its heartbeats. The timeout adapts to the observed
 * jitter of the heartbeats' inter-arrival times (mean + 6 standard deviations, a
 * phi-accrual threshold of about 8 under a normal model), never below the floor
 * (fault.timeout_ms) nor above the ceiling (fault.timeout_max_ms); a peer silent past it is
 * probed (a ping it must answer) and declared dead only when the probe goes unanswered for
 * probe_ms. A death is therefore found at most ceiling + probe_ms after the last sign of
 * life. The caller owns the clock and the sending; this module only keeps the state. */
#ifndef ORDO_LIVENESS_H
#define ORDO_LIVENESS_H

#include <stdint.h>

typedef enum {
    ORDO_LIVE_OK = 0, /* alive, or a probe is out and its time is not up */
    ORDO_LIVE_PROBE,  /* silent past the timeout: send the peer a probe now */
    ORDO_LIVE_DEAD    /* the probe went unanswered */
} ordo__live_t;

typedef struct ordo__liveness {
    int floor_ms, ceil_ms, probe_ms;
    int64_t last_ns;      /* the last sign of life */
    int64_t last_beat_ns; /* the last heartbeat (0: none yet) */
    double mean_ms, var_ms;
    int beats;
    int64_t probe_ns; /* when the probe went out (0: none out) */
} ordo__liveness_t;

/* ordo__liveness_init starts l at now (counted as a sign of life). ceil_ms below floor_ms is
 * taken as floor_ms (a fixed timeout). */
void ordo__liveness_init(ordo__liveness_t *l, int64_t now, int floor_ms, int ceil_ms, int probe_ms);

/* ordo__liveness_beat records a heartbeat (or a probe's answer) at now: a sign of life and a
 * sample of the inter-arrival time. */
void ordo__liveness_beat(ordo__liveness_t *l, int64_t now);

/* ordo__liveness_seen records any other message at now: a sign of life only. */
void ordo__liveness_seen(ordo__liveness_t *l, int64_t now);

/* ordo__liveness_timeout_ms returns the current timeout: floor <= timeout <= ceiling. */
int ordo__liveness_timeout_ms(const ordo__liveness_t *l);

/* ordo__liveness_silent_ms returns how long the peer has been silent at now. */
int64_t ordo__liveness_silent_ms(const ordo__liveness_t *l, int64_t now);

/* ordo__liveness_check gives the verdict at now; ORDO_LIVE_PROBE is returned once per
 * silence (the caller sends the probe), ORDO_LIVE_DEAD from then on when unanswered. */
ordo__live_t ordo__liveness_check(ordo__liveness_t *l, int64_t now);

/* ordo__liveness_next_ns returns when the verdict may next change (for timers). */
int64_t ordo__liveness_next_ns(const ordo__liveness_t *l);

#endif
