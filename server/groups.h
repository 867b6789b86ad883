/* groups: the server's side of merged pushes ([push] mode = merged). A merged push is a PUSH
 * with ORDO_FLAG_GROUP and two payload frames: frame 0 holds float32 gradients of several
 * slices back to back, frame 1 (the index) their slice ids as uint32 in the sender's byte
 * order (workers and servers run on the same architecture), in payload order. The header's
 * key is the group's number and chunk the part (the message's number within the group); the
 * server does not need the plan to take a group apart. This module checks an index against
 * the key map and this server and says where each slice's floats are; the caller then adds
 * each slice to the store, pointing into the received frame (no copy). */
#ifndef ORDO_GROUPS_H
#define ORDO_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "common/keys.h"

typedef struct ordo_groups ordo_groups_t;

/* ordo_groups_new prepares the checks for server `server` of the key map keys (borrowed;
 * it must outlive the object). */
int ordo_groups_new(const ordo_keys_t *keys, int server, ordo_groups_t **out);

/* ordo_groups_destroy frees *g and sets *g = NULL; NULL-safe. */
void ordo_groups_destroy(ordo_groups_t **g);

/* ordo_groups_split checks a merged push's index (index_len bytes, any alignment) against a
 * payload of payload_len bytes: a non-empty whole number of uint32 ids, each a slice of the
 * key map that lives on this server, none twice, and the payload exactly as long as their
 * floats. On success it sets *n to the number of slices, described by ordo_groups_slice and
 * ordo_groups_offset until the next split. Fails with ORDO_ERR_PROTO and a detail naming the
 * entry and the reason ("entry 3: slice 17 lives on server 0"). */
int ordo_groups_split(ordo_groups_t *g, const void *index, size_t index_len, size_t payload_len,
                      int *n);

/* ordo_groups_slice returns the slice id of entry i of the last split. */
int ordo_groups_slice(const ordo_groups_t *g, int i);

/* ordo_groups_offset returns the byte offset of entry i's floats in the last split's
 * payload. */
size_t ordo_groups_offset(const ordo_groups_t *g, int i);

#endif
