/* plan: the scheduler's plan as the nodes read it. The scheduler writes the plan as JSON
 * (scheduler/runplan*.c: WELCOME's "plan", a REPLAN's answer, the PLAN after a start-up
 * calibration); ordo__plan_parse reads that text once, checks every member it knows and
 * gives a typed plan whose fields workers and servers read. Members only the summary reads
 * ("policy", "simulated", the merge planner's figures) are not kept. */
#ifndef ORDO_PLAN_H
#define ORDO_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sparse_wire.h"

/* "merge": the merge groups of merged pushes, in push order */
typedef struct {
    int n_groups;
    int *group_start;          /* n_groups + 1 offsets into order */
    int *order;                /* every key once, group after group */
    int64_t max_message_bytes; /* 0: no limit */
} ordo__plan_merge_t;

/* "intra": host groups (scheduler/runplan_intra.h) */
typedef struct {
    char backend[16]; /* "shm", "nccl", or "auto" until the worker chose */
    int local_size;   /* workers per group, >= 1 */
    char run[64];     /* the run's id: names the group's shared segments */
    bool overlap;     /* the forward pass need not wait for every all-gather */
} ordo__plan_intra_t;

/* one key's update rule ([model] trainer = declared) */
typedef enum {
    ORDO__PLAN_UPDATE_CONF = 0, /* null: the conf's [optimizer] */
    ORDO__PLAN_UPDATE_SGD,
    ORDO__PLAN_UPDATE_AVERAGE,
} ordo__plan_update_kind_t;

typedef struct {
    ordo__plan_update_kind_t kind;
    float lr, momentum, weight_decay; /* sgd */
} ordo__plan_update_t;

typedef struct ordo__plan {
    int n_keys;
    int *priorities; /* "priorities": n_keys, 0 first; NULL: no order (policies none, fifo) */
    char **params;   /* "params": n_keys tensor names, or NULL */
    bool has_merge;
    ordo__plan_merge_t merge;
    bool has_calibrate; /* "merge_calibrate": the groups wait for a start-up calibration */
    int calibrate_reps;
    int64_t calibrate_max_bytes;
    bool has_intra;
    ordo__plan_intra_t intra;
    bool has_sparse;
    ordo__sparse_plan_t sparse;    /* "sparse" (core/sparse_wire.h) */
    int64_t credit_bytes;         /* "step"."credit_bytes": the push credit; -1: none */
    char **compression;           /* "compression"."keys": n_keys codec specs, or NULL */
    ordo__plan_update_t *updates; /* "updates": n_keys rules, or NULL: the conf's for all */
} ordo__plan_t;

/* ordo__plan_parse reads the plan JSON text (len bytes; NULL or empty: a plan with no
 * members) of a cluster with n_keys keys and n_servers servers into a new *out (the caller
 * destroys it). ORDO_ERR_PROTO, with the member's JSON path and why, when the text is not a
 * JSON object or a member it knows is malformed. */
int ordo__plan_parse(const char *text, size_t len, int n_keys, int n_servers, ordo__plan_t **out);

/* ordo__plan_take_merge moves src's merge groups into dst (dst's calibration request is
 * answered: it no longer has one); src keeps no merge member. */
void ordo__plan_take_merge(ordo__plan_t *dst, ordo__plan_t *src);

/* ordo__plan_destroy frees *p and sets it to NULL; NULL-safe. */
void ordo__plan_destroy(ordo__plan_t **p);

#endif
