/* credit: how much of a worker's queued pushes may be on the egress link at once
 * ([order] credit_bytes; ByteScheduler's credit). Queued pushes leave smallest priority first
 * while less than the credit is ahead of them on the link, so the queue stays reorderable: a
 * gradient made late with a higher priority overtakes everything still queued. On an emulated
 * link what is ahead is the link's backlog; without emulation it is the bytes of pushes sent
 * and not yet acknowledged. */
#ifndef ORDO_CREDIT_H
#define ORDO_CREDIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ordo__credit {
    int64_t limit;       /* bytes allowed ahead of the next push (0: one at a time) */
    double link_bps;     /* the emulated egress rate (0: none, count acknowledgements) */
    int64_t unacked;     /* no emulation: bytes sent and not acknowledged */
    int64_t handed_free_ns; /* emulation: when the link frees of what this worker handed over
                               (the transport's I/O thread puts a message on the link later:
                               its own clock alone would let a burst through) */
} ordo__credit_t;

/* ordo__credit_init sets c up for a credit of limit bytes on a link of link_bps (0: not
 * emulated). */
void ordo__credit_init(ordo__credit_t *c, int64_t limit, double link_bps);

/* ordo__credit_set_limit changes the credit mid-run (the scheduler's check of its step model
 * against the measured steps); what is in flight stays counted. */
void ordo__credit_set_limit(ordo__credit_t *c, int64_t limit);

/* ordo__credit_allows tells whether the next queued push may go now: at now_ns, the
 * emulated link is busy until link_free_ns, or longer with what was handed over since
 * (ignored without emulation). */
bool ordo__credit_allows(const ordo__credit_t *c, int64_t now_ns, int64_t link_free_ns);

/* ordo__credit_wake_ns returns when the next push may go on an emulated link busy until
 * link_free_ns (INT64_MAX without emulation: an acknowledgement wakes the worker). */
int64_t ordo__credit_wake_ns(const ordo__credit_t *c, int64_t link_free_ns);

/* ordo__credit_sent counts bytes handed to the transport at now_ns. On an emulated link they
 * are link time at once. Without emulation they count until acknowledged, unless not acked
 * (fused pushes, answered only once every worker pushed: counting them would hold the queue
 * on the slowest worker); ordo__credit_acked gives them back. */
void ordo__credit_sent(ordo__credit_t *c, int64_t bytes, int64_t now_ns, bool acked);
void ordo__credit_acked(ordo__credit_t *c, int64_t bytes);

/* ordo__credit_reset forgets what is unacknowledged (the key map changed: pushes are sent
 * again). */
void ordo__credit_reset(ordo__credit_t *c);

#endif
