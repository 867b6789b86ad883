/* cluster: one training step of a whole cluster on the training step model (planner/step.c),
 * its bound, the bytes on each kind of link and the resource that limits it. */
#include "planner/cluster.h"

#include "common/conf.h"
#include "common/error.h"
#include "common/keys.h"
#include "planner/oracle.h"
#include "planner/order.h"
#include "planner/step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* what a codec puts on the wire and what it costs the CPU (docs/planning.md) */
static const struct {
    const char *name;
    double push_bytes;   /* per value; topk: per value at density 1 */
    double answer_bytes; /* per value */
    double convert_ns;   /* one encode or decode, per value: assumed, not measured */
} wires[ORDO_CLUSTER_WIRE_COUNT] = {
    [ORDO_CLUSTER_WIRE_NONE] = {"none", 4.0, 4.0, 0.0},
    [ORDO_CLUSTER_WIRE_BF16] = {"bf16", 2.0, 2.0, 0.5},
    [ORDO_CLUSTER_WIRE_ONEBIT] = {"onebit", 0.125, 0.125, 1.5},
    [ORDO_CLUSTER_WIRE_TOPK] = {"topk", 8.0, 4.0, 4.0},
};

/* the part of the scheduler's CPU a member a step that fewer STATS messages do not remove
 * (the records, the heartbeats): a first fit of control_plane.sh runs at 256 workers with
 * [output] stats_every 1, 8 and 32 (docs/results/cluster.md), ~12 of 35 us. A later fit puts
 * a record at 4.6 us and a heartbeat at 83 us, time-based, which this per-step term does not
 * separate: it overstates the scheduler of a large cluster. */
#define SCHED_RECORD_SHARE 0.35

/* scheduler_us: sched_us a member a step at one STATS message an iteration; above
 * ORDO_STATS_AUTO_WORKERS workers the workers' auto [output] stats_every puts ceil(W / 500)
 * iterations in one message, which divides the per-message part */
static double scheduler_us(const ordo__cluster_t *c)
{
    int every = c->workers > ORDO_STATS_AUTO_WORKERS
                    ? (c->workers + ORDO_STATS_AUTO_WORKERS - 1) / ORDO_STATS_AUTO_WORKERS
                    : 1;
    return c->workers * c->sched_us * (SCHED_RECORD_SHARE + (1 - SCHED_RECORD_SHARE) / every);
}

static const char *limit_names[] = {"compute", "worker link", "server link", "server cpu",
                                    "scheduler"};

double ordo__cluster_wire_bytes(ordo__cluster_wire_t w, double d, int answer)
{
    if (w < 0 || w >= ORDO_CLUSTER_WIRE_COUNT) return 4.0;
    if (answer) return wires[w].answer_bytes;
    return w == ORDO_CLUSTER_WIRE_TOPK ? wires[w].push_bytes * d : wires[w].push_bytes;
}

double ordo__cluster_wire_convert_ns(ordo__cluster_wire_t w)
{
    return w >= 0 && w < ORDO_CLUSTER_WIRE_COUNT ? wires[w].convert_ns : 0;
}

const char *ordo__cluster_wire_name(ordo__cluster_wire_t w)
{
    return w >= 0 && w < ORDO_CLUSTER_WIRE_COUNT ? wires[w].name : "?";
}

int ordo__cluster_wire_parse(const char *s, ordo__cluster_wire_t *out)
{
    for (int w = 0; s && w < ORDO_CLUSTER_WIRE_COUNT; w++)
        if (!strcmp(s, wires[w].name)) {
            *out = (ordo__cluster_wire_t)w;
            return 0;
        }
    return ORDO_ERR_INVAL;
}

const char *ordo__cluster_limit_name(ordo__cluster_limit_t l)
{
    return l >= 0 && l <= ORDO_CLUSTER_LIMIT_SCHEDULER ? limit_names[l] : "?";
}

