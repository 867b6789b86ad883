/* merged: the server's side of merged pushes ([push] mode = merged). A merged push is a PUSH
 * with ORDO_FLAG_GROUP and two payload frames: frame 0 holds float32 gradients of several
 * slices back to back, frame 1 (the index) their slice ids as uint32 in the sender's byte
 * order (workers and servers run on the same architecture), in payload order. The header's
 * key is the group's number and chunk the part (the message's number within the group); the
 * server does not need the plan to take a group apart. This module checks an index against
 * the key map and this server and says where each slice's floats are; the caller then adds
 * each slice to the store, pointing into the received frame (no copy). */
#ifndef ORDO__MERGED_H
#define ORDO__MERGED_H

#include <stddef.h>
#include <stdint.h>

#include "common/keys.h"

typedef struct ordo__merged ordo__merged_t;

/* ordo__merged_new prepares the checks for server `server` of the key map keys (borrowed;
 * it must outlive the object). */
int ordo__merged_new(const ordo__keys_t *keys, int server, ordo__merged_t **out);

/* ordo__merged_destroy frees *g and sets *g = NULL; NULL-safe. */
void ordo__merged_destroy(ordo__merged_t **g);

/* ordo__merged_split checks a merged push's index (index_len bytes, any alignment) against a
 * payload of payload_len bytes: a non-empty whole number of uint32 ids, each a slice of the
 * key map that lives on this server, none twice, and the payload exactly as long as their
 * floats. On success it sets *n to the number of slices, described by ordo__merged_slice and
 * ordo__merged_offset until the next split. Fails with ORDO_ERR_PROTO and a detail naming the
 * entry and the reason ("entry 3: slice 17 lives on server 0"). */
int ordo__merged_split(ordo__merged_t *g, const void *index, size_t index_len, size_t payload_len,
                      int *n);

/* ordo__merged_slice returns the slice id of entry i of the last split. */
int ordo__merged_slice(const ordo__merged_t *g, int i);

/* ordo__merged_offset returns the byte offset of entry i's floats in the last split's
 * payload. */
size_t ordo__merged_offset(const ordo__merged_t *g, int i);

#endif
