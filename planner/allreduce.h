/* allreduce: the same cluster as planner/cluster.h under an all-reduce instead of servers, so
 * that a user sees a PS against all-reduce on their own numbers: a ring over all W workers
 * (NCCL's, ordered host by host, so one ring edge leaves and one enters each host) and a
 * hierarchical one (reduce inside each host, a ring over the H hosts, broadcast inside). The
 * all-reduce runs bucket by bucket during backward (PyTorch DDP's 25 MiB buckets) and does
 * not overlap the forward pass. */
#ifndef ORDO_ALLREDUCE_H
#define ORDO_ALLREDUCE_H

#include "core/model.h"
#include "planner/cluster.h"

#define ORDO_ALLREDUCE_BUCKET_BYTES (25 << 20)

/* One all-reduce's step. */
typedef struct ordo__allreduce_result {
    double bytes;    /* a worker host's link, each way, per step */
    double comm_us;  /* the all-reduce of one step's gradients */
    double step_us;  /* forward + max(backward, comm) */
    double bound_us; /* max(compute, comm) */
} ordo__allreduce_result_t;

/* ordo__allreduce_ring models the ring over c's W workers (c's servers, groups and order are
 * not used; a codec other than bf16 is taken as float32: a ring sums on the wire, which a
 * sign or top-k code cannot); fills *out on success. */
int ordo__allreduce_ring(const ordo__model_t *m, const ordo__cluster_t *c,
                        ordo__allreduce_result_t *out);

/* ordo__allreduce_hier models the hierarchical all-reduce over c's hosts (the host's reduce and
 * broadcast cost c->intra_ns per value each); fills *out on success. */
int ordo__allreduce_hier(const ordo__model_t *m, const ordo__cluster_t *c,
                        ordo__allreduce_result_t *out);

#endif
