/* ordering_fixtures: small worker-partition graphs built with the model builder for the
 * tests of the ordering planners, the simulator and the search: the paper's examples
 * (Figures 2a and 4), par32 and seq32, and seeded random graphs. Header-only, static. */
#ifndef ORDO_ORDERING_FIXTURES_H
#define ORDO_ORDERING_FIXTURES_H

#include "core/model.h"
#include "ordo_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* fx_param adds a 1-D float32 parameter of numel elements. */
static inline void fx_param(ordo__model_t *m, const char *name, int64_t numel)
{
    ck_assert_int_ge(ordo__model_add_param(m, name, 1, &numel), 0);
}

/* fx_op adds an op with up to 4 inputs and 4 parameters (NULL-terminated lists). */
static inline void fx_op(ordo__model_t *m, const char *name, const char *const *inputs,
                         const char *const *params, double fwd, double bwd)
{
    int ni = 0, np = 0;
    while (inputs && inputs[ni])
        ni++;
    while (params && params[np])
        np++;
    int rc = ordo__model_add_op(m, name, ni, inputs, np, params, fwd, bwd);
    ck_assert_msg(rc >= 0, "add_op %s: %s", name, ordo__error_text(rc));
}

#define FX_L(...) ((const char *const[]){__VA_ARGS__, NULL})

/* 1250 float32 = 5000 bytes = 40 us at 1gbit; with 10 us latency a recv takes 50 us */
#define FX_NUMEL_50US 1250

/* fx_fig2a: the paper's Figure 2a. recv1 (r1) feeds op1; op2 reads op1 and r2. */
static inline ordo__model_t *fx_fig2a(double op1_us, double op2_us)
{
    ordo__model_t *m = ordo__model_new("fig2a", 1, NULL);
    fx_param(m, "r1", FX_NUMEL_50US);
    fx_param(m, "r2", FX_NUMEL_50US);
    fx_op(m, "op1", NULL, FX_L("r1"), op1_us, 0);
    fx_op(m, "op2", FX_L("op1"), FX_L("r2"), op2_us, 0);
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

/* fx_fig4: four recvs listed D, C, B, A; op1 needs A and B together, op2 adds C, op3 adds
 * D. A and B must go first (M+ = T(A) + T(B)), then C, then D. */
static inline ordo__model_t *fx_fig4(void)
{
    ordo__model_t *m = ordo__model_new("fig4", 1, NULL);
    fx_param(m, "D", FX_NUMEL_50US);
    fx_param(m, "C", FX_NUMEL_50US);
    fx_param(m, "B", FX_NUMEL_50US);
    fx_param(m, "A", FX_NUMEL_50US);
    fx_op(m, "op1", NULL, FX_L("A", "B"), 30, 0);
    fx_op(m, "op2", FX_L("op1"), FX_L("C"), 30, 0);
    fx_op(m, "op3", FX_L("op2"), FX_L("D"), 30, 0);
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

/* fx_par32: 32 parallel layers (each reads one 524288-float parameter) joined by a concat;
 * listed order l0..l31, then concat. */
static inline ordo__model_t *fx_par32(void)
{
    ordo__model_t *m = ordo__model_new("par32", 1, NULL);
    const char *names[33];
    static char buf[32][16];
    for (int i = 0; i < 32; i++) {
        char pn[16];
        snprintf(pn, sizeof pn, "w%d", i);
        snprintf(buf[i], sizeof buf[i], "l%d", i);
        fx_param(m, pn, 524288);
        fx_op(m, buf[i], NULL, FX_L(pn), 1000, 2000);
        names[i] = buf[i];
    }
    names[32] = NULL;
    ck_assert_int_ge(ordo__model_add_op(m, "concat", 32, names, 0, NULL, 10, 10), 0);
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

/* fx_seq32: a chain of 32 layers, layer i reading parameter w_i and layer i-1. */
static inline ordo__model_t *fx_seq32(void)
{
    ordo__model_t *m = ordo__model_new("seq32", 1, NULL);
    for (int i = 0; i < 32; i++) {
        char pn[16], on[16], prev[16];
        snprintf(pn, sizeof pn, "w%d", i);
        snprintf(on, sizeof on, "l%d", i);
        snprintf(prev, sizeof prev, "l%d", i - 1);
        fx_param(m, pn, 524288);
        if (i == 0)
            fx_op(m, on, NULL, FX_L(pn), 1000, 2000);
        else
            fx_op(m, on, FX_L(prev), FX_L(pn), 1000, 2000);
    }
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

static inline uint64_t fx_rand(uint64_t *st)
{
    uint64_t z = (*st += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline int fx_below(uint64_t *st, int n)
{
    return (int)(fx_rand(st) % (uint64_t)n);
}

/* fx_random: a random DAG with n_params recvs and n_ops ops in topological order. Each op
 * reads 0-2 earlier ops and 0-2 parameters; every parameter is read by some op. Op times
 * are 50-5000 us; parameters 2500-250000 floats (80 us - 8 ms at 1gbit), so transfers and
 * compute are of the same order. */
static inline ordo__model_t *fx_random(uint64_t seed, int n_params, int n_ops)
{
    uint64_t st = seed;
    ordo__model_t *m = ordo__model_new("random", 1, NULL);
    char pn[8][16];
    int owner[8];
    for (int p = 0; p < n_params; p++) {
        snprintf(pn[p], sizeof pn[p], "p%d", p);
        fx_param(m, pn[p], 2500 + fx_below(&st, 247501));
        owner[p] = fx_below(&st, n_ops); /* the op guaranteed to read it */
    }
    for (int i = 0; i < n_ops; i++) {
        char on[16];
        snprintf(on, sizeof on, "o%d", i);
        const char *in[3] = {0}, *pa[10] = {0};
        char inb[2][16];
        int ni = 0, na = 0;
        int want_in = i == 0 ? 0 : 1 + fx_below(&st, 2) - (fx_below(&st, 4) == 0);
        for (int k = 0; k < want_in; k++) {
            int src = i - 1 - fx_below(&st, i < 3 ? i : 3);
            snprintf(inb[ni], sizeof inb[ni], "o%d", src);
            if (ni == 1 && strcmp(inb[0], inb[1]) == 0) continue;
            in[ni] = inb[ni];
            ni++;
        }
        for (int p = 0; p < n_params; p++)
            if (owner[p] == i) pa[na++] = pn[p];
        if (na == 0 && fx_below(&st, 3) == 0) {
            int p = fx_below(&st, n_params);
            pa[na++] = pn[p];
        }
        int rc = ordo__model_add_op(m, on, ni, in, na, pa, 50 + fx_below(&st, 4951), 100);
        ck_assert_msg(rc >= 0, "random op: %s", ordo__error_text(rc));
    }
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

#endif
