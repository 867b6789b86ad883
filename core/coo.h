/* coo: the sparse wire payload shared by workers and servers. A payload is a sequence of
 * 8-byte entries, each a little-endian uint32 index followed by a little-endian IEEE-754
 * float32 value, with indices strictly increasing. Indices are absolute positions in the
 * tensor (not relative to a region). Decoding validates everything a peer could get wrong
 * and rejects bad payloads with ORDO_ERR_PROTO and a detail naming the entry and the reason. */
#ifndef ORDO_COO_H
#define ORDO_COO_H

#include <stddef.h>
#include <stdint.h>

/* One sparse entry in memory. On little-endian hosts its layout equals the wire layout. */
typedef struct {
    uint32_t index;
    float value;
} ordo__coo_entry_t;

#define ORDO_COO_ENTRY_BYTES 8

/* ordo_coo_size returns the payload size in bytes of count entries. */
static inline size_t ordo_coo_size(size_t count)
{
    return count * ORDO_COO_ENTRY_BYTES;
}

/* ordo__coo_encode writes count entries to buf, which must hold ordo_coo_size(count) bytes.
 * It trusts its input (our own selection output): callers pass entries sorted by index. */
void ordo__coo_encode(const ordo__coo_entry_t *entries, size_t count, uint8_t *buf);

/* ordo__coo_get returns entry i of a payload without validating it; use it only on a payload
 * that ordo__coo_check accepted. */
ordo__coo_entry_t ordo__coo_get(const uint8_t *buf, size_t i);

/* ordo__coo_check validates an untrusted payload of len bytes: len a multiple of 8, every
 * index in [lo, hi), indices strictly increasing, every value finite. On success it writes
 * the entry count; on failure it returns ORDO_ERR_PROTO with a detail such as
 * "coo: entry 3: index 70 out of range [0, 64)". buf may be NULL when len is 0. */
int ordo__coo_check(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi, size_t *count);

/* ordo__coo_decode validates like ordo__coo_check and copies the entries to out, which holds
 * cap entries (ORDO_ERR_RANGE when too small). Nothing is written to out on a rejected
 * payload. */
int ordo__coo_decode(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi, ordo__coo_entry_t *out,
                    size_t cap, size_t *count);

/* ordo__coo_patch validates like ordo__coo_check and then sets dst[index] = value for every
 * entry (dst is the whole tensor, indexed absolutely). A rejected payload changes nothing. */
int ordo__coo_patch(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi, float *dst);

#endif
