/* store: the shard store, push aggregation and update (what replicas and checkpoints read
 * and install: store_state.c). */
#include "server/store.h"
#include "core/vec.h"
#include "common/codec.h"
#include "common/error.h"
#include "common/wire.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/consistency/model.h"
#include "server/store_internal.h"


ordo__vbuf_t *ordo__store_vbuf_new(int64_t numel)
{
    ordo__vbuf_t *b = malloc(sizeof *b);
    if (!b) return NULL;
    size_t bytes = ((size_t)numel * sizeof(float) + 63) & ~(size_t)63;
    b->data = aligned_alloc(64, bytes ? bytes : 64);
    if (!b->data) {
        free(b);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->numel = numel;
    return b;
}

void ordo__store_vbuf_unref(ordo__vbuf_t *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        free(b->data);
        free(b);
    }
}

void ordo__store_unref_cb(void *data, void *hint)
{
    (void)data;
    ordo__store_vbuf_unref(hint);
}

int ordo__store_new(const ordo__keys_t *keys, int rank, int n_workers, const ordo__optim_t *opt,
                   float scale, ordo__store_t **out)
{
    ordo__store_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ERR_NOMEM;
    s->keys = keys;
    s->rank = rank;
    s->n_workers = n_workers;
    s->opt = *opt;
    s->scale = scale;
    s->slot_of = malloc(sizeof *s->slot_of * ((size_t)keys->n_slices + 1));
    s->slots = calloc((size_t)keys->n_slices + 1, sizeof *s->slots);
    if (!s->slot_of || !s->slots) goto nomem;
    for (int i = 0; i < keys->n_slices; i++) {
        if (!ordo__keys_holds(keys, i, rank)) { /* its primary or, with replicas, a backup */
            s->slot_of[i] = -1;
            continue;
        }
        slot_t *sl = &s->slots[s->n_slots];
        s->slot_of[i] = s->n_slots++;
        sl->numel = keys->slices[i].numel;
        sl->version = -1;
        sl->prev_version = -1;
        sl->value = ordo__store_vbuf_new(sl->numel);
        sl->opt = *opt;
        if (opt->momentum > 0) sl->mom = calloc((size_t)sl->numel, sizeof(float));
        if (!sl->value || (opt->momentum > 0 && !sl->mom)) goto nomem;
    }
    if (ordo__store_set_sync(s, ORDO_SYNC_BSP, 0, 0) != 0) goto nomem; /* the default model */
    *out = s;
    return 0;
nomem:
    ordo__store_destroy(&s);
    return ORDO_ERR_NOMEM;
}

static void free_rounds(ordo__store_t *s, slot_t *sl)
{
    for (int r = 0; sl->rounds && r < s->n_rounds; r++) {
        round_t *rd = &sl->rounds[r];
        ordo__store_frame_unref(rd->sum_owner);
        for (int w = 0; rd->held && w < s->n_workers; w++)
            ordo__store_frame_unref(rd->held[w].owner);
        free(rd->held);
        free(rd->acc);
        free(rd->pushed);
    }
    free(sl->rounds);
    free(sl->clock);
    sl->rounds = NULL;
    sl->clock = NULL;
}

int ordo__store_set_update(ordo__store_t *s, int key, const ordo__optim_t *opt)
{
    for (int i = 0; i < s->keys->n_slices; i++) {
        if ((int)s->keys->slices[i].key != key || s->slot_of[i] < 0) continue;
        slot_t *sl = &s->slots[s->slot_of[i]];
        if (opt->momentum > 0 && !sl->mom && !(sl->mom = calloc((size_t)sl->numel, sizeof(float))))
            return ORDO_ERR_NOMEM;
        sl->opt = *opt;
        if (opt->average && sl->version < 0) {
            memset(sl->value->data, 0, (size_t)sl->numel * sizeof(float));
            sl->version = 0;
        }
    }
    return 0;
}

