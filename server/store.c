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

typedef struct {
    int64_t numel;
    ordo_vbuf_t *value;
    float *acc, *mom;
    zmq_msg_t acc_msg; /* the first push's frame, used as the running sum */
    bool acc_in_msg;
    int64_t version; /* -1 before init */
    int pushes;
    uint8_t *pushed; /* per worker, for the current version */
} slot_t;

struct ordo_store {
    const ordo_keys_t *keys;
    int rank, n_workers;
    ordo_optim_t opt;
    float scale;
    int *slot_of; /* per slice: local slot or -1 */
    float *scratch; /* aligned copy of a push whose frame is not float-aligned */
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
    int64_t largest = 1;
    for (int i = 0; i < keys->n_slices; i++)
        if (keys->slices[i].server == rank && keys->slices[i].numel > largest) largest = keys->slices[i].numel;
    s->scratch = aligned_alloc(64, ((size_t)largest * 4 + 63) & ~(size_t)63);
    if (!s->scratch) goto nomem;
    for (int i = 0; i < keys->n_slices; i++) {
        if (keys->slices[i].server != rank) {
            s->slot_of[i] = -1;
            continue;
        }
        slot_t *sl = &s->slots[s->n_slots];
        s->slot_of[i] = s->n_slots++;
        sl->numel = keys->slices[i].numel;
        sl->version = -1;
        sl->value = vbuf_new(sl->numel);
        sl->acc = aligned_alloc(64, ((size_t)sl->numel * 4 + 63) & ~(size_t)63);
        sl->pushed = calloc((size_t)n_workers, 1);
        if (opt->momentum > 0) sl->mom = calloc((size_t)sl->numel, sizeof(float));
        if (!sl->value || !sl->acc || !sl->pushed || (opt->momentum > 0 && !sl->mom)) goto nomem;
    }
    *out = s;
    return 0;
nomem:
    ordo_store_destroy(&s);
    return ORDO_ENOMEM;
}

void ordo_store_destroy(ordo_store_t **sp)
{
    ordo_store_t *s = *sp;
    if (!s) return;
    for (int i = 0; i < s->n_slots; i++) {
        if (s->slots[i].acc_in_msg) zmq_msg_close(&s->slots[i].acc_msg);
        vbuf_unref(s->slots[i].value);
        free(s->slots[i].acc);
        free(s->slots[i].mom);
        free(s->slots[i].pushed);
    }
    free(s->slots);
    free(s->slot_of);
    free(s->scratch);
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

/* the last push of an iteration: value <- step(value, acc + g), acc NULL when W = 1 */
static int apply(ordo_store_t *s, slot_t *sl, const float *acc, const float *g)
{
    /* A value still referenced by a send in flight is left to that send; the new value
     * goes into a fresh buffer. */
    ordo_vbuf_t *cur = sl->value;
    if (atomic_load(&cur->refs) == 1) {
        ordo_optim_step_sum(&s->opt, cur->data, cur->data, sl->mom, acc, g, s->scale, sl->numel);
    } else {
        ordo_vbuf_t *nb = vbuf_new(sl->numel);
        if (!nb) return ORDO_ENOMEM;
        ordo_optim_step_sum(&s->opt, nb->data, cur->data, sl->mom, acc, g, s->scale, sl->numel);
        sl->value = nb;
        vbuf_unref(cur);
    }
    if (sl->acc_in_msg) {
        zmq_msg_close(&sl->acc_msg);
        sl->acc_in_msg = false;
    }
    sl->version++;
    sl->pushes = 0;
    memset(sl->pushed, 0, (size_t)s->n_workers);
    return 0;
}

static float *acc_of(slot_t *sl)
{
    return sl->acc_in_msg ? zmq_msg_data(&sl->acc_msg) : sl->acc;
}

int ordo_store_push(ordo_store_t *s, int slice, int worker, int64_t iter, const void *data,
                    size_t bytes, bool *updated)
{
    slot_t *sl;
    *updated = false;
    int rc = push_checks(s, slice, worker, iter, bytes, &sl);
    if (rc) return rc;
    sl->pushed[worker] = 1;
    if (sl->pushes + 1 == s->n_workers) {
        rc = apply(s, sl, sl->pushes ? acc_of(sl) : NULL, data);
        *updated = rc == 0;
        return rc;
    }
    if (sl->pushes++ == 0)
        memcpy(sl->acc, data, bytes);
    else
        ordo_optim_sum(acc_of(sl), data, sl->numel);
    return 0;
}

int ordo_store_push_frame(ordo_store_t *s, int slice, int worker, int64_t iter,
                          zmq_msg_t *frame, bool *updated)
{
    slot_t *sl;
    *updated = false;
    size_t bytes = zmq_msg_size(frame);
    int rc = push_checks(s, slice, worker, iter, bytes, &sl);
    if (rc) return rc;
    const float *data = zmq_msg_data(frame);
    if ((uintptr_t)data % _Alignof(float) != 0) {
        /* small frames can sit anywhere in ZeroMQ's receive buffer: work on an aligned copy */
        memcpy(s->scratch, data, bytes);
        return ordo_store_push(s, slice, worker, iter, s->scratch, bytes, updated);
    }
    sl->pushed[worker] = 1;
    if (sl->pushes + 1 == s->n_workers) {
        rc = apply(s, sl, sl->pushes ? acc_of(sl) : NULL, data);
        *updated = rc == 0;
        return rc;
    }
    if (sl->pushes++ == 0) {
        zmq_msg_init(&sl->acc_msg);
        zmq_msg_move(&sl->acc_msg, frame);
        sl->acc_in_msg = true;
    } else {
        ordo_optim_sum(acc_of(sl), data, sl->numel);
    }
    return 0;
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

int64_t ordo_store_bytes(const ordo_store_t *s)
{
    int64_t b = 0;
    for (int i = 0; i < s->n_slots; i++) b += s->slots[i].numel * 4;
    return b;
}
