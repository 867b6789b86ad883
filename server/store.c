/* store: the shard store, push aggregation and update. */
#include "server/store.h"
#include "common/error.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ordo_vbuf {
    _Atomic int refs;
    int64_t numel;
    float *data; /* 64-byte aligned */
};

/* A received payload the store may keep past the call that handed it over: a ZeroMQ frame
 * (or an aligned copy of one), shared by the slices of a merged push. Only the server's
 * main thread touches it, so the count is plain. */
struct ordo_store_frame {
    int refs;
    bool is_msg;
    zmq_msg_t msg;
    void *buf; /* !is_msg: 64-byte aligned copy */
    size_t len;
};

typedef struct {
    const float *data;
    ordo_store_frame_t *owner; /* NULL: no push held for this worker */
} held_t;

typedef struct {
    int64_t numel;
    ordo_vbuf_t *value;
    float *acc, *mom;
    ordo_optim_t opt; /* its update rule: the store's, or the one its key declared */
    float *sum;                    /* the running sum: acc, or inside sum_owner; NULL if none */
    ordo_store_frame_t *sum_owner; /* the first push's frame, kept as the running sum */
    int next;                      /* the worker whose push is added next (rank order) */
    held_t *held;                  /* per worker: a push that came before its turn */
    int64_t version;               /* -1 before init */
    uint8_t *pushed;               /* per worker, for the current version */
} slot_t;

struct ordo_store {
    const ordo_keys_t *keys;
    int rank, n_workers;
    ordo_optim_t opt;
    float scale;
    int *slot_of; /* per slice: local slot or -1 */
    slot_t *slots;
    int n_slots;
};

static ordo_vbuf_t *vbuf_new(int64_t numel)
{
    ordo_vbuf_t *b = malloc(sizeof *b);
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

static void vbuf_unref(ordo_vbuf_t *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        free(b->data);
        free(b);
    }
}

void ordo_store_unref_cb(void *data, void *hint)
{
    (void)data;
    vbuf_unref(hint);
}

int ordo_store_new(const ordo_keys_t *keys, int rank, int n_workers, const ordo_optim_t *opt,
                   float scale, ordo_store_t **out)
{
    ordo_store_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ENOMEM;
    s->keys = keys;
    s->rank = rank;
    s->n_workers = n_workers;
    s->opt = *opt;
    s->scale = scale;
    s->slot_of = malloc(sizeof *s->slot_of * ((size_t)keys->n_slices + 1));
    s->slots = calloc((size_t)keys->n_slices + 1, sizeof *s->slots);
    if (!s->slot_of || !s->slots) goto nomem;
    for (int i = 0; i < keys->n_slices; i++) {
        if (keys->slices[i].server != rank) {
            s->slot_of[i] = -1;
            continue;
        }
        slot_t *sl = &s->slots[s->n_slots];
        s->slot_of[i] = s->n_slots++;
        sl->numel = keys->slices[i].numel;
        sl->opt = *opt;
        sl->version = -1;
        sl->value = vbuf_new(sl->numel);
        sl->acc = aligned_alloc(64, ((size_t)sl->numel * 4 + 63) & ~(size_t)63);
        sl->pushed = calloc((size_t)n_workers, 1);
        sl->held = calloc((size_t)n_workers, sizeof *sl->held);
        if (opt->momentum > 0) sl->mom = calloc((size_t)sl->numel, sizeof(float));
        if (!sl->value || !sl->acc || !sl->pushed || !sl->held || (opt->momentum > 0 && !sl->mom))
            goto nomem;
    }
    *out = s;
    return 0;
nomem:
    ordo_store_destroy(&s);
    return ORDO_ENOMEM;
}

int ordo_store_set_update(ordo_store_t *s, int key, const ordo_optim_t *opt)
{
    for (int i = 0; i < s->keys->n_slices; i++) {
        if ((int)s->keys->slices[i].key != key || s->slot_of[i] < 0) continue;
        slot_t *sl = &s->slots[s->slot_of[i]];
        if (opt->momentum > 0 && !sl->mom && !(sl->mom = calloc((size_t)sl->numel, sizeof(float))))
            return ORDO_ENOMEM;
        sl->opt = *opt;
        if (opt->average && sl->version < 0) {
            memset(sl->value->data, 0, (size_t)sl->numel * sizeof(float));
            sl->version = 0;
        }
    }
    return 0;
}

void ordo_store_destroy(ordo_store_t **sp)
{
    ordo_store_t *s = *sp;
    if (!s) return;
    for (int i = 0; i < s->n_slots; i++) {
        ordo_store_frame_unref(s->slots[i].sum_owner);
        for (int w = 0; s->slots[i].held && w < s->n_workers; w++)
            ordo_store_frame_unref(s->slots[i].held[w].owner);
        free(s->slots[i].held);
        vbuf_unref(s->slots[i].value);
        free(s->slots[i].acc);
        free(s->slots[i].mom);
        free(s->slots[i].pushed);
    }
    free(s->slots);
    free(s->slot_of);
    free(s);
    *sp = NULL;
}

