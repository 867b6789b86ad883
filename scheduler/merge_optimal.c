/* merge_optimal: the exact merge planner ("optimal", merge.h). Under the two-stage cost
 * model (a message holds the link for a + b * bytes from max(link free, ready), then the
 * receiver for c * bytes from max(receiver free, arrival)) it finds a grouping of
 * consecutive layers with the least iteration time by a dynamic program over layer
 * boundaries that keeps, per prefix, the Pareto set of (link free, receiver free) pairs.
 * Among groupings of least time it returns wfbp's when wfbp is one of them, else one with
 * the fewest messages. docs/merging.md §2 has the proof. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "scheduler/merge.h"

/* Relative slack under which two iteration times count as equal (rounding of sums taken
 * in different orders). */
#define TIE 1e-13

/* One state of a prefix: when the link and the receiver are free after its last message,
 * and where it came from (the first layer j of its last group, the state's index in the
 * front of prefix j). */
typedef struct state {
    double s1, s2;
    int j, from;
} state_t;

/* A Pareto front: states sorted by s1 ascending with s2 strictly descending; no state is
 * at least as late in both. */
typedef struct front {
    state_t *v;
    int n, cap;
} front_t;

typedef struct ctx {
    int L;
    const double *ready;
    const int64_t *cum;
    double a, b, c;
} ctx_t;

/* front_add inserts x unless a state of f is no later in both coordinates, and drops the
 * states x is no later than in both. Returns 0 or ORDO_ENOMEM. */
static int front_add(front_t *f, state_t x)
{
    int lo = 0, hi = f->n; /* first state with s1 > x.s1 */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->v[mid].s1 <= x.s1)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && f->v[lo - 1].s2 <= x.s2) return 0; /* dominated (or equal) */
    int k = lo;
    while (k > 0 && f->v[k - 1].s1 == x.s1) /* same s1, later s2: x wins */
        k--;
    int end = lo;
    while (end < f->n && f->v[end].s2 >= x.s2)
        end++;
    /* replace v[k..end) by x */
    if (k == end) {
        if (f->n == f->cap) {
            int cap = f->cap ? 2 * f->cap : 4;
            state_t *v = realloc(f->v, (size_t)cap * sizeof *v);
            if (!v) return ORDO_ENOMEM;
            f->v = v;
            f->cap = cap;
        }
        memmove(f->v + k + 1, f->v + k, (size_t)(f->n - k) * sizeof *f->v);
        f->n++;
    } else if (end > k + 1) {
        memmove(f->v + k + 1, f->v + end, (size_t)(f->n - end) * sizeof *f->v);
        f->n -= end - k - 1;
    }
    f->v[k] = x;
    return 0;
}

/* extend is the state after sending layers j..i-1 as one message from state p; the
 * arithmetic is ordo_merge_comm_times' so that both give the same bits. */
static state_t extend(const ctx_t *x, const state_t *p, int j, int i, int from)
{
    double r = x->ready[i - 1];
    double bytes = (double)(x->cum[i] - x->cum[j]);
    double start = p->s1 > r ? p->s1 : r;
    state_t s = {.s1 = start + x->a + x->b * bytes, .j = j, .from = from};
    s.s2 = (p->s2 > s.s1 ? p->s2 : s.s1) + x->c * bytes;
    return s;
}

/* relax builds front to[i] for i = 1..L from the fronts fr[] of the prefixes (to[0] must
 * be set by the caller when fr == to). With fr == to it is the free program over any number
 * of messages; with fr != to it adds exactly one message to fr's states. Counts steps into
 * *steps; stops with 1 when *steps passes budget (budget < 0: none). */
static int relax(const ctx_t *x, front_t *fr, front_t *to, double budget, double *steps)
{
    for (int i = 1; i <= x->L; i++) {
        to[i].n = 0;
        for (int j = 0; j < i; j++) {
            *steps += fr[j].n;
            for (int k = 0; k < fr[j].n; k++)
                if (front_add(&to[i], extend(x, &fr[j].v[k], j, i, k)) != 0) return ORDO_ENOMEM;
        }
        if (budget >= 0 && *steps > budget) return 1;
    }
    return 0;
}

/* best_state returns the index of the state of f with the least s2 (-1 when empty). */
static int best_state(const front_t *f)
{
    int best = -1;
    for (int k = 0; k < f->n; k++)
        if (best < 0 || f->v[k].s2 < f->v[best].s2) best = k;
    return best;
}

static void fronts_free(front_t *f, size_t n)
{
    for (size_t i = 0; f && i < n; i++)
        free(f[i].v);
    free(f);
}

