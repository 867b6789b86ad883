/* enforce: priority release of ready pull responses. */
#include "server/enforce.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int slice;
    int prio;
    uint64_t seq; /* arrival order */
    int64_t iter;
    int64_t ready_ns;
    int64_t bytes;
    ordo__msg_t msg;
} item_t;

#define NEVER (-2) /* a slice's round when it was never handed over (never round - 1) */

typedef struct {
    item_t *items;
    int n, cap;
    int64_t iter;  /* current iteration of this worker */
    int64_t round; /* its current round (a new iteration, or every slice handed over) */
    bool fresh;    /* nothing handed over in this round yet */
    int64_t count; /* transfers handed over in the round */
    int64_t bytes; /* bytes handed over in the round */
    /* per slice: the round it was last handed over in (NEVER) and that transfer's iteration */
    int64_t *last_round, *last_iter;
} wq_t;

struct ordo__enforce {
    int mode;
    int n_workers, n_slices, round;
    int *prio;
    wq_t *w;
    uint64_t seq;
    int pending;
    int rr;    /* where the turn starts among workers with equal claims */
    int share; /* ordo__share_t */
};

int ordo__enforce_set_share(ordo__enforce_t *e, int share)
{
    if (!e || (share != ORDO_SHARE_FAIR && share != ORDO_SHARE_SERIAL))
        return ordo__error_set(ORDO_ERR_INVAL, "enforce: bad share %d", share);
    e->share = share;
    return 0;
}

int ordo__enforce_new(int mode, int n_workers, int n_slices, const int *norm_prio, int round,
                     ordo__enforce_t **out)
{
    if (n_workers < 1 || n_slices < 1 || round < 0 ||
        (mode != ORDO_ENFORCE_MODE_FIFO && mode != ORDO_ENFORCE_STRICT &&
         mode != ORDO_ENFORCE_GREEDY))
        return ordo__error_set(ORDO_ERR_INVAL, "enforce: bad mode %d, %d workers, %d slices", mode,
                              n_workers, n_slices);
    ordo__enforce_t *e = calloc(1, sizeof *e);
    if (!e) return ORDO_ERR_NOMEM;
    e->mode = mode;
    e->n_workers = n_workers;
    e->n_slices = n_slices;
    e->round = round;
    e->prio = calloc((size_t)n_slices + 1, sizeof *e->prio);
    e->w = calloc((size_t)n_workers, sizeof *e->w);
    if (!e->prio || !e->w) {
        ordo__enforce_destroy(&e);
        return ORDO_ERR_NOMEM;
    }
    if (norm_prio) memcpy(e->prio, norm_prio, sizeof *e->prio * (size_t)n_slices);
    for (int i = 0; i < n_workers; i++) {
        wq_t *q = &e->w[i];
        q->iter = -1;
        q->fresh = true;
        q->last_round = malloc(sizeof *q->last_round * (size_t)n_slices);
        q->last_iter = malloc(sizeof *q->last_iter * (size_t)n_slices);
        if (!q->last_round || !q->last_iter) {
            ordo__enforce_destroy(&e);
            return ORDO_ERR_NOMEM;
        }
        for (int s = 0; s < n_slices; s++)
            q->last_round[s] = q->last_iter[s] = NEVER;
    }
    *out = e;
    return 0;
}

void ordo__enforce_destroy(ordo__enforce_t **ep)
{
    ordo__enforce_t *e = *ep;
    if (!e) return;
    if (e->w)
        for (int i = 0; i < e->n_workers; i++) {
            for (int j = 0; j < e->w[i].n; j++)
                ordo__msg_close(&e->w[i].items[j].msg);
            free(e->w[i].items);
            free(e->w[i].last_round);
            free(e->w[i].last_iter);
        }
    free(e->w);
    free(e->prio);
    free(e);
    *ep = NULL;
}

int ordo__enforce_add(ordo__enforce_t *e, int worker, int64_t iter, int slice, ordo__msg_t *m)
{
    if (worker < 0 || worker >= e->n_workers || slice < 0 || slice >= e->n_slices)
        return ordo__error_set(ORDO_ERR_INVAL, "enforce: bad worker %d or slice %d", worker, slice);
    wq_t *q = &e->w[worker];
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 16;
        item_t *p = realloc(q->items, sizeof *p * (size_t)cap);
        if (!p) return ORDO_ERR_NOMEM;
        q->items = p;
        q->cap = cap;
    }
    if (iter > q->iter) { /* a new iteration of this worker starts a round of its own */
        q->iter = iter;
        if (!q->fresh) q->round++;
        q->fresh = true;
        q->count = 0;
        q->bytes = 0;
    }
    item_t *it = &q->items[q->n++];
    it->slice = slice;
    it->prio = e->prio[slice];
    it->seq = e->seq++;
    it->iter = iter;
    it->ready_ns = ordo__clock_ns();
    it->bytes = 0;
    for (int i = 0; i < m->nframes; i++)
        it->bytes += (int64_t)zmq_msg_size(&m->frames[i]);
    ordo__msg_move(&it->msg, m);
    e->pending++;
    return 0;
}

