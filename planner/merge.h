/* merge: the merged-gradient planner (MG-WFBP, Shi, Chu and Li). It derives the layers of a
 * model and their backward timeline, evaluates the iteration time of any grouping of
 * consecutive layers' gradients into messages under the cost model a + b * bytes (and a
 * receiver stage c * bytes), computes
 * groupings (wfbp, all, the paper's Algorithm 1 "mgwfbp", the exact dynamic program
 * "optimal", fixed buffers "bytes:N"), reads and writes ordo-merge/1 plans, and fits a and b
 * from measured round trips. Times are in seconds, sizes in bytes. docs/merging.md explains
 * the model and the algorithms. */
#ifndef ORDO_MERGE_H
#define ORDO_MERGE_H

#include <stdint.h>
#include <stdio.h>

#include "common/keys.h"
#include "core/merge_cost.h"
#include "core/model.h"

/* ordo__merge_mgwfbp runs the paper's Algorithm 1 (journal version) over L layers given in
 * backward order (tb_s[0] is the paper's layer L): layer l merges into l-1 when
 * tau_b(l-1) + t_b(l-1) - tau_c(l) < a, start times recomputed after each merge. It is the
 * paper's algorithm on the paper's model: it does not see a receiver stage c. Writes
 * layer_group[0..L) and returns the number of groups, or a negative error. */
int ordo__merge_mgwfbp(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                      int *layer_group);

/* ordo__merge_optimal finds a grouping of L layers (backward order) with the least iteration
 * time under the two-stage model (a, b, c and pieces, one item per layer or NULL, as in
 * ordo__merge_comm_times) by a dynamic program over layer boundaries keeping the Pareto
 * front of (link free, receiver free) per prefix (with c = 0, the O(L^2) program over the
 * earliest end). Among groupings of least time it takes those with the least time when a,
 * b and c are (1 + margin) times larger (margin >= 0; 0: no such rule), the plans that keep
 * slack for communication slower than calibrated; among those one with the fewest groups
 * (fewer messages cost less CPU on workers and servers; the program with an exact
 * count; the margin's program and this one each stop after a budget of steps and keep what
 * they have). Writes layer_group[0..L) and returns the number of groups, or a negative
 * error. */
int ordo__merge_optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                       double c, double margin, const ordo__merge_pieces_t *pieces,
                       int *layer_group);

/* ordo__merge_optimal3 is ordo__merge_optimal under the three-stage model of
 * ordo__merge_comm_times3 (p, pm >= 0: the pulls; both 0 is ordo__merge_optimal): the Pareto fronts
 * then hold the link's, the receiver's and each pull resource's end, pruned by a lower bound
 * of the iteration from each state and by the best of two simple groupings. When the pulls
 * or the compute bound the iteration many groupings tie and the fronts can grow large: past
 * a budget of steps (about 1e9; densenet121 with 2 servers needs 4e8, about a second) it
 * returns the best under the model, of equal times the one of fewer groups, of one group per
 * layer, the two-stage plan, and the same program with one pull resource (the busiest
 * server's share) - no longer the exact optimum. With pulls the margin's program has 2(2 + P)
 * ends and usually passes its budget; the margin is then not used. */
int ordo__merge_optimal3(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                        double c, double p, double pm, double margin,
                        const ordo__merge_pieces_t *pieces, int *layer_group);

/* ---- plans ---------------------------------------------------------------------------- */

typedef enum ordo__merge_algo {
    ORDO_MERGE_WFBP,    /* one message per layer, as soon as it is ready */
    ORDO_MERGE_ALL,     /* one message after backward (SyncEASGD, "single layer") */
    ORDO_MERGE_MGWFBP,  /* the paper's Algorithm 1 */
    ORDO_MERGE_OPTIMAL, /* the exact dynamic program */
    ORDO_MERGE_BYTES,   /* fixed fusion buffer of N bytes (PyTorch DDP, Horovod) */
} ordo__merge_algo_t;

/* ordo__merge_algo_parse reads "wfbp" (or "none"), "all", "mgwfbp", "optimal" or "bytes:N"
 * (N as ordo__conf_parse_bytes reads it, > 0); *bucket_bytes is N for bytes:N, else 0. */
int ordo__merge_algo_parse(const char *text, ordo__merge_algo_t *algo, int64_t *bucket_bytes);

/* ordo__merge_algo_name returns the static name of algo ("optimal", "bytes", ...). */
const char *ordo__merge_algo_name(ordo__merge_algo_t algo);

/* How the run lays out its keys, which decides a group's messages: the key map of
 * servers servers with chunks of partition_bytes cut into segments of segment_bytes
 * (common/keys.h), and messages of at most partition_bytes, as the run's scheduler tells
 * the workers ([order] partition_bytes). servers = 0: a group is one message (the paper's
 * model). */
