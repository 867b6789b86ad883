/* allreduce: ring and hierarchical all-reduce steps on a cluster's worker-host links. */
#include "planner/allreduce.h"

#include "common/error.h"

#include <math.h>

/* ring over n members of bytes per member: each link carries 2 (n - 1) / n of it in 2 (n - 1)
 * steps per bucket, each step paying the latency and the message cost */
static double ring_us(const ordo__cluster_t *c, int n, double bytes, double *link_bytes)
{
    *link_bytes = n > 1 ? 2.0 * (n - 1) / n * bytes : 0;
    double buckets = ceil(bytes / ORDO_ALLREDUCE_BUCKET_BYTES);
    double steps = n > 1 ? 2.0 * (n - 1) * buckets : 0;
    return *link_bytes * 8e6 / (c->worker_bps * c->link_efficiency) +
           steps * (c->latency_us + c->msg_us);
}

/* fills out from the compute of m and the all-reduce's time */
static int finish(const ordo__model_t *m, const ordo__cluster_t *c, double extra_us,
                  double comm_us, double link_bytes, ordo__allreduce_result_t *out)
{
    double fwd = 0, bwd = 0;
    for (int j = 0; j < m->n_ops; j++) {
        fwd += m->ops[j].fwd_us * c->compute_scale;
        bwd += m->ops[j].bwd_us * c->compute_scale;
    }
    /* a codec's conversions and the host's copies run beside backward, on the same bus */
    bwd += extra_us;
    *out = (ordo__allreduce_result_t){.bytes = link_bytes,
                                     .comm_us = comm_us,
                                     .step_us = fwd + fmax(bwd, comm_us),
                                     .bound_us = fmax(fwd + bwd, comm_us)};
    return 0;
}

/* bytes of m per member on the wire, and the conversions it costs */
static double wire_bytes(const ordo__model_t *m, const ordo__cluster_t *c, double *conv_us)
{
    double values = (double)ordo__model_total_numel(m);
    int bf16 = c->wire == ORDO_CLUSTER_WIRE_BF16;
    double conv = c->convert_ns >= 0 ? c->convert_ns : ordo__cluster_wire_convert_ns(c->wire);
    *conv_us = bf16 ? 2 * values * conv / 1e3 : 0;
    return values * (bf16 ? 2.0 : 4.0);
}

int ordo__allreduce_ring(const ordo__model_t *m, const ordo__cluster_t *c,
                        ordo__allreduce_result_t *out)
{
    int rc = ordo__cluster_check(c);
    if (rc) return rc;
    double conv_us, link;
    double bytes = wire_bytes(m, c, &conv_us);
    double comm = ring_us(c, c->workers, bytes, &link);
    return finish(m, c, conv_us, comm, link, out);
}

int ordo__allreduce_hier(const ordo__model_t *m, const ordo__cluster_t *c,
                        ordo__allreduce_result_t *out)
{
    int rc = ordo__cluster_check(c);
    if (rc) return rc;
    double conv_us, link;
    double bytes = wire_bytes(m, c, &conv_us);
    int hosts = c->workers / c->workers_per_host;
    double intra_us =
        c->workers_per_host > 1 ? 2 * (double)ordo__model_total_numel(m) * c->intra_ns / 1e3 : 0;
    double comm = ring_us(c, hosts, bytes, &link) + intra_us;
    return finish(m, c, conv_us, comm, link, out);
}
