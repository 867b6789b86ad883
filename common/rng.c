/* rng: splitmix64 expands a seed into a xoshiro256** state; xoshiro256** generates. Both
 * are public-domain algorithms by Vigna and Blackman, chosen for being small, fast and
 * reproducible everywhere. */
#include "common/rng.h"

#include "common/error.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void ordo__rng_seed(ordo__rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

void ordo__rng_seed2(ordo__rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed;
    uint64_t mixed = splitmix64(&x) ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    ordo__rng_seed(r, mixed);
}

uint64_t ordo__rng_next(ordo__rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ordo__rng_uniform(ordo__rng_t *r)
{
    return (double)(ordo__rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t ordo__rng_below(ordo__rng_t *r, uint64_t n)
{
    ORDO_ASSERT(n >= 1);
    /* Reject the top sliver of the range so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = ordo__rng_next(r);
    while (x >= limit);
    return x % n;
}

void ordo__rng_shuffle(ordo__rng_t *r, int64_t *idx, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)ordo__rng_below(r, (uint64_t)i + 1);
        int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}
