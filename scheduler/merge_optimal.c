/* merge_optimal: the exact merge planner ("optimal", merge.h). Under the two-stage cost
 * model (a message holds the link for a + b * bytes from max(link free, ready), then the
 * receiver for c * bytes from max(receiver free, arrival)) it finds a grouping of
 * consecutive layers with the least iteration time by a dynamic program over layer
 * boundaries that keeps, per prefix, the Pareto set of (link free, receiver free) pairs.
 * With early pulls a third stage follows (the group's next values back over the servers'
 * links, ordo__merge_pull) and the states hold three ends (ordo_merge_optimal3).
 * A group is one message, or the messages the run cuts it into (ordo_merge_pieces_t).
 * Among groupings of least time it prefers the one with the least time when communication
 * costs (1 + margin) times more (the same program over both timelines at once), then one
 * with the fewest groups. docs/merging.md §2 has the
 * proofs. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "scheduler/merge.h"
#include "scheduler/merge_internal.h"

/* Relative slack under which two iteration times count as equal (rounding of sums taken
 * in different orders). */
#define TIE 1e-13

/* Steps (states extended, and states compared in unsorted fronts) after which the program
 * at the margin, and the search for the fewest groups, give up and keep what they have
 * (seconds). */
#define BUDGET 1e8

/* One state of a prefix: when the link and the receiver (and, with the pull stage, the
 * servers' links back) are free after its last message, t[0..K), the same under the costs
 * at the margin, t[K..2K) (D = 2K only), and where it came from (the first layer j of its
 * last group, the state's index in the front of prefix j). */
typedef struct state {
    double t[6];
    int j, from;
} state_t;

/* A Pareto front: no state is at least as late in all D coordinates as another. With D = 2
 * it is kept sorted by t[0] ascending with t[1] strictly descending. */
typedef struct front {
    state_t *v;
    int n, cap;
} front_t;

typedef struct ctx {
    int L, D, K;                       /* coordinates; stages per model (2, or 3 with pulls) */
    const double *ready;
    const int64_t *cum;
    double a[2], b[2], c[2], p[2];     /* the costs, and at the margin */
    double limit;                      /* states with t[K-1] above it are dropped */
    const ordo_merge_pieces_t *pieces; /* NULL: a group is one message */
    ordo__merge_packer_t packer;
} ctx_t;

static int front_grow(front_t *f)
{
    if (f->n < f->cap) return 0;
    int cap = f->cap ? 2 * f->cap : 4;
    state_t *v = realloc(f->v, (size_t)cap * sizeof *v);
    if (!v) return ORDO_ENOMEM;
    f->v = v;
    f->cap = cap;
    return 0;
}

/* front_add2 inserts x (D = 2) unless a state of f is no later in both coordinates, and
 * drops the states x is no later than in both. Returns 0 or ORDO_ENOMEM. */
static int front_add2(front_t *f, state_t x)
{
    int lo = 0, hi = f->n; /* first state with t[0] > x.t[0] */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->v[mid].t[0] <= x.t[0])
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && f->v[lo - 1].t[1] <= x.t[1]) return 0; /* dominated (or equal) */
    int k = lo;
    while (k > 0 && f->v[k - 1].t[0] == x.t[0]) /* same t[0], later t[1]: x wins */
        k--;
    int end = lo;
    while (end < f->n && f->v[end].t[1] >= x.t[1])
        end++;
    /* replace v[k..end) by x */
    if (k == end) {
        if (front_grow(f) != 0) return ORDO_ENOMEM;
        memmove(f->v + k + 1, f->v + k, (size_t)(f->n - k) * sizeof *f->v);
        f->n++;
    } else if (end > k + 1) {
        memmove(f->v + k + 1, f->v + end, (size_t)(f->n - end) * sizeof *f->v);
        f->n -= end - k - 1;
    }
    f->v[k] = x;
    return 0;
}

/* no_later reports whether y is at least as early as x in all D coordinates */
static bool no_later(const double *y, const double *x, int D)
{
    for (int d = 0; d < D; d++)
        if (y[d] > x[d]) return false;
    return true;
}

