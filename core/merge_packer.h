/* merge_internal: what merge.c and merge_optimal.c share: the packer that cuts a group of
 * items into its messages as the workers do, and the arithmetic of sending them, so that the
 * program's times and the evaluation of its grouping agree to the bit. Not for callers
 * outside scheduler/merge*.c. */
#ifndef ORDO_MERGE_PACKER_H
#define ORDO_MERGE_PACKER_H

#include "core/merge_cost.h"

/* A group being packed: per server its messages so far, the last one open, and what the
 * receiver stage needs of them under up to two cost models (see ordo_merge_send). */
typedef struct ordo__merge_packer {
    const ordo__merge_pieces_t *pc;
    int nq;                  /* cost models: 1 or 2 */
    double a[2], b[2], c[2]; /* their costs */
    int *n;                  /* [n_servers] messages of each server (0: none yet) */
    int *run;                /* [n_servers] the open message's chunked key (-1: none) */
    int64_t *run_end;        /* [n_servers] and the byte its run ends at in that key */
    int64_t *closed, *open;  /* [n_servers] bytes of its closed messages, of the open one */
    int *slices;             /* [n_servers] its slices (each one pulled value per worker) */
    double *psi[2];          /* [n_servers] per model: max over its closed messages of psi */
    int count;               /* messages of the group */
    int64_t bytes;           /* of the group */
} ordo__merge_packer_t;

/* ordo__merge_packer_init sizes k for pieces pc (never NULL) and nq (1 or 2) cost models
 * (a[q], b[q], c[q]); 0 or ORDO_ERR_NOMEM. */
int ordo__merge_packer_init(ordo__merge_packer_t *k, const ordo__merge_pieces_t *pc, int nq,
                            const double *a, const double *b, const double *c);

/* ordo__merge_packer_free releases what init allocated. */
void ordo__merge_packer_free(ordo__merge_packer_t *k);

/* ordo__merge_packer_reset empties the group. */
void ordo__merge_packer_reset(ordo__merge_packer_t *k);

/* ordo__merge_packer_add appends item i's slices to the group. */
void ordo__merge_packer_add(ordo__merge_packer_t *k, int i);

/* The pull stage's resources (ordo_merge_pull): each server's link, one by one, when the
 * group's messages are known (pieces) and there are at most ORDO__MERGE_PULLS_MAX servers;
 * otherwise one resource charged the group's bytes on its busiest server (all of them without
 * pieces), which keeps the planner's fronts small. */
#define ORDO__MERGE_PULLS_MAX 4

/* ordo__merge_pull_resources returns how many resources the pull stage has for pieces pc
 * (NULL: one message per group). */
int ordo__merge_pull_resources(const ordo__merge_pieces_t *pc);

/* ordo__merge_times is ordo__merge_comm_times3 with the pull stage's resources given: P = 1
 * charges each group's bytes on its busiest server to one resource, P = pieces' servers
 * (<= ORDO__MERGE_PULLS_MAX) each server's to its own (ordo__merge_comm_times3 takes
 * ordo__merge_pull_resources(pieces)). */
double ordo__merge_times(int n, const double *ready_s, const int64_t *bytes, const int *group_of,
                         double a, double b, double c, double p, double pm, int P,
                         const ordo__merge_pieces_t *pieces, double *start_s, double *end_s);

/* ordo__merge_packer_pulls writes the group's bytes and slices (pulled values) on each of the
 * P pull resources (P = 1: the busiest server's bytes and all the slices; or the servers'
 * number when it is at most ORDO__MERGE_PULLS_MAX) into out[0..P) and msgs[0..P). */
void ordo__merge_packer_pulls(const ordo__merge_packer_t *k, int P, int64_t *out, int *msgs);

/* ordo__merge_packer_phi returns phi (ordo_merge_send) of the group under model q. */
double ordo__merge_packer_phi(const ordo__merge_packer_t *k, int q);

/* ordo_merge_send sends a group of n messages, bytes in all, ready at ready, from link
 * free *s1 and receiver free *s2, and updates both (the two-stage model of
 * ordo__merge_comm_times). Message k (from 1) arrives at start + k a + b S_k, start =
 * max(*s1, ready), S_k the bytes of messages 1..k, and holds the receiver c B_k from
 * max(receiver free, its arrival). Unrolled, the receiver's end is max(*s2 + c S_n,
 * start + c S_n + phi) with phi = max over k of (k a + b S_k - c S_(k-1)), which depends
 * on the group alone: callers compute it once per group (ordo__merge_packer_phi; a + b B
 * for a single message), not once per state. With c = 0 phi is n a + b S_n and the end is
 * max(*s2, the last arrival). */
static inline void ordo_merge_send(double *s1, double *s2, double ready, int n, int64_t bytes,
                                    double phi, double a, double b, double c)
{
    double start = *s1 > ready ? *s1 : ready;
    double t = start + ((double)n * a + b * (double)bytes), d = *s2;
    if (c == 0) {
        d = d > t ? d : t;
    } else {
        double cs = c * (double)bytes, x = d + cs, y = start + (cs + phi);
        d = x > y ? x : y;
    }
    *s1 = t;
    *s2 = d;
}

/* ordo_merge_pull is the third stage (ordo__merge_comm_times3): once a group has been
 * received (its receiver end s2), its next values go back to the workers through the servers'
 * links, each server's one group after another: for each resource r the group uses
 * (bytes[r] > 0), s3[r] = max(s3[r], s2) + (p * bytes[r] + pm * msgs[r]), p the time per byte
 * and pm the time per pulled value (message) for all the workers' copies. Returns the latest
 * end of the resources the group used (its pull end). */
static inline double ordo_merge_pull(double *s3, int P, double s2, double p, double pm,
                                      const int64_t *bytes, const int *msgs)
{
    double end = s2;
    for (int r = 0; r < P; r++) {
        if (bytes[r] <= 0) continue;
        double start = s3[r] > s2 ? s3[r] : s2;
        s3[r] = start + (p * (double)bytes[r] + pm * (double)msgs[r]);
        if (s3[r] > end) end = s3[r];
    }
    return end;
}

/* ordo_merge_pulls_end is the pull stage's end over its P resources: the iteration's end. */
static inline double ordo_merge_pulls_end(const double *s3, int P)
{
    double end = s3[0];
    for (int r = 1; r < P; r++)
        if (s3[r] > end) end = s3[r];
    return end;
}

#endif