static void take(ordo__enforce_t *e, int worker, int idx, ordo__msg_t *out,
                 ordo__enforce_release_t *info)
{
    wq_t *q = &e->w[worker];
    item_t it = q->items[idx];
    ordo__msg_move(out, &q->items[idx].msg);
    q->items[idx] = q->items[--q->n];
    e->pending--;
    if (info)
        *info = (ordo__enforce_release_t){.worker = worker,
                                         .iter = it.iter,
                                         .slice = it.slice,
                                         .norm = it.prio,
                                         .counter = q->count,
                                         .held = e->pending,
                                         .ready_ns = it.ready_ns};
    q->bytes += it.bytes;
    q->last_round[it.slice] = q->round;
    q->last_iter[it.slice] = it.iter;
    q->fresh = false;
    /* every transfer of the round handed over: the next round counts from 0 again */
    if (++q->count == e->round) {
        q->round++;
        q->fresh = true;
        q->count = 0;
        q->bytes = 0;
    }
}

/* held_back tells whether strict holds back worker q's response of normalized priority prio:
 * some slice of smaller priority is expected in this round and not handed over yet. A slice
 * is expected when it was handed over in the worker's previous round, in the iteration
 * before this one (training) or in this one (forward only, which pulls one version every
 * round). So a tensor that is not transferred every round (the examples' eval.counts, once
 * an epoch) holds nothing back, and neither does anything in a worker's first round, when
 * the server cannot know yet which transfers a round has. */
static bool held_back(const ordo__enforce_t *e, const wq_t *q, int prio)
{
    for (int s = 0; s < e->n_slices; s++)
        if (e->prio[s] < prio && q->last_round[s] == q->round - 1 &&
            (q->last_iter[s] == q->iter - 1 || q->last_iter[s] == q->iter))
            return true;
    return false;
}

/* best item of a worker queue: smallest priority (when by_prio), then arrival */
static int best_of(const wq_t *q, bool by_prio)
{
    int best = -1;
    for (int i = 0; i < q->n; i++) {
        const item_t *a = &q->items[i];
        if (best < 0) {
            best = i;
            continue;
        }
        const item_t *b = &q->items[best];
        if ((by_prio && a->prio < b->prio) || ((!by_prio || a->prio == b->prio) && a->seq < b->seq))
            best = i;
    }
    return best;
}

int ordo__enforce_next(ordo__enforce_t *e, bool link_free, ordo__msg_t *out,
                      ordo__enforce_release_t *info)
{
    if (e->pending == 0 || !link_free) return ORDO_ERR_AGAIN;
    /* Each worker offers its candidate: greedy its smallest normalized priority, strict the
     * same but only once the counter allows it, fifo its oldest. Among the workers the
     * smallest priority goes (greedy), then the worker with the fewest bytes handed over in
     * its iteration, as connections share a link byte-fairly (serial: the most, so that one
     * worker is served to the end before the next), then the turn. */
    bool serial = e->share == ORDO_SHARE_SERIAL;
    int bw = -1, bi = -1;
    for (int k = 0; k < e->n_workers; k++) {
        int w = (e->rr + k) % e->n_workers;
        wq_t *q = &e->w[w];
        if (q->n == 0) continue;
        int i = best_of(q, e->mode != ORDO_ENFORCE_MODE_FIFO);
        if (e->mode == ORDO_ENFORCE_STRICT && held_back(e, q, q->items[i].prio))
            continue; /* its turn has not come */
        if (bw >= 0) {
            int pa = q->items[i].prio, pb = e->w[bw].items[bi].prio;
            if (e->mode == ORDO_ENFORCE_GREEDY && pa != pb) {
                if (pa > pb) continue;
            } else if (serial ? q->bytes <= e->w[bw].bytes : q->bytes >= e->w[bw].bytes) {
                continue;
            }
        }
        bw = w;
        bi = i;
    }
    if (bw < 0) return ORDO_ERR_AGAIN;
    e->rr = (bw + 1) % e->n_workers;
    take(e, bw, bi, out, info);
    return 0;
}

int ordo__enforce_pending(const ordo__enforce_t *e)
{
    return e->pending;
}

void ordo__enforce_normalize(const int *prio_of_slice, const int *server_of_slice, int n_slices,
                            int server, int *out)
{
    for (int s = 0; s < n_slices; s++) {
        int c = 0;
        for (int t = 0; t < n_slices; t++)
            if (server_of_slice[t] == server && prio_of_slice[t] < prio_of_slice[s]) c++;
        out[s] = c;
    }
}
