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
#include "scheduler/model.h"

/* ---- the timeline of a model ---------------------------------------------------------- */

/* The layers of MG-WFBP are the ops that own parameters, in backward order (layer 0 runs
 * first in backward). A parameter read by several ops is owned by the first of them in
 * forward order, whose backward completes its gradient. t_b of a layer is its op's bwd_us
 * plus the bwd_us of the ops without owned parameters that run between the previous layer's
 * op and it in backward order; for layer 0 that is every op after it in forward order (a
 * loss, say). Ops before the last layer's op in forward order run after every gradient is
 * ready and delay no push; they are not part of the model. Read-only for callers. */
typedef struct ordo_merge_timeline {
    int n_layers;
    int *layer_op;        /* [n_layers] op index of each layer */
    double *tb_s;         /* [n_layers] t_b of each layer */
    double *ready_s;      /* [n_layers] when its gradients are ready (tau_b + t_b) */
    int64_t *layer_bytes; /* [n_layers] bytes of the parameters it owns */
    int n_params;         /* = model->n_params */
    int *order;           /* [n_params] param indices in push order (backward order) */
    int *layer_first;     /* [n_layers + 1] offsets of each layer's params in order */
    int *layer_of_param;  /* [n_params] layer owning each param (by param index) */
} ordo_merge_timeline_t;

/* ordo_merge_timeline_new derives the layers of m; *out is the caller's (free with
 * ordo_merge_timeline_destroy). m must have passed ordo_model_check. */
int ordo_merge_timeline_new(const ordo_model_t *m, ordo_merge_timeline_t **out);

/* ordo_merge_timeline_destroy frees *t and sets *t = NULL; NULL-safe. */
void ordo_merge_timeline_destroy(ordo_merge_timeline_t **t);

/* ---- how a group travels: its messages ------------------------------------------------ */

/* The live system sends a group as messages per server holding part of it, in server order,
 * a server's share (its slices in push order) cut between slices into messages of at most
 * max_bytes; the slices of a chunked key (one with several slices) go in messages of their
 * own, runs of that key's consecutive slices (worker/merge_buf.c). ordo_merge_pieces_t
 * describes this for n_items items (layers or parameters) in push order: item i's slices are
 * first[i] .. first[i + 1] - 1, slice s on server[s] with bytes[s] bytes, in the order the
 * worker packs them; run_key[s] is its key when that key is chunked, else -1, and run_off[s]
 * its byte offset in that key (both NULL: no key is chunked). A plain struct that callers
 * may fill themselves. The functions below take NULL pieces to mean one message per group of
 * the group's bytes (the paper's model). */
typedef struct ordo_merge_pieces {
    int n_servers;     /* >= 1 */
    int64_t max_bytes; /* 0: no cut (but a chunked key's runs) */
    int n_items;
    int *first;       /* [n_items + 1] */
    int *server;      /* [first[n_items]] in [0, n_servers) */
    int64_t *bytes;   /* [first[n_items]] > 0 */
    int *run_key;     /* [first[n_items]] or NULL */
    int64_t *run_off; /* [first[n_items]] or NULL */
} ordo_merge_pieces_t;

/* ordo_merge_pieces_new describes the messages of timeline t's items under key map keys
 * (key k = parameter k, as in the run) with messages cut at max_bytes: one item per layer
 * when order is NULL, else one per parameter in order (t->n_params parameter indices, such
 * as t->order or a plan's order). *out is the caller's. */
int ordo_merge_pieces_new(const ordo_merge_timeline_t *t, const ordo_keys_t *keys,
                          int64_t max_bytes, const int *order, ordo_merge_pieces_t **out);

/* ordo_merge_pieces_destroy frees *p and sets *p = NULL; NULL-safe. */
void ordo_merge_pieces_destroy(ordo_merge_pieces_t **p);

/* ordo_merge_pieces_check reports (0 or ORDO_EINVAL with the reason) whether pc is well
 * formed for n items. */
int ordo_merge_pieces_check(const ordo_merge_pieces_t *pc, int n);

/* ---- the cost model over plain arrays ------------------------------------------------- */

