/* merge_optimal: the exact merge planner ("optimal", merge.h). Under the two-stage cost
 * model (a message holds the link for a + b * bytes from max(link free, ready), then the
 * receiver for c * bytes from max(receiver free, arrival)) it finds a grouping of
 * consecutive layers with the least iteration time by a dynamic program over layer
 * boundaries that keeps, per prefix, the Pareto set of (link free, receiver free) pairs.
 * With early pulls a third stage follows (the group's next values back over the servers'
 * links, ordo_merge_pull) and the states hold three ends (ordo__merge_optimal3).
 * A group is one message, or the messages the run cuts it into (ordo__merge_pieces_t).
 * Among groupings of least time it prefers the one with the least time when communication
 * costs (1 + margin) times more (the same program over both timelines at once), then one
 * with the fewest groups. docs/merging.md §2 has the
 * proofs. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "planner/merge.h"
#include "core/merge_packer.h"

/* Relative slack under which two iteration times count as equal (rounding of sums taken
 * in different orders). */
#define TIE 1e-13

/* Steps (states extended, and states compared in unsorted fronts) after which the program
 * at the margin, and the search for the fewest groups, give up and keep what they have
 * (seconds). */
#define BUDGET 1e8

/* The same for the free program with the pull stage, whose fronts of 2 + P ends can be large
 * when the pulls or the compute bound the iteration (many groupings then tie); past it
 * fall_back plans. */
#define BUDGET_PULLS 1e9

/* Ends per cost model: link, receiver, and the pull stage's resources. */
#define KMAX (2 + ORDO__MERGE_PULLS_MAX)

/* One state of a prefix: when the link and the receiver (and, with the pull stage, each of
 * its resources: the servers' links back) are free after its last message, t[0..K), the same
 * under the costs at the margin, t[K..2K) (D = 2K only), and where it came from (the first
 * layer j of its last group, the state's index in the front of prefix j). */
typedef struct state {
    double t[2 * KMAX];
    int j, from;
} state_t;

/* A Pareto front: no state is at least as late in all D coordinates as another. With D = 2
 * it is kept sorted by t[0] ascending with t[1] strictly descending. */
typedef struct front {
    state_t *v;
    int n, cap;
} front_t;

typedef struct ctx {
    int L, D, K; /* coordinates; ends per model (2, or 2 + P with pulls) */
    int P;       /* the pull stage's resources (0: no pull stage) */
    const double *ready;
    const int64_t *cum;
    double a[2], b[2], c[2], p[2], pm[2]; /* the costs, and at the margin */
    double limit;                         /* states whose final end passes it are dropped */
    double ulimit;                        /* with pulls: the same at the margin (D = 2K) */
    const int64_t *rem;                   /* [(L + 1) * P] bytes of layers i.. on pull resource r */
    const int *rem_values;                /* [(L + 1) * P] and their pulled values */
    const ordo__merge_pieces_t *pieces;    /* NULL: a group is one message */
    ordo__merge_packer_t packer;
} ctx_t;

static int front_grow(front_t *f)
{
    if (f->n < f->cap) return 0;
    int cap = f->cap ? 2 * f->cap : 4;
    state_t *v = realloc(f->v, (size_t)cap * sizeof *v);
    if (!v) return ORDO_ERR_NOMEM;
    f->v = v;
    f->cap = cap;
    return 0;
}

/* front_add2 inserts x (D = 2) unless a state of f is no later in both coordinates, and
 * drops the states x is no later than in both. Returns 0 or ORDO_ERR_NOMEM. */
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
        if (front_grow(f) != 0) return ORDO_ERR_NOMEM;
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
    if (front_grow(f) != 0) return ORDO_ERR_NOMEM;
    f->v[f->n++] = x;
    return 0;
}

/* final is the iteration's end in the ends t[0..K) of one cost model: the receiver's, or
 * the pull stage's latest */
static double final(const ctx_t *x, const double *t)
{
    return x->P ? ordo_merge_pulls_end(t + 2, x->P) : t[1];
}

/* bound is, with the pull stage, a lower bound of the iteration's end from the ends t of cost
 * model q (0, or 1: at the margin) of a prefix of i layers: every byte of layers i.. still
 * crosses the link after t[0], the last message after the last layer is ready, and each pull
 * resource r still carries its bytes of layers i.. after t[2 + r]. Without the pull stage,
 * the final end so far. Each term grows with every end, so a state that another is no later
 * than never has a smaller bound. */
