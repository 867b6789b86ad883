/* coo: encoding and validated decoding of the sparse (index, value) wire payload. */
#include "core/coo.h"

#include "common/error.h"

#include <math.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define COO_HOST_LE 1
#else
#define COO_HOST_LE 0
#endif

#if !COO_HOST_LE
static void put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
#endif

void ordo__coo_encode(const ordo__coo_entry_t *entries, size_t count, uint8_t *buf)
{
    if (count == 0) return;
#if COO_HOST_LE
    memcpy(buf, entries, ordo_coo_size(count));
#else
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &entries[i].value, 4);
        put_u32le(buf + 8 * i, entries[i].index);
        put_u32le(buf + 8 * i + 4, bits);
    }
#endif
}

ordo__coo_entry_t ordo__coo_get(const uint8_t *buf, size_t i)
{
    ordo__coo_entry_t e;
#if COO_HOST_LE
    memcpy(&e, buf + 8 * i, sizeof e);
#else
    uint32_t bits = get_u32le(buf + 8 * i + 4);
    e.index = get_u32le(buf + 8 * i);
    memcpy(&e.value, &bits, 4);
#endif
    return e;
}

int ordo__coo_check(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi, size_t *count)
{
    if (len % ORDO_COO_ENTRY_BYTES != 0)
        return ordo__error_set(ORDO_ERR_PROTO, "coo: payload length %zu is not a multiple of %d", len,
                              ORDO_COO_ENTRY_BYTES);
    if (len > 0 && buf == NULL)
        return ordo__error_set(ORDO_ERR_PROTO, "coo: payload of %zu bytes has no data", len);
    size_t n = len / ORDO_COO_ENTRY_BYTES;
    for (size_t i = 0; i < n; i++) {
        ordo__coo_entry_t e = ordo__coo_get(buf, i);
        if (e.index < lo || e.index >= hi)
            return ordo__error_set(ORDO_ERR_PROTO, "coo: entry %zu: index %u out of range [%u, %u)", i,
                                  e.index, lo, hi);
        if (i > 0 && e.index <= ordo__coo_get(buf, i - 1).index)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "coo: entry %zu: index %u not greater than previous %u", i,
                                  e.index, ordo__coo_get(buf, i - 1).index);
        if (!isfinite(e.value))
            return ordo__error_set(ORDO_ERR_PROTO, "coo: entry %zu (index %u): value is %s", i, e.index,
                                  isnan(e.value) ? "NaN" : "infinite");
    }
    *count = n;
    return 0;
}

int ordo__coo_decode(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi, ordo__coo_entry_t *out,
                    size_t cap, size_t *count)
{
    size_t n;
    int rc = ordo__coo_check(buf, len, lo, hi, &n);
    if (rc < 0) return rc;
    if (n > cap) return ordo__error_set(ORDO_ERR_RANGE, "coo: %zu entries do not fit in %zu", n, cap);
    for (size_t i = 0; i < n; i++)
        out[i] = ordo__coo_get(buf, i);
    *count = n;
    return 0;
}

int ordo__coo_patch(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi, float *dst)
{
    size_t n;
    int rc = ordo__coo_check(buf, len, lo, hi, &n);
    if (rc < 0) return rc;
    for (size_t i = 0; i < n; i++) {
        ordo__coo_entry_t e = ordo__coo_get(buf, i);
        dst[e.index] = e.value;
    }
    return 0;
}
