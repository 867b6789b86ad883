/* order: priority order of a worker's parameter pulls (the TicTac method). It extracts each
 * forward op's communication dependencies (the recv ops it needs, transitively), computes
 * the properties M, P and M+ for a set of outstanding recvs, and assigns priorities with
 * TAO (timing-aware) and TIO (timing-independent); ordo__order_plan is the one call the
 * daemons use. It also assigns parameters to servers and reads and writes ordo-order/1
 * files (order_file.c). */
#ifndef ORDO_ORDER_H
#define ORDO_ORDER_H

#include <stdint.h>
#include <stdio.h>

#include "common/conf.h"
#include "core/model.h"
#include "planner/oracle.h"

/* The default wall-clock budget of the search policy. */
#define ORDO_ORDER_SEARCH_BUDGET_MS 2000

/* The dependency graph of one worker partition: forward ops, recv ops (one per parameter),
 * each recv's channel and the times of the oracle. Immutable once built. */
typedef struct ordo__order_graph ordo__order_graph_t;

/* ordo__order_graph_new builds the graph of model m with times t (NULL: the timing-
 * independent oracle, 1 per recv and 0 per op); channel[p] in [0, n_channels) is the
 * channel (server) of parameter p, channel NULL meaning one channel. Times are rounded to
 * whole nanoseconds so that sums are exact and ties are real ties. */
int ordo__order_graph_new(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *channel,
                         int n_channels, ordo__order_graph_t **out);

/* ordo__order_graph_destroy frees *g and sets *g = NULL; NULL-safe. */
void ordo__order_graph_destroy(ordo__order_graph_t **g);

/* ordo__order_depends reports whether op depends (directly or transitively) on the recv of
 * parameter param: 1 or 0. */
int ordo__order_depends(const ordo__order_graph_t *g, int op, int param);

/* ordo__order_properties computes the TicTac properties for the outstanding recvs
 * (outstanding[p] != 0; NULL means all): op_m[op] = M(op), p[r] = P(r) and m_plus[r] =
 * M+(r) (INFINITY when no op needs r together with another outstanding recv). Values are in
 * microseconds, or in recv counts for a timing-independent graph; entries of recvs not
 * outstanding read 0 and INFINITY. Any output array may be NULL. */
int ordo__order_properties(const ordo__order_graph_t *g, const unsigned char *outstanding,
                          double *op_m, double *p, double *m_plus);

/* ordo__order_tao assigns priority[p] = 0, 1, ... by the timing-aware ordering: repeatedly
 * update the properties and take the recv that goes first by the comparator (A before B iff
 * min(P_B, M_A) < min(P_A, M_B), ties by smaller M+, then by listed order). */
int ordo__order_tao(const ordo__order_graph_t *g, int *priority);

/* ordo__order_tio assigns priorities by the timing-independent ordering: the rank of M+
 * under the unit oracle, so recvs with equal M+ share a priority (ignores g's times). */
int ordo__order_tio(const ordo__order_graph_t *g, int *priority);

/* ordo__order_assign_channels puts each parameter on one of n_servers servers: largest
 * bytes first (ties in listed order), each to the least-loaded server so far (ties to the
 * lowest index). The live key partitioner uses the same rule for unsplit tensors. */
int ordo__order_assign_channels(const ordo__model_t *m, int n_servers, int *channel);

/* Options of ordo__order_plan_ex beyond the link and the policy. */
typedef struct ordo__order_opts {
    const ordo__oracle_t *oracle; /* measured times replacing the profile's, or NULL */
    int search_budget_ms;        /* search: wall-clock budget; 0 = none when search_evals
                                    is set, else ORDO_ORDER_SEARCH_BUDGET_MS */
    long search_evals;           /* search: stop after this many simulations (0 = no cap) */
    uint64_t seed;               /* search: random seed */
} ordo__order_opts_t;

/* ordo__order_opts_default fills o with no oracle, the default budget, no cap, seed 1. */
void ordo__order_opts_default(ordo__order_opts_t *o);

/* ordo__order_plan computes priority[p] for every parameter of m (0 goes first, equal values
 * may go in parallel) under policy TIO, TAO or SEARCH; LAYER gives each its listed place
 * (ByteScheduler's rule: the forward order, no plan); NONE and FIFO give every parameter
 * priority 0 (no order); FILE is refused (read it with ordo__order_read_file). channel and
 * n_channels as in ordo__order_graph_new; the link gives the transfer times. */
int ordo__order_plan(const ordo__model_t *m, const int *channel, int n_channels, double bandwidth_bps,
                    double latency_us, ordo__policy_t policy, int *priority);

/* ordo__order_plan_ex is ordo__order_plan with options (opts NULL = defaults). */
int ordo__order_plan_ex(const ordo__model_t *m, const int *channel, int n_channels,
                       double bandwidth_bps, double latency_us, ordo__policy_t policy,
                       const ordo__order_opts_t *opts, int *priority);

/* ordo__order_policy_name returns "none", "fifo", "tio", "tao", "search", "file" or "layer". */
const char *ordo__order_policy_name(ordo__policy_t policy);

/* ordo__order_write writes an ordo-order/1 document for model m (policy names how it was
 * made) to out, parameters in listed order. */
int ordo__order_write(FILE *out, const ordo__model_t *m, const char *policy, const int *priority);

/* ordo__order_read_string parses ordo-order/1 text for model m into priority[n_params]; it
 * rejects (ORDO_ERR_FORMAT, "NAME: $.priorities[3].param: reason") a wrong format or model
 * name, unknown keys, unknown or repeated parameters, a missing parameter, and priorities
 * that are not integers >= 0. name stands for the file in messages. */
int ordo__order_read_string(const char *json, const char *name, const ordo__model_t *m,
                           int *priority);

/* ordo__order_read_file is ordo__order_read_string over a file (ORDO_ERR_NOTFOUND when it cannot
 * be opened). */
int ordo__order_read_file(const char *path, const ordo__model_t *m, int *priority);

#endif