static double bound(const ctx_t *x, const double *t, int i, int q)
{
    double lb = final(x, t);
    if (!x->P || i == x->L) return lb;
    double rest = (double)(x->cum[x->L] - x->cum[i]);
    double arrive = t[0] + x->a[q] + x->b[q] * rest, last = x->ready[x->L - 1] + x->a[q];
    if (arrive > lb) lb = arrive;
    if (last > lb) lb = last;
    for (int r = 0; r < x->P; r++) {
        size_t k = (size_t)i * (size_t)x->P + (size_t)r;
        double y = t[2 + r] + (x->p[q] * (double)x->rem[k] + x->pm[q] * (double)x->rem_values[k]);
        if (y > lb) lb = y;
    }
    return lb;
}

/* front_add adds state s of prefix i to its front f, unless it cannot end within the limit
 * (nor, with pulls and the margin's coordinates, within the margin's limit): the final times
 * only grow from here */
static int front_add(const ctx_t *x, front_t *f, state_t s, int i)
{
    if (bound(x, s.t, i, 0) > x->limit) return 0;
    if (x->P && x->D > x->K && bound(x, s.t + x->K, i, 1) > x->ulimit) return 0;
    return x->D == 2 ? front_add2(f, s) : front_addn(f, s, x->D);
}

/* A group's messages as sending them needs: their number, bytes, and phi per model
 * (ordo_merge_send; c > 0 only). */
typedef struct group {
    int n;
    int64_t bytes;
    int64_t pulled[ORDO__MERGE_PULLS_MAX]; /* bytes on each pull resource */
    int values[ORDO__MERGE_PULLS_MAX];     /* and pulled values */
    double phi[2];
} group_t;

/* clamp raises the ends t (cost model q) of a state of prefix i < L to the earliest times
 * at which they can still matter, so that states which differ only in ends that no longer
 * matter become one (with the pull stage the fronts are otherwise large when compute or the
 * pulls bound the iteration, as many groupings then tie): the next group ends with layer i or
 * later, so its messages start no earlier than ready[i] (the link's end matters only past
 * it); the receiver's end is max(its end + c B, start + c B + phi) with phi >= a, so it
 * matters only past ready[i] + a; and a pull resource's end only past the receiver's (the
 * next pull starts after a later receiver end, the iteration ends after the receiver's). The
 * final time is unchanged (up to rounding in the last place of the sums). */
static void clamp(const ctx_t *x, double *t, int i, int q)
{
    double r0 = x->ready[i], r1 = x->ready[i] + x->a[q];
    if (t[0] < r0) t[0] = r0;
    if (t[1] < r1) t[1] = r1;
    for (int r = 0; r < x->P; r++)
        if (t[2 + r] < t[1]) t[2 + r] = t[1];
}

/* extend is the state after sending layers j..i-1 as the messages of g from state p; the
 * arithmetic is ordo__merge_comm_times' so that both give the same bits. */
static state_t extend(const ctx_t *x, const state_t *p, int j, int i, int from, const group_t *g)
{
    state_t s = *p;
    s.j = j;
    s.from = from;
    for (int q = 0; q < x->D / x->K; q++) {
        double *t = &s.t[x->K * q];
        ordo_merge_send(&t[0], &t[1], x->ready[i - 1], g->n, g->bytes, g->phi[q], x->a[q], x->b[q],
                         x->c[q]);
        if (x->P) {
            ordo_merge_pull(&t[2], x->P, t[1], x->p[q], x->pm[q], g->pulled, g->values);
            if (i < x->L) clamp(x, t, i, q);
        }
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
    if (x->P && x->pieces) {
        ordo__merge_packer_pulls(&x->packer, x->P, g->pulled, g->values);
    } else {
        g->pulled[0] = g->bytes;
        g->values[0] = i - j;
    }
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
                if (front_add(x, &to[i], extend(x, &fr[j].v[k], j, i, k, &g), i) != 0)
                    return ORDO_ERR_NOMEM;
                if (x->D > 2) *steps += to[i].n; /* an unsorted front is scanned whole */
            }
            if (budget >= 0 && *steps > budget) return 1;
        }
    }
    return 0;
}

/* best_state returns the index of the best state of f: the least final end (D = K), or the
 * least final end at the margin among the states whose final end is within x->limit
 * (D = 2K); -1 when there is none. */
