/* rng: a small deterministic pseudo-random generator (splitmix64 seeding a xoshiro256**
 * state) for parameter initialization and data shuffling. The same seed gives the same
 * sequence on every machine; the state is a plain value that callers embed. */
#ifndef ORDO_RNG_H
#define ORDO_RNG_H

#include <stdint.h>

typedef struct ordo__rng {
    uint64_t s[4];
} ordo__rng_t;

/* ordo__rng_seed sets r to the state derived from seed (any value, 0 included). */
void ordo__rng_seed(ordo__rng_t *r, uint64_t seed);

/* ordo__rng_seed2 seeds r from two values (e.g. a run seed and a stream id such as a
 * worker rank or an epoch), so streams derived from one seed stay independent. */
void ordo__rng_seed2(ordo__rng_t *r, uint64_t seed, uint64_t stream);

/* ordo__rng_next returns the next 64 random bits. */
uint64_t ordo__rng_next(ordo__rng_t *r);

/* ordo__rng_uniform returns a double uniform in [0, 1) with 53 random bits. */
double ordo__rng_uniform(ordo__rng_t *r);

/* ordo__rng_below returns an integer uniform in [0, n) without modulo bias; n >= 1. */
uint64_t ordo__rng_below(ordo__rng_t *r, uint64_t n);

/* ordo__rng_shuffle permutes idx[0..n) in place (Fisher-Yates). */
void ordo__rng_shuffle(ordo__rng_t *r, int64_t *idx, int64_t n);

#endif
