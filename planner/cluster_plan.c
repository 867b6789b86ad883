/* cluster_plan: choosing a cluster's auto settings on the cluster step model. */
#include "planner/cluster_plan.h"

#include "common/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_S_CANDIDATES 24

/* every candidate's predicted step, INFINITY where the combination cannot be */
typedef struct {
    int n_s, s[MAX_S_CANDIDATES];
    double step[ORDO_CLUSTER_WIRE_COUNT][2][2][MAX_S_CANDIDATES];
} table_t;

static double gain_needed(ordo__cluster_wire_t w)
{
    if (w == ORDO_CLUSTER_WIRE_BF16) return ORDO_CLUSTER_GAIN_BF16;
    return w == ORDO_CLUSTER_WIRE_NONE ? 0 : ORDO_CLUSTER_GAIN_LOSSY;
}

/* the server-host counts to try: the given one, or 1, 2, 4, ... and the worker hosts */
static void s_candidates(const ordo__cluster_t *c, const ordo__cluster_auto_t *a, table_t *t)
{
    t->n_s = 0;
    if (!a->server_hosts) {
        t->s[t->n_s++] = c->server_hosts;
        return;
    }
    int hosts = c->workers / c->workers_per_host;
    int max = a->max_server_hosts > 0 ? a->max_server_hosts : 2 * hosts;
    if (max > c->workers) max = c->workers;
    for (int s = 1; s <= max && t->n_s < MAX_S_CANDIDATES - 1; s *= 2)
        t->s[t->n_s++] = s;
    if (hosts <= max && hosts != t->s[t->n_s - 1] && (hosts & (hosts - 1))) {
        int i = t->n_s++; /* keep them ascending */
        while (i > 0 && t->s[i - 1] > hosts) {
            t->s[i] = t->s[i - 1];
            i--;
        }
        t->s[i] = hosts;
    }
}

static int fill_table(const ordo__model_t *m, const ordo__cluster_t *c,
                      const ordo__cluster_auto_t *a, table_t *t, int *evaluated)
{
    s_candidates(c, a, t);
    for (int w = 0; w < ORDO_CLUSTER_WIRE_COUNT; w++)
        for (int g = 0; g < 2; g++)
            for (int o = 0; o < 2; o++)
                for (int i = 0; i < t->n_s; i++) {
                    t->step[w][g][o][i] = INFINITY;
                    ordo__cluster_t k = *c;
                    k.wire = (ordo__cluster_wire_t)w;
                    k.groups = g;
                    k.ordered = o;
                    k.server_hosts = t->s[i];
                    /* the candidates at the scheduler's untuned slice and credit (20 times
                     * fewer modelled steps); the choice is then tuned */
                    if (k.slice_bytes < 0) k.slice_bytes = 1 << 20;
                    if ((!a->wire && w != (int)c->wire) || (!a->groups && g != c->groups) ||
                        (!a->order && o != c->ordered) || ordo__cluster_check(&k) != 0)
                        continue;
                    ordo__cluster_result_t r;
                    int rc = ordo__cluster_predict(m, &k, &r);
                    if (rc) return rc;
                    t->step[w][g][o][i] = r.step_us;
                    (*evaluated)++;
                }
    return 0;
}

/* the fewest server hosts within ORDO_CLUSTER_GAIN_SERVERS of the best, for w, g, o */
static int best_s(const table_t *t, int w, int g, int o, double *step)
{
    double best = INFINITY;
    for (int i = 0; i < t->n_s; i++)
        best = fmin(best, t->step[w][g][o][i]);
    for (int i = 0; i < t->n_s; i++)
        if (t->step[w][g][o][i] <= best * (1 + ORDO_CLUSTER_GAIN_SERVERS)) {
            *step = t->step[w][g][o][i];
            return i;
        }
    *step = INFINITY;
    return -1;
}

/* appends "name S ms" of every alternative value of one setting to buf */
static void alternatives(char *buf, size_t n, const char *const *names, const double *steps,
                         int count, int chosen)
{
    size_t len = strlen(buf);
    for (int i = 0; i < count; i++) {
        if (i == chosen || !isfinite(steps[i]) || len >= n) continue;
        int k = snprintf(buf + len, n - len, "; %s %.1f ms", names[i], steps[i] / 1e3);
        if (k > 0) len += (size_t)k;
    }
}