/* ordo_merge_comm_times evaluates a grouping of n items (layers or parameters) in push
 * order: ready_s[i] (non-decreasing) is when item i's gradients are ready, bytes[i] its
 * size, group_of[i] its group (0 for the first item, then equal or one more than the
 * previous item's). The cost model has two stages, a flow shop: a group is ready when its
 * last item is; its messages (one of its bytes when pieces is NULL, else as pieces cuts it,
 * which must describe the same n items) hold the link one after the other from max(end of
 * the previous message on the link, the group's ready time) for a + b * bytes each, then
 * the receiver from max(the receiver's end of the previous message, the message's link
 * end) for c * bytes (the receivers' work, which starts only once the whole message has
 * arrived). With c = 0 and NULL pieces this is the paper's single-stage model. Fills
 * start_s (link start) and end_s (receiver end of its last message) per group (either may
 * be NULL) and returns the receiver's end of the last message (0 when n == 0; NAN when
 * out of memory). */
double ordo_merge_comm_times(int n, const double *ready_s, const int64_t *bytes,
                             const int *group_of, double a, double b, double c,
                             const ordo_merge_pieces_t *pieces, double *start_s, double *end_s);

/* ordo_merge_comm_times3 adds a third stage, the pulls of [order] pull = early (each value
 * asked for right after its push): once a group has been received (its receiver end), its
 * next values go back to the workers over the servers' links, each server's link one group
 * after another, holding it p * (the group's bytes on that server) (p the time per byte for
 * every worker's copy) + pm * (the group's slices on that server: each is one pulled value,
 * one message per worker, pm its per-message cost for all of them; without pieces one value
 * per item). With pieces of at most 4 servers each server's link is a resource of
 * its own; without pieces, and with more servers, one resource is charged the group's bytes
 * on its busiest server (all of them without pieces). The next forward pass needs its first
 * layers, in the last group, and the rest soon after, so the iteration ends when the last
 * pull does: that is what it returns (end_s per group is when its pulls end). p = pm = 0 is
 * ordo_merge_comm_times exactly. */
double ordo_merge_comm_times3(int n, const double *ready_s, const int64_t *bytes,
                              const int *group_of, double a, double b, double c, double p,
                              double pm, const ordo_merge_pieces_t *pieces, double *start_s,
                              double *end_s);

/* ordo_merge_grouping_valid reports (1 or 0) whether group_of[0..n) is a valid grouping. */
int ordo_merge_grouping_valid(int n, const int *group_of);

/* ordo_merge_mgwfbp runs the paper's Algorithm 1 (journal version) over L layers given in
 * backward order (tb_s[0] is the paper's layer L): layer l merges into l-1 when
 * tau_b(l-1) + t_b(l-1) - tau_c(l) < a, start times recomputed after each merge. It is the
 * paper's algorithm on the paper's model: it does not see a receiver stage c. Writes
 * layer_group[0..L) and returns the number of groups, or a negative error. */
int ordo_merge_mgwfbp(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                      int *layer_group);

/* ordo_merge_optimal finds a grouping of L layers (backward order) with the least iteration
 * time under the two-stage model (a, b, c and pieces, one item per layer or NULL, as in
 * ordo_merge_comm_times) by a dynamic program over layer boundaries keeping the Pareto
 * front of (link free, receiver free) per prefix (with c = 0, the O(L^2) program over the
 * earliest end). Among groupings of least time it takes those with the least time when a,
 * b and c are (1 + margin) times larger (margin >= 0; 0: no such rule), the plans that keep
 * slack for communication slower than calibrated; among those one with the fewest groups
 * (fewer messages cost less CPU on workers and servers; the program with an exact
 * count; the margin's program and this one each stop after a budget of steps and keep what
 * they have). Writes layer_group[0..L) and returns the number of groups, or a negative
 * error. */
int ordo_merge_optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                       double c, double margin, const ordo_merge_pieces_t *pieces,
                       int *layer_group);