/* front_addn is front_add2 over D > 2 coordinates (unsorted). */
static int front_addn(front_t *f, state_t x, int D)
{
    for (int k = 0; k < f->n; k++)
        if (no_later(f->v[k].t, x.t, D)) return 0;
    int keep = 0;
    for (int k = 0; k < f->n; k++)
        if (!no_later(x.t, f->v[k].t, D)) f->v[keep++] = f->v[k];
    f->n = keep;
    if (front_grow(f) != 0) return ORDO_ENOMEM;
    f->v[f->n++] = x;
    return 0;
}

static int front_add(const ctx_t *x, front_t *f, state_t s)
{
    if (s.t[x->K - 1] > x->limit) return 0; /* the final time only grows from here */
    return x->D == 2 ? front_add2(f, s) : front_addn(f, s, x->D);
}

/* A group's messages as sending them needs: their number, bytes, and phi per model
 * (ordo__merge_send; c > 0 only). */
typedef struct group {
    int n;
    int64_t bytes, share; /* share: on the busiest server (the pull stage) */
    double phi[2];
} group_t;

/* extend is the state after sending layers j..i-1 as the messages of g from state p; the
 * arithmetic is ordo_merge_comm_times' so that both give the same bits. */
static state_t extend(const ctx_t *x, const state_t *p, int j, int i, int from, const group_t *g)
{
    state_t s = *p;
    s.j = j;
    s.from = from;
    for (int q = 0; q < x->D / x->K; q++) {
        double *t = &s.t[x->K * q];
        ordo__merge_send(&t[0], &t[1], x->ready[i - 1], g->n, g->bytes, g->phi[q], x->a[q],
                         x->b[q], x->c[q]);
        if (x->K == 3) ordo__merge_pull(&t[2], t[1], x->p[q], g->share);
    }
    return s;
}

/* group_of describes layers j..i-1 as one group into *g, the packer holding layers j..i-2
 * (or being empty when i == j + 1). */
static void group_of(ctx_t *x, int j, int i, group_t *g)
{
    g->n = 1;
    g->bytes = x->cum[i] - x->cum[j];
    if (x->pieces) {
        if (i == j + 1) ordo__merge_packer_reset(&x->packer);
        ordo__merge_packer_add(&x->packer, i - 1);
        g->n = x->packer.count;
    }
    g->share = x->pieces ? ordo__merge_packer_share(&x->packer) : g->bytes;
    for (int q = 0; q < x->D / x->K && x->c[q] > 0; q++)
        g->phi[q] = x->pieces ? ordo__merge_packer_phi(&x->packer, q)
                              : x->a[q] + x->b[q] * (double)g->bytes;
}

/* relax builds the fronts to[1..L] from the fronts fr[] of the prefixes (to[0] must be set
 * by the caller when fr == to): every state of fr[j] is extended by each group j..i-1,
 * i > j, into to[i]. fr[j] is complete when j's turn comes (only groups ending at j feed it,
 * and they start before j), so with fr == to this is the free program over any number of
 * groups; with fr != to it adds exactly one group to fr's states. Counts steps into *steps;
 * stops with 1 when *steps passes budget (budget < 0: none). */
static int relax(ctx_t *x, front_t *fr, front_t *to, double budget, double *steps)
{
    for (int i = 1; i <= x->L; i++)
        to[i].n = 0;
    for (int j = 0; j < x->L; j++) {
        if (fr[j].n == 0) continue;
        for (int i = j + 1; i <= x->L; i++) {
            group_t g;
            group_of(x, j, i, &g);
            *steps += fr[j].n;
            for (int k = 0; k < fr[j].n; k++) {
                if (front_add(x, &to[i], extend(x, &fr[j].v[k], j, i, k, &g)) != 0)
                    return ORDO_ENOMEM;
                if (x->D > 2) *steps += to[i].n; /* an unsorted front is scanned whole */
            }
            if (budget >= 0 && *steps > budget) return 1;
        }
    }
    return 0;
}

