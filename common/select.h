/* select: the rank selection the top-k selections share (core/sparsify's sparse pushes, the
 * wire codecs' topk): rearranging uint32 keys (a float magnitude's bits order as the
 * magnitudes do) so that one rank's key is in its place. */
#ifndef ORDO_SELECT_H
#define ORDO_SELECT_H

#include <stddef.h>
#include <stdint.h>

/* ordo__select_u32 rearranges a[0..n) so that a[r] holds the value of rank r (0 = smallest),
 * with a[0..r) <= a[r] <= a[r+1..n). Floyd-Rivest selection, expected n + min(r, n - r) + o(n)
 * comparisons; a guard switches to heapsort of the remaining range if it ever stops
 * converging, so the worst case is O(n log n). Requires r < n. */
void ordo__select_u32(uint32_t *a, size_t n, size_t r);

#endif
