/* sim: discrete-event simulation of one worker's iteration (docs/ordering.md, "The simulator's rules"). Channels carry
 * their recvs back to back from time 0 in the given order; one compute resource runs ops
 * non-preemptively, always starting the ready op that became ready first (ties by listed
 * order). With backward, the ops' backward passes follow in reverse listed order and each
 * parameter's gradient send queues on its channel when its last reader's backward ends. */
#include "planner/sim.h"

#include "common/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ordo__sim {
    int n_params;
    int n_ops;
    int n_channels;
    int backward;
    double *recv_t, *send_t, *fwd_t, *bwd_t;
    int *channel;
    int *n_in;            /* per op: number of inputs */
    int *succ_off, *succ; /* CSR: ops reading op's output */
    int *parm_off, *parm; /* CSR: op's parameters */
    int *grad_off, *grad; /* CSR: parameters whose gradient is complete after op's bwd */
    double upper, lower;  /* U and L */
    /* scratch of one run */
    double *arrival; /* per parameter */
    double *base;    /* per op: when its last parameter arrives */
    double *in_end;  /* per op: latest end of its inputs */
    double *ready, *start, *end;
    int *pending, *heap;
    double *chan_free;
    int *seq;
};

/* ---- construction ------------------------------------------------------------------------ */

void ordo__sim_destroy(ordo__sim_t **ps)
{
    if (!ps || !*ps) return;
    ordo__sim_t *s = *ps;
    void *arrs[] = {s->recv_t,   s->send_t, s->fwd_t,     s->bwd_t, s->channel,  s->n_in,
                    s->succ_off, s->succ,   s->parm_off,  s->parm,  s->grad_off, s->grad,
                    s->arrival,  s->base,   s->in_end,    s->ready, s->start,    s->end,
                    s->pending,  s->heap,   s->chan_free, s->seq};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        free(arrs[i]);
    free(s);
    *ps = NULL;
}

#define ALLOC(ptr, n) (((ptr) = calloc((size_t)(n) + 1, sizeof *(ptr))) == NULL)

int ordo__sim_new(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *channel,
                 int n_channels, int backward, ordo__sim_t **out)
{
    if (!m || !t || !out || m->n_params < 1 || m->n_ops < 1 || t->n_params != m->n_params ||
        t->n_ops != m->n_ops)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__sim_new: bad model or times");
    if (!channel) n_channels = 1;
    if (n_channels < 1) return ordo__error_set(ORDO_ERR_INVAL, "ordo__sim_new: %d channels", n_channels);
    for (int p = 0; channel && p < m->n_params; p++)
        if (channel[p] < 0 || channel[p] >= n_channels)
            return ordo__error_set(ORDO_ERR_INVAL, "parameter '%s': channel %d not in [0, %d)",
                                  m->params[p].name, channel[p], n_channels);
    int np = m->n_params, no = m->n_ops;
    ordo__sim_t *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->n_params = np;
    s->n_ops = no;
    s->n_channels = n_channels;
    s->backward = backward != 0;
    int n_edges = 0, n_pe = 0;
    for (int i = 0; i < no; i++) {
        n_edges += m->ops[i].n_inputs;
        n_pe += m->ops[i].n_params;
    }
    if (ALLOC(s->recv_t, np) || ALLOC(s->send_t, np) || ALLOC(s->fwd_t, no) ||
        ALLOC(s->bwd_t, no) || ALLOC(s->channel, np) || ALLOC(s->n_in, no) ||
        ALLOC(s->succ_off, no + 1) || ALLOC(s->succ, n_edges) || ALLOC(s->parm_off, no + 1) ||
        ALLOC(s->parm, n_pe) || ALLOC(s->grad_off, no + 1) || ALLOC(s->grad, np) ||
        ALLOC(s->arrival, np) || ALLOC(s->base, no) || ALLOC(s->in_end, no) ||
        ALLOC(s->ready, no) || ALLOC(s->start, no) || ALLOC(s->end, no) || ALLOC(s->pending, no) ||
        ALLOC(s->heap, no) || ALLOC(s->chan_free, n_channels) || ALLOC(s->seq, np))
        goto oom;
    memcpy(s->recv_t, t->recv_us, (size_t)np * sizeof *s->recv_t);
    memcpy(s->send_t, t->send_us, (size_t)np * sizeof *s->send_t);
    memcpy(s->fwd_t, t->fwd_us, (size_t)no * sizeof *s->fwd_t);
    memcpy(s->bwd_t, t->bwd_us, (size_t)no * sizeof *s->bwd_t);
    for (int p = 0; p < np; p++)
        s->channel[p] = channel ? channel[p] : 0;

    /* successor lists: count, prefix-sum, fill */
    for (int i = 0; i < no; i++) {
        s->n_in[i] = m->ops[i].n_inputs;
        for (int k = 0; k < m->ops[i].n_inputs; k++)
            s->succ_off[m->ops[i].inputs[k] + 1]++;
    }
    for (int i = 0; i < no; i++)
        s->succ_off[i + 1] += s->succ_off[i];
    for (int i = 0; i < no; i++) {
        for (int k = 0; k < m->ops[i].n_inputs; k++) {
            int in = m->ops[i].inputs[k];
            s->succ[s->succ_off[in] + s->pending[in]++] = i; /* pending as fill cursor */
        }
    }
    memset(s->pending, 0, (size_t)no * sizeof *s->pending);
    for (int i = 0, k = 0; i < no; i++) {
        s->parm_off[i] = k;
        for (int j = 0; j < m->ops[i].n_params; j++)
            s->parm[k++] = m->ops[i].params[j];
        s->parm_off[i + 1] = k;
    }
    /* a gradient is complete when its first reader (forward order) ends its backward */
    int *first = s->seq; /* borrowed as scratch */
    for (int p = 0; p < np; p++)
        first[p] = -1;
    for (int i = 0; i < no; i++)
        for (int j = 0; j < m->ops[i].n_params; j++)
            if (first[m->ops[i].params[j]] < 0) first[m->ops[i].params[j]] = i;
    for (int p = 0; p < np; p++) {
        if (first[p] < 0) {
            ordo__sim_destroy(&s);
            return ordo__error_set(ORDO_ERR_INVAL, "ordo__sim_new: parameter '%s' is read by no op",
                                  m->params[p].name);
        }
        s->grad_off[first[p] + 1]++;
    }
    for (int i = 0; i < no; i++)
        s->grad_off[i + 1] += s->grad_off[i];
    for (int p = 0; p < np; p++) /* in listed order within an op */
        s->grad[s->grad_off[first[p]] + s->pending[first[p]]++] = p;
    memset(s->pending, 0, (size_t)no * sizeof *s->pending);

    /* the bounds: U = everything in sequence, L = the busiest resource */
    double compute = 0, upper = 0;
    double *chan = s->chan_free;
    for (int i = 0; i < no; i++)
        compute += s->fwd_t[i] + (s->backward ? s->bwd_t[i] : 0);
    upper = compute;
    for (int p = 0; p < np; p++) {
        double x = s->recv_t[p] + (s->backward ? s->send_t[p] : 0);
        chan[s->channel[p]] += x;
        upper += x;
    }
    s->lower = compute;
    for (int c = 0; c < n_channels; c++)
        if (chan[c] > s->lower) s->lower = chan[c];
    s->upper = upper;
    *out = s;
    return 0;
oom:
    ordo__sim_destroy(&s);
    return ordo__error_set(ORDO_ERR_NOMEM, "ordo__sim_new: out of memory");
}

