/* merge_cost: the cost model of merged gradient pushes (MG-WFBP, Shi, Chu and Li): a
 * model's layers and their backward timeline, how a group travels as messages to the
 * servers, the iteration time of any grouping under a + b * bytes on the link and c * bytes
 * at the receivers (and the early pulls' stage), and the fit of a, b, c from measured pushes.
 * The planners that search groupings are planner/merge.h. Times are in seconds, sizes in
 * bytes; docs/merging.md explains the model. */
#ifndef ORDO_MERGE_COST_H
#define ORDO_MERGE_COST_H

#include <stdint.h>

#include "common/keys.h"
#include "core/model.h"

/* ---- the timeline of a model ---------------------------------------------------------- */

/* The layers of MG-WFBP are the ops that own parameters, in backward order (layer 0 runs
 * first in backward). A parameter read by several ops is owned by the first of them in
 * forward order, whose backward completes its gradient. t_b of a layer is its op's bwd_us
 * plus the bwd_us of the ops without owned parameters that run between the previous layer's
 * op and it in backward order; for layer 0 that is every op after it in forward order (a
 * loss, say). Ops before the last layer's op in forward order run after every gradient is
 * ready and delay no push; they are not part of the model. Read-only for callers. */
typedef struct ordo__merge_timeline {
    int n_layers;
    int *layer_op;        /* [n_layers] op index of each layer */
    double *tb_s;         /* [n_layers] t_b of each layer */
    double *ready_s;      /* [n_layers] when its gradients are ready (tau_b + t_b) */
    int64_t *layer_bytes; /* [n_layers] bytes of the parameters it owns */
    int n_params;         /* = model->n_params */
    int *order;           /* [n_params] param indices in push order (backward order) */
    int *layer_first;     /* [n_layers + 1] offsets of each layer's params in order */
    int *layer_of_param;  /* [n_params] layer owning each param (by param index) */
} ordo__merge_timeline_t;

/* ordo__merge_timeline_new derives the layers of m; *out is the caller's (free with
 * ordo__merge_timeline_destroy). m must have passed ordo__model_check. */
int ordo__merge_timeline_new(const ordo__model_t *m, ordo__merge_timeline_t **out);

/* ordo__merge_timeline_destroy frees *t and sets *t = NULL; NULL-safe. */
void ordo__merge_timeline_destroy(ordo__merge_timeline_t **t);

/* ---- how a group travels: its messages ------------------------------------------------ */

/* The live system sends a group as messages per server holding part of it, in server order,
 * a server's share (its slices in push order) cut between slices into messages of at most
 * max_bytes; the slices of a chunked key (one with several slices) go in messages of their
 * own, runs of that key's consecutive slices (client/merge_buf.c). ordo__merge_pieces_t
 * describes this for n_items items (layers or parameters) in push order: item i's slices are
 * first[i] .. first[i + 1] - 1, slice s on server[s] with bytes[s] bytes, in the order the
 * worker packs them; run_key[s] is its key when that key is chunked, else -1, and run_off[s]
 * its byte offset in that key (both NULL: no key is chunked). A plain struct that callers
 * may fill themselves. The functions below take NULL pieces to mean one message per group of
 * the group's bytes (the paper's model). */
typedef struct ordo__merge_pieces {
    int n_servers;     /* >= 1 */
    int64_t max_bytes; /* 0: no cut (but a chunked key's runs) */
    int n_items;
    int *first;       /* [n_items + 1] */
    int *server;      /* [first[n_items]] in [0, n_servers) */
    int64_t *bytes;   /* [first[n_items]] > 0 */
    int *run_key;     /* [first[n_items]] or NULL */
    int64_t *run_off; /* [first[n_items]] or NULL */
} ordo__merge_pieces_t;

/* ordo__merge_pieces_new describes the messages of timeline t's items under key map keys
 * (key k = parameter k, as in the run) with messages cut at max_bytes: one item per layer
 * when order is NULL, else one per parameter in order (t->n_params parameter indices, such
 * as t->order or a plan's order). *out is the caller's. */
int ordo__merge_pieces_new(const ordo__merge_timeline_t *t, const ordo__keys_t *keys,
                          int64_t max_bytes, const int *order, ordo__merge_pieces_t **out);

/* ordo__merge_pieces_destroy frees *p and sets *p = NULL; NULL-safe. */
void ordo__merge_pieces_destroy(ordo__merge_pieces_t **p);

/* ordo__merge_pieces_check reports (0 or ORDO_ERR_INVAL with the reason) whether pc is well
 * formed for n items. */
int ordo__merge_pieces_check(const ordo__merge_pieces_t *pc, int n);

/* ---- the cost model over plain arrays ------------------------------------------------- */

/* ordo__merge_comm_times evaluates a grouping of n items (layers or parameters) in push
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
double ordo__merge_comm_times(int n, const double *ready_s, const int64_t *bytes,
                             const int *group_of, double a, double b, double c,
                             const ordo__merge_pieces_t *pieces, double *start_s, double *end_s);

/* ordo__merge_comm_times3 adds a third stage, the pulls of [order] pull = early (each value
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
 * ordo__merge_comm_times exactly. */
double ordo__merge_comm_times3(int n, const double *ready_s, const int64_t *bytes,
                              const int *group_of, double a, double b, double c, double p,
                              double pm, const ordo__merge_pieces_t *pieces, double *start_s,
                              double *end_s);

/* ordo__merge_grouping_valid reports (1 or 0) whether group_of[0..n) is a valid grouping. */
int ordo__merge_grouping_valid(int n, const int *group_of);

/* ---- calibration ---------------------------------------------------------------------- */

/* ordo__merge_fit_cost fits secs ~ a + b * bytes by least squares over n >= 2 measurements
 * (finite, >= 0, at least two distinct sizes; repeated sizes are fine). The fit is
 * constrained to a >= 0 and b >= 0: when the free fit breaks one, the other is refitted
 * alone. Writes *a and *b on success. */
int ordo__merge_fit_cost(const double *bytes, const double *secs, int n, double *a, double *b);

/* ordo__merge_median sorts v[0..n) (n >= 1) and returns its median (the mean of the middle two
 * for even n): the statistic calibrations fit, per size, over their repeats. */
double ordo__merge_median(double *v, int n);

/* The planner's cost model as calibrated from pushes (docs/calibration.md, "What a and b mean
 * for a parameter server"), in seconds and seconds per byte. */
typedef struct ordo__merge_cost {
    double a, b, c;      /* the planner's a (per message), b (link, per byte), c (receivers) */
    double b_msg;        /* the pipelined fit's own slope (b is it or the link's, the larger) */
    double a_one, b_one; /* one push alone: its offset (median, as a) and per-byte slope */
} ordo__merge_cost_t;

/* ordo__merge_fit_planner fits the planner's cost model from n >= 2 message sizes bytes[i]
 * with the medians per_msg[i] (what one more pipelined push costs: a burst's time beyond one
 * push, per further push) and one[i] (one push alone, to its acknowledgement). b_msg is the
 * least-squares slope of per_msg, a the median of per_msg - b_msg * bytes (the small sizes
 * decide it; at least 0), b the larger of b_msg and the link's 8 / link_bps (link_bps 0: no
 * link), c one push's least-squares slope beyond b (at least 0). Fails as
 * ordo__merge_fit_cost does. */
int ordo__merge_fit_planner(const double *bytes, const double *per_msg, const double *one, int n,
                           double link_bps, ordo__merge_cost_t *out);

#endif