int ordo__store_set_sync(ordo__store_t *s, int mode, int staleness, int backup)
{
    const ordo__sync_model_t *model = ordo__sync_model_of(mode, backup);
    if (!model || staleness < 0 || backup < 0 || backup >= s->n_workers)
        return ordo__error_set(ORDO_ERR_INVAL, "sync mode %d, staleness %d, backup %d for %d workers",
                              mode, staleness, backup, s->n_workers);
    for (int i = 0; i < s->n_slots; i++) {
        if (s->slots[i].version > 0 || (s->model && s->slots[i].rounds[0].next))
            return ordo__error_set(ORDO_ERR_INVAL, "the sync mode is set before the first push");
        free_rounds(s, &s->slots[i]);
    }
    s->model = model;
    s->staleness = model->window ? staleness : 0;
    s->backup = backup;
    s->n_rounds = s->staleness + 1;
    for (int i = 0; i < s->n_slots; i++) {
        slot_t *sl = &s->slots[i];
        sl->rounds = calloc((size_t)s->n_rounds, sizeof *sl->rounds);
        if (!sl->rounds) return ORDO_ERR_NOMEM;
        for (int r = 0; r < s->n_rounds; r++) {
            round_t *rd = &sl->rounds[r];
            rd->acc = aligned_alloc(64, ((size_t)sl->numel * 4 + 63) & ~(size_t)63);
            rd->pushed = calloc((size_t)s->n_workers, 1);
            rd->held = calloc((size_t)s->n_workers, sizeof *rd->held);
            if (!rd->acc || !rd->pushed || !rd->held) return ORDO_ERR_NOMEM;
        }
        if (model->clocks && !(sl->clock = calloc((size_t)s->n_workers, sizeof *sl->clock)))
            return ORDO_ERR_NOMEM;
    }
    return 0;
}

void ordo__store_destroy(ordo__store_t **sp)
{
    ordo__store_t *s = *sp;
    if (!s) return;
    for (int i = 0; i < s->n_slots; i++) {
        free_rounds(s, &s->slots[i]);
        ordo__store_vbuf_unref(s->slots[i].value);
        ordo__store_vbuf_unref(s->slots[i].prev);
        free(s->slots[i].mom);
    }
    free(s->slots);
    free(s->slot_of);
    free(s->gone);
    free(s->join_at);
    free(s);
    *sp = NULL;
}

bool ordo__store_owns(const ordo__store_t *s, int slice)
{
    return slice >= 0 && slice < s->keys->n_slices && s->slot_of[slice] >= 0;
}

int ordo__store_check_size(const slot_t *sl, int slice, size_t bytes)
{
    if (bytes != (size_t)sl->numel * sizeof(float))
        return ordo__error_set(ORDO_ERR_PROTO, "slice %d: %zu bytes, expected %lld", slice, bytes,
                              (long long)sl->numel * 4);
    return 0;
}

int ordo__store_init(ordo__store_t *s, int slice, const void *data, size_t bytes, bool *ignored)
{
    if (!ordo__store_owns(s, slice)) return ordo__error_set(ORDO_ERR_INVAL, "slice %d is not here", slice);
    slot_t *sl = &s->slots[s->slot_of[slice]];
    int rc = ordo__store_check_size(sl, slice, bytes);
    if (rc) return rc;
    *ignored = sl->version >= 0;
    if (*ignored) return 0;
    memcpy(sl->value->data, data, bytes);
    sl->version = 0;
    return 0;
}

/* check_grad: a float32 push's size, or a cast's frame whole (its length, fp16's multiplier),
 * named by the slice */
static int check_grad(const slot_t *sl, int slice, const ordo__grad_t *g)
{
    if (g->dtype == ORDO_DTYPE_F32) return ordo__store_check_size(sl, slice, g->len);
    if (!ordo__codec_ranged(g->dtype))
        return ordo__error_set(ORDO_ERR_PROTO, "slice %d: a push of dtype %d is not summed from "
                              "its frame", slice, g->dtype);
    int rc = ordo__codec_decode_range(g->dtype, g->data, g->len, sl->numel, 0, 0, NULL);
    if (!rc) return 0;
    char why[256]; /* the codec's detail, named by the slice */
    snprintf(why, sizeof why, "%s", ordo__error_text(rc));
    return ordo__error_set(ORDO_ERR_PROTO, "slice %d: %s", slice, why);
}

/* the checks of a push; *late is set (and 0 returned) for a push that comes after its
 * iteration was applied without it (backup workers: ORDO_STORE_DROPPED) or a re-send of a
 * push the store holds or applied already (ORDO_STORE_DUPLICATE) */
