/* seq_move: what the planner's two local searches (search.c over a channel's recvs,
 * step_search.c over the whole priority order) share: splitmix64 to pick moves, and the two
 * moves on an order, a swap of two places or one element moved to another's place. */
#ifndef ORDO_SEQ_MOVE_H
#define ORDO_SEQ_MOVE_H

#include <stdint.h>
#include <string.h>

/* splitmix64: small, fast and good enough to pick moves */
static inline uint64_t ordo__rng_next(uint64_t *st)
{
    uint64_t z = (*st += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline int ordo__rng_below(uint64_t *st, int n)
{
    return (int)(ordo__rng_next(st) % (uint64_t)n);
}

/* ordo_seq_move swaps places i and j of seq (swap), or moves seq[i] to place j, shifting
 * what lies between */
static inline void ordo_seq_move(int *seq, int i, int j, int swap)
{
    int a = seq[i];
    if (swap) {
        seq[i] = seq[j];
        seq[j] = a;
    } else if (i < j) {
        memmove(&seq[i], &seq[i + 1], (size_t)(j - i) * sizeof *seq);
        seq[j] = a;
    } else {
        memmove(&seq[j + 1], &seq[j], (size_t)(i - j) * sizeof *seq);
        seq[j] = a;
    }
}

#endif
