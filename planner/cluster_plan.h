/* cluster_plan: the settings a user leaves auto in `ordo-plan cluster` (server hosts, wire
 * codec, host groups, order), chosen on the cluster step model (planner/cluster.h), with the
 * reason for each: the predicted step of the choice against that of every alternative. */
#ifndef ORDO_CLUSTER_PLAN_H
#define ORDO_CLUSTER_PLAN_H

#include "core/model.h"
#include "planner/cluster.h"

/* Which settings to choose (1) rather than keep as given (0). */
typedef struct ordo__cluster_auto {
    int server_hosts; /* among 1, 2, 4, ... up to max_server_hosts, and the worker hosts */
    int wire;         /* none, bf16, onebit, topk (topk not with groups) */
    int groups;       /* on (where a host has 2 or more workers) or off */
    int order;        /* tao or fifo */
    int max_server_hosts; /* 0: twice the worker hosts, at most the workers */
} ordo__cluster_auto_t;

/* What a codec or a setting must gain to be chosen over the simpler one: bf16 3 %, a lossy
 * codec (onebit, topk: the optimizer sees other gradients) 10 %, an order 0.5 %; the fewest
 * server hosts within 3 % of the best step. */
#define ORDO_CLUSTER_GAIN_BF16    0.03
#define ORDO_CLUSTER_GAIN_LOSSY   0.10
#define ORDO_CLUSTER_GAIN_ORDER   0.005
#define ORDO_CLUSTER_GAIN_SERVERS 0.03

#define ORDO_CLUSTER_PLAN_WHY     4
#define ORDO_CLUSTER_WHY_CHARS    320

/* The recommendation. */
typedef struct ordo__cluster_plan {
    ordo__cluster_t chosen;        /* c with the auto settings filled in */
    ordo__cluster_result_t result; /* its predicted step */
    int n_why;
    char why[ORDO_CLUSTER_PLAN_WHY][ORDO_CLUSTER_WHY_CHARS]; /* one line per chosen setting */
    int evaluated;                /* clusters modelled */
} ordo__cluster_plan_t;

/* ordo__cluster_plan chooses the settings a marks auto for m on c (the others as c gives them)
 * and fills *out (on success only). c is checked as given, with the auto fields ignored. The
 * candidates are modelled at 1 MiB slices (unless c fixes them); the choice's result has its
 * slice and credit tuned. */
int ordo__cluster_plan(const ordo__model_t *m, const ordo__cluster_t *c, const ordo__cluster_auto_t *a,
                      ordo__cluster_plan_t *out);

#endif