static int push_checks(ordo__store_t *s, int slice, int worker, int64_t iter,
                       const ordo__grad_t *g, slot_t **out, int *late)
{
    *late = 0;
    if (!ordo__store_owns(s, slice)) return ordo__error_set(ORDO_ERR_INVAL, "slice %d is not here", slice);
    slot_t *sl = &s->slots[s->slot_of[slice]];
    int rc = check_grad(sl, slice, g);
    if (rc) return rc;
    if (worker < 0 || worker >= s->n_workers)
        return ordo__error_set(ORDO_ERR_PROTO, "push from unknown worker %d", worker);
    if (sl->version < 0)
        return ordo__error_set(ORDO_ERR_PROTO, "push to slice %d before its initial value", slice);
    if (s->gone && s->gone[worker])
        return ordo__error_set(ORDO_ERR_PROTO, "push from worker %d, which left the run", worker);
    if (s->join_at && iter < s->join_at[worker])
        return ordo__error_set(ORDO_ERR_PROTO, "push of iteration %lld from worker %d, which %s",
                              (long long)iter, worker,
                              s->join_at[worker] == INT64_MAX ? "has not joined the run"
                                                              : "joined the run later");
    *out = sl;
    return s->model->check_push(s, sl, slice, worker, iter, late);
}

int ordo__store_check_round(const ordo__store_t *s, const slot_t *sl, int slice, int worker,
                            int64_t iter)
{
    if (iter < sl->version || iter >= sl->version + s->n_rounds)
        return ordo__error_set(ORDO_ERR_PROTO, "push of iteration %lld to slice %d which is at %lld",
                              (long long)iter, slice, (long long)sl->version);
    if (sl->rounds[iter % s->n_rounds].pushed[worker])
        return ordo__error_set(ORDO_ERR_PROTO, "worker %d pushed slice %d twice in iteration %lld",
                              worker, slice, (long long)iter);
    return 0;
}

int ordo__store_check_push(ordo__store_t *s, int slice, int worker, int64_t iter,
                           const ordo__grad_t *g)
{
    slot_t *sl = NULL;
    int late;
    int rc = push_checks(s, slice, worker, iter, g, &sl, &late);
    return rc ? rc : late;
}

/* ---- shared frames -------------------------------------------------------------------- */

ordo__store_frame_t *ordo__store_frame_copy(const void *data, size_t len)
{
    ordo__store_frame_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    size_t size = (len + 63) & ~(size_t)63;
    f->buf = aligned_alloc(64, size ? size : 64);
    if (!f->buf) {
        free(f);
        return NULL;
    }
    memcpy(f->buf, data, len);
    f->len = len;
    f->refs = 1;
    return f;
}

ordo__store_frame_t *ordo__store_frame_wrap(zmq_msg_t *frame)
{
    const void *data = zmq_msg_data(frame);
    if ((uintptr_t)data % _Alignof(float) != 0) {
        /* small frames can sit anywhere in ZeroMQ's receive buffer: keep an aligned copy */
        ordo__store_frame_t *f = ordo__store_frame_copy(data, zmq_msg_size(frame));
        if (f) {
            zmq_msg_close(frame);
            zmq_msg_init(frame);
        }
        return f;
    }
    ordo__store_frame_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    zmq_msg_init(&f->msg);
    zmq_msg_move(&f->msg, frame);
    f->is_msg = true;
    f->len = zmq_msg_size(&f->msg);
    f->refs = 1;
    return f;
}

const void *ordo__store_frame_data(ordo__store_frame_t *f, size_t *len)
{
    *len = f->len;
    return f->is_msg ? zmq_msg_data(&f->msg) : f->buf;
}

void ordo__store_frame_unref(ordo__store_frame_t *f)
{
    if (!f || --f->refs > 0) return;
    if (f->is_msg)
        zmq_msg_close(&f->msg);
    else
        free(f->buf);
    free(f);
}

/* ---- aggregation ---------------------------------------------------------------------- */

ordo__grad_t ordo__grad_f32(const float *p, int64_t n)
{
    return (ordo__grad_t){p, (size_t)n * sizeof(float), ORDO_DTYPE_F32};
}

void ordo__grad_copy(float *dst, const ordo__grad_t *g, int64_t n)
{
    if (g->dtype == ORDO_DTYPE_F32)
        memcpy(dst, g->data, (size_t)n * sizeof(float));
    else
        (void)ordo__codec_decode(g->dtype, g->data, g->len, n, dst); /* checked at the push */
}

