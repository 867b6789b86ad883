/* sparsify: the worker's side of sparse (top-k) pushes with error feedback, after Ok-Topk.
 * It owns exact top-k selection (Floyd-Rivest quickselect on a scratch copy of the
 * magnitudes, ties broken by index so exactly k entries come out), the threshold scan that
 * selects |x| >= thr in one vectorizable pass, NaN/Inf rejection, and the per-tensor state:
 * the residual (what has not been applied yet), the cached threshold that is re-evaluated
 * exactly every threshold_period iterations and reused in between, the packing of the
 * selection into one COO payload per server region, and the residual update once the
 * pulls tell which entries the servers selected globally.
 *
 * One iteration of a tensor:
 *   ordo__sparsify_push(sp, grad)          acc = residual + grad; select local top-k
 *   ordo__sparsify_pack_region(sp, ...)    one COO payload per region, sent to its server
 *   ordo__sparsify_apply_pull(sp, ...)     per region: patch the parameters with the
 *                                         server's changed entries, and clear from the
 *                                         residual the pushed entries the server selected
 * The residual rule (Ok-Topk's local ∩ global): after the pulls, residual[i] = 0 when i
 * was pushed by this worker AND is in the global selection; otherwise residual[i] = acc[i]
 * (unselected entries and pushed-but-not-globally-selected entries both stay). Hence for
 * every worker and step: applied + residual = residual_before + grad, and summed over the
 * workers nothing is lost or counted twice, as long as servers drop (do not keep) the sums
 * of entries they did not select. Gradients are accumulated unscaled: the server applies
 * the learning rate. */
#ifndef ORDO_SPARSIFY_H
#define ORDO_SPARSIFY_H

#include "core/coo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- selection primitives (stateless) ---------------------------------------------- */

/* ordo__sparsify_check_finite returns 0 when all n values are finite, else ORDO_ERR_INVAL with
 * the detail "WHAT entry I is NaN" (or "is infinite") for the first bad entry. */
int ordo__sparsify_check_finite(const float *x, size_t n, const char *what);

/* ordo__sparsify_magnitudes writes the bit patterns of |x[i]| to m (n entries): for finite
 * values their unsigned order is the order of the magnitudes. It returns ORDO_ERR_INVAL
 * (detail names the entry) when a value is NaN or infinite. */
int ordo__sparsify_magnitudes(const float *x, size_t n, uint32_t *m);

/* ordo__sparsify_select_u32 rearranges a[0..n) so that a[r] holds the value of rank r
 * (0 = smallest), with a[0..r) <= a[r] <= a[r+1..n). Floyd-Rivest selection, expected
 * n + min(r, n - r) + o(n) comparisons; a guard switches to heapsort of the remaining range
 * if it ever stops converging, so the worst case is O(n log n). Requires r < n. */
void ordo__sparsify_select_u32(uint32_t *a, size_t n, size_t r);

/* ordo__sparsify_kth_magnitude sets *thr to the k-th largest |x| (1 <= k <= n) by selection
 * on magnitudes written to scratch (n uint32; NULL allocates one for the call). x is left
 * unchanged. ORDO_ERR_INVAL for NaN/Inf input or k outside [1, n]. */
int ordo__sparsify_kth_magnitude(const float *x, size_t n, size_t k, uint32_t *scratch, float *thr);

/* ordo__sparsify_topk writes exactly k entries of x (0 <= k <= n) to out, in index order:
 * every entry with |x| strictly above the k-th largest magnitude, plus as many entries equal
 * to it as needed, lowest indices first. *thr receives that magnitude (+INFINITY for k = 0).
 * scratch as for ordo__sparsify_kth_magnitude. NaN/Inf input is rejected (ORDO_ERR_INVAL). */
int ordo__sparsify_topk(const float *x, size_t n, size_t k, uint32_t *scratch, ordo__coo_entry_t *out,
                       float *thr);

/* ordo__sparsify_scan selects, in index order, the entries with |x| >= thr (thr >= 0),
 * writing at most cap of them to out; it returns how many qualify (which may exceed cap).
 * out[count..cap) may be overwritten. Branch-light: vector compares build lane masks, the
 * hits are compressed or walked from the mask, no branch per element. NaN never qualifies. */
size_t ordo__sparsify_scan(const float *x, size_t n, float thr, ordo__coo_entry_t *out, size_t cap);

/* ---- per-tensor state ---------------------------------------------------------------- */

typedef struct ordo__sparsify ordo__sparsify_t;

/* A threshold reused for an iteration may select more than this many times k; then the
 * threshold is re-evaluated exactly at once, so a push never exceeds ORDO_SPARSIFY_OVERSHOOT
 * * k entries. */
#define ORDO_SPARSIFY_OVERSHOOT 2

/* ordo__sparsify_k_for returns k for a tensor of n entries at a density in (0, 1]:
 * round(density * n), at least 1 (0 when n = 0). */
size_t ordo__sparsify_k_for(size_t n, double density);

