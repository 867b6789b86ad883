/* probe: a server's side of calibration pushes ([push] calibrate = true, ORDO_FLAG_PROBE;
 * docs/calibration.md). A probe's floats are added to scratch memory, as a push's are to its
 * key's sum, so that a worker timing it sees what a push costs; no value changes. */
#ifndef ORDO__SERVER_PROBE_H
#define ORDO__SERVER_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

typedef struct {
    float *sum; /* the probes' running sum */
    size_t cap; /* its floats */
    uint64_t n; /* probes taken */
} ordo__probe_t;

/* ordo__probe_take sums probe m into p: NULL, or why it was refused (in why, size bytes): not
 * one float32 payload frame, a group or pull flag, larger than ORDO_PROBE_MAX_BYTES, out of
 * memory. */
const char *ordo__probe_take(ordo__probe_t *p, ordo__msg_t *m, char *why, size_t size);

/* ordo__probe_free frees p's scratch memory (p itself is the caller's). */
void ordo__probe_free(ordo__probe_t *p);

#endif