typedef struct ordo__merge_layout {
    int servers;
    int64_t partition_bytes, segment_bytes;
} ordo__merge_layout_t;

/* A merge plan: which parameters travel together, in push order. */
typedef struct ordo__merge_plan {
    char *model;                /* model name */
    double a, b, c;             /* the cost model the plan was made for */
    double pull;                /* and its pull stage (ordo__merge_comm_times3; 0: none), */
    double pull_msg;            /* per byte and per pulled value */
    double margin;              /* optimal's tie rule (ordo__merge_optimal) */
    ordo__merge_layout_t layout; /* and the layout (servers = 0: one message per group) */
    double predicted_iter_s;    /* end of the last push after backward starts, under a, b, c */
    int n_params;
    int n_groups;
    int *order;          /* [n_params] param indices in push order */
    int *group_start;    /* [n_groups + 1] offsets of each group in order */
    int *group_of_param; /* [n_params] group of each param (by param index) */
} ordo__merge_plan_t;

/* ordo__merge_plan_compute plans m's pushes with algo (bucket_bytes for ORDO_MERGE_BYTES)
 * under the cost model a + b * bytes on the link and c * bytes at the receiver (a, b, c >= 0,
 * finite; see ordo__merge_comm_times) per message, a group's messages as layout cuts it
 * (NULL or servers = 0: one message per group); margin (>= 0) is optimal's tie rule
 * (ordo__merge_optimal). *out is the caller's. */
int ordo__merge_plan_compute(const ordo__model_t *m, ordo__merge_algo_t algo, int64_t bucket_bytes,
                            double a, double b, double c, double margin,
                            const ordo__merge_layout_t *layout, ordo__merge_plan_t **out);

/* ordo__merge_plan_compute3 is ordo__merge_plan_compute with the pull stage p, pm (>= 0, finite)
 * of ordo__merge_comm_times3: optimal plans under it, and every plan's predicted_iter_s counts
 * it (plan->pull = p, plan->pull_msg = pm). */
int ordo__merge_plan_compute3(const ordo__model_t *m, ordo__merge_algo_t algo, int64_t bucket_bytes,
                             double a, double b, double c, double p, double pm, double margin,
                             const ordo__merge_layout_t *layout, ordo__merge_plan_t **out);

/* ordo__merge_plan_iter_s returns the iteration time of plan p's grouping for model m under
 * the cost model a, b, c (p's own need not be these), p's pull stage and p's layout; NAN on
 * an error. */
double ordo__merge_plan_iter_s(const ordo__merge_plan_t *p, const ordo__model_t *m, double a, double b,
                              double c);

/* ordo__merge_plan_messages returns how many messages a worker sends per iteration under
 * plan p (its layout's messages; the groups without one), or a negative error. */
int ordo__merge_plan_messages(const ordo__merge_plan_t *p, const ordo__model_t *m);

/* ordo__merge_plan_isolate splits p's groups so that every parameter of m marked occasional
 * travels alone (a group waits for all its parameters, and such a one is not pushed every
 * iteration); the order stays. Returns the number of groups split, or a negative error. */
int ordo__merge_plan_isolate(ordo__merge_plan_t *p, const ordo__model_t *m);

/* ordo__merge_plan_destroy frees *p and sets *p = NULL; NULL-safe. */
void ordo__merge_plan_destroy(ordo__merge_plan_t **p);

/* ordo__merge_plan_to_json writes p as ordo-merge/1 text (one group per line) into a new
 * string *out that the caller frees. */
int ordo__merge_plan_to_json(const ordo__merge_plan_t *p, const ordo__model_t *m, char **out);

/* ordo__merge_plan_load_string reads an ordo-merge/1 plan for model m and validates it: the
 * plan's model name is m's, every parameter appears exactly once, groups are non-empty and
 * follow backward order (a parameter's layer never comes before the previous one's; the
 * parameters of one layer may be split between adjacent groups), a, b and c (0 when absent)
 * are finite and >= 0, the layout (servers, partition_bytes, segment_bytes; absent: none)
 * is one the run accepts. predicted_iter_s is recomputed from a, b, c, the layout and m.
 * Unknown keys are ignored. Errors read "NAME: $.groups[2][0]: reason". *out is the
 * caller's. */
int ordo__merge_plan_load_string(const char *json, const char *name, const ordo__model_t *m,
                                ordo__merge_plan_t **out);

/* ordo__merge_plan_load_file is ordo__merge_plan_load_string over the file at path. */
int ordo__merge_plan_load_file(const char *path, const ordo__model_t *m, ordo__merge_plan_t **out);

#endif