static void explain(const table_t *t, const ordo__cluster_auto_t *a, int w, int g, int o, int si,
                    ordo__cluster_plan_t *p)
{
    double here = t->step[w][g][o][si] / 1e3;
    if (a->server_hosts) {
        char(*b)[ORDO_CLUSTER_WHY_CHARS] = &p->why[p->n_why++];
        snprintf(*b, sizeof *b, "server hosts %d: the fewest within 3 %% of the best step "
                 "(%.1f ms)", t->s[si], here);
        char names[MAX_S_CANDIDATES][16];
        const char *np[MAX_S_CANDIDATES];
        double steps[MAX_S_CANDIDATES];
        for (int i = 0; i < t->n_s; i++) {
            snprintf(names[i], sizeof names[i], "%d:", t->s[i]);
            np[i] = names[i];
            steps[i] = t->step[w][g][o][i];
        }
        alternatives(*b, sizeof *b, np, steps, t->n_s, si);
    }
    if (a->wire) {
        char(*b)[ORDO_CLUSTER_WHY_CHARS] = &p->why[p->n_why++];
        snprintf(*b, sizeof *b, "compression %s (%.1f ms): bf16 must gain 3 %%, onebit and topk "
                 "(lossy) 10 %% over none", ordo__cluster_wire_name(w), here);
        const char *np[ORDO_CLUSTER_WIRE_COUNT];
        double steps[ORDO_CLUSTER_WIRE_COUNT];
        for (int i = 0; i < ORDO_CLUSTER_WIRE_COUNT; i++) {
            np[i] = ordo__cluster_wire_name(i);
            best_s(t, i, g, o, &steps[i]);
        }
        alternatives(*b, sizeof *b, np, steps, ORDO_CLUSTER_WIRE_COUNT, w);
    }
    if (a->groups) {
        char(*b)[ORDO_CLUSTER_WHY_CHARS] = &p->why[p->n_why++];
        snprintf(*b, sizeof *b, "groups %s (%.1f ms): with groups a worker host's link carries "
                 "one model each way, not one per worker", g ? "on" : "off", here);
        static const char *const np[] = {"off", "on"};
        double steps[2];
        for (int i = 0; i < 2; i++)
            best_s(t, w, i, o, &steps[i]);
        alternatives(*b, sizeof *b, np, steps, 2, g);
    }
    if (a->order) {
        char(*b)[ORDO_CLUSTER_WHY_CHARS] = &p->why[p->n_why++];
        snprintf(*b, sizeof *b, "order %s (%.1f ms): tao must gain 0.5 %% over fifo",
                 o ? "tao" : "fifo", here);
        static const char *const np[] = {"fifo", "tao"};
        double steps[2];
        for (int i = 0; i < 2; i++)
            best_s(t, w, g, i, &steps[i]);
        alternatives(*b, sizeof *b, np, steps, 2, o);
    }
}

int ordo__cluster_plan(const ordo__model_t *m, const ordo__cluster_t *c, const ordo__cluster_auto_t *a,
                      ordo__cluster_plan_t *out)
{
    if (!m || !c || !a || !out)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__cluster_plan: bad arguments");
    ordo__cluster_t base = *c; /* check what is fixed: the auto fields at their simplest */
    if (a->server_hosts) base.server_hosts = 1;
    if (a->wire) base.wire = ORDO_CLUSTER_WIRE_NONE;
    if (a->groups) base.groups = 0;
    int rc = ordo__cluster_check(&base);
    if (rc) return rc;
    table_t *t = malloc(sizeof *t);
    if (!t) return ordo__error_set(ORDO_ERR_NOMEM, "cluster: out of memory");
    ordo__cluster_plan_t p = {.evaluated = 0};
    if ((rc = fill_table(m, &base, a, t, &p.evaluated)) != 0) goto done;
    /* the best of each (codec, groups, order) at its fewest good server hosts, each codec and
     * the order weighed by what it must gain */
    double best = INFINITY;
    int bw = -1, bg = 0, bo = 0, bs = -1;
    for (int w = 0; w < ORDO_CLUSTER_WIRE_COUNT; w++)
        for (int g = 0; g < 2; g++)
            for (int o = 0; o < 2; o++) {
                double step;
                int si = best_s(t, w, g, o, &step);
                if (si < 0) continue;
                double weighed =
                    step * (1 + gain_needed(w)) * (o ? 1 + ORDO_CLUSTER_GAIN_ORDER : 1);
                if (weighed < best) {
                    best = weighed;
                    bw = w, bg = g, bo = o, bs = si;
                }
            }
    if (bw < 0) {
        rc = ordo__error_set(ORDO_ERR_INVAL, "cluster: no setting of the auto fields can run");
        goto done;
    }
    p.chosen = base;
    p.chosen.wire = (ordo__cluster_wire_t)bw;
    p.chosen.groups = bg;
    p.chosen.ordered = bo;
    p.chosen.server_hosts = t->s[bs];
    if ((rc = ordo__cluster_predict(m, &p.chosen, &p.result)) != 0) goto done;
    explain(t, a, bw, bg, bo, bs, &p);
    *out = p;
done:
    free(t);
    return rc;
}