void ordo__grad_add(float *acc, const ordo__grad_t *g, int64_t n)
{
    if (g->dtype == ORDO_DTYPE_F32)
        ordo__vec_add(acc, g->data, n);
    else
        (void)ordo__codec_decode_add(g->dtype, g->data, g->len, n, acc);
}

/* the values of a cast read into a buffer this long at a time (16 KiB: in the L1 or L2 cache
 * while the update reads it) */
#define STEP_PART 4096

/* out <- step(w, acc + g) over sl; a cast's values are read from its frame a part at a time,
 * so that a 16-bit push costs no more memory traffic than a float32 one */
static void step_grad(slot_t *sl, float *out, const float *w, const float *acc,
                      const ordo__grad_t *g, float scale)
{
    if (g->dtype == ORDO_DTYPE_F32) {
        ordo__optim_step_sum(&sl->opt, out, w, sl->mom, acc, g->data, scale, sl->numel);
        return;
    }
    float part[STEP_PART];
    for (int64_t off = 0; off < sl->numel; off += STEP_PART) {
        int64_t n = sl->numel - off < STEP_PART ? sl->numel - off : STEP_PART;
        (void)ordo__codec_decode_range(g->dtype, g->data, g->len, sl->numel, off, n, part);
        ordo__optim_step_sum(&sl->opt, out + off, w + off, sl->mom ? sl->mom + off : NULL,
                             acc ? acc + off : NULL, part, scale, n);
    }
}

/* value <- step(value, acc + g) (acc NULL: g alone), g's sum scaled by scale */
static int step_scaled(ordo__store_t *s, slot_t *sl, const float *acc, const ordo__grad_t *g,
                       float scale)
{
    /* A value still referenced by a send in flight is left to that send; the new value
     * goes into a fresh buffer. */
    ordo__vbuf_t *cur = sl->value;
    if (s->resend) {
        /* a restarted worker may ask for the value before this update (the first iteration
         * its predecessor did not finish, which the others may have completed): it is kept,
         * and the update goes into the buffer the one before it had, when nothing reads it */
        ordo__vbuf_t *nb = sl->prev && atomic_load(&sl->prev->refs) == 1 ? sl->prev : NULL;
        if (!nb) {
            ordo__store_vbuf_unref(sl->prev);
            sl->prev = NULL;
            if (!(nb = ordo__store_vbuf_new(sl->numel))) return ORDO_ERR_NOMEM;
        }
        step_grad(sl, nb->data, cur->data, acc, g, scale);
        sl->prev = cur;
        sl->prev_version = sl->version;
        sl->value = nb;
        return 0;
    }
    if (atomic_load(&cur->refs) == 1) {
        step_grad(sl, cur->data, cur->data, acc, g, scale);
    } else {
        ordo__vbuf_t *nb = ordo__store_vbuf_new(sl->numel);
        if (!nb) return ORDO_ERR_NOMEM;
        step_grad(sl, nb->data, cur->data, acc, g, scale);
        sl->value = nb;
        ordo__store_vbuf_unref(cur);
    }
    return 0;
}

int ordo__store_step(ordo__store_t *s, slot_t *sl, const float *acc, const ordo__grad_t *g)
{
    return step_scaled(s, sl, acc, g, s->scale);
}

/* absent: worker takes no part in iteration iter (it left, or joins later) */
static bool absent(const ordo__store_t *s, int worker, int64_t iter)
{
    return (s->gone && s->gone[worker]) || (s->join_at && iter < s->join_at[worker]);
}

/* the worker after `from` whose push is summed next in the round of iteration iter: workers
 * that left without pushing in this round, or join later, are passed over */
static int next_pusher(const ordo__store_t *s, const round_t *rd, int from, int64_t iter)
{
    while (from < s->n_workers && absent(s, from, iter) && !rd->pushed[from])
        from++;
    return from;
}

/* round_reset empties rd for iteration iter */
void ordo__store_round_reset(ordo__store_t *s, round_t *rd, int64_t iter)
{
    ordo__store_frame_unref(rd->sum_owner);
    rd->sum_owner = NULL;
    rd->sum = NULL;
    rd->taken = 0;
    rd->count = 0;
    rd->complete = false;
    memset(rd->pushed, 0, (size_t)s->n_workers);
    rd->next = next_pusher(s, rd, 0, iter);
}

/* the last push of the current iteration: value <- step(value, acc + g), then the version
 * advances, over the later iterations (ssp) whose pushes are all summed already */