void ordo__cluster_defaults(ordo__cluster_t *c)
{
    *c = (ordo__cluster_t){.workers = 1,
                          .workers_per_host = 1,
                          .server_hosts = 1,
                          .worker_bps = 10e9,
                          .server_bps = 10e9,
                          .latency_us = 50,
                          .msg_us = 20,
                          .compute_scale = 1,
                          .wire = ORDO_CLUSTER_WIRE_NONE,
                          .topk_density = 0.01,
                          .convert_ns = -1,
                          .intra_ns = 1.0,
                          .server_ns = 4.0,
                          .sched_us = 35,
                          .link_efficiency = 0.93,
                          .partition_bytes = 4 << 20,
                          .slice_bytes = -1,
                          .credit_bytes = -1};
}

int ordo__cluster_check(const ordo__cluster_t *c)
{
    if (!c) return ordo__error_set(ORDO_ERR_INVAL, "cluster: no cluster");
    if (c->workers < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "--workers: %d workers (at least 1)", c->workers);
    if (c->workers_per_host < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "--workers-per-host: %d (at least 1)",
                              c->workers_per_host);
    if (c->workers_per_host > c->workers)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "--workers-per-host: %d workers per host but only %d workers",
                              c->workers_per_host, c->workers);
    if (c->workers % c->workers_per_host)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "--workers-per-host: %d does not divide the %d workers into whole "
                              "hosts", c->workers_per_host, c->workers);
    if (c->server_hosts < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "--server-hosts: %d (at least 1)", c->server_hosts);
    if (c->server_hosts > c->workers)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "--server-hosts: %d server hosts for %d workers (more hosts than "
                              "workers)", c->server_hosts, c->workers);
    if (!(c->worker_bps > 0) || !isfinite(c->worker_bps))
        return ordo__error_set(ORDO_ERR_INVAL, "--worker-link: a link of %g bit/s (must be > 0)",
                              c->worker_bps);
    if (!(c->server_bps > 0) || !isfinite(c->server_bps))
        return ordo__error_set(ORDO_ERR_INVAL, "--server-link: a link of %g bit/s (must be > 0)",
                              c->server_bps);
    if (!(c->link_efficiency > 0 && c->link_efficiency <= 1))
        return ordo__error_set(ORDO_ERR_INVAL, "--link-efficiency: %g (must be in (0, 1])",
                              c->link_efficiency);
    if (!(c->latency_us >= 0) || !(c->msg_us >= 0) || !(c->compute_scale > 0) ||
        !(c->intra_ns >= 0) || !(c->server_ns >= 0) || !(c->sched_us >= 0))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "--latency-us, --msg-us, --compute-scale, --intra-ns, --server-ns, "
                              "--sched-us: must be numbers >= 0 (compute scale > 0)");
    if (c->wire < 0 || c->wire >= ORDO_CLUSTER_WIRE_COUNT)
        return ordo__error_set(ORDO_ERR_INVAL, "--compression: unknown codec %d", (int)c->wire);
    if (c->wire == ORDO_CLUSTER_WIRE_TOPK && !(c->topk_density > 0 && c->topk_density <= 1))
        return ordo__error_set(ORDO_ERR_INVAL, "--density: %g (must be in (0, 1])",
                              c->topk_density);
    if (c->groups && c->workers_per_host < 2)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "--groups: host groups need at least 2 workers per host");
    if (c->groups && c->wire == ORDO_CLUSTER_WIRE_TOPK)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "--groups: host groups do not take sparse (topk) pushes");
    if (c->partition_bytes < 1024)
        return ordo__error_set(ORDO_ERR_INVAL, "--partition-bytes: %lld (at least 1024)",
                              (long long)c->partition_bytes);
    return 0;
}

