/* sparse_wire: what the scheduler, servers and workers agree on in sparse push mode
 * ([push] mode = sparse, docs/sparse-live.md): the plan's "sparse" member (the flat index
 * space of the model, k, the periods and the first region boundaries) and the messages of
 * the sparse protocol. Every sparse message has header key ORDO_SPARSE_KEY, which no model
 * parameter has, so the daemons route them apart from dense traffic:
 *
 *   data socket (worker <-> server, server -> server)
 *     INIT      worker 0 -> server: chunk = lo, F32 values of [lo, lo + len/4), iter 0
 *     PUSH      worker -> server: iter t, chunk = region epoch, COO of the worker's selection
 *     PULL_RESP server -> worker: iter t, chunk = epoch, COO of (index, new value) of the
 *               entries the server selected (the answer to the push of t)
 *     PULL      worker -> server: iter = version v, chunk = the epoch of the regions the
 *               worker expects then: the region's values after v updates
 *     PULL_RESP server -> worker: dtype F32, chunk = lo, the region's values (answer to PULL)
 *     INIT      server -> server: iter = E, chunk = lo, frames: values and momentum of
 *               [lo, lo + len/4): the handover of a range that changes owner at iteration E
 *   scheduler socket (dtype BYTES, hdr.chunk = one of ordo__sparse_msg_t)
 *     POSHIST   worker -> scheduler: iter t, nbins uint64 counts of its selection's positions
 *     MAGHIST   server -> scheduler: iter t, ORDO_REGIONS_MAGHIST_BINS uint64 counts
 *     THRESHOLD scheduler -> servers: iter t, float32 global threshold for iteration t
 *     REGIONS   scheduler -> servers and workers: iter = E, uint32 epoch then S + 1 uint32
 *               boundaries, in force from iteration E
 * All integers and floats on the wire are little-endian. */
#ifndef ORDO_SPARSE_WIRE_H
#define ORDO_SPARSE_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* the header key of every sparse message */
#define ORDO_SPARSE_KEY 0xffffffffu

/* sub-kinds of the sparse PLAN messages exchanged with the scheduler (header chunk) */
typedef enum {
    ORDO_SPARSE_POSHIST = 1,
    ORDO_SPARSE_MAGHIST = 2,
    ORDO_SPARSE_THRESHOLD = 3,
    ORDO_SPARSE_REGIONS = 4,
} ordo__sparse_msg_t;

/* position-histogram bins the plan asks for when nothing else is said */
#define ORDO_SPARSE_DEFAULT_BINS 512

/* The plan's "sparse" member, parsed. */
typedef struct ordo__sparse_plan {
    uint32_t n;             /* entries of the flat index space (all parameters, model order) */
    uint32_t k;             /* entries selected per iteration, locally and globally */
    double density;         /* k / n as configured */
    int nbins;              /* position-histogram bins */
    int threshold_period;   /* tau': iterations between exact threshold evaluations */
    int repartition_period; /* tau: iterations between region re-balancing */
    int servers;            /* S */
    uint32_t *bounds;       /* S + 1 boundaries of epoch 0 */
} ordo__sparse_plan_t;

/* ordo__sparse_wire_plan parses the "sparse" member of a plan JSON text for a cluster of
 * `servers` servers into *out (caller calls ordo__sparse_wire_plan_fini). ORDO_ERR_NOTFOUND
 * when the plan has no sparse member (dense or merged mode); ORDO_ERR_PROTO with a detail
 * naming the member when it is malformed. */
int ordo__sparse_wire_plan(const char *plan_json, int servers, ordo__sparse_plan_t *out);

/* ordo__sparse_wire_plan_of is ordo__sparse_wire_plan on the "sparse" member itself (a jansson
 * json_t; NULL or not an object: ORDO_ERR_NOTFOUND). */
struct json_t;
int ordo__sparse_wire_plan_of(struct json_t *sparse, int servers, ordo__sparse_plan_t *out);

/* ordo__sparse_wire_plan_copy fills *dst with a copy of src (its own bounds; the caller calls
 * ordo__sparse_wire_plan_fini on it). */
int ordo__sparse_wire_plan_copy(const ordo__sparse_plan_t *src, ordo__sparse_plan_t *dst);

/* ordo__sparse_wire_plan_fini frees what ordo__sparse_wire_plan filled; NULL-safe. */
void ordo__sparse_wire_plan_fini(ordo__sparse_plan_t *p);

/* ordo__sparse_wire_put_counts writes n uint64 counts to buf (8 * n bytes). */
void ordo__sparse_wire_put_counts(const uint64_t *counts, size_t n, uint8_t *buf);

/* ordo__sparse_wire_add_counts checks that a received payload holds exactly n uint64 counts
 * (ORDO_ERR_PROTO "WHAT: N bytes, expected M" otherwise) and adds them into sum. */
int ordo__sparse_wire_add_counts(const void *buf, size_t len, size_t n, uint64_t *sum,
                                const char *what);

/* ordo__sparse_wire_put_regions writes epoch and S + 1 boundaries to buf
 * (ordo_sparse_wire_regions_size(S) bytes). */
void ordo__sparse_wire_put_regions(uint32_t epoch, const uint32_t *bounds, int S, uint8_t *buf);

/* ordo_sparse_wire_regions_size returns the payload size of a REGIONS message. */
static inline size_t ordo_sparse_wire_regions_size(int S)
{
    return 4 * ((size_t)S + 2);
}

/* ordo__sparse_wire_get_regions validates a REGIONS payload for S servers and n entries
 * (size, boundaries from 0 to n strictly increasing) and writes the epoch and the S + 1
 * boundaries; ORDO_ERR_PROTO with a detail otherwise. */
int ordo__sparse_wire_get_regions(const void *buf, size_t len, int S, uint32_t n, uint32_t *epoch,
                                 uint32_t *bounds);

/* ordo__sparse_wire_put_float / get_float: one little-endian float32 (THRESHOLD). get
 * accepts only 4 bytes holding a finite value >= 0 (ORDO_ERR_PROTO otherwise). */
void ordo__sparse_wire_put_float(float v, uint8_t *buf);
int ordo__sparse_wire_get_float(const void *buf, size_t len, float *out);

/* ordo__sparse_wire_get_f32s copies len bytes of little-endian float32 values into dst
 * (len must be a multiple of 4; the caller checks the count). */
void ordo__sparse_wire_get_f32s(const void *buf, size_t len, float *dst);

#endif
