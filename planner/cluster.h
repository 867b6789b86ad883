/* cluster: a prediction of one steady-state training step of a whole parameter-server cluster
 * (W workers, L per host, S server hosts, a link rate for worker hosts and one for server
 * hosts, a wire codec, host groups on or off, an order or none), built on the training step
 * model (planner/step.c): the hosts' shared links become each pusher's and each server's
 * effective rate, the codec scales the bytes and adds its conversions to the op times. It
 * also gives the resource bound, the bytes on each kind of link and the resource that limits
 * the step (docs/planning.md). */
#ifndef ORDO_CLUSTER_H
#define ORDO_CLUSTER_H

#include <stdint.h>

#include "core/model.h"

/* What travels on the wire (the codecs of [push] wire, issue 37). */
typedef enum ordo__cluster_wire {
    ORDO_CLUSTER_WIRE_NONE,   /* float32: 4 bytes a value */
    ORDO_CLUSTER_WIRE_BF16,   /* 2 bytes a value */
    ORDO_CLUSTER_WIRE_ONEBIT, /* a sign bit a value and a scale a tensor; values back the same */
    ORDO_CLUSTER_WIRE_TOPK,   /* k of n values as (index, value), 8 k / n bytes a value; the
                                 servers' answers are dense float32 (a sum of W top-k is not
                                 sparse) */
    ORDO_CLUSTER_WIRE_COUNT
} ordo__cluster_wire_t;

/* One cluster and its settings: every field is fixed here (planner/cluster_plan.h chooses
 * the ones a user leaves auto). */
typedef struct ordo__cluster {
    int workers;             /* W, at least 1 */
    int workers_per_host;    /* L, divides W */
    int server_hosts;        /* S, one server process each, 1..W */
    double worker_bps;       /* a worker host's link, each way */
    double server_bps;       /* a server host's link, each way */
    double latency_us;       /* one way, per message */
    double msg_us;           /* link time a message costs beyond its bytes */
    double compute_scale;    /* the profile's op times times this */
    ordo__cluster_wire_t wire;
    double topk_density;     /* topk: k / n, in (0, 1] */
    int groups;              /* 1: the L workers of a host sum inside it first (needs L > 1) */
    int ordered;             /* 1: a TAO order, tuned slices and credit; 0: fifo */
    double convert_ns;       /* worker CPU per value to encode or decode the wire (< 0: the
                                codec's default, ordo__cluster_wire_convert_ns) */
    double intra_ns;         /* a host group's reduce and gather, per value */
    double server_ns;        /* a server's CPU per value per pusher (decode and sum) */
    double sched_us;         /* the scheduler's CPU per member per step */
    double link_efficiency;  /* payload over link rate that TCP gets through a link, (0, 1] */
    int64_t partition_bytes; /* tensors above this are chunks spread over the servers */
    int64_t slice_bytes;     /* -1: tuned with an order, 1 MiB with fifo (as the scheduler) */
    int64_t credit_bytes;    /* -1: tuned with an order, 1 ms of link with fifo */
} ordo__cluster_t;

/* The resources of a step. */
typedef enum ordo__cluster_limit {
    ORDO_CLUSTER_LIMIT_COMPUTE,
    ORDO_CLUSTER_LIMIT_WORKER_LINK,
    ORDO_CLUSTER_LIMIT_SERVER_LINK,
    ORDO_CLUSTER_LIMIT_SERVER_CPU,
    ORDO_CLUSTER_LIMIT_SCHEDULER
} ordo__cluster_limit_t;

/* The predicted step. Link times are of the busier direction; bytes are per step. */
typedef struct ordo__cluster_result {
    double step_us;            /* predicted steady-state step */
    double bound_us;           /* the busiest resource's time: no order gives less */
    double compute_us;         /* a worker's forward + backward (conversions included) */
    double worker_link_us;     /* a worker host's link */
    double server_link_us;     /* the busiest server host's link */
    double server_cpu_us;      /* the busiest server's CPU */
    double scheduler_us;       /* the scheduler's CPU */
    double worker_bytes_out;   /* a worker host's link out (its pushes) */
    double worker_bytes_in;    /* a worker host's link in (the values) */
    double server_bytes_in;    /* the busiest server host's link in (pushes) */
    double server_bytes_out;   /* the busiest server host's link out (answers) */
    ordo__cluster_limit_t limit; /* the busiest resource */
    int pushers;               /* what the servers see: W, or the W / L host groups */
    int64_t slice_bytes;       /* the slice and credit the run would use */
    int64_t credit_bytes;
} ordo__cluster_result_t;

/* ordo__cluster_defaults fills c with one worker, one server host, 10gbit links, 50 us latency,
 * 20 us a message, no codec, no groups, fifo, the codec's conversion cost, a server's CPU of
 * 4 ns per value per pusher and a link efficiency of 0.93 (both measured, docs/planning.md),
 * 4 MiB partitions. */
void ordo__cluster_defaults(ordo__cluster_t *c);

/* ordo__cluster_check returns 0 when c is a cluster that can exist, else ORDO_ERR_INVAL with
 * a message naming the field (its command-line name: "--workers-per-host: ..."). */
int ordo__cluster_check(const ordo__cluster_t *c);

/* ordo__cluster_predict models one step of m on cluster c and fills *out (written only on
 * success). */
int ordo__cluster_predict(const ordo__model_t *m, const ordo__cluster_t *c,
                         ordo__cluster_result_t *out);

/* ordo__cluster_wire_bytes returns the bytes a value costs on the wire: pushes (answer 0) or
 * the servers' answers (answer 1), for topk at density d. */
double ordo__cluster_wire_bytes(ordo__cluster_wire_t w, double d, int answer);

/* ordo__cluster_wire_convert_ns returns the codec's default CPU cost per value of one encode
 * or decode (an assumption, docs/planning.md: not measured). */
double ordo__cluster_wire_convert_ns(ordo__cluster_wire_t w);

/* ordo__cluster_wire_name returns "none", "bf16", "onebit" or "topk"; ordo__cluster_wire_parse
 * reads one of those (0) or returns ORDO_ERR_INVAL. */
const char *ordo__cluster_wire_name(ordo__cluster_wire_t w);
int ordo__cluster_wire_parse(const char *s, ordo__cluster_wire_t *out);

/* ordo__cluster_limit_name returns "compute", "worker link", "server link", "server cpu" or
 * "scheduler". */
const char *ordo__cluster_limit_name(ordo__cluster_limit_t l);

#endif
