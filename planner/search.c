/* search: iterated local search over recv orders, scored by the simulator. A move swaps two
 * recvs of one channel or moves one recv to another's place in that channel's order (only
 * the order within a channel changes a makespan). Moves that do not make the order worse
 * are taken (sideways moves cross plateaus); after `stale limit` tries without a strict
 * improvement the search restarts from the best order with a few random moves. The best
 * order seen is what it returns. Deterministic for a given seed and evaluation cap. */
#include "planner/search.h"
#include "planner/seq_move.h"

#include "common/clock.h"
#include "common/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ordo__search_opts_default(ordo__search_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->budget_ms = 2000;
    o->seed = 1;
}

typedef struct {
    ordo__sim_t *sim;
    int n;
    int sign;     /* +1 minimize, -1 maximize */
    int *movable; /* parameters sharing their channel with another */
    int n_movable;
    int *mate_off; /* CSR per channel: its parameters */
    int *mates;
    uint64_t rng;
    long evals;
} search_t;

static double score(search_t *s, const int *seq)
{
    s->evals++;
    return s->sign * ordo__sim_makespan(s->sim, seq);
}

/* improves reports a strict improvement beyond rounding noise: sums of the same times in
 * another order may differ in the last bits. */
static int improves(double f, double ref)
{
    return f < ref - 1e-9 * fabs(ref);
}

static int find(const int *seq, int n, int p)
{
    for (int k = 0; k < n; k++)
        if (seq[k] == p) return k;
    ORDO_ASSERT(0);
    return -1;
}

/* random_move applies one random swap or insert between two recvs of one channel. */
static void random_move(search_t *s, int *seq)
{
    int a = s->movable[ordo__rng_below(&s->rng, s->n_movable)];
    int c = ordo__sim_channel(s->sim, a);
    int size = s->mate_off[c + 1] - s->mate_off[c];
    int b;
    do
        b = s->mates[s->mate_off[c] + ordo__rng_below(&s->rng, size)];
    while (b == a);
    int ia = find(seq, s->n, a), ib = find(seq, s->n, b);
    ordo_seq_move(seq, ia, ib, (int)(ordo__rng_next(&s->rng) & 1));
}

static int out_of_budget(const search_t *s, const ordo__search_opts_t *o, int64_t deadline)
{
    if (o->max_evals > 0 && s->evals >= o->max_evals) return 1;
    if (o->budget_ms > 0 && (s->evals & 31) == 0 && ordo__clock_ns() >= deadline) return 1;
    return 0;
}

