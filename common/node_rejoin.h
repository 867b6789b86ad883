/* node_rejoin: a server's or worker's side of a scheduler restart (fault.scheduler = restart,
 * docs/fault.md). When the heartbeats find the scheduler dead, the node keeps its state and
 * its work, sends its REGISTER again with what it holds ("rejoin": its rank's state, the
 * scheduler generation it obeyed, the digest of its key map and plan) and waits at most
 * fault.scheduler_wait_ms for a new scheduler at the same address; the ZeroMQ connection
 * reconnects by itself and delivers the REGISTER once one listens. The new scheduler's
 * WELCOME (with "rejoined") ends the wait. Under fault.scheduler = stop a dead scheduler
 * ends the run, as before. */
#ifndef ORDO_NODE_REJOIN_H
#define ORDO_NODE_REJOIN_H

#include <jansson.h>
#include <stdint.h>

#include "common/conf.h"
#include "common/node.h"

/* ordo__node_rejoin_init keeps the REGISTER body reg_body (taking it) and the conf's fault
 * settings in node; called by ordo__node_join. */
void ordo__node_rejoin_init(ordo__node_t *node, const ordo__conf_t *conf, char *reg_body);

/* ordo__node_plan_digest returns a digest of a WELCOME's "keys" and "plan" members (their
 * JSON with sorted keys): nodes and a new scheduler compare plans by it. The key map's
 * "dead" and "primary" ([fault] replicas) are membership, not plan, and left out: a server
 * that joined in mid-run was welcomed with a map in which primaries had moved. */
uint64_t ordo__node_plan_digest(const json_t *welcome);

/* ordo__node_sched_lost takes the heartbeats' verdict that the scheduler has been silent for
 * silent_ms. Under fault.scheduler = restart it logs, sends the REGISTER again with state
 * (the role's JSON object, whose reference it takes; NULL: none; with replicas the node adds
 * its replica map, "map": {"seq", "dead", "primary"}) and returns 0: the caller
 * goes on. Otherwise ORDO_ERR_PEERDEAD with the message. A second verdict while waiting
 * returns 0 and sends nothing. */
int ordo__node_sched_lost(ordo__node_t *node, int64_t silent_ms, json_t *state);

/* a node waiting for a new scheduler sends its REGISTER again this often (ms) */
#define ORDO_NODE_REJOIN_RESEND_MS 2000

/* ordo__node_keymap_seen notes the "seq" of a KEYMAP the node applied ([fault] replicas):
 * a new scheduler takes the replica map of the member that saw the newest one. */
void ordo__node_keymap_seen(ordo__node_t *node, const json_t *keymap);

/* ordo__node_sched_waiting reports whether the node waits for a new scheduler. */
bool ordo__node_sched_waiting(const ordo__node_t *node);

/* ordo__node_sched_check returns 0 while the scheduler answers or the wait for a new one is
 * within fault.scheduler_wait_ms (sending the REGISTER again every 2 s meanwhile), else
 * ORDO_ERR_PEERDEAD naming the address and the time. */
int ordo__node_sched_check(ordo__node_t *node);

/* ordo__node_sched_timeout returns timeout_ms (-1: none) cut to the end of the wait for a new
 * scheduler and the next copy of the REGISTER, so a blocking receive wakes for
 * ordo__node_sched_check. */
int ordo__node_sched_timeout(const ordo__node_t *node, int timeout_ms);

/* ordo__node_on_rejoined takes the WELCOME m of a new scheduler: it must name this node's
 * rank and a generation newer than the one obeyed (else ORDO_ERR_PROTO naming the field);
 * the heartbeats start afresh towards it. *reported (may be NULL) gets the WELCOME's
 * "reported" (the last iteration the run log holds of this worker; -1 when absent). */
int ordo__node_on_rejoined(ordo__node_t *node, ordo__msg_t *m, int64_t *reported);

/* ordo__node_on_reject takes a REJECT from the scheduler in mid-run: while the node waits for
 * a new scheduler it is that one's refusal, and ends the wait (ORDO_ERR_AUTH with its text);
 * else 0 (a late answer, ignored). */
int ordo__node_on_reject(ordo__node_t *node, ordo__msg_t *m);

#endif
