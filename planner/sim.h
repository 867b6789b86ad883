/* sim: a discrete-event simulator of one worker's iteration under a given transfer order
 * (docs/ordering.md, "The simulator's rules"), the makespan bounds U and L, the ordering
 * efficiency E = (U - t) / (U - L), and exhaustive enumeration of orders for small models.
 * The simulator is built once per model and link and then evaluates many orders quickly
 * (the search policy calls it tens of thousands of times). */
#ifndef ORDO_SIM_H
#define ORDO_SIM_H

#include "core/model.h"
#include "planner/oracle.h"

/* The largest number of recvs ordo__sim_exhaustive accepts (8! = 40320 orders). */
#define ORDO_SIM_EXHAUSTIVE_MAX 8

typedef struct ordo__sim ordo__sim_t;

/* What one simulated iteration gives. */
typedef struct ordo__sim_result {
    double makespan_us; /* t: end of the last op (or, with backward, of the last send) */
    double upper_us;    /* U: every op and transfer one after another */
    double lower_us;    /* L: the busiest resource's total */
    double efficiency;  /* E = (U - t) / (U - L); 1 when U = L */
} ordo__sim_result_t;

/* ordo__sim_new prepares a simulator of model m with times t; channel[p] in [0, n_channels)
 * is the channel of parameter p (NULL: one channel). With backward set, an iteration runs
 * the backward pass and the gradient sends too. The simulator copies what it needs from m
 * and t. Free with ordo__sim_destroy. */
int ordo__sim_new(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *channel,
                 int n_channels, int backward, ordo__sim_t **out);

/* ordo__sim_destroy frees *s and sets *s = NULL; NULL-safe. */
void ordo__sim_destroy(ordo__sim_t **s);

/* ordo__sim_n_params returns the number of recvs (parameters) the simulator orders. */
int ordo__sim_n_params(const ordo__sim_t *s);

/* ordo__sim_channel returns the channel of parameter p. */
int ordo__sim_channel(const ordo__sim_t *s, int p);

/* ordo__sim_run simulates one iteration in which each channel carries its recvs in
 * increasing priority (equal priorities in listed order) and fills *out. */
int ordo__sim_run(ordo__sim_t *s, const int *priority, ordo__sim_result_t *out);

/* ordo__sim_makespan simulates one iteration where recvs go in the order of seq (a
 * permutation of the parameters; each channel takes its own in that order) and returns the
 * makespan in microseconds. seq is not checked: the caller owns its correctness. */
double ordo__sim_makespan(ordo__sim_t *s, const int *seq);

/* ordo__sim_seq_from_priority writes into seq the parameters sorted by (priority, index). */
int ordo__sim_seq_from_priority(const ordo__sim_t *s, const int *priority, int *seq);

/* ordo__sim_efficiency returns E for makespan t under this simulator's U and L. */
double ordo__sim_efficiency(const ordo__sim_t *s, double t_us);

/* ordo__sim_trace copies the last simulated iteration's times (microseconds): recv_end per
 * parameter, op_start and op_end per op (forward); any array may be NULL. */
void ordo__sim_trace(const ordo__sim_t *s, double *recv_end, double *op_start, double *op_end);

/* ordo__sim_exhaustive simulates every order of the recvs (at most ORDO_SIM_EXHAUSTIVE_MAX)
 * and returns the smallest and largest makespans with an order reaching each (as
 * priorities; either array may be NULL). ORDO_ERR_RANGE when there are too many recvs. */
int ordo__sim_exhaustive(ordo__sim_t *s, double *best_us, int *best_priority, double *worst_us,
                        int *worst_priority);

#endif