/* ordo__sparsify_new makes the state of one tensor of n entries (1 <= n < 2^32) selecting k
 * entries (1 <= k <= n) with an exact threshold every threshold_period (>= 1) iterations.
 * The residual starts at zero. */
int ordo__sparsify_new(ordo__sparsify_t **out, size_t n, size_t k, int threshold_period);

/* ordo__sparsify_destroy frees the state and sets *sp to NULL; NULL-safe. */
void ordo__sparsify_destroy(ordo__sparsify_t **sp);

/* ordo__sparsify_push adds grad (n values, borrowed) to the residual and selects this
 * iteration's entries. Exactly k entries (ties by index) on an exact iteration, which is
 * the first, every threshold_period-th after the last exact one, and any iteration whose
 * reused threshold would select more than ORDO_SPARSIFY_OVERSHOOT * k entries; otherwise
 * the entries with |acc| >= cached threshold. When k = n the threshold is 0 and everything
 * is selected. A NaN or infinite gradient, or a residual that would overflow, is rejected
 * (ORDO_ERR_INVAL / ORDO_ERR_RANGE, detail names the entry) and leaves the state unchanged. */
int ordo__sparsify_push(ordo__sparsify_t *sp, const float *grad);

/* ordo__sparsify_selected returns this iteration's selected entries (index order; values
 * are the accumulated values pushed) and their count; valid until the next push. */
const ordo__coo_entry_t *ordo__sparsify_selected(const ordo__sparsify_t *sp, size_t *count);

/* ordo__sparsify_region_count returns how many selected entries fall in [lo, hi). */
size_t ordo__sparsify_region_count(const ordo__sparsify_t *sp, uint32_t lo, uint32_t hi);

/* ordo__sparsify_pack_region encodes the selected entries in [lo, hi) as a COO payload into
 * buf (cap bytes; ORDO_ERR_RANGE when too small, see ordo__sparsify_region_count) and writes
 * its length. */
int ordo__sparsify_pack_region(const ordo__sparsify_t *sp, uint32_t lo, uint32_t hi, uint8_t *buf,
                              size_t cap, size_t *len);

/* ordo__sparsify_commit applies the global selection: residual[i] = 0 for each i in idx
 * (count indices, strictly increasing) that this worker pushed in the current iteration.
 * It may be called once per region, in any region order, before the next push; repeating a
 * call changes nothing. ORDO_ERR_INVAL if idx is not strictly increasing or out of range. */
int ordo__sparsify_commit(ordo__sparsify_t *sp, const uint32_t *idx, size_t count);

/* ordo__sparsify_apply_pull takes a server's pull answer for region [lo, hi): a COO payload
 * of (index, new parameter value) for the entries that server selected. It validates it
 * (ORDO_ERR_PROTO, nothing changed on error), writes the values into params (the whole tensor,
 * n floats; NULL to skip), and commits the indices as ordo__sparsify_commit does. *consumed
 * (may be NULL) receives how many of this worker's pushed entries were selected. */
int ordo__sparsify_apply_pull(ordo__sparsify_t *sp, const uint8_t *buf, size_t len, uint32_t lo,
                             uint32_t hi, float *params, size_t *consumed);

/* ordo__sparsify_position_hist adds the current selection's positions to counts (nbins
 * bins over [0, n) as defined in scheduler/regions.h): the report for region balancing. */
int ordo__sparsify_position_hist(const ordo__sparsify_t *sp, size_t nbins, uint64_t *counts);

/* ordo__sparsify_residual returns the residual (n floats): after a push and before its
 * commits it holds acc = residual + grad; the state owns it. */
const float *ordo__sparsify_residual(const ordo__sparsify_t *sp);

/* Accessors: tensor size, k, the threshold used by the last push, whether that push
 * evaluated it exactly, and the number of pushes done. */
size_t ordo__sparsify_n(const ordo__sparsify_t *sp);
size_t ordo__sparsify_k(const ordo__sparsify_t *sp);
float ordo__sparsify_threshold(const ordo__sparsify_t *sp);
bool ordo__sparsify_last_exact(const ordo__sparsify_t *sp);
uint64_t ordo__sparsify_iteration(const ordo__sparsify_t *sp);

/* ordo__sparsify_state_size is the size of the state record (checkpoints): the residual and
 * the threshold's state (cached threshold, reuses left, pushes done), little-endian. */
size_t ordo__sparsify_state_size(const ordo__sparsify_t *sp);

/* ordo__sparsify_state_get writes the state record into buf (ordo__sparsify_state_size bytes);
 * between iterations (after the commits) it is all a later push depends on. */
void ordo__sparsify_state_get(const ordo__sparsify_t *sp, uint8_t *buf);

/* ordo__sparsify_state_set restores a state record (len bytes, untrusted: a record of another
 * size or k, or a non-finite value, is ORDO_ERR_FORMAT and changes nothing). */
int ordo__sparsify_state_set(ordo__sparsify_t *sp, const uint8_t *buf, size_t len);

#endif