static int best_state(const ctx_t *x, const front_t *f)
{
    int best = -1, q = x->D - x->K;
    double best_t = INFINITY;
    for (int k = 0; k < f->n; k++) {
        double t = final(x, f->v[k].t + q);
        if (final(x, f->v[k].t) <= x->limit && (best < 0 || t < best_t)) {
            best = k;
            best_t = t;
        }
    }
    return best;
}

static void fronts_free(front_t *f, size_t n)
{
    for (size_t i = 0; f && i < n; i++)
        free(f[i].v);
    free(f);
}

/* program runs the free program under x into f (fronts of L + 1 prefixes, emptied first);
 * 0, 1 past the budget, or ORDO_ERR_NOMEM. */
static int program(ctx_t *x, front_t *f, double budget)
{
    const state_t origin = {{0}, -1, -1};
    for (int i = 0; i <= x->L; i++)
        f[i].n = 0;
    double steps = 0;
    if (front_add(x, &f[0], origin, 0) != 0) return ORDO_ERR_NOMEM;
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

static int optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b, double c,
                   double p, double pm, int P, double margin, const ordo__merge_pieces_t *pieces,
                   int *layer_group);

/* pull_bounds prepares the pull stage's pruning: x->rem and x->rem_values (each resource's
 * bytes and pulled values of layers i..), and x->limit from the best of two groupings
 * evaluated under the model, one per layer and the two-stage program's (which the fronts of
 * 2 + P ends would otherwise have to beat with every state they keep); that grouping (of
 * equal times, the one of fewer groups) goes to best_group (L ints). 0 or a negative error. */
static int pull_bounds(ctx_t *x, const double *tb_s, const int64_t *bytes, int *best_group)
{
    int L = x->L, P = x->P;
    int64_t *rem = (int64_t *)x->rem, on[ORDO__MERGE_PULLS_MAX];
    int *rem_values = (int *)x->rem_values, values[ORDO__MERGE_PULLS_MAX];
    for (int i = L - 1; i >= 0; i--) {
        if (x->pieces) {
            ordo__merge_packer_reset(&x->packer);
            ordo__merge_packer_add(&x->packer, i);
            ordo__merge_packer_pulls(&x->packer, P, on, values);
        } else {
            on[0] = bytes[i];
            values[0] = 1;
        }
        for (int r = 0; r < P; r++) {
            size_t k = (size_t)i * (size_t)P + (size_t)r, next = k + (size_t)P;
            rem[k] = rem[next] + on[r];
            rem_values[k] = rem_values[next] + values[r];
        }
    }
    if (P == 1 && x->pieces && x->pieces->n_servers > 1) {
        /* one resource charged each group's busiest share: the sums of each layer's busiest
         * share above can be more than any grouping pays; no bound from their bytes then (the
         * values are all counted, so theirs holds) */
        for (int i = 0; i <= L; i++)
            rem[i] = 0;
    }
    int *scratch = malloc((size_t)L * sizeof *scratch);
    if (!scratch) return ordo__error_set(ORDO_ERR_NOMEM, "ordo__merge_optimal: out of memory");
    double best = INFINITY;
    int rc = 0;
    for (int pass = 0; pass < 2 && rc >= 0; pass++) {
        if (pass == 0) {
            for (int i = 0; i < L; i++)
                scratch[i] = i;
        } else if ((rc = optimal(L, tb_s, bytes, x->a[0], x->b[0], x->c[0], 0, 0, 0, 0, x->pieces,
                                 scratch)) < 0) {
            break;
        }
        double t = ordo__merge_times(L, x->ready, bytes, scratch, x->a[0], x->b[0], x->c[0],
                                     x->p[0], x->pm[0], P, x->pieces, NULL, NULL);
        if (isnan(t)) rc = ordo__error_set(ORDO_ERR_NOMEM, "ordo__merge_optimal: out of memory");
        if (rc >= 0 &&
            (t < best || (t <= best * (1 + TIE) && scratch[L - 1] < best_group[L - 1]))) {
            best = t;
            memcpy(best_group, scratch, (size_t)L * sizeof *scratch);
        }
    }
    free(scratch);
    x->limit = best * (1 + TIE);
    return rc < 0 ? rc : 0;
}

/* fall_back plans when the program with P pull resources passes its budget: the best, under
 * the model, of the grouping of pull_bounds (best_group) and the program's with one pull
 * resource (P > 1; itself falling back the same way). Writes layer_group, returns the groups
 * or a negative error. */
