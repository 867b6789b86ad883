/* select: Floyd-Rivest selection on uint32 keys, with a heapsort guard (select.h). */
#include "common/select.h"

#include "common/error.h"

#include <math.h>
#include <stddef.h>

static void swap_u32(uint32_t *a, ptrdiff_t i, ptrdiff_t j)
{
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void sift_down(uint32_t *a, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && a[c + 1] > a[c]) c++;
        if (a[root] >= a[c]) return;
        swap_u32(a, (ptrdiff_t)root, (ptrdiff_t)c);
        root = c;
    }
}

static void heapsort_u32(uint32_t *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        swap_u32(a, 0, (ptrdiff_t)end);
        sift_down(a, 0, end);
    }
}

/* Floyd & Rivest, "Algorithm 489: SELECT" (CACM 1975): partition around a pivot that a
 * recursive selection on a small sample around rank k makes nearly exact, so each round
 * keeps only a sliver of the range. The algorithm assumes the sample is random; gradients
 * are not (layers of different scales sit side by side), so the sample positions are first
 * filled with randomly chosen elements. Each call may run 16 + 2 log2(range) rounds; past
 * that it heapsorts what is left (introselect's idea), so no input makes it quadratic. */
static void fr_select(uint32_t *a, ptrdiff_t left, ptrdiff_t right, ptrdiff_t k, uint64_t *rng)
{
    int budget = 16;
    for (ptrdiff_t m = right - left; m > 1; m >>= 1)
        budget += 2;
    while (right > left) {
        if (--budget < 0) {
            heapsort_u32(a + left, (size_t)(right - left + 1));
            return;
        }
        if (right - left > 600) {
            double n = (double)(right - left + 1), i = (double)(k - left + 1);
            double z = log(n), s = 0.5 * exp(2.0 * z / 3.0);
            double sd = 0.5 * sqrt(z * s * (n - s) / n) * (i - n / 2 < 0 ? -1 : 1);
            ptrdiff_t nl = (ptrdiff_t)((double)k - i * s / n + sd);
            ptrdiff_t nr = (ptrdiff_t)((double)k + (n - i) * s / n + sd);
            nl = nl > left ? nl : left;
            nr = nr < right ? nr : right;
            for (ptrdiff_t p = nl; p <= nr; p++) {
                *rng ^= *rng << 13; /* xorshift64 */
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                swap_u32(a, p, left + (ptrdiff_t)(*rng % (uint64_t)(right - left + 1)));
            }
            fr_select(a, nl, nr, k, rng);
        }
        uint32_t t = a[k];
        ptrdiff_t i = left, j = right;
        swap_u32(a, left, k);
        if (a[right] > t) swap_u32(a, right, left);
        while (i < j) {
            swap_u32(a, i, j);
            i++;
            j--;
            while (a[i] < t)
                i++;
            while (a[j] > t)
                j--;
        }
        if (a[left] == t)
            swap_u32(a, left, j);
        else {
            j++;
            swap_u32(a, j, right);
        }
        if (j <= k) left = j + 1;
        if (k <= j) right = j - 1;
    }
}

void ordo__select_u32(uint32_t *a, size_t n, size_t r)
{
    ORDO_ASSERT(r < n);
    uint64_t rng = 0x9E3779B97F4A7C15ull; /* fixed seed: results are reproducible */
    fr_select(a, 0, (ptrdiff_t)n - 1, (ptrdiff_t)r, &rng);
}