/* best_state returns the index of the best state of f: the least final end t[K-1] (D = K),
 * or the least t[2K-1] among the states with t[K-1] within x->limit (D = 2K); -1 when there
 * is none. */
static int best_state(const ctx_t *x, const front_t *f)
{
    int best = -1, q = x->D - 1;
    for (int k = 0; k < f->n; k++)
        if (f->v[k].t[x->K - 1] <= x->limit && (best < 0 || f->v[k].t[q] < f->v[best].t[q]))
            best = k;
    return best;
}

static void fronts_free(front_t *f, size_t n)
{
    for (size_t i = 0; f && i < n; i++)
        free(f[i].v);
    free(f);
}

/* program runs the free program under x into f (fronts of L + 1 prefixes, emptied first);
 * 0, 1 past the budget, or ORDO_ENOMEM. */
static int program(ctx_t *x, front_t *f, double budget)
{
    const state_t origin = {{0, 0, 0, 0, 0, 0}, -1, -1};
    for (int i = 0; i <= x->L; i++)
        f[i].n = 0;
    double steps = 0;
    if (front_add(x, &f[0], origin) != 0) return ORDO_ENOMEM;
    return relax(x, f, f, budget, &steps);
}

/* walk writes the grouping that ends in state k of front i of fronts[c - 1] (c groups,
 * counted; fronts[0] when counted is 0, the free program) into layer_group. */
static void walk(front_t **fronts, int counted, int i, int k, int *layer_group)
{
    int g = 0;
    if (!counted) { /* count the groups first */
        for (int y = i, z = k; y > 0; g++) {
            const state_t *s = &fronts[0][y].v[z];
            y = s->j;
            z = s->from;
        }
    } else {
        g = counted;
    }
    for (int q = g; i > 0; q--) {
        const state_t *s = &fronts[counted ? q - 1 : 0][i].v[k];
        for (int y = s->j; y < i; y++)
            layer_group[y] = q - 1;
        i = s->j;
        k = s->from;
    }
}

int ordo_merge_optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                       double c, double margin, const ordo_merge_pieces_t *pieces, int *layer_group)
{
    return ordo_merge_optimal3(L, tb_s, bytes, a, b, c, 0, margin, pieces, layer_group);
}