int ordo__sim_n_params(const ordo__sim_t *s)
{
    return s->n_params;
}

int ordo__sim_channel(const ordo__sim_t *s, int p)
{
    ORDO_ASSERT(p >= 0 && p < s->n_params);
    return s->channel[p];
}

double ordo__sim_efficiency(const ordo__sim_t *s, double t_us)
{
    double span = s->upper - s->lower;
    return span > 0 ? (s->upper - t_us) / span : 1.0;
}

/* ---- one iteration -------------------------------------------------------------------------- */

/* op a is picked before op b: it became ready first, ties by listed order */
static int heap_less(const ordo__sim_t *s, int a, int b)
{
    if (s->ready[a] != s->ready[b]) return s->ready[a] < s->ready[b];
    return a < b;
}

static void heap_push(ordo__sim_t *s, int *n, int op)
{
    int i = (*n)++;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!heap_less(s, op, s->heap[up])) break;
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = op;
}

static int heap_pop(ordo__sim_t *s, int *n)
{
    int top = s->heap[0];
    int last = s->heap[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(s, s->heap[c + 1], s->heap[c])) c++;
        if (!heap_less(s, s->heap[c], last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (*n > 0) s->heap[i] = last;
    return top;
}

double ordo__sim_makespan(ordo__sim_t *s, const int *seq)
{
    for (int c = 0; c < s->n_channels; c++)
        s->chan_free[c] = 0;
    for (int k = 0; k < s->n_params; k++) {
        int p = seq[k], c = s->channel[p];
        s->chan_free[c] += s->recv_t[p];
        s->arrival[p] = s->chan_free[c];
    }
    int hn = 0;
    for (int i = 0; i < s->n_ops; i++) {
        double b = 0;
        for (int k = s->parm_off[i]; k < s->parm_off[i + 1]; k++)
            if (s->arrival[s->parm[k]] > b) b = s->arrival[s->parm[k]];
        s->base[i] = b;
        s->in_end[i] = 0;
        s->pending[i] = s->n_in[i];
        if (s->pending[i] == 0) {
            s->ready[i] = b;
            heap_push(s, &hn, i);
        }
    }
    double now = 0;
    while (hn > 0) {
        int op = heap_pop(s, &hn);
        s->start[op] = now > s->ready[op] ? now : s->ready[op];
        now = s->end[op] = s->start[op] + s->fwd_t[op];
        for (int k = s->succ_off[op]; k < s->succ_off[op + 1]; k++) {
            int n = s->succ[k];
            if (now > s->in_end[n]) s->in_end[n] = now;
            if (--s->pending[n] == 0) {
                s->ready[n] = s->in_end[n] > s->base[n] ? s->in_end[n] : s->base[n];
                heap_push(s, &hn, n);
            }
        }
    }
    if (!s->backward) return now;
    /* backward: reverse listed order, sends FIFO per channel in order of readiness (the
     * channels are idle by now: every recv arrived before the forward pass could end) */
    double end = now;
    for (int i = s->n_ops - 1; i >= 0; i--) {
        now += s->bwd_t[i];
        for (int k = s->grad_off[i]; k < s->grad_off[i + 1]; k++) {
            int p = s->grad[k], c = s->channel[p];
            double st = s->chan_free[c] > now ? s->chan_free[c] : now;
            s->chan_free[c] = st + s->send_t[p];
            if (s->chan_free[c] > end) end = s->chan_free[c];
        }
    }
    return now > end ? now : end;
}

typedef struct {
    int prio;
    int idx;
} prio_t;

static int cmp_prio(const void *a, const void *b)
{
    const prio_t *x = a, *y = b;
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int ordo__sim_seq_from_priority(const ordo__sim_t *s, const int *priority, int *seq)
{
    if (!s || !priority || !seq) return ordo__error_set(ORDO_ERR_INVAL, "ordo__sim: no priorities");
    prio_t *v = malloc((size_t)s->n_params * sizeof *v);
    if (!v) return ordo__error_set(ORDO_ERR_NOMEM, "ordo__sim: out of memory");
    for (int p = 0; p < s->n_params; p++)
        v[p] = (prio_t){priority[p], p};
    qsort(v, (size_t)s->n_params, sizeof *v, cmp_prio);
    for (int k = 0; k < s->n_params; k++)
        seq[k] = v[k].idx;
    free(v);
    return 0;
}

int ordo__sim_run(ordo__sim_t *s, const int *priority, ordo__sim_result_t *out)
{
    if (!s || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__sim_run: bad args");
    int rc = ordo__sim_seq_from_priority(s, priority, s->seq);
    if (rc) return rc;
    double t = ordo__sim_makespan(s, s->seq);
    out->makespan_us = t;
    out->upper_us = s->upper;
    out->lower_us = s->lower;
    out->efficiency = ordo__sim_efficiency(s, t);
    return 0;
}

void ordo__sim_trace(const ordo__sim_t *s, double *recv_end, double *op_start, double *op_end)
{
    if (recv_end) memcpy(recv_end, s->arrival, (size_t)s->n_params * sizeof *recv_end);
    if (op_start) memcpy(op_start, s->start, (size_t)s->n_ops * sizeof *op_start);
    if (op_end) memcpy(op_end, s->end, (size_t)s->n_ops * sizeof *op_end);
}

/* ---- exhaustive enumeration ------------------------------------------------------------------ */

/* next_perm advances a to the next permutation in lexicographic order; 0 after the last. */
static int next_perm(int *a, int n)
{
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0) return 0;
    int j = n - 1;
    while (a[j] <= a[i])
        j--;
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) {
        t = a[l];
        a[l] = a[r];
        a[r] = t;
    }
    return 1;
}

static void seq_to_priority(const int *seq, int n, int *priority)
{
    for (int k = 0; k < n; k++)
        priority[seq[k]] = k;
}

int ordo__sim_exhaustive(ordo__sim_t *s, double *best_us, int *best_priority, double *worst_us,
                        int *worst_priority)
{
    if (!s) return ordo__error_set(ORDO_ERR_INVAL, "ordo__sim_exhaustive: no simulator");
    int n = s->n_params;
    if (n > ORDO_SIM_EXHAUSTIVE_MAX)
        return ordo__error_set(ORDO_ERR_RANGE, "ordo__sim_exhaustive: %d recvs, at most %d", n,
                              ORDO_SIM_EXHAUSTIVE_MAX);
    int a[ORDO_SIM_EXHAUSTIVE_MAX], bs[ORDO_SIM_EXHAUSTIVE_MAX], ws[ORDO_SIM_EXHAUSTIVE_MAX];
    for (int k = 0; k < n; k++)
        a[k] = bs[k] = ws[k] = k;
    double best = INFINITY, worst = -INFINITY;
    do {
        double t = ordo__sim_makespan(s, a);
        if (t < best) {
            best = t;
            memcpy(bs, a, (size_t)n * sizeof *a);
        }
        if (t > worst) {
            worst = t;
            memcpy(ws, a, (size_t)n * sizeof *a);
        }
    } while (next_perm(a, n));
    if (best_us) *best_us = best;
    if (worst_us) *worst_us = worst;
    if (best_priority) seq_to_priority(bs, n, best_priority);
    if (worst_priority) seq_to_priority(ws, n, worst_priority);
    return 0;
}