int ordo_merge_optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                       double c, int *layer_group)
{
    if (!isfinite(a) || !isfinite(b) || !isfinite(c) || a < 0 || b < 0 || c < 0)
        return ordo_error_set(ORDO_EINVAL,
                              "cost model a=%g s, b=%g s/byte, c=%g s/byte: all must be finite "
                              "and >= 0",
                              a, b, c);
    if (L < 0 || (L > 0 && (!tb_s || !bytes || !layer_group)))
        return ordo_error_set(ORDO_EINVAL, "ordo_merge_optimal: bad arguments");
    if (L == 0) return 0;
    size_t n = (size_t)L + 1;
    double *ready = malloc(n * sizeof *ready);
    int64_t *cum = malloc(n * sizeof *cum);
    front_t *free_f = calloc(n, sizeof *free_f);
    front_t **counted = NULL; /* counted[c - 1][i]: exactly c messages */
    int n_counted = 0, rc = ORDO_ENOMEM;
    if (!ready || !cum || !free_f) goto fail;
    double clock = 0;
    cum[0] = 0;
    for (int i = 0; i < L; i++) {
        clock += tb_s[i];
        ready[i] = clock;
        cum[i + 1] = cum[i] + bytes[i];
    }
    ctx_t x = {L, ready, cum, a, b, c};
    const state_t origin = {0, 0, -1, -1};

    /* The program. A later message's ends are max(link free, ready) + ... and
     * max(receiver free, its link end) + ..., which never grow when the earlier ends shrink;
     * so a grouping of 0..i-1 whose ends are no earlier in both than another's can be
     * dropped, and the Pareto front of (link free, receiver free) over the groupings of each
     * prefix holds an optimal one. With c = 0 both coordinates are equal and the front
     * is the single earliest end. */
    free_f[0].n = 0;
    if (front_add(&free_f[0], origin) != 0) goto fail;
    double steps = 0;
    if ((rc = relax(&x, free_f, free_f, -1, &steps)) != 0) goto fail;
    int kbest = best_state(&free_f[L]);
    double t_star = free_f[L].v[kbest].s2;

    /* Ties: wfbp's grouping when it is as fast (merging cannot help), ... */
    state_t w = origin;
    for (int i = 0; i < L; i++)
        w = extend(&x, &w, i, i + 1, 0);
    if (w.s2 <= t_star * (1 + TIE)) {
        for (int i = 0; i < L; i++)
            layer_group[i] = i;
        rc = L;
        goto done;
    }

    /* ... else the grouping found, unless fewer messages reach the same time: the same
     * program with exactly c messages, c = 1, 2, ..., within a budget of steps. */
    int groups = 0;
    for (int i = L, k = kbest; i > 0;) {
        const state_t *s = &free_f[i].v[k];
        groups++;
        i = s->j;
        k = s->from;
    }
    int g = groups;
    for (int i = L, k = kbest; i > 0;) {
        const state_t *s = &free_f[i].v[k];
        g--;
        for (int y = s->j; y < i; y++)
            layer_group[y] = g;
        i = s->j;
        k = s->from;
    }
    rc = groups;
    counted = calloc((size_t)groups, sizeof *counted);
    if (!counted) goto done;                 /* out of memory: the grouping above is as fast */
    front_t *prev = calloc(n, sizeof *prev); /* exactly 0 messages */
    if (!prev || front_add(&prev[0], origin) != 0) {
        fronts_free(prev, n);
        goto done;
    }
    steps = 0;
    for (int cnt = 1; cnt < groups; cnt++) {
        front_t *cur = calloc(n, sizeof *cur);
        if (!cur) break;
        counted[n_counted++] = cur;
        int r = relax(&x, cnt == 1 ? prev : counted[cnt - 2], cur, 1e8, &steps);
        if (r != 0) break; /* out of memory or budget: keep the grouping above */
        int kb = best_state(&cur[L]);
        if (kb >= 0 && cur[L].v[kb].s2 <= t_star * (1 + TIE)) {
            for (int q = cnt, i = L, k = kb; q >= 1; q--) {
                const state_t *s = &counted[q - 1][i].v[k];
                for (int y = s->j; y < i; y++)
                    layer_group[y] = q - 1;
                i = s->j;
                k = s->from;
            }
            rc = cnt;
            break;
        }
    }
    fronts_free(prev, n);
done:
fail:
    if (rc == ORDO_ENOMEM) ordo_error_set(rc, "ordo_merge_optimal: out of memory");
    for (int k = 0; k < n_counted; k++)
        fronts_free(counted[k], n);
    free(counted);
    fronts_free(free_f, n);
    free(ready);
    free(cum);
    return rc;
}