int ordo_merge_optimal3(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                        double c, double p, double margin, const ordo_merge_pieces_t *pieces,
                        int *layer_group)
{
    if (!isfinite(a) || !isfinite(b) || !isfinite(c) || !isfinite(p) || a < 0 || b < 0 || c < 0 ||
        p < 0)
        return ordo_error_set(ORDO_EINVAL,
                              "cost model a=%g s, b=%g s/byte, c=%g s/byte, pull %g s/byte: all "
                              "must be finite and >= 0",
                              a, b, c, p);
    if (!isfinite(margin) || margin < 0)
        return ordo_error_set(ORDO_EINVAL, "margin %g: must be finite and >= 0", margin);
    if (L < 0 || (L > 0 && (!tb_s || !bytes || !layer_group)))
        return ordo_error_set(ORDO_EINVAL, "ordo_merge_optimal: bad arguments");
    if (L == 0) return 0;
    int rc;
    if (pieces && (rc = ordo_merge_pieces_check(pieces, L)) != 0) return rc;
    size_t n = (size_t)L + 1;
    double *ready = malloc(n * sizeof *ready);
    int64_t *cum = malloc(n * sizeof *cum);
    front_t *free_f = calloc(n, sizeof *free_f);
    front_t **counted = NULL; /* counted[c - 1][i]: exactly c groups */
    int n_counted = 0;
    double l = 1 + margin;
    int K = p > 0 ? 3 : 2;
    ctx_t x = {L,     K,        K,        ready, cum, {a, l * a}, {b, l * b}, {c, l * c},
               {p, l * p}, INFINITY, pieces, {0}};
    rc = ORDO_ENOMEM;
    if (!ready || !cum || !free_f) goto fail;
    if (pieces && ordo__merge_packer_init(&x.packer, pieces, 2, x.a, x.b, x.c) != 0) goto fail;
    double clock = 0;
    cum[0] = 0;
    for (int i = 0; i < L; i++) {
        clock += tb_s[i];
        ready[i] = clock;
        cum[i + 1] = cum[i] + bytes[i];
    }

    /* The program. A later message's ends are max(link free, ready) + ... and
     * max(receiver free, its link end) + ..., which never grow when the earlier ends shrink;
     * so a grouping of 0..i-1 whose ends are no earlier in both than another's can be
     * dropped, and the Pareto front of (link free, receiver free) over the groupings of each
     * prefix holds an optimal one (with the pull stage, max(pulls free, receiver end) + ...
     * is monotone too, and the front holds three ends). With c = 0 and no pull stage both
     * coordinates are equal and the front is the single earliest end. */
    /* three ends per state can make large fronts: past the budget the pull stage is left
     * out and the two-stage program plans (never over budget: its fronts are 2-D) */
    if ((rc = program(&x, free_f, K == 3 ? BUDGET : -1)) == 1) {
        free(ready);
        free(cum);
        fronts_free(free_f, n);
        if (pieces) ordo__merge_packer_free(&x.packer);
        return ordo_merge_optimal3(L, tb_s, bytes, a, b, c, 0, margin, pieces, layer_group);
    }
    if (rc != 0) goto fail;
    double t_star = free_f[L].v[best_state(&x, free_f + L)].t[K - 1];
    x.limit = t_star * (1 + TIE);

    /* Ties, first: the least time at the margin. The same program over both timelines at
     * once (four coordinates, each extended monotonically, so dominance still holds), the
     * states that already pass the least time dropped. Past the budget the margin is not
     * used. */
    double u_star = 0;
    if (margin > 0) {
        x.D = 2 * K;
        int r = program(&x, free_f, BUDGET);
        if (r < 0) {
            rc = r;
            goto fail;
        }
        int kb = r == 0 ? best_state(&x, free_f + L) : -1;
        if (kb < 0) { /* over budget: back to the least time alone */
            x.D = K;
            x.limit = INFINITY;
            if ((rc = program(&x, free_f, -1)) != 0) goto fail;
            x.limit = t_star * (1 + TIE);
        } else {
            u_star = free_f[L].v[kb].t[2 * K - 1];
        }
    }
    double u_limit = u_star * (1 + TIE);

    /* ... then the grouping found, unless fewer groups are as good: the same program with
     * exactly c groups, c = 1, 2, ..., within a budget of steps. */
    int kbest = best_state(&x, free_f + L);
    walk(&free_f, 0, L, kbest, layer_group);
    int groups = layer_group[L - 1] + 1;
    rc = groups;
    counted = calloc((size_t)groups, sizeof *counted);
    if (!counted) goto done;                 /* out of memory: the grouping above is as good */
    front_t *prev = calloc(n, sizeof *prev); /* exactly 0 groups */
    if (!prev || front_add(&x, &prev[0], (state_t){{0, 0, 0, 0, 0, 0}, -1, -1}) != 0) {
        fronts_free(prev, n);
        goto done;
    }
    double steps = 0;
    for (int cnt = 1; cnt < groups; cnt++) {
        front_t *cur = calloc(n, sizeof *cur);
        if (!cur) break;
        counted[n_counted++] = cur;
        int r = relax(&x, cnt == 1 ? prev : counted[cnt - 2], cur, BUDGET, &steps);
        if (r != 0) break; /* out of memory or budget: keep the grouping above */
        int kb = best_state(&x, cur + L);
        if (kb >= 0 && (x.D == K || cur[L].v[kb].t[2 * K - 1] <= u_limit)) {
            walk(counted, cnt, L, kb, layer_group);
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
    if (pieces) ordo__merge_packer_free(&x.packer);
    free(ready);
    free(cum);
    return rc;
}