static int fall_back(const ctx_t *x, const double *tb_s, const int64_t *bytes, double margin,
                     const int *best_group, int *layer_group)
{
    int L = x->L;
    memcpy(layer_group, best_group, (size_t)L * sizeof *layer_group);
    if (x->P > 1) {
        int *one = malloc((size_t)L * sizeof *one);
        if (!one) return ordo__error_set(ORDO_ERR_NOMEM, "ordo__merge_optimal: out of memory");
        int rc = optimal(L, tb_s, bytes, x->a[0], x->b[0], x->c[0], x->p[0], x->pm[0], 1, margin,
                         x->pieces, one);
        double t1 = rc < 0 ? NAN
                           : ordo__merge_times(L, x->ready, bytes, one, x->a[0], x->b[0], x->c[0],
                                               x->p[0], x->pm[0], x->P, x->pieces, NULL, NULL),
               t0 = ordo__merge_times(L, x->ready, bytes, best_group, x->a[0], x->b[0], x->c[0],
                                      x->p[0], x->pm[0], x->P, x->pieces, NULL, NULL);
        if (rc < 0 || isnan(t0) || isnan(t1)) {
            free(one);
            return rc < 0 ? rc : ordo__error_set(ORDO_ERR_NOMEM, "ordo__merge_optimal: out of memory");
        }
        /* the faster, or of equal time the fewer groups (as optimal's rule) */
        if (t1 < t0 || (t1 <= t0 * (1 + TIE) && one[L - 1] < best_group[L - 1]))
            memcpy(layer_group, one, (size_t)L * sizeof *one);
        free(one);
    }
    return layer_group[L - 1] + 1;
}

int ordo__merge_optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                       double c, double margin, const ordo__merge_pieces_t *pieces, int *layer_group)
{
    return ordo__merge_optimal3(L, tb_s, bytes, a, b, c, 0, 0, margin, pieces, layer_group);
}

int ordo__merge_optimal3(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                        double c, double p, double pm, double margin,
                        const ordo__merge_pieces_t *pieces, int *layer_group)
{
    if (!isfinite(a) || !isfinite(b) || !isfinite(c) || !isfinite(p) || !isfinite(pm) || a < 0 ||
        b < 0 || c < 0 || p < 0 || pm < 0)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "cost model a=%g s, b=%g s/byte, c=%g s/byte, pull %g s/byte and "
                              "%g s/value: all must be finite and >= 0",
                              a, b, c, p, pm);
    if (!isfinite(margin) || margin < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "margin %g: must be finite and >= 0", margin);
    if (L < 0 || (L > 0 && (!tb_s || !bytes || !layer_group)))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_optimal: bad arguments");
    if (L == 0) return 0;
    int rc;
    if (pieces && (rc = ordo__merge_pieces_check(pieces, L)) != 0) return rc;
    return optimal(L, tb_s, bytes, a, b, c, p, pm,
                   p > 0 || pm > 0 ? ordo__merge_pull_resources(pieces) : 0, margin, pieces,
                   layer_group);
}