/* the key map of m over the server hosts, as the scheduler cuts it */
static int key_map(const ordo__model_t *m, const ordo__cluster_t *c, ordo__keys_t **out)
{
    int64_t *numel = malloc(sizeof *numel * (size_t)(m->n_params ? m->n_params : 1));
    if (!numel) return ordo__error_set(ORDO_ERR_NOMEM, "cluster: out of memory");
    for (int p = 0; p < m->n_params; p++)
        numel[p] = m->params[p].numel;
    int rc = ordo__keys_partition(numel, m->n_params, m->dtype_size, c->partition_bytes, 0,
                                 c->server_hosts, out);
    free(numel);
    return rc;
}

/* the worker CPU a codec and a host group add to each op: an op's gradients are encoded (and
 * reduced inside the host) after its backward, its values decoded (and gathered) before its
 * forward */
static void add_conversions(const ordo__model_t *m, const ordo__cluster_t *c,
                            ordo__oracle_times_t *t)
{
    double conv = c->convert_ns >= 0 ? c->convert_ns : ordo__cluster_wire_convert_ns(c->wire);
    double dec = c->wire == ORDO_CLUSTER_WIRE_TOPK ? 0 : conv; /* topk answers are dense */
    double intra = c->groups ? c->intra_ns : 0;
    for (int j = 0; j < m->n_ops; j++) {
        t->fwd_us[j] *= c->compute_scale;
        t->bwd_us[j] *= c->compute_scale;
        for (int k = 0; k < m->ops[j].n_params; k++) {
            const ordo__model_param_t *p = &m->params[m->ops[j].params[k]];
            if (p->first_op != j) continue;
            t->bwd_us[j] += (double)p->numel * (conv + intra) / 1e3;
            t->fwd_us[j] += (double)p->numel * (dec + intra) / 1e3;
        }
    }
}

/* the resources' times and bytes per step; fills everything of r but the step */
static void resources(const ordo__model_t *m, const ordo__cluster_t *c, const ordo__keys_t *k,
                      const ordo__oracle_times_t *t, ordo__cluster_result_t *r)
{
    int lf = c->groups ? 1 : c->workers_per_host; /* pushers on one host link */
    double push_b = ordo__cluster_wire_bytes(c->wire, c->topk_density, 0);
    double ans_b = ordo__cluster_wire_bytes(c->wire, c->topk_density, 1);
    double values = (double)ordo__model_total_numel(m), share = 0;
    for (int s = 0; s < k->n_servers; s++)
        share = fmax(share, (double)k->server_bytes[s] / (double)m->dtype_size);
    r->compute_us = 0;
    for (int j = 0; j < m->n_ops; j++)
        r->compute_us += t->fwd_us[j] + t->bwd_us[j];
    r->worker_bytes_out = lf * values * push_b;
    r->worker_bytes_in = lf * values * ans_b;
    r->server_bytes_in = r->pushers * share * push_b;
    r->server_bytes_out = r->pushers * share * ans_b;
    double eff = c->link_efficiency;
    r->worker_link_us =
        fmax(r->worker_bytes_out, r->worker_bytes_in) * 8e6 / (c->worker_bps * eff);
    r->server_link_us =
        fmax(r->server_bytes_in, r->server_bytes_out) * 8e6 / (c->server_bps * eff);
    double conv = c->convert_ns >= 0 ? c->convert_ns : ordo__cluster_wire_convert_ns(c->wire);
    r->server_cpu_us = r->pushers * share * (c->server_ns + 2 * conv) / 1e3;
    r->scheduler_us = scheduler_us(c);
    const double by[] = {r->compute_us, r->worker_link_us, r->server_link_us, r->server_cpu_us,
                         r->scheduler_us};
    r->limit = ORDO_CLUSTER_LIMIT_COMPUTE;
    for (int i = 1; i < 5; i++)
        if (by[i] > by[r->limit]) r->limit = (ordo__cluster_limit_t)i;
    r->bound_us = by[r->limit];
}