bool ordo_store_owns(const ordo_store_t *s, int slice)
{
    return slice >= 0 && slice < s->keys->n_slices && s->slot_of[slice] >= 0;
}

static int check_size(const slot_t *sl, int slice, size_t bytes)
{
    if (bytes != (size_t)sl->numel * sizeof(float))
        return ordo_error_set(ORDO_EPROTO, "slice %d: %zu bytes, expected %lld", slice, bytes,
                              (long long)sl->numel * 4);
    return 0;
}

int ordo_store_init(ordo_store_t *s, int slice, const void *data, size_t bytes, bool *ignored)
{
    if (!ordo_store_owns(s, slice)) return ordo_error_set(ORDO_EINVAL, "slice %d is not here", slice);
    slot_t *sl = &s->slots[s->slot_of[slice]];
    int rc = check_size(sl, slice, bytes);
    if (rc) return rc;
    *ignored = sl->version >= 0;
    if (*ignored) return 0;
    memcpy(sl->value->data, data, bytes);
    sl->version = 0;
    return 0;
}

static int push_checks(ordo_store_t *s, int slice, int worker, int64_t iter, size_t bytes,
                       slot_t **out)
{
    if (!ordo_store_owns(s, slice)) return ordo_error_set(ORDO_EINVAL, "slice %d is not here", slice);
    slot_t *sl = &s->slots[s->slot_of[slice]];
    int rc = check_size(sl, slice, bytes);
    if (rc) return rc;
    if (worker < 0 || worker >= s->n_workers)
        return ordo_error_set(ORDO_EPROTO, "push from unknown worker %d", worker);
    if (sl->version < 0)
        return ordo_error_set(ORDO_EPROTO, "push to slice %d before its initial value", slice);
    if (iter != sl->version)
        return ordo_error_set(ORDO_EPROTO, "push of iteration %lld to slice %d which is at %lld",
                              (long long)iter, slice, (long long)sl->version);
    if (sl->pushed[worker])
        return ordo_error_set(ORDO_EPROTO, "worker %d pushed slice %d twice in iteration %lld",
                              worker, slice, (long long)iter);
    *out = sl;
    return 0;
}

int ordo_store_check_push(ordo_store_t *s, int slice, int worker, int64_t iter, size_t bytes)
{
    slot_t *sl = NULL;
    return push_checks(s, slice, worker, iter, bytes, &sl);
}

/* ---- shared frames -------------------------------------------------------------------- */