static int optimal(int L, const double *tb_s, const int64_t *bytes, double a, double b, double c,
                   double p, double pm, int P, double margin, const ordo__merge_pieces_t *pieces,
                   int *layer_group)
{
    size_t n = (size_t)L + 1;
    double *ready = malloc(n * sizeof *ready);
    int64_t *cum = malloc(n * sizeof *cum);
    front_t *free_f = calloc(n, sizeof *free_f);
    front_t **counted = NULL; /* counted[c - 1][i]: exactly c groups */
    int n_counted = 0;
    double l = 1 + margin;
    int K = 2 + P;
    int64_t *rem = P ? calloc(n * (size_t)P, sizeof *rem) : NULL;
    int *rem_values = P ? calloc(n * (size_t)P, sizeof *rem_values) : NULL;
    int *best_group = P ? malloc((size_t)L * sizeof *best_group) : NULL;
    ctx_t x = {.L = L,
               .D = K,
               .K = K,
               .P = P,
               .ready = ready,
               .cum = cum,
               .a = {a, l * a},
               .b = {b, l * b},
               .c = {c, l * c},
               .p = {p, l * p},
               .pm = {pm, l * pm},
               .limit = INFINITY,
               .ulimit = INFINITY,
               .rem = rem,
               .rem_values = rem_values,
               .pieces = pieces};
    int rc = ORDO_ERR_NOMEM;
    if (!ready || !cum || !free_f || (P && (!rem || !rem_values || !best_group))) goto fail;
    if (pieces && ordo__merge_packer_init(&x.packer, pieces, 2, x.a, x.b, x.c) != 0) goto fail;
    double clock = 0;
    cum[0] = 0;
    for (int i = 0; i < L; i++) {
        clock += tb_s[i];
        ready[i] = clock;
        cum[i + 1] = cum[i] + bytes[i];
    }
    if (P && (rc = pull_bounds(&x, tb_s, bytes, best_group)) != 0) goto fail;
    rc = ORDO_ERR_NOMEM;

    /* The program. A later message's ends are max(link free, ready) + ... and
     * max(receiver free, its link end) + ..., which never grow when the earlier ends shrink;
     * so a grouping of 0..i-1 whose ends are no earlier in both than another's can be
     * dropped, and the Pareto front of (link free, receiver free) over the groupings of each
     * prefix holds an optimal one (with the pull stage, max(pull resource free, receiver
     * end) + ... is monotone too, and the front holds 2 + P ends). With c = 0 and no pull
     * stage both coordinates are equal and the front is the single earliest end. */
    /* 2 + P ends per state can make large fronts: past the budget, fall_back (never over
     * budget without the pull stage: its fronts are 2-D) */
    if ((rc = program(&x, free_f, P ? BUDGET_PULLS : -1)) == 1) {
        rc = fall_back(&x, tb_s, bytes, margin, best_group, layer_group);
        goto fail;
    }
    if (rc != 0) goto fail;
    double t_star = final(&x, free_f[L].v[best_state(&x, free_f + L)].t);
    x.limit = t_star * (1 + TIE);

    /* Ties, first: the least time at the margin. The same program over both timelines at
     * once (four coordinates, each extended monotonically, so dominance still holds), the
     * states that already pass the least time dropped. Past the budget the margin is not
     * used. */
    double u_star = 0;
    if (margin > 0) {
        if (P) { /* the margin's time of a grouping of least time bounds the margin's best */
            walk(&free_f, 0, L, best_state(&x, free_f + L), layer_group);
            double u0 = ordo__merge_times(L, ready, bytes, layer_group, x.a[1], x.b[1], x.c[1],
                                          x.p[1], x.pm[1], P, pieces, NULL, NULL);
            if (!isnan(u0)) x.ulimit = u0 * (1 + TIE);
        }
        x.D = 2 * K;
        front_t *margin_f = calloc(n, sizeof *margin_f);
        if (!margin_f) goto fail;
        int r = program(&x, margin_f, BUDGET);
        if (r < 0) {
            fronts_free(margin_f, n);
            rc = r;
            goto fail;
        }
        int kb = r == 0 ? best_state(&x, margin_f + L) : -1;
        if (kb < 0) { /* over budget: back to the least time alone, the fronts above */
            fronts_free(margin_f, n);
            x.D = K;
        } else {
            u_star = final(&x, margin_f[L].v[kb].t + K);
            fronts_free(free_f, n);
            free_f = margin_f;
        }
    }
    double u_limit = u_star * (1 + TIE);
    if (x.D > K) x.ulimit = u_limit;

    /* ... then the grouping found, unless fewer groups are as good: the same program with
     * exactly c groups, c = 1, 2, ..., within a budget of steps. */
    int kbest = best_state(&x, free_f + L);
    walk(&free_f, 0, L, kbest, layer_group);
    int groups = layer_group[L - 1] + 1;
    rc = groups;
    counted = calloc((size_t)groups, sizeof *counted);
    if (!counted) goto done;                 /* out of memory: the grouping above is as good */
    front_t *prev = calloc(n, sizeof *prev); /* exactly 0 groups */
    if (!prev || front_add(&x, &prev[0], (state_t){{0}, -1, -1}, 0) != 0) {
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
        if (kb >= 0 && (x.D == K || final(&x, cur[L].v[kb].t + K) <= u_limit)) {
            walk(counted, cnt, L, kb, layer_group);
            rc = cnt;
            break;
        }
    }
    fronts_free(prev, n);
done:
fail:
    if (rc == ORDO_ERR_NOMEM) ordo__error_set(rc, "ordo__merge_optimal: out of memory");
    for (int k = 0; k < n_counted; k++)
        fronts_free(counted[k], n);
    free(counted);
    fronts_free(free_f, n);
    if (pieces) ordo__merge_packer_free(&x.packer);
    free(ready);
    free(cum);
    free(rem);
    free(rem_values);
    free(best_group);
    return rc;
}