int ordo__search_run(ordo__sim_t *sim, const int *start_priority, const ordo__search_opts_t *o,
                    int *priority, ordo__search_result_t *res)
{
    if (!sim || !start_priority || !o || !priority)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__search_run: bad args");
    if (o->budget_ms <= 0 && o->max_evals <= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__search_run: no budget and no evaluation cap");
    int64_t deadline = ordo__clock_ns() + (int64_t)o->budget_ms * 1000000;
    search_t s = {.sim = sim, .n = ordo__sim_n_params(sim), .sign = o->maximize ? -1 : 1};
    s.rng = o->seed;
    int n = s.n, n_ch = 0, rc = ORDO_ERR_NOMEM;
    for (int p = 0; p < n; p++)
        if (ordo__sim_channel(sim, p) + 1 > n_ch) n_ch = ordo__sim_channel(sim, p) + 1;
    int *cur = malloc((size_t)n * sizeof *cur), *cand = malloc((size_t)n * sizeof *cand);
    int *best = malloc((size_t)n * sizeof *best);
    s.movable = malloc((size_t)n * sizeof *s.movable);
    s.mates = malloc((size_t)n * sizeof *s.mates);
    s.mate_off = calloc((size_t)n_ch + 2, sizeof *s.mate_off);
    if (!cur || !cand || !best || !s.movable || !s.mates || !s.mate_off) {
        rc = ordo__error_set(rc, "ordo__search_run: out of memory");
        goto fail;
    }
    for (int p = 0; p < n; p++)
        s.mate_off[ordo__sim_channel(sim, p) + 1]++;
    for (int c = 0; c < n_ch; c++)
        s.mate_off[c + 1] += s.mate_off[c];
    memset(cand, 0, (size_t)n * sizeof *cand); /* per-channel fill cursor */
    for (int p = 0; p < n; p++) {
        int c = ordo__sim_channel(sim, p);
        s.mates[s.mate_off[c] + cand[c]++] = p;
    }
    for (int p = 0; p < n; p++) {
        int c = ordo__sim_channel(sim, p);
        if (s.mate_off[c + 1] - s.mate_off[c] > 1) s.movable[s.n_movable++] = p;
    }
    if ((rc = ordo__sim_seq_from_priority(sim, start_priority, cur))) goto fail;
    memcpy(best, cur, (size_t)n * sizeof *cur);
    double fcur = score(&s, cur), fbest = fcur, fstart = fcur;
    /* plateau patience: about two tries per neighbour of a single-channel order */
    long limit = 2L * s.n_movable * s.n_movable;
    if (limit < 32) limit = 32;
    if (limit > 20000) limit = 20000;
    long stale = 0, kick = 0;
    while (s.n_movable > 0 && !out_of_budget(&s, o, deadline)) {
        if (stale >= limit) {
            /* restart near the best order, a little further each time */
            memcpy(cur, best, (size_t)n * sizeof *cur);
            int moves = 2 + (int)(kick++ % 4);
            for (int k = 0; k < moves; k++)
                random_move(&s, cur);
            fcur = score(&s, cur);
            stale = 0;
        } else {
            memcpy(cand, cur, (size_t)n * sizeof *cur);
            random_move(&s, cand);
            double f = score(&s, cand);
            if (improves(f, fcur))
                stale = 0;
            else
                stale++;
            if (f <= fcur) {
                memcpy(cur, cand, (size_t)n * sizeof *cur);
                fcur = f;
            }
        }
        if (improves(fcur, fbest)) {
            memcpy(best, cur, (size_t)n * sizeof *cur);
            fbest = fcur;
        }
    }
    for (int k = 0; k < n; k++)
        priority[best[k]] = k;
    if (res) {
        res->start_us = s.sign * fstart;
        res->makespan_us = s.sign * fbest;
        res->evals = s.evals;
    }
    rc = 0;
fail:
    free(cur);
    free(cand);
    free(best);
    free(s.movable);
    free(s.mates);
    free(s.mate_off);
    return rc;
}

int ordo__search_bounds(ordo__sim_t *sim, const int *start_priority, const ordo__search_opts_t *o,
                       ordo__search_bounds_t *out, int *best_priority, int *worst_priority)
{
    if (!sim || !start_priority || !o || !out)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__search_bounds: bad args");
    int n = ordo__sim_n_params(sim);
    if (n <= ORDO_SIM_EXHAUSTIVE_MAX) {
        out->exhaustive = 1;
        return ordo__sim_exhaustive(sim, &out->best_us, best_priority, &out->worst_us,
                                   worst_priority);
    }
    int *tmp = malloc((size_t)n * sizeof *tmp), *rev = malloc((size_t)n * sizeof *rev);
    int rc = ORDO_ERR_NOMEM;
    if (!tmp || !rev) {
        rc = ordo__error_set(rc, "ordo__search_bounds: out of memory");
        goto fail;
    }
    ordo__search_opts_t so = *o;
    ordo__search_result_t r;
    so.maximize = 0;
    if ((rc = ordo__search_run(sim, start_priority, &so, tmp, &r))) goto fail;
    out->best_us = r.makespan_us;
    if (best_priority) memcpy(best_priority, tmp, (size_t)n * sizeof *tmp);
    /* the worst order is looked for from the start order reversed */
    if ((rc = ordo__sim_seq_from_priority(sim, start_priority, tmp))) goto fail;
    for (int k = 0; k < n; k++)
        rev[tmp[k]] = n - 1 - k;
    so.maximize = 1;
    if ((rc = ordo__search_run(sim, rev, &so, tmp, &r))) goto fail;
    out->worst_us = r.makespan_us;
    if (worst_priority) memcpy(worst_priority, tmp, (size_t)n * sizeof *tmp);
    out->exhaustive = 0;
    rc = 0;
fail:
    free(tmp);
    free(rev);
    return rc;
}
