/* replica: a server's side of replicated key slices ([fault] replicas > 1, primary-backup).
 * As a primary, after every update of a slice (and its initial value) it sends the slice's
 * state (value, momentum, version; under asp the workers' push clocks too) to the slice's
 * live backups, and a pull of that version, or the acknowledgement of a push it contains, goes
 * out only once every live backup acknowledged holding it (under asp a plain pull takes the
 * primary's current value at once, as asp pulls do; a push's acknowledgement, or the answer
 * of a pull riding on it, waits for the update it made). Under ssp a primary holds pushes of
 * later iterations no state carries, so it forwards each push it takes to the backups
 * instead, which take it as it did; acknowledgements wait for the backups to hold the push. As a backup it installs the states its slices' primaries send.
 * When the scheduler's KEYMAP names dead servers it recomputes the key map: slices whose
 * primary died are now its own when it is their first live backup; it sends their state to
 * their remaining backups and answers what waited on the dead ones. A worker's message for a
 * slice it still holds as a backup (the worker saw the new map first) is kept until the
 * KEYMAP arrives. A KEYMAP may also name a replacement server that joined in a dead one's place
 * (ordo-server --join): the primaries connect to it and send it the state of every slice it
 * backs up; until it acknowledged them, those slices' answers wait, as for any backup. Re-sent
 * pushes (workers re-send what was not acknowledged) are recognised
 * by (worker, slice, iteration) and answered without being applied twice; a merged push's
 * acknowledgement waits for every slice it carries. */
#ifndef ORDO_SERVER_REPLICA_H
#define ORDO_SERVER_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/wire.h"
#include "server/server.h"
#include "server/store.h"

typedef struct ordo__replica ordo__replica_t;

/* ordo__replica_new connects to every other server's data port when the key map has
 * replicas > 1; *out stays NULL otherwise (nothing changes). */
int ordo__replica_new(ordo__server_t *s, ordo__replica_t **out);

/* ordo__replica_destroy frees r and the messages it keeps; NULL-safe. */
void ordo__replica_destroy(ordo__replica_t **r);

/* ordo__replica_is_peer tells whether sock is one of r's connections to other servers. */
bool ordo__replica_is_peer(const ordo__replica_t *r, int sock);

/* ordo__replica_on_server_msg handles a message another server sent (REPL on the data port,
 * REPL_ACK on a peer connection); a malformed one is logged and dropped. */
void ordo__replica_on_server_msg(ordo__server_t *s, ordo__msg_t *m);

/* ordo__replica_park keeps a worker's message m (moved out) for slice, which this server holds
 * as a backup, until a KEYMAP makes it the primary; ORDO_ERR_FULL when too many are kept. */
int ordo__replica_park(ordo__server_t *s, ordo__msg_t *m);

/* ordo__replica_visible tells whether every live backup of slice holds its state of update
 * count seq (ordo__store_seq: the version under bsp, the pushes applied under asp) or a newer
 * one (true without replicas). */
bool ordo__replica_visible(const ordo__server_t *s, int slice, int64_t seq);

/* ordo__replica_forward sends worker's push of iteration iter to slice (g, copied, in its wire
 * dtype) to slice's live backups, with the update count seq it makes here (sync.mode = ssp: the
 * backups take the pushes themselves, since the state after an update would not carry the
 * pushes of later iterations the primary holds). */
void ordo__replica_forward(ordo__server_t *s, int slice, int worker, int64_t iter,
                          const ordo__grad_t *g, int64_t seq);

/* ordo__replica_updated sends slice's new state to its live backups (after an update or its
 * initial value). */
void ordo__replica_updated(ordo__server_t *s, int slice);

/* ordo__replica_ack sends ack (a PUSH_ACK of a push to slice, moved out) once the update it
 * went into is visible: ordo__replica_visible of need (bsp: the push's iteration + 1; asp: the
 * update count right after the push was applied). */
void ordo__replica_ack(ordo__server_t *s, int slice, int64_t need, ordo__msg_t *ack);

/* ordo__replica_ack_merged sends ack (a PUSH_ACK of a merged push of iteration iter to the n
 * slices of slices, both moved out: slices is freed) once every slice's update is visible. */
void ordo__replica_ack_merged(ordo__server_t *s, int *slices, int n, int64_t iter, ordo__msg_t *ack);

/* ordo__replica_on_keymap applies the scheduler's KEYMAP: 0 to go on, ORDO_ERR_ABORT when it
 * names this server dead or is malformed. */
int ordo__replica_on_keymap(ordo__server_t *s, ordo__msg_t *m);

/* ordo__replica_stats returns the state messages sent and the duplicate pushes recognised. */
void ordo__replica_stats(const ordo__replica_t *r, uint64_t *sent, uint64_t *duplicates);

/* ordo__replica_count_duplicate counts one re-sent push recognised as already in. */
void ordo__replica_count_duplicate(ordo__replica_t *r);

/* ---- the data handlers' hooks ---------------------------------------------------------- */

/* How the server's data handlers (server_data.c) take part in replication: one table per way
 * of replicating, chosen at start (s->replication), so that the handlers call hooks, not test
 * for replicas. */
typedef struct ordo__replication {
    const char *name;
    /* on_server_msg: a message another server sent on the data port */
    void (*on_server_msg)(ordo__server_t *s, ordo__msg_t *m);
    /* park: a worker's message m for slice, which this server holds as a backup only (the
     * worker saw a KEYMAP first), is kept until ours (true: kept, or refused when too many) */
    bool (*park)(ordo__server_t *s, ordo__msg_t *m, int slice);
    /* resent: worker's push m of slice is in the store already (a re-send after a primary
     * died); it is counted and passed on to backups that may miss it, the caller answers it */
    bool (*resent)(ordo__server_t *s, ordo__msg_t *m, int slice, int worker);
    /* has: worker's push of iter to slice is in already (a merged push's slice re-sent) */
    bool (*has)(const ordo__server_t *s, int slice, int worker, int64_t iter);
    /* forward: before the store takes push m of slice, the backups get it when they take
     * pushes themselves (the consistency model's forwards_pushes); true then: no state
     * follows the update */
    bool (*forward)(ordo__server_t *s, ordo__msg_t *m, int slice, int worker);
    /* updated: slice's value advanced or got its initial value */
    void (*updated)(ordo__server_t *s, int slice);
    /* visible: every live backup of slice holds update count need (ordo__store_seq) */
    bool (*visible)(const ordo__server_t *s, int slice, int64_t need);
    /* ack_push: sends ack (moved out) of a push of iter to slice once its update is visible */
    void (*ack_push)(ordo__server_t *s, int slice, int64_t iter, ordo__msg_t *ack);
    /* ack_merged: the same for a merged push of iter, whose n slices are the last split's */
    void (*ack_merged)(ordo__server_t *s, int n, int64_t iter, ordo__msg_t *ack);
} ordo__replication_t;

/* no replicas ([fault] replicas = 1; replica_none.c) and primary-backup (replica.c) */
extern const ordo__replication_t ordo__replication_none, ordo__replication_primary_backup;

#endif