/* ordo_merge_optimal3 is ordo_merge_optimal under the three-stage model of
 * ordo_merge_comm_times3 (p, pm >= 0: the pulls; both 0 is ordo_merge_optimal): the Pareto fronts
 * then hold the link's, the receiver's and each pull resource's end, pruned by a lower bound
 * of the iteration from each state and by the best of two simple groupings. When the pulls
 * or the compute bound the iteration many groupings tie and the fronts can grow large: past
 * a budget of steps (about 1e9; densenet121 with 2 servers needs 4e8, about a second) it
 * returns the best under the model, of equal times the one of fewer groups, of one group per
 * layer, the two-stage plan, and the same program with one pull resource (the busiest
 * server's share) - no longer the exact optimum. With pulls the margin's program has 2(2 + P)
 * ends and usually passes its budget; the margin is then not used. */
int ordo_merge_optimal3(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                        double c, double p, double pm, double margin,
                        const ordo_merge_pieces_t *pieces, int *layer_group);

/* ---- plans ---------------------------------------------------------------------------- */

typedef enum ordo_merge_algo {
    ORDO_MERGE_WFBP,    /* one message per layer, as soon as it is ready */
    ORDO_MERGE_ALL,     /* one message after backward (SyncEASGD, "single layer") */
    ORDO_MERGE_MGWFBP,  /* the paper's Algorithm 1 */
    ORDO_MERGE_OPTIMAL, /* the exact dynamic program */
    ORDO_MERGE_BYTES,   /* fixed fusion buffer of N bytes (PyTorch DDP, Horovod) */
} ordo_merge_algo_t;

/* ordo_merge_algo_parse reads "wfbp" (or "none"), "all", "mgwfbp", "optimal" or "bytes:N"
 * (N as ordo_conf_parse_bytes reads it, > 0); *bucket_bytes is N for bytes:N, else 0. */
int ordo_merge_algo_parse(const char *text, ordo_merge_algo_t *algo, int64_t *bucket_bytes);

/* ordo_merge_algo_name returns the static name of algo ("optimal", "bytes", ...). */
const char *ordo_merge_algo_name(ordo_merge_algo_t algo);

/* How the run lays out its keys, which decides a group's messages: the key map of
 * servers servers with chunks of partition_bytes cut into segments of segment_bytes
 * (common/keys.h), and messages of at most partition_bytes, as the run's scheduler tells
 * the workers ([order] partition_bytes). servers = 0: a group is one message (the paper's
 * model). */
typedef struct ordo_merge_layout {
    int servers;
    int64_t partition_bytes, segment_bytes;
} ordo_merge_layout_t;

/* A merge plan: which parameters travel together, in push order. */
typedef struct ordo_merge_plan {
    char *model;                /* model name */
    double a, b, c;             /* the cost model the plan was made for */
    double pull;                /* and its pull stage (ordo_merge_comm_times3; 0: none), */
    double pull_msg;            /* per byte and per pulled value */
    double margin;              /* optimal's tie rule (ordo_merge_optimal) */
    ordo_merge_layout_t layout; /* and the layout (servers = 0: one message per group) */
    double predicted_iter_s;    /* end of the last push after backward starts, under a, b, c */
    int n_params;
    int n_groups;
    int *order;          /* [n_params] param indices in push order */
    int *group_start;    /* [n_groups + 1] offsets of each group in order */
    int *group_of_param; /* [n_params] group of each param (by param index) */
} ordo_merge_plan_t;

/* ordo_merge_plan_compute plans m's pushes with algo (bucket_bytes for ORDO_MERGE_BYTES)
 * under the cost model a + b * bytes on the link and c * bytes at the receiver (a, b, c >= 0,
 * finite; see ordo_merge_comm_times) per message, a group's messages as layout cuts it
 * (NULL or servers = 0: one message per group); margin (>= 0) is optimal's tie rule
 * (ordo_merge_optimal). *out is the caller's. */
int ordo_merge_plan_compute(const ordo_model_t *m, ordo_merge_algo_t algo, int64_t bucket_bytes,
                            double a, double b, double c, double margin,
                            const ordo_merge_layout_t *layout, ordo_merge_plan_t **out);

/* ordo_merge_plan_compute3 is ordo_merge_plan_compute with the pull stage p, pm (>= 0, finite)
 * of ordo_merge_comm_times3: optimal plans under it, and every plan's predicted_iter_s counts
 * it (plan->pull = p, plan->pull_msg = pm). */