int ordo__store_apply(ordo__store_t *s, slot_t *sl, round_t *rd, const float *acc,
                      const ordo__grad_t *g)
{
    /* after a worker left, the mean is over the workers that pushed this round */
    float scale = s->scale;
    if (s->mean_of_pushed && rd->count + 1 != s->n_workers)
        scale = s->scale * (float)s->n_workers / (float)(rd->count + 1);
    int rc = step_scaled(s, sl, acc, g, scale);
    if (rc) return rc;
    ordo__store_round_reset(s, rd, sl->version + s->n_rounds); /* the round's next iteration */
    sl->version++;
    for (rd = &sl->rounds[sl->version % s->n_rounds]; rd->complete;
         rd = &sl->rounds[sl->version % s->n_rounds]) {
        ordo__grad_t sum = ordo__grad_f32(rd->sum, sl->numel);
        if ((rc = ordo__store_step(s, sl, NULL, &sum)) != 0) return rc;
        ordo__store_round_reset(s, rd, sl->version + s->n_rounds);
        sl->version++;
    }
    return 0;
}

/* add the push of worker rd->next (g, kept alive by owner when not NULL) to the round of
 * iteration iter; the last worker's is summed and applied in one pass when iter is the
 * current iteration, else summed and the round left complete (ssp) */
static int fold(ordo__store_t *s, slot_t *sl, round_t *rd, int64_t iter, const ordo__grad_t *g,
                ordo__store_frame_t *owner, bool *updated)
{
    int after = next_pusher(s, rd, rd->next + 1, iter);
    bool last = after == s->n_workers;
    if (last && iter == sl->version) {
        int rc = ordo__store_apply(s, sl, rd, rd->sum, g);
        *updated = rc == 0;
        return rc;
    }
    if (rd->count == 0 && owner && g->dtype == ORDO_DTYPE_F32) {
        /* the frame itself becomes the running sum: no copy */
        owner->refs++;
        rd->sum_owner = owner;
        rd->sum = (float *)g->data;
    } else if (rd->count == 0) {
        ordo__grad_copy(rd->acc, g, sl->numel);
        rd->sum = rd->acc;
    } else {
        ordo__grad_add(rd->sum, g, sl->numel);
    }
    rd->next = after;
    rd->count++;
    rd->complete = last;
    return 0;
}

int ordo__store_push_ref(ordo__store_t *s, int slice, int worker, int64_t iter, const float *data,
                        size_t bytes, ordo__store_frame_t *owner, bool *updated)
{
    ordo__grad_t g = {data, bytes, ORDO_DTYPE_F32};
    return ordo__store_push_grad(s, slice, worker, iter, &g, owner, updated);
}

int ordo__store_push_grad(ordo__store_t *s, int slice, int worker, int64_t iter,
                          const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated)
{
    slot_t *sl = NULL;
    int late;
    *updated = false;
    int rc = push_checks(s, slice, worker, iter, g, &sl, &late);
    if (rc) return rc;
    if (late == ORDO_STORE_DUPLICATE) {
        s->resent++;
        return late;
    }
    if (late) {
        s->dropped++;
        return ORDO_STORE_DROPPED;
    }
    sl->taken++;
    return s->model->take_push(s, sl, worker, iter, g, owner, updated);
}

int ordo__store_keep(ordo__grad_t *g, ordo__store_frame_t **owner, ordo__store_frame_t **copy)
{
    *copy = NULL;
    if (*owner && (g->dtype != ORDO_DTYPE_F32 || (uintptr_t)g->data % _Alignof(float) == 0))
        return 0;
    /* the caller's memory is borrowed for its call only, or unaligned float32 */
    if (!(*copy = ordo__store_frame_copy(g->data, g->len))) return ORDO_ERR_NOMEM;
    *owner = *copy;
    g->data = (*copy)->buf;
    return 0;
}