int ordo__cluster_predict(const ordo__model_t *m, const ordo__cluster_t *c,
                         ordo__cluster_result_t *out)
{
    int rc = ordo__cluster_check(c);
    if (rc) return rc;
    if (!m || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__cluster_predict: bad arguments");
    int hosts = c->workers / c->workers_per_host;
    int lf = c->groups ? 1 : c->workers_per_host;
    ordo__cluster_result_t r = {.pushers = c->groups ? hosts : c->workers};
    /* the hosts' links as each pusher and each server sees them: a worker host's link is
     * shared by its pushers, the servers' links together take every pusher's pushes, and the
     * worker hosts' links together take every server's answers */
    double wbps = c->worker_bps * c->link_efficiency, sbps = c->server_bps * c->link_efficiency;
    double push_bps = fmin(wbps / lf, c->server_hosts * sbps / r.pushers);
    double srv_bps = fmin(sbps, hosts * wbps / c->server_hosts);
    ordo__keys_t *keys = NULL;
    ordo__oracle_times_t *t = NULL;
    int *channel = calloc((size_t)(m->n_params ? m->n_params : 1), sizeof *channel);
    int *prio = calloc((size_t)(m->n_params ? m->n_params : 1), sizeof *prio);
    if (!channel || !prio) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "cluster: out of memory");
        goto done;
    }
    if ((rc = key_map(m, c, &keys)) != 0) goto done;
    if ((rc = ordo__oracle_times_new(m, push_bps, c->latency_us, NULL, &t)) != 0) goto done;
    add_conversions(m, c, t);
    for (int p = 0; p < m->n_params; p++)
        channel[p] = keys->slices[keys->first_slice[p]].server;
    if (c->ordered &&
        (rc = ordo__order_plan(m, channel, c->server_hosts, push_bps, c->latency_us,
                              ORDO_POLICY_TAO, prio)) != 0)
        goto done;
    /* as the scheduler: fifo keeps 1 MiB slices and 1 ms of link time as credit (at least
     * 64 KiB); an order tunes both on the model, no credit under that floor */
    int64_t floor = push_bps / 8e3 > 65536 ? (int64_t)(push_bps / 8e3) : 65536;
    ordo__step_opts_t so = {.n_workers = r.pushers,
                           .n_channels = c->server_hosts,
                           .bandwidth_bps = push_bps,
                           .server_bandwidth_bps = srv_bps,
                           .latency_us = c->latency_us,
                           .msg_us = c->msg_us,
                           .slice_bytes = c->slice_bytes >= 0 ? c->slice_bytes
                                          : c->ordered        ? -1
                                                              : 1 << 20,
                           .credit_bytes = c->credit_bytes >= 0 ? c->credit_bytes
                                           : c->ordered         ? -1
                                                                : floor,
                           /* a host group's owner asks for the next value with its push
                            * (fused); flat, an order pulls early and fifo at the start */
                           .early_pulls = c->ordered || c->groups,
                           .credit_floor_bytes = floor,
                           .push_wire_scale = ordo__cluster_wire_bytes(c->wire, c->topk_density,
                                                                      0) / 4.0,
                           .answer_wire_scale =
                               ordo__cluster_wire_bytes(c->wire, c->topk_density, 1) / 4.0,
                           .keys = keys};
    if ((rc = ordo__step_tune_auto(m, t, c->ordered ? prio : NULL, &so)) != 0) goto done;
    ordo__step_result_t st;
    if ((rc = ordo__step_simulate(m, t, c->ordered ? prio : NULL, &so, &st)) != 0) goto done;
    resources(m, c, keys, t, &r);
    /* the step model has no server CPU and no scheduler. A server receives, sums and answers
     * on one thread, so its CPU adds to the step rather than overlapping its link (measured,
     * docs/planning.md); the scheduler's work runs beside the step and only bounds it */
    r.step_us = fmax(st.step_us + r.server_cpu_us, r.scheduler_us);
    r.slice_bytes = so.slice_bytes;
    r.credit_bytes = so.credit_bytes;
    *out = r;
done:
    ordo__oracle_times_destroy(&t);
    ordo__keys_destroy(&keys);
    free(prio);
    free(channel);
    return rc;
}