int ordo_merge_plan_compute3(const ordo_model_t *m, ordo_merge_algo_t algo, int64_t bucket_bytes,
                             double a, double b, double c, double p, double pm, double margin,
                             const ordo_merge_layout_t *layout, ordo_merge_plan_t **out);

/* ordo_merge_plan_iter_s returns the iteration time of plan p's grouping for model m under
 * the cost model a, b, c (p's own need not be these), p's pull stage and p's layout; NAN on
 * an error. */
double ordo_merge_plan_iter_s(const ordo_merge_plan_t *p, const ordo_model_t *m, double a, double b,
                              double c);

/* ordo_merge_plan_messages returns how many messages a worker sends per iteration under
 * plan p (its layout's messages; the groups without one), or a negative error. */
int ordo_merge_plan_messages(const ordo_merge_plan_t *p, const ordo_model_t *m);

/* ordo_merge_plan_destroy frees *p and sets *p = NULL; NULL-safe. */
void ordo_merge_plan_destroy(ordo_merge_plan_t **p);

/* ordo_merge_plan_to_json writes p as ordo-merge/1 text (one group per line) into a new
 * string *out that the caller frees. */
int ordo_merge_plan_to_json(const ordo_merge_plan_t *p, const ordo_model_t *m, char **out);

/* ordo_merge_plan_load_string reads an ordo-merge/1 plan for model m and validates it: the
 * plan's model name is m's, every parameter appears exactly once, groups are non-empty and
 * follow backward order (a parameter's layer never comes before the previous one's; the
 * parameters of one layer may be split between adjacent groups), a, b and c (0 when absent)
 * are finite and >= 0, the layout (servers, partition_bytes, segment_bytes; absent: none)
 * is one the run accepts. predicted_iter_s is recomputed from a, b, c, the layout and m.
 * Unknown keys are ignored. Errors read "NAME: $.groups[2][0]: reason". *out is the
 * caller's. */
int ordo_merge_plan_load_string(const char *json, const char *name, const ordo_model_t *m,
                                ordo_merge_plan_t **out);

/* ordo_merge_plan_load_file is ordo_merge_plan_load_string over the file at path. */
int ordo_merge_plan_load_file(const char *path, const ordo_model_t *m, ordo_merge_plan_t **out);

/* ---- calibration ---------------------------------------------------------------------- */

/* ordo_merge_fit_cost fits secs ~ a + b * bytes by least squares over n >= 2 measurements
 * (finite, >= 0, at least two distinct sizes; repeated sizes are fine). The fit is
 * constrained to a >= 0 and b >= 0: when the free fit breaks one, the other is refitted
 * alone. Writes *a and *b on success. */
int ordo_merge_fit_cost(const double *bytes, const double *secs, int n, double *a, double *b);

/* ordo_merge_median sorts v[0..n) (n >= 1) and returns its median (the mean of the middle two
 * for even n): the statistic calibrations fit, per size, over their repeats. */
double ordo_merge_median(double *v, int n);

/* The planner's cost model as calibrated from pushes (docs/merging.md, "What a and b mean
 * for a parameter server"), in seconds and seconds per byte. */
typedef struct ordo_merge_cost {
    double a, b, c;      /* the planner's a (per message), b (link, per byte), c (receivers) */
    double b_msg;        /* the pipelined fit's own slope (b is it or the link's, the larger) */
    double a_one, b_one; /* one push alone: its offset (median, as a) and per-byte slope */
} ordo_merge_cost_t;

/* ordo_merge_fit_planner fits the planner's cost model from n >= 2 message sizes bytes[i]
 * with the medians per_msg[i] (what one more pipelined push costs: a burst's time beyond one
 * push, per further push) and one[i] (one push alone, to its acknowledgement). b_msg is the
 * least-squares slope of per_msg, a the median of per_msg - b_msg * bytes (the small sizes
 * decide it; at least 0), b the larger of b_msg and the link's 8 / link_bps (link_bps 0: no
 * link), c one push's least-squares slope beyond b (at least 0). Fails as
 * ordo_merge_fit_cost does. */
int ordo_merge_fit_planner(const double *bytes, const double *per_msg, const double *one, int n,
                           double link_bps, ordo_merge_cost_t *out);

#endif