int ordo__store_take_in_order(ordo__store_t *s, slot_t *sl, int worker, int64_t iter,
                              const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated)
{
    round_t *rd = &sl->rounds[iter % s->n_rounds];
    ordo__store_frame_t *copy = NULL;
    ordo__grad_t mine = *g;
    bool hold = worker != rd->next;
    if ((hold || (uintptr_t)g->data % _Alignof(float) != 0) &&
        ordo__store_keep(&mine, &owner, &copy) != 0)
        return ORDO_ERR_NOMEM;
    rd->pushed[worker] = 1;
    if (hold) {
        /* pushes are summed in worker order, whatever order they arrive in, so the sum (and
         * so the model) is the same bit for bit in every run and every push mode */
        owner->refs++;
        rd->held[worker] = (held_t){mine, owner};
        ordo__store_frame_unref(copy);
        return 0;
    }
    int rc = fold(s, sl, rd, iter, &mine, owner, updated);
    while (rc == 0 && !*updated && rd->next < s->n_workers && rd->held[rd->next].owner) {
        held_t h = rd->held[rd->next];
        rd->held[rd->next] = (held_t){{0}, NULL};
        rc = fold(s, sl, rd, iter, &h.g, h.owner, updated);
        ordo__store_frame_unref(h.owner);
    }
    ordo__store_frame_unref(copy);
    return rc;
}

int ordo__store_push(ordo__store_t *s, int slice, int worker, int64_t iter, const void *data,
                    size_t bytes, bool *updated)
{
    return ordo__store_push_ref(s, slice, worker, iter, data, bytes, NULL, updated);
}

int ordo__store_push_frame(ordo__store_t *s, int slice, int worker, int64_t iter, int dtype,
                          zmq_msg_t *frame, bool *updated)
{
    *updated = false;
    ordo__grad_t g = {zmq_msg_data(frame), zmq_msg_size(frame), (uint8_t)dtype};
    int rc = ordo__store_check_push(s, slice, worker, iter, &g);
    if (rc < 0) return rc;
    ordo__store_frame_t *f = ordo__store_frame_wrap(frame);
    if (!f) return ORDO_ERR_NOMEM;
    g.data = ordo__store_frame_data(f, &g.len);
    rc = ordo__store_push_grad(s, slice, worker, iter, &g, f, updated);
    ordo__store_frame_unref(f);
    return rc;
}

bool ordo__store_ready(const ordo__store_t *s, int slice, int64_t iter)
{
    int64_t v = ordo__store_version(s, slice);
    if (v < 0) return false;
    return s->model->pull_ready(s, v, iter);
}

uint64_t ordo__store_dropped(const ordo__store_t *s)
{
    return s->dropped;
}

int ordo__store_leave(ordo__store_t *s, int worker, bool mean, int *updated_slices, int *n_updated)
{
    *n_updated = 0;
    if (!s->model->elastic)
        return ordo__error_set(ORDO_ERR_INVAL, "a worker can leave a bsp run without backup workers "
                              "only");
    if (worker < 0 || worker >= s->n_workers)
        return ordo__error_set(ORDO_ERR_INVAL, "no worker %d leaves", worker);
    if (!s->gone && !(s->gone = calloc((size_t)s->n_workers, 1))) return ORDO_ERR_NOMEM;
    if (s->gone[worker]) return 0;
    s->gone[worker] = 1;
    s->mean_of_pushed = mean;
    for (int i = 0; i < s->keys->n_slices; i++) {
        if (s->slot_of[i] < 0) continue;
        slot_t *sl = &s->slots[s->slot_of[i]];
        round_t *rd = &sl->rounds[0];
        if (sl->version < 0) continue;
        /* the round no longer waits for the worker that left: the pushes held after it are
         * summed, and the round applied when nobody else is missing */
        rd->next = next_pusher(s, rd, rd->next, sl->version);
        bool updated = false;
        int rc = 0;
        while (rc == 0 && !updated && rd->next < s->n_workers && rd->held[rd->next].owner) {
            held_t h = rd->held[rd->next];
            rd->held[rd->next] = (held_t){{0}, NULL};
            rc = fold(s, sl, rd, sl->version, &h.g, h.owner, &updated);
            ordo__store_frame_unref(h.owner);
        }
        if (rc == 0 && !updated && rd->next == s->n_workers && rd->count > 0) {
            /* every push was summed and the last to come is gone: apply the sum */
            rd->count--; /* apply counts the push it is given as one more */
            ordo__grad_t sum = ordo__grad_f32(rd->sum, sl->numel);
            rc = ordo__store_apply(s, sl, rd, NULL, &sum);
            updated = rc == 0;
        }
        if (rc) return rc;
        if (updated) updated_slices[(*n_updated)++] = i;
    }
    return 0;
}

int ordo__store_set_resend(ordo__store_t *s, bool on)
{
    if (on && !s->model->elastic)
        return ordo__error_set(ORDO_ERR_INVAL, "re-sent pushes are recognised under bsp without "
                              "backup workers only");
    s->resend = on;
    return 0;
}

