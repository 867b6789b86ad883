/* merge_buf: the worker's merge buffers for merged pushes ([push] mode = merged). The merge
 * plan groups the keys into messages; since a group's keys may live on several servers (the
 * key map spreads slices by bytes), every group is sent as one message per server holding
 * part of it, cut into messages of at most the plan's max_message_bytes: a "part". A part's
 * payload is the concatenation of its slices' floats, in push
 * order (keys in group order, chunks in order), and its index lists their slice ids. The
 * slices of a chunked key (one with several slices) travel in parts of their own, runs of its
 * consecutive slices whose payload is the gradient itself; the keys of one slice are packed
 * together into a buffer, allocated once when the plan is read, where their gradients can
 * live (ordo__merge_buf_home) so that nothing is copied; a gradient put from elsewhere is
 * copied in. A group is complete when every one of its keys was put. */
#ifndef ORDO_MERGE_BUF_H
#define ORDO_MERGE_BUF_H

#include <stdint.h>

#include "common/keys.h"

typedef struct ordo__merge_buf ordo__merge_buf_t;

/* One message of a group: the slices of the group that live on one server. */
typedef struct ordo__merge_part {
    int server;
    int n_slices;
    const uint32_t *slices; /* [n_slices] slice ids (indices into keys->slices), payload order */
    const int64_t *offset;  /* [n_slices] first float of each slice in the payload */
    int64_t numel;          /* floats in the payload */
} ordo__merge_part_t;

/* ordo__merge_buf_new builds the parts of every group of a grouping of keys' tensors
 * (n_groups groups; group g is order[group_start[g]] .. order[group_start[g + 1] - 1]) and
 * allocates their buffers. A server's share of a group is cut into parts of at most
 * max_part_bytes (0: no limit; a slice is never split, so a part of one slice may be larger).
 * keys is borrowed and must outlive the buffer. Fails with ORDO_ERR_INVAL when the grouping does
 * not list every key exactly once. */
int ordo__merge_buf_new(const ordo__keys_t *keys, int n_groups, const int *group_start,
                       const int *order, int64_t max_part_bytes, ordo__merge_buf_t **out);

/* ordo__merge_buf_destroy frees *mb and sets *mb = NULL; NULL-safe. */
void ordo__merge_buf_destroy(ordo__merge_buf_t **mb);

/* ordo__merge_buf_n_groups returns the number of groups. */
int ordo__merge_buf_n_groups(const ordo__merge_buf_t *mb);

/* ordo__merge_buf_group_of returns the group of key (-1 when out of range). */
int ordo__merge_buf_group_of(const ordo__merge_buf_t *mb, int key);

/* ordo__merge_buf_group_keys returns group g's keys in push order and sets *n. */
const int *ordo__merge_buf_group_keys(const ordo__merge_buf_t *mb, int g, int *n);

/* ordo__merge_buf_n_parts returns how many messages group g is sent as; parts are in server
 * order (and in push order within a server). */
int ordo__merge_buf_n_parts(const ordo__merge_buf_t *mb, int g);

/* ordo__merge_buf_part returns part p of group g (borrowed from mb). */
const ordo__merge_part_t *ordo__merge_buf_part(const ordo__merge_buf_t *mb, int g, int p);

/* ordo__merge_buf_put copies key's gradient (keys->numel[key] floats at src) into the
 * payloads of its group's parts, unless src is its home; for a part of one key's consecutive
 * slices it only records src, which the caller then keeps unchanged until the part was sent
 * and acknowledged. Sets *group to
 * key's group and returns 1 when that group is now complete (every key put since its last
 * reset), 0 when it is not, ORDO_ERR_INVAL when key is out of range or was already put. */
int ordo__merge_buf_put(ordo__merge_buf_t *mb, int key, const float *src, int *group);

/* ordo__merge_buf_payload returns the payload of part p of complete group g: its buffer, or
 * for a part of one slice, the put gradient at that slice's offset. */
const float *ordo__merge_buf_payload(const ordo__merge_buf_t *mb, int g, int p);

/* ordo__merge_buf_reset empties group g for the next iteration (its keys may be put again). */
void ordo__merge_buf_reset(ordo__merge_buf_t *mb, int g);

/* ordo__merge_buf_bytes returns the bytes allocated for payload buffers (for logs). */
int64_t ordo__merge_buf_bytes(const ordo__merge_buf_t *mb);

/* ordo__merge_buf_home returns where key's gradient may be computed so that putting it copies
 * nothing: its place in its part's buffer (borrowed from mb), or NULL for a key sent from
 * wherever it is (a chunked key, a part of one key) or out of range. A gradient computed
 * there must not be written again before its group was sent and acknowledged. */
float *ordo__merge_buf_home(const ordo__merge_buf_t *mb, int key);

#endif