static ordo_store_frame_t *frame_copy(const void *data, size_t len)
{
    ordo_store_frame_t *f = calloc(1, sizeof *f);
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

ordo_store_frame_t *ordo_store_frame_wrap(zmq_msg_t *frame)
{
    const void *data = zmq_msg_data(frame);
    if ((uintptr_t)data % _Alignof(float) != 0) {
        /* small frames can sit anywhere in ZeroMQ's receive buffer: keep an aligned copy */
        ordo_store_frame_t *f = frame_copy(data, zmq_msg_size(frame));
        if (f) {
            zmq_msg_close(frame);
            zmq_msg_init(frame);
        }
        return f;
    }
    ordo_store_frame_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    zmq_msg_init(&f->msg);
    zmq_msg_move(&f->msg, frame);
    f->is_msg = true;
    f->len = zmq_msg_size(&f->msg);
    f->refs = 1;
    return f;
}

const void *ordo_store_frame_data(ordo_store_frame_t *f, size_t *len)
{
    *len = f->len;
    return f->is_msg ? zmq_msg_data(&f->msg) : f->buf;
}

void ordo_store_frame_unref(ordo_store_frame_t *f)
{
    if (!f || --f->refs > 0) return;
    if (f->is_msg)
        zmq_msg_close(&f->msg);
    else
        free(f->buf);
    free(f);
}

/* ---- aggregation ---------------------------------------------------------------------- */

/* the last push of an iteration: value <- step(value, acc + g), acc NULL when W = 1 */
static int apply(ordo_store_t *s, slot_t *sl, const float *acc, const float *g)
{
    /* A value still referenced by a send in flight is left to that send; the new value
     * goes into a fresh buffer. */
    ordo_vbuf_t *cur = sl->value;
    if (atomic_load(&cur->refs) == 1) {
        ordo_optim_step_sum(&sl->opt, cur->data, cur->data, sl->mom, acc, g, s->scale, sl->numel);
    } else {
        ordo_vbuf_t *nb = vbuf_new(sl->numel);
        if (!nb) return ORDO_ENOMEM;
        ordo_optim_step_sum(&sl->opt, nb->data, cur->data, sl->mom, acc, g, s->scale, sl->numel);
        sl->value = nb;
        vbuf_unref(cur);
    }
    ordo_store_frame_unref(sl->sum_owner);
    sl->sum_owner = NULL;
    sl->sum = NULL;
    sl->next = 0;
    sl->version++;
    memset(sl->pushed, 0, (size_t)s->n_workers);
    return 0;
}

/* add the push of worker sl->next (data, kept alive by owner when not NULL) to the sum; the
 * last worker's is summed and applied in one pass */
static int fold(ordo_store_t *s, slot_t *sl, const float *data, ordo_store_frame_t *owner,
                bool *updated)
{
    if (sl->next + 1 == s->n_workers) {
        int rc = apply(s, sl, sl->sum, data);
        *updated = rc == 0;
        return rc;
    }
    if (sl->next == 0 && owner) { /* the frame itself becomes the running sum: no copy */
        owner->refs++;
        sl->sum_owner = owner;
        sl->sum = (float *)data;
    } else if (sl->next == 0) {
        memcpy(sl->acc, data, (size_t)sl->numel * sizeof(float));
        sl->sum = sl->acc;
    } else {
        ordo_optim_sum(sl->sum, data, sl->numel);
    }
    sl->next++;
    return 0;
}

int ordo_store_push_ref(ordo_store_t *s, int slice, int worker, int64_t iter, const float *data,
                        size_t bytes, ordo_store_frame_t *owner, bool *updated)
{
    slot_t *sl = NULL;
    *updated = false;
    int rc = push_checks(s, slice, worker, iter, bytes, &sl);
    if (rc) return rc;
    ordo_store_frame_t *copy = NULL;
    if ((uintptr_t)data % _Alignof(float) != 0 || (!owner && worker != sl->next)) {
        /* keep a copy: the caller's memory is borrowed for this call only, or unaligned */
        if (!(copy = frame_copy(data, bytes))) return ORDO_ENOMEM;
        owner = copy;
        data = copy->buf;
    }
    sl->pushed[worker] = 1;
    if (worker != sl->next) {
        /* pushes are summed in worker order, whatever order they arrive in, so the sum (and
         * so the model) is the same bit for bit in every run and every push mode */
        owner->refs++;
        sl->held[worker] = (held_t){data, owner};
        ordo_store_frame_unref(copy);
        return 0;
    }
    rc = fold(s, sl, data, owner, updated);
    while (rc == 0 && !*updated && sl->held[sl->next].owner) {
        held_t h = sl->held[sl->next];
        sl->held[sl->next] = (held_t){NULL, NULL};
        rc = fold(s, sl, h.data, h.owner, updated);
        ordo_store_frame_unref(h.owner);
    }
    ordo_store_frame_unref(copy);
    return rc;
}

int ordo_store_push(ordo_store_t *s, int slice, int worker, int64_t iter, const void *data,
                    size_t bytes, bool *updated)
{
    return ordo_store_push_ref(s, slice, worker, iter, data, bytes, NULL, updated);
}

int ordo_store_push_frame(ordo_store_t *s, int slice, int worker, int64_t iter,
                          zmq_msg_t *frame, bool *updated)
{
    *updated = false;
    int rc = ordo_store_check_push(s, slice, worker, iter, zmq_msg_size(frame));
    if (rc) return rc;
    ordo_store_frame_t *f = ordo_store_frame_wrap(frame);
    if (!f) return ORDO_ENOMEM;
    size_t len;
    const float *data = ordo_store_frame_data(f, &len);
    rc = ordo_store_push_ref(s, slice, worker, iter, data, len, f, updated);
    ordo_store_frame_unref(f);
    return rc;
}

int64_t ordo_store_version(const ordo_store_t *s, int slice)
{
    if (!ordo_store_owns(s, slice)) return -1;
    return s->slots[s->slot_of[slice]].version;
}

void ordo_store_ref(ordo_store_t *s, int slice, void **data, size_t *bytes, void **hint)
{
    slot_t *sl = &s->slots[s->slot_of[slice]];
    atomic_fetch_add(&sl->value->refs, 1);
    *data = sl->value->data;
    *bytes = (size_t)sl->numel * sizeof(float);
    *hint = sl->value;
}

void ordo_store_copy_value(const ordo_store_t *s, int slice, float *dst)
{
    const slot_t *sl = &s->slots[s->slot_of[slice]];
    memcpy(dst, sl->value->data, (size_t)sl->numel * sizeof(float));
}

float *ordo_store_momentum(ordo_store_t *s, int slice)
{
    return ordo_store_owns(s, slice) ? s->slots[s->slot_of[slice]].mom : NULL;
}

int64_t ordo_store_numel(const ordo_store_t *s, int slice)
{
    return ordo_store_owns(s, slice) ? s->slots[s->slot_of[slice]].numel : 0;
}

int64_t ordo_store_bytes(const ordo_store_t *s)
{
    int64_t b = 0;
    for (int i = 0; i < s->n_slots; i++) b += s->slots[i].numel * 4;
    return b;
}