uint64_t ordo__store_resent(const ordo__store_t *s)
{
    return s->resent;
}

const struct ordo__sync_model *ordo__store_model(const ordo__store_t *s)
{
    return s->model;
}

int64_t ordo__store_version(const ordo__store_t *s, int slice)
{
    if (!ordo__store_owns(s, slice)) return -1;
    return s->slots[s->slot_of[slice]].version;
}

int64_t ordo__store_pull_version(const ordo__store_t *s, int slice, int64_t iter)
{
    if (!ordo__store_owns(s, slice)) return -1;
    const slot_t *sl = &s->slots[s->slot_of[slice]];
    return sl->prev && iter == sl->prev_version && iter < sl->version ? iter : sl->version;
}

void ordo__store_ref(ordo__store_t *s, int slice, void **data, size_t *bytes, void **hint)
{
    slot_t *sl = &s->slots[s->slot_of[slice]];
    atomic_fetch_add(&sl->value->refs, 1);
    *data = sl->value->data;
    *bytes = (size_t)sl->numel * sizeof(float);
    *hint = sl->value;
}

int ordo__store_ref_pull(ordo__store_t *s, int slice, int64_t iter, void **data, size_t *bytes,
                        void **hint)
{
    slot_t *sl = &s->slots[s->slot_of[slice]];
    if (sl->prev && iter == sl->prev_version && iter < sl->version) { /* a restarted worker's */
        atomic_fetch_add(&sl->prev->refs, 1);
        *data = sl->prev->data;
        *bytes = (size_t)sl->numel * sizeof(float);
        *hint = sl->prev;
        return 0;
    }
    return s->model->answer_pull(s, sl, iter, data, bytes, hint);
}

int ordo__store_answer_value(ordo__store_t *s, slot_t *sl, int64_t iter, void **data,
                             size_t *bytes, void **hint)
{
    (void)s;
    (void)iter;
    atomic_fetch_add(&sl->value->refs, 1);
    *data = sl->value->data;
    *bytes = (size_t)sl->numel * sizeof(float);
    *hint = sl->value;
    return 0;
}

int ordo__store_set_members(ordo__store_t *s, int present, bool mean)
{
    if (present < 1 || present > s->n_workers)
        return ordo__error_set(ORDO_ERR_INVAL, "%d workers present of %d", present, s->n_workers);
    if (present == s->n_workers) return 0;
    if (!s->model->elastic)
        return ordo__error_set(ORDO_ERR_INVAL, "workers can join a bsp run without backup workers "
                              "only");
    if (!s->join_at && !(s->join_at = calloc((size_t)s->n_workers, sizeof *s->join_at)))
        return ORDO_ERR_NOMEM;
    for (int w = present; w < s->n_workers; w++)
        s->join_at[w] = INT64_MAX;
    s->mean_of_pushed = mean;
    return 0;
}

int ordo__store_member(const ordo__store_t *s, int worker, int64_t *join_at)
{
    if (worker < 0 || worker >= s->n_workers) return ORDO_STORE_MEMBER_IN;
    if (s->gone && s->gone[worker]) return ORDO_STORE_MEMBER_LEFT;
    if (!s->join_at || s->join_at[worker] == 0) return ORDO_STORE_MEMBER_IN;
    if (s->join_at[worker] == INT64_MAX) return ORDO_STORE_MEMBER_FREE;
    *join_at = s->join_at[worker];
    return ORDO_STORE_MEMBER_JOINED;
}

int ordo__store_join(ordo__store_t *s, int worker, int64_t iter)
{
    if (worker < 0 || worker >= s->n_workers || !s->join_at || s->join_at[worker] != INT64_MAX ||
        (s->gone && s->gone[worker]))
        return ordo__error_set(ORDO_ERR_INVAL, "worker %d cannot join: not a free place of the "
                              "run's %d", worker, s->n_workers);
    if (iter < 0) return ordo__error_set(ORDO_ERR_INVAL, "worker %d joins at iteration %lld",
                                        worker, (long long)iter);
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].version > iter)
            return ordo__error_set(ORDO_ERR_INVAL, "worker %d joins at iteration %lld, but a slice "
                                  "here is at %lld already", worker, (long long)iter,
                                  (long long)s->slots[i].version);
    s->join_at[worker] = iter;
    return 0;
}
