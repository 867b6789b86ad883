/* store_internal: the store's slots, rounds and value buffers, shared by store.c (pushes,
 * aggregation, updates, membership) and store_state.c (what replicas and checkpoints read
 * and install). Nothing outside server/store*.c includes it. */
#ifndef ORDO_STORE_INTERNAL_H
#define ORDO_STORE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <zmq.h>

#include "server/store.h"

struct ordo__vbuf {
    _Atomic int refs;
    int64_t numel;
    float *data; /* 64-byte aligned */
};

/* A received payload the store may keep past the call that handed it over: a ZeroMQ frame
 * (or an aligned copy of one), shared by the slices of a merged push. Only the server's
 * main thread touches it, so the count is plain. */
struct ordo__store_frame {
    int refs;
    bool is_msg;
    zmq_msg_t msg;
    void *buf; /* !is_msg: 64-byte aligned copy */
    size_t len;
};

typedef struct {
    ordo__grad_t g;
    ordo__store_frame_t *owner; /* NULL: no push held for this worker */
} held_t;

/* One iteration's aggregation: bsp and asp use one round, ssp one per iteration of its
 * window (version .. version + staleness), indexed by iteration modulo their count. */
typedef struct {
    float *acc;
    float *sum;                    /* the running sum: acc, or inside sum_owner; NULL if none */
    ordo__store_frame_t *sum_owner; /* the first push's frame, kept as the running sum */
    int next;                      /* the worker whose push is added next (rank order) */
    int count;                     /* pushes summed so far */
    int taken;                     /* backup workers: pushes held for this iteration */
    bool complete;                 /* ssp: every push summed, waiting for the earlier rounds */
    held_t *held;                  /* per worker: a push that came before its turn */
    uint8_t *pushed;               /* per worker, for this round's iteration */
} round_t;

typedef struct ordo__slot {
    int64_t numel;
    ordo__vbuf_t *value;
    ordo__vbuf_t *prev;    /* re-sends on: the value before the last update */
    int64_t prev_version; /* its version (-1: none kept) */
    float *mom;
    ordo__optim_t opt; /* its update rule: the store's, or the one its key declared */
    round_t *rounds;
    int64_t *clock;  /* asp: per worker, the iteration of its next push */
    int64_t version; /* -1 before init; asp: the oldest iteration with a push missing */
    int64_t taken;   /* pushes taken (summed, held or applied) since init: ssp's update count */
} slot_t;

struct ordo__store {
    const ordo__keys_t *keys;
    int rank, n_workers;
    ordo__optim_t opt;
    float scale;
    const struct ordo__sync_model *model; /* [sync] (server/consistency/model.h) */
    int staleness, backup;
    bool resend;                 /* a worker's push again (a restarted worker): acknowledged */
    int n_rounds;
    uint64_t dropped;
    uint64_t resent; /* re-sent pushes acknowledged and left out */
    uint8_t *gone;   /* per worker: it left the run (ordo__store_leave); NULL: nobody did */
    int64_t *join_at; /* per worker: the first iteration it pushes (ordo__store_set_members,
                       * ordo__store_join; INT64_MAX: not in the run yet); NULL: all 0 */
    bool mean_of_pushed; /* after a worker left: an update's scale is over the pushes it had */
    int *slot_of; /* per slice: local slot or -1 */
    slot_t *slots;
    int n_slots;
};

/* ordo__store_vbuf_new makes a value buffer of numel floats (one reference), NULL when out of
 * memory; ordo__store_vbuf_unref drops a reference (NULL-safe). */
ordo__vbuf_t *ordo__store_vbuf_new(int64_t numel);
void ordo__store_vbuf_unref(ordo__vbuf_t *b);

/* ordo__store_check_size: ORDO_ERR_INVAL naming the slice unless bytes is its numel * 4 */
int ordo__store_check_size(const slot_t *sl, int slice, size_t bytes);

/* ordo__store_round_reset empties rd for iteration iter */
void ordo__store_round_reset(ordo__store_t *s, round_t *rd, int64_t iter);

/* what several consistency models share (server/consistency/model.h): */

/* ordo__store_check_round: iter is in sl's window of rounds and worker has not pushed it */
int ordo__store_check_round(const ordo__store_t *s, const slot_t *sl, int slice, int worker,
                            int64_t iter);
/* ordo__store_take_in_order: pushes summed in worker rank order, held when they come early;
 * the last of an iteration applies it (bsp, ssp) */
int ordo__store_take_in_order(ordo__store_t *s, slot_t *sl, int worker, int64_t iter,
                              const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated);
/* ordo__store_keep: g itself when owner keeps it alive, else (borrowed, or unaligned float32)
 * a copy in a new shared frame *copy (the caller unrefs it once it took what it keeps);
 * ORDO_ERR_NOMEM */
int ordo__store_keep(ordo__grad_t *g, ordo__store_frame_t **owner, ordo__store_frame_t **copy);
/* ordo__store_round_pushed: worker's push of iter is marked in its round */
bool ordo__store_round_pushed(const ordo__store_t *s, const slot_t *sl, int worker, int64_t iter);
/* ordo__store_answer_value: a reference on sl's current value */
int ordo__store_answer_value(ordo__store_t *s, slot_t *sl, int64_t iter, void **data,
                             size_t *bytes, void **hint);
/* ordo__grad_f32: the grad of n floats at p */
ordo__grad_t ordo__grad_f32(const float *p, int64_t n);
/* ordo__grad_copy: dst <- g's n values; ordo__grad_add: acc += them (the same bits as
 * decoding a cast, then adding). g was checked (ordo__store_check_push). */
void ordo__grad_copy(float *dst, const ordo__grad_t *g, int64_t n);
void ordo__grad_add(float *acc, const ordo__grad_t *g, int64_t n);
/* ordo__store_step: value <- step(value, acc + g) at the store's scale */
int ordo__store_step(ordo__store_t *s, slot_t *sl, const float *acc, const ordo__grad_t *g);
/* ordo__store_apply: the last push g of rd's iteration (acc: the rest's sum, or NULL) is
 * applied and the version advances, over later rounds already complete */
int ordo__store_apply(ordo__store_t *s, slot_t *sl, round_t *rd, const float *acc,
                      const ordo__grad_t *g);
/* ordo__store_frame_copy: a shared frame holding a 64-byte aligned copy of data; NULL when
 * out of memory */
ordo__store_frame_t *ordo__store_frame_copy(const void *data, size_t len);

#endif
