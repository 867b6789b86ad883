/* vec: vectorised float loops shared by the server's sums and the host groups' sums. */
#include "core/vec.h"

#include <stdint.h>
#include <string.h>

ORDO_VECTOR_CLONES
void ordo__vec_add(float *restrict acc, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) acc[i] += src[i];
}

ORDO_VECTOR_CLONES
void ordo__vec_sum(float *restrict dst, const float *restrict a, const float *restrict b,
                  int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = a[i] + b[i];
}

/* The streaming loops use SSE2 (every x86-64 has it): they are bound by memory, not by the
 * width of the adds. The stores are weakly ordered, so each loop ends with a fence: whoever
 * announces the floats afterwards (a release store) publishes them complete. */
#if defined(__x86_64__)
#include <emmintrin.h>

void ordo__vec_sum_rows(float *restrict dst, const float *const *rows, int m, int64_t n)
{
    int64_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 15); i++) { /* up to the first aligned store */
        float v = rows[0][i];
        for (int r = 1; r < m; r++) v += rows[r][i];
        dst[i] = v;
    }
    for (; i + 8 <= n; i += 8) {
        __m128 v0 = _mm_loadu_ps(rows[0] + i), v1 = _mm_loadu_ps(rows[0] + i + 4);
        for (int r = 1; r < m; r++) {
            v0 = _mm_add_ps(v0, _mm_loadu_ps(rows[r] + i));
            v1 = _mm_add_ps(v1, _mm_loadu_ps(rows[r] + i + 4));
        }
        _mm_stream_ps(dst + i, v0);
        _mm_stream_ps(dst + i + 4, v1);
    }
    for (; i < n; i++) {
        float v = rows[0][i];
        for (int r = 1; r < m; r++) v += rows[r][i];
        dst[i] = v;
    }
    _mm_sfence();
}

void ordo__vec_copy_stream(float *restrict dst, const float *restrict src, int64_t n)
{
    int64_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 15); i++) dst[i] = src[i];
    for (; i + 16 <= n; i += 16) {
        __m128 a = _mm_loadu_ps(src + i), b = _mm_loadu_ps(src + i + 4);
        __m128 c = _mm_loadu_ps(src + i + 8), d = _mm_loadu_ps(src + i + 12);
        _mm_stream_ps(dst + i, a);
        _mm_stream_ps(dst + i + 4, b);
        _mm_stream_ps(dst + i + 8, c);
        _mm_stream_ps(dst + i + 12, d);
    }
    for (; i < n; i++) dst[i] = src[i];
    _mm_sfence();
}
#else
void ordo__vec_sum_rows(float *restrict dst, const float *const *rows, int m, int64_t n)
{
    if (m == 1) {
        memcpy(dst, rows[0], sizeof(float) * (size_t)n);
        return;
    }
    ordo__vec_sum(dst, rows[0], rows[1], n);
    for (int r = 2; r < m; r++) ordo__vec_add(dst, rows[r], n);
}

void ordo__vec_copy_stream(float *restrict dst, const float *restrict src, int64_t n)
{
    memcpy(dst, src, sizeof(float) * (size_t)n);
}
#endif
