/* replicas: the scheduler's side of replicated servers ([fault] replicas). When a server
 * falls silent and every one of its slices has a live backup, the scheduler does not abort:
 * it marks the server dead in the key map (its slices' first live backups become their
 * primaries), sends every live node the new map as KEYMAP {"dead": [...]}, and records the
 * promotion (when the server was last heard of, when it was declared dead and promoted, and
 * the next iteration every worker completed) in the log and in summary.json's "promotions":
 * per promotion {server, slices, last_heard_ms, promoted_ms, promoted_unix_ms,
 * next_iteration, next_iteration_ms, next_iteration_unix_ms, recovery_ms} (ms from the
 * scheduler's start; *_unix_ms on the wall clock, for comparing with when a kill was sent;
 * recovery_ms from the last heartbeat to the next completed iteration). */
#ifndef ORDO_SCHED_REPLICAS_H
#define ORDO_SCHED_REPLICAS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/wire.h"
#include "scheduler/runlog.h"

struct ordo__scheduler;

typedef struct ordo__replicas ordo__replicas_t;

/* ordo__replicas_new sets the conf's replica count on the scheduler's key map (after the
 * partition) and makes the promotion record; *out stays NULL with replicas = 1. */
int ordo__replicas_new(struct ordo__scheduler *s, ordo__replicas_t **out);

/* ordo__replicas_destroy frees r; NULL-safe. */
void ordo__replicas_destroy(ordo__replicas_t **r);

/* ordo__replicas_server_dead handles the death of the server member at index member (silent
 * for silent_ms): 0 when its slices were handed to backups and the new map sent (the run goes
 * on), ORDO_ERR_PEERDEAD when it cannot be (no replicas, or a slice with no live replica left). */
int ordo__replicas_server_dead(struct ordo__scheduler *s, int member, int64_t silent_ms);

/* ordo__replicas_join takes a server's REGISTER with "join": true (m; endpoint and pid from
 * its body, want its requested rank or -1) while the run goes on: it takes the place of a dead
 * server (the requested rank if that one is dead, else the lowest dead rank), gets a WELCOME
 * with the current map, and every other live node a KEYMAP naming it, upon which the
 * primaries send it the state of each slice it backs up. Refused (REJECT with the reason)
 * without replicas or without a dead server. */
void ordo__replicas_join(struct ordo__scheduler *s, const ordo__msg_t *m, const char *endpoint,
                          int pid, int want);

/* ordo__replicas_on_stats notes worker `worker`'s report of iteration iter: the first
 * iteration after a promotion that every worker completed ends its recovery. */
void ordo__replicas_on_stats(struct ordo__scheduler *s, int worker, int64_t iter);

/* ordo__replicas_history returns summary.json's "promotions" or "joins" (which) as far as
 * this scheduler knows them, its predecessors' included (a new reference; NULL when none),
 * for RUN/scheduler.json. */
json_t *ordo__replicas_history(const struct ordo__scheduler *s, const char *which);

/* ordo__replicas_rejoin_map notes the replica map ({"seq", "dead", "primary"}) of a member
 * registering with a restarted scheduler; the one with the newest seq is the run's (kept in
 * the scheduler: with declared tensors the key map is made only once all are back). */
void ordo__replicas_rejoin_map(struct ordo__scheduler *s, const json_t *map);

/* ordo__replicas_listed_dead tells whether the newest map the members reported lists server
 * rank as dead (a server that registers again so was declared dead: it is fenced). */
bool ordo__replicas_listed_dead(const struct ordo__scheduler *s, int rank);

/* ordo__replicas_rebuild ends a restarted scheduler's rebuild: it takes the members' newest
 * map into its key map, gives every server rank with no live member a member slot marked
 * gone (a replacement may join there), and declares dead (promoting their backups) those
 * the map does not list dead already: the servers that died while no scheduler ran. An
 * error (a slice left with no live replica) with why filled. */
int ordo__replicas_rebuild(struct ordo__scheduler *s, char *why, size_t wsz);

/* ordo__replicas_resend sends, once the rebuilt run's members are welcomed, every member the
 * map (KEYMAP: a promotion the old scheduler did not finish sending completes), and a member
 * whose map missed a replacement's join a KEYMAP "joined" for it. */
void ordo__replicas_resend(struct ordo__scheduler *s);

#endif
