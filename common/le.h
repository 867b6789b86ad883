/* le: little-endian integers for the binary files (params.bin, the servers' checkpoints). */
#ifndef ORDO_LE_H
#define ORDO_LE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ordo_put_le writes the low `bytes` bytes of v to p, least significant first. */
static inline void ordo_put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* ordo_get_le reads `bytes` bytes at p, least significant first. */
static inline uint64_t ordo_get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ordo_host_is_le tells whether float arrays are already little-endian in memory. */
static inline int ordo_host_is_le(void)
{
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* ordo_fwrite_floats_le writes n floats little-endian (on a little-endian host, the memory
 * image); 0 or -1 on a write error. */
static inline int ordo_fwrite_floats_le(FILE *f, const float *v, int64_t n)
{
    if (ordo_host_is_le()) return fwrite(v, sizeof(float), (size_t)n, f) == (size_t)n ? 0 : -1;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        unsigned char b[4];
        memcpy(&u, &v[i], 4);
        ordo_put_le(b, u, 4);
        if (fwrite(b, 1, 4, f) != 4) return -1;
    }
    return 0;
}

/* ordo_get_floats_le reads n little-endian floats at p into dst. */
static inline void ordo_get_floats_le(float *dst, const unsigned char *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        uint32_t u = (uint32_t)ordo_get_le(p + 4 * j, 4);
        memcpy(&dst[j], &u, 4);
    }
}

#endif
